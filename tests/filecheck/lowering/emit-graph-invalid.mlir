// RUN: %byoc-opt %s --verify-diagnostics -t graph

/// -t graph prints graph.module ops; a graph partition still in func form is an error with the fix.
// expected-error@+1 {{@graphref_main_0 is still a func.func; run lower-to-graph first}}
func.func private @graphref_main_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "graphref"} {
  %0 = nn.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
