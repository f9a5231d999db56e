// Each -t output is an xDSL Target whose fields are its options, written as a
// pass's are: -t 'dot{function=...}' draws another function than @main, and
// -t 'mlir{elide-constants=N}' is --elide-constants=N. An unknown option is an error.
// RUN: %byoc-opt %s -t 'dot{function=helper}' | %filecheck %s --check-prefix=DOT
// RUN: %byoc-opt %s -t 'mlir{elide-constants=2}' | %filecheck %s --check-prefix=ELIDE
// RUN: not %byoc-opt %s -t 'dot{colour=red}' 2>&1 | %filecheck %s --check-prefix=BAD

// DOT:      digraph "helper" {
// DOT:        [label="nn.relu\ntensor<4xf32>"];
// ELIDE:      nn.constant dense_resource<__elided__> : tensor<4xf32>
// BAD:        byoc-opt: error: invalid options for -t dot: {{.*}}"colour"
func.func @main() -> tensor<4xf32> {
  %0 = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %1 = func.call @helper(%0) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
