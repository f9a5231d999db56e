// RUN: %byoc-opt %s --split-input-file --verify-diagnostics -p lower-to-examplejson

/// A multi-result op has no ExampleJSON line (a line defines one id).
func.func private @examplejson_main_0(%x: tensor<4x2xf32>) -> tensor<2x2xf32> attributes {byoc.compiler = "examplejson"} {
  // expected-error@+1 {{lower-to-examplejson: 'nn.split' has no ExampleJSON form}}
  %0:2 = nn.split %x {indices = array<i64: 2>} : (tensor<4x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  func.return %0#0 : tensor<2x2xf32>
}

// -----

/// Only nn ops run on the ExampleJSON runtime.
func.func private @examplejson_main_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "examplejson"} {
  // expected-error@+1 {{lower-to-examplejson: 'func.call' in @examplejson_main_0 cannot run on the ExampleJSON runtime}}
  %0 = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>

// -----

/// A subgraph name may be taken only once in the examplejson.module.
examplejson.module {
  examplejson.subgraph @examplejson_main_0 {
    %0 = examplejson.input : tensor<4xf32>
    examplejson.output %0 : tensor<4xf32>
  }
}
// expected-error@+1 {{lower-to-examplejson: examplejson.module already holds a subgraph @examplejson_main_0}}
func.func private @examplejson_main_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "examplejson"} {
  %0 = nn.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
