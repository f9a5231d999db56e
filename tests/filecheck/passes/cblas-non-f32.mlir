// RUN: %byoc-opt %s --disable-verify --split-input-file -p 'merge-composite{targets=cblas}' | %filecheck %s

/// cblas computes in f32 only. The nn verifier already rejects GEMMs on other element
/// types; with verification off, the checks still refuse them (nothing is wrapped).

// CHECK-LABEL: func.func @dense_i32
// CHECK-NOT:     byoc.composite
// CHECK:         nn.dense
func.func @dense_i32(%x: tensor<2x4xi32>, %w: tensor<3x4xi32>) -> tensor<2x3xi32> {
  %0 = nn.dense %x, %w : (tensor<2x4xi32>, tensor<3x4xi32>) -> tensor<2x3xi32>
  %1 = nn.relu %0 : tensor<2x3xi32>
  func.return %1 : tensor<2x3xi32>
}

// -----

// CHECK-LABEL: func.func @matmul_i64
// CHECK-NOT:     byoc.composite
// CHECK:         nn.matmul
func.func @matmul_i64(%a: tensor<2x4xi64>, %b: tensor<4x3xi64>) -> tensor<2x3xi64> {
  %0 = nn.matmul %a, %b : (tensor<2x4xi64>, tensor<4x3xi64>) -> tensor<2x3xi64>
  func.return %0 : tensor<2x3xi64>
}
