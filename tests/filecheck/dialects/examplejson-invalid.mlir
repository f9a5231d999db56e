// RUN: %byoc-opt %s --split-input-file --verify-diagnostics

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'add 2': input id 1 is not defined by an earlier line}}
  examplejson.subgraph @g {
    examplejson.input 0 : tensor<3xf32>
    examplejson.node add 2 inputs(0, 1) : tensor<3xf32>
    examplejson.output 2
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'input 0': id 0 is already defined}}
  examplejson.subgraph @g {
    examplejson.input 0 : tensor<3xf32>
    examplejson.input 0 : tensor<3xf32>
    examplejson.output 0
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'conv2d 2': 'conv2d': data must have rank 4, got 1}}
  examplejson.subgraph @g {
    examplejson.input 0 : tensor<3xf32>
    examplejson.input 1 : tensor<3xf32>
    examplejson.node conv2d 2 inputs(0, 1) : tensor<3xf32>
    examplejson.output 2
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'relu 1': 'relu' of tensor<3xf32> gives tensor<3xf32>, the line declares tensor<4xf32>}}
  examplejson.subgraph @g {
    examplejson.input 0 : tensor<3xf32>
    examplejson.node relu 1 inputs(0) : tensor<4xf32>
    examplejson.output 1
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'frob 1': unknown op 'frob'}}
  examplejson.subgraph @g {
    examplejson.input 0 : tensor<3xf32>
    examplejson.node frob 1 inputs(0) : tensor<3xf32>
    examplejson.output 1
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'softmax 1': 'softmax' has no attribute 'alpha'}}
  examplejson.subgraph @g {
    examplejson.input 0 : tensor<3xf32>
    examplejson.node softmax 1 inputs(0) {alpha = 1.0 : f64} : tensor<3xf32>
    examplejson.output 1
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: the output: output id 5 is not defined}}
  examplejson.subgraph @g {
    examplejson.input 0 : tensor<3xf32>
    examplejson.output 5
  }
}

// -----

examplejson.module {
  // expected-error@+1 {{subgraph @g: line 'input 0': shape [-9223372036854775808] must be static}}
  examplejson.subgraph @g {
    examplejson.input 0 : tensor<?xf32>
    examplejson.output 0
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
    examplejson.input 0 : tensor<3xf32>
    examplejson.output 0
  }
  examplejson.subgraph @g {
    examplejson.input 0 : tensor<3xf32>
    examplejson.output 0
  }
}
