// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=cblas},lower-to-c' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=cblas},lower-to-c' -t c | %filecheck %s --check-prefix=C

/// lower-to-c lowers a cblas partition with the ccompiler machinery (workspace, wrapper, ABI
/// checks); each composite is one call of a byoc_cblas.h kernel: x, w, the epilogue vectors,
/// the output, the scratch, then the sizes, the block size and the relu flag. A stride-2
/// convolution with few channels: im2col from the padded copy, 5 output rows per block.
// CHECK-LABEL: c.module
// CHECK:         c.include "byoc_kernels.h"
// CHECK-NEXT:    c.include "byoc_cblas.h"
// CHECK:         c.func static noalias @byoc_p_cblas_conv_bias_relu_0_0(%in0: !c.ptr<f32, const>, %in1: !c.ptr<f32, const>, %in2: !c.ptr<f32, const>, %out0: !c.ptr<f32>, %tmp0: !c.ptr<f32>)
// CHECK:           c.call_opaque "byoc_cblas_conv2d_bias_f32"(%in0, %in1, %in2, %out0, %tmp0)
// CHECK-SAME:        args = [0 : index, 1 : index, 2 : index, 3 : index, 4 : index, 2 : i64, 3 : i64, 9 : i64, 9 : i64, 4 : i64, 3 : i64, 3 : i64, 5 : i64, 5 : i64, 2 : i64, 2 : i64, 1 : i64, 1 : i64, 1 : i64, 1 : i64, 5 : i64, 1 : i32]
// CHECK:         c.func @byoc_p_cblas_conv_bias_relu_0_wrapper
// CHECK:           c.workspace
// C:           #include "byoc_cblas.h"
// C:           /* cblas.conv2d_bias_relu: 2x4x5x5 f32 */
// C-NEXT:      byoc_cblas_conv2d_bias_f32(in0, in1, in2, out0, tmp0, 2, 3, 9, 9, 4, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 5, 1);
func.func @conv_bias_relu(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x5x5xf32> {
  %0 = nn.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x5x5xf32>
  %1 = nn.bias_add %0, %b : (tensor<2x4x5x5xf32>, tensor<4xf32>) -> tensor<2x4x5x5xf32>
  %2 = nn.relu %1 : tensor<2x4x5x5xf32>
  func.return %2 : tensor<2x4x5x5xf32>
}

// -----

/// A 1x1 convolution with unit strides reads the image directly: no scratch. The batch_norm
/// and multiply fold into two constant vectors (scale, shift) at compile time.
// CHECK-LABEL: c.module
// CHECK:         c.global @byoc_p_cblas_conv_1x1_bn_0_c0 = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<2x3x1x1xf32>
// CHECK-NEXT:    c.global @byoc_p_cblas_conv_1x1_bn_0_c1 = dense<[0.4999975, 0.3535525]> : tensor<2xf32>
// CHECK-NEXT:    c.global @byoc_p_cblas_conv_1x1_bn_0_c2 = dense<[2.503395e-06, -0.20710498]> : tensor<2xf32>
// CHECK-NEXT:    c.func static noalias @byoc_p_cblas_conv_1x1_bn_0_0(%in0: !c.ptr<f32, const>, %in1: !c.ptr<f32, const>, %in2: !c.ptr<f32, const>, %in3: !c.ptr<f32, const>, %out0: !c.ptr<f32>)
// CHECK:           c.call_opaque "byoc_cblas_conv2d_1x1_affine_f32"(%in0, %in1, %in2, %in3, %out0)
// C:           byoc_cblas_conv2d_1x1_affine_f32(in0, in1, in2, in3, out0, 1, 3, 4, 4, 2, 1, 1, 4, 4, 1, 1, 0, 0, 1, 1, 16, 0);
func.func @conv_1x1_bn(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = nn.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<2x3x1x1xf32>
  %g = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %s = nn.constant dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32>
  %0 = nn.conv2d %x, %w : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = nn.batch_norm %0, %g, %g, %g, %g : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %2 = nn.multiply %1, %s : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %2 : tensor<1x2x4x4xf32>
}

// -----

/// Enough channels and pixels: one GEMM per kernel tap over a padded copy (no im2col); the
/// weights are rearranged tap by tap at compile time (a new constant). A bias known only at
/// run time and a scalar add are combined into the shift vector by a loop over the channels.
// CHECK-LABEL: c.module
// CHECK:         c.global @byoc_p_cblas_conv_taps_0_c0 init 0 = dense<{{.*}}> : tensor<9x8x64xf32>
// CHECK:         c.func static noalias @byoc_p_cblas_conv_taps_0_0(%in0: !c.ptr<f32, const>, %in1: !c.ptr<f32, const>, %out0: !c.ptr<f32>)
// CHECK:           c.for %i0 = 0 to 8
// CHECK:         c.func static noalias @byoc_p_cblas_conv_taps_0_1(
// CHECK:           c.call_opaque "byoc_cblas_conv2d_taps_bias_f32"
// C:           byoc_cblas_conv2d_taps_bias_f32(in0, in1, in2, out0, tmp0, 1, 64, 24, 24, 8, 3, 3, 24, 24, 1, 1, 1, 1, 1, 1, 24, 0);
func.func @conv_taps(%x: tensor<1x64x24x24xf32>, %b: tensor<8xf32>, %c: tensor<1xf32>) -> tensor<1x8x24x24xf32> {
  %w = nn.constant dense<0.01> : tensor<8x64x3x3xf32>
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x64x24x24xf32>, tensor<8x64x3x3xf32>) -> tensor<1x8x24x24xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x8x24x24xf32>, tensor<8xf32>) -> tensor<1x8x24x24xf32>
  %2 = nn.add %1, %c : (tensor<1x8x24x24xf32>, tensor<1xf32>) -> tensor<1x8x24x24xf32>
  func.return %2 : tensor<1x8x24x24xf32>
}

// -----

/// dense (sgemv for one row) with its bias; batched matmul (the batch strides as arrays).
// CHECK-LABEL: c.module
// CHECK:         c.call_opaque "byoc_cblas_dense_bias_f32"
// CHECK:         c.call_opaque "byoc_cblas_matmul_f32"(%in0, %in1, %out0) {args = [0 : index, 1 : index, 2 : index, 3 : i64, 4 : i64, 5 : i64, 1 : i32, array<i64: 2>, array<i64: 12>, array<i64: 0>]}
// C:           byoc_cblas_dense_bias_f32(in0, in1, in2, out0, 1, 3, 4, 1, 1);
// C:           byoc_cblas_matmul_f32(in0, in1, out0, 3, 4, 5, 1, (const int64_t[]){2}, (const int64_t[]){12}, (const int64_t[]){0});
func.func @dense_and_matmul(%x: tensor<1x4xf32>, %a: tensor<2x3x4xf32>, %m: tensor<4x5xf32>) -> (tensor<1x3xf32>, tensor<2x3x5xf32>) {
  %w = nn.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]> : tensor<3x4xf32>
  %b = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = nn.dense %x, %w : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<1x3xf32>
  %1 = nn.add %0, %b : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %2 = nn.relu %1 : tensor<1x3xf32>
  %3 = nn.matmul %a, %m : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  func.return %2, %3 : tensor<1x3xf32>, tensor<2x3x5xf32>
}
