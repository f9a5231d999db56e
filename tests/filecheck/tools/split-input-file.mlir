// --split-input-file processes each `// -----` chunk on its own: outputs are
// separated by `// -----`, a bad chunk does not stop the others, and errors
// carry the line numbers of the whole file.
// RUN: not %byoc-opt %s --split-input-file 2> %t.err > %t.out
// RUN: %filecheck %s < %t.out
// RUN: %filecheck %s --check-prefix=ERR < %t.err
// Without the flag the markers are comments and the whole file is one module.
// RUN: not %byoc-opt %s 2>&1 | %filecheck %s --check-prefix=WHOLE

// CHECK:      func.func @first
// CHECK:      // -----
// CHECK-NEXT: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @third

// ERR:      split-input-file.mlir:[[# @LINE + 13]]:3: error: 'nn.add' op operand shapes 4, 5 are not broadcast-compatible
// ERR-NEXT:   %0 = nn.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
// ERR-NEXT:   ^
// ERR-NOT: error

// WHOLE: split-input-file.mlir:[[# @LINE + 8]]:3: error: 'nn.add' op operand shapes 4, 5 are not broadcast-compatible
func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// -----

func.func @second(%a: tensor<4xf32>, %b: tensor<5xf32>) -> tensor<4xf32> {
  %0 = nn.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @third(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
