// RUN: %byoc-opt %s --verify-diagnostics -t examplejson

/// -t examplejson prints examplejson subgraphs; a partition still in func form is an error with the fix.
// expected-error@+1 {{@examplejson_main_0 is still a func.func; run lower-to-examplejson first}}
func.func private @examplejson_main_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "examplejson"} {
  %0 = nn.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
