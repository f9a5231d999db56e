// Every verifier error of the graph dialect (byoc/dialects/graph.py), one case a chunk.
// RUN: %byoc-opt %s --split-input-file --verify-diagnostics

/// A graph.const names a constant of the module.
graph.module {
  graph.graph @g {
    // expected-error@+1 {{no graph.constant @w in the graph.module}}
    %0 = graph.const @w : tensor<2xf32>
    graph.output %0 : tensor<2xf32>
  }
}

// -----

/// ... of the type it declares.
graph.module {
  graph.constant @w dense<[1.0, 2.0]> : tensor<2xf32>
  graph.graph @g {
    // expected-error@+1 {{@w is tensor<2xf32>, the use declares tensor<1x2xf32>}}
    %0 = graph.const @w : tensor<1x2xf32>
    graph.output %0 : tensor<1x2xf32>
  }
}

// -----

/// Inputs come first.
graph.module {
  graph.constant @w dense<[1.0, 2.0]> : tensor<2xf32>
  // expected-error@+1 {{inputs come before every other op}}
  graph.graph @g {
    %0 = graph.const @w : tensor<2xf32>
    %1 = graph.input "x" : tensor<2xf32>
    graph.output %0 : tensor<2xf32>
  }
}

// -----

/// Input names are unique.
graph.module {
  // expected-error@+1 {{two inputs named 'x'}}
  graph.graph @g {
    %0 = graph.input "x" : tensor<2xf32>
    %1 = graph.input "x" : tensor<2xf32>
    graph.output %0 : tensor<2xf32>
  }
}

// -----

/// A graph returns something.
graph.module {
  // expected-error@+1 {{graph @g returns nothing}}
  graph.graph @g {
    %0 = graph.input "x" : tensor<2xf32>
    graph.output
  }
}

// -----

/// Shapes are static.
graph.module {
  graph.graph @g {
    // expected-error@+1 {{shape ? must be static}}
    %0 = graph.input "x" : tensor<?xf32>
    graph.output %0 : tensor<?xf32>
  }
}

// -----

/// A node attribute is an integer, float, string or array of them.
graph.module {
  graph.graph @g {
    %0 = graph.input "x" : tensor<2xf32>
    // expected-error@+1 {{attribute 'bad' is}}
    %1 = graph.node "nn.relu"(%0) {bad = {nested = 1 : i64}} : (tensor<2xf32>) -> tensor<2xf32>
    graph.output %1 : tensor<2xf32>
  }
}

// -----

/// A node has an op name.
graph.module {
  graph.graph @g {
    %0 = graph.input "x" : tensor<2xf32>
    // expected-error@+1 {{graph.node needs an op name}}
    %1 = graph.node ""(%0) {} : (tensor<2xf32>) -> tensor<2xf32>
    graph.output %1 : tensor<2xf32>
  }
}

// -----

/// A composite's yield has its results' types.
graph.module {
  graph.graph @g {
    %0 = graph.input "x" : tensor<2xf32>
    // expected-error@+1 {{graph.yield must return the results' types}}
    %1 = graph.composite "t.c"(%0) : (tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%a: tensor<2xf32>):
      %2 = graph.node "nn.sum"(%a) {} : (tensor<2xf32>) -> tensor<1xf32>
      graph.yield %2 : tensor<1xf32>
    }
    graph.output %1 : tensor<2xf32>
  }
}

// -----

/// A graph.module holds graphs and constants only.
// expected-error@+1 {{graph.module holds graph.graph and graph.constant ops, not 'func.func'}}
graph.module {
  func.func @f() {
    func.return
  }
}
