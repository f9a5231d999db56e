// -t dot draws @main; a module without one is an error, at the module.
// RUN: not %byoc-opt %s -t dot 2>&1 | %filecheck %s
// CHECK: emit-dot-invalid.mlir:1:1: error: -t dot: no func.func @main to draw (functions: @other)
func.func @other(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
