// RUN: %byoc-opt %s --split-input-file --verify-diagnostics -p 'lower-to-graph{target=graphref}'

/// An op outside nn has no graph form.
func.func private @graphref_f(%a: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "graphref"} {
  // expected-error@+1 {{'byoc.region' in @graphref_f has no graph form}}
  %0 = byoc.region "graphref" -> (tensor<4xf32>) {
    byoc.yield %a : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

/// Shapes are static.
// expected-error@+1 {{shape ? must be static}}
func.func private @graphref_f(%a: tensor<?xf32>) -> tensor<?xf32> attributes {byoc.compiler = "graphref"} {
  func.return %a : tensor<?xf32>
}

// -----

/// A composite computes each of its results.
func.func private @graphref_f(%a: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "graphref"} {
  // expected-error@+1 {{composite 'graphref.id' returns an argument, a constant or one value twice}}
  %0 = byoc.composite "graphref.id"(%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    byoc.yield %x : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}
