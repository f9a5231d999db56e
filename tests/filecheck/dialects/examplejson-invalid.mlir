// RUN: %byoc-opt %s --split-input-file --verify-diagnostics

/// Lines read values of earlier lines only (ids are line positions here: %2 is id 2).
examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'add 1': input id 2 is not defined by an earlier line}}
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xf32>
    %1 = examplejson.node add %0, %2 : tensor<3xf32>
    %2 = examplejson.input : tensor<3xf32>
    examplejson.output %1 : tensor<3xf32>
  }
}

// -----

/// The ids a subgraph keeps from its text are distinct.
examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'input 0': id 0 is already defined}}
  examplejson.subgraph @g ids(0, 0) {
    %0 = examplejson.input : tensor<3xf32>
    %1 = examplejson.input : tensor<3xf32>
    examplejson.output %0 : tensor<3xf32>
  }
}

// -----

/// ... and there is one for each value line.
examplejson.module {
  // expected-error@+1 {{subgraph @g: 1 ids for 2 value lines}}
  examplejson.subgraph @g ids(4) {
    %0 = examplejson.input : tensor<3xf32>
    %1 = examplejson.input : tensor<3xf32>
    examplejson.output %0 : tensor<3xf32>
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'conv2d 2': 'conv2d': data must have rank 4, got 1}}
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xf32>
    %1 = examplejson.input : tensor<3xf32>
    %2 = examplejson.node conv2d %0, %1 : tensor<3xf32>
    examplejson.output %2 : tensor<3xf32>
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'relu 1': 'relu' of tensor<3xf32> gives tensor<3xf32>, the line declares tensor<4xf32>}}
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xf32>
    %1 = examplejson.node relu %0 : (tensor<3xf32>) -> tensor<4xf32>
    examplejson.output %1 : tensor<4xf32>
  }
}

// -----

/// The nn verifier runs on the node: sigmoid is defined on floats only.
examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'sigmoid 1': 'sigmoid': element type i32 is not supported}}
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xi32>
    %1 = examplejson.node sigmoid %0 : tensor<3xi32>
    examplejson.output %1 : tensor<3xi32>
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'frob 1': unknown op 'frob'}}
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xf32>
    %1 = examplejson.node frob %0 : tensor<3xf32>
    examplejson.output %1 : tensor<3xf32>
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'softmax 1': 'softmax' has no attribute 'alpha'}}
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xf32>
    %1 = examplejson.node softmax %0 {alpha = 1.0 : f64} : tensor<3xf32>
    examplejson.output %1 : tensor<3xf32>
  }
}

// -----

/// The output returns values of the subgraph (the text's "output id 5 is not defined").
examplejson.module {
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xf32>
    // expected-error@+1 {{use of undefined value '%5'}}
    examplejson.output %5 : tensor<3xf32>
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: the output: a subgraph returns at least one value}}
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xf32>
    examplejson.output :
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'input 0': shape [-9223372036854775808] must be static}}
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<?xf32>
    examplejson.output %0 : tensor<?xf32>
  }
}

// -----

// expected-error@+1 {{examplejson.module holds only examplejson.subgraph ops, not 'func.func'}}
examplejson.module {
  func.func @f() {
    func.return
  }
}

// -----

// expected-error@+1 {{Redefinition of symbol "g"}}
examplejson.module {
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xf32>
    examplejson.output %0 : tensor<3xf32>
  }
  examplejson.subgraph @g {
    %0 = examplejson.input : tensor<3xf32>
    examplejson.output %0 : tensor<3xf32>
  }
}
