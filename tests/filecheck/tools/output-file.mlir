// -o writes the output to a file (stdout stays empty); on failure the file is
// not written.
// RUN: %byoc-opt %s -o %t.mlir > %t.stdout
// RUN: %filecheck %s < %t.mlir
// RUN: %filecheck %s --check-prefix=EMPTY --allow-empty < %t.stdout
// RUN: rm -f %t.bad
// RUN: not %byoc-opt %S/Inputs/verify-error.mlir -o %t.bad
// RUN: %python -c "import os, sys; sys.exit(os.path.exists(sys.argv[1]))" %t.bad
// -o with another -t writes that format.
// RUN: %byoc-opt %s -t dot -o %t.dot
// RUN: %filecheck %s --check-prefix=DOT < %t.dot

// CHECK: func.func @main
// CHECK: nn.sigmoid
// EMPTY-NOT: {{.}}
// DOT: digraph "main" {
// DOT: nn.sigmoid
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.sigmoid %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
