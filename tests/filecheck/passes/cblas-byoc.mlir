// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=cblas,ccompiler}' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=ccompiler,cblas}' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=ccompiler}' | %filecheck %s --check-prefix=CC

/// GEMM-shaped composites go to cblas, whatever the order of the targets (ccompiler has no
/// composites; cblas supports no single op); everything else goes to ccompiler. Alone,
/// ccompiler takes the conv2d chain too.
// CHECK-LABEL: func.func @conv_pool_conv
// CHECK-NEXT:    %[[A:.*]] = func.call @cblas_conv_pool_conv_0(%x, %b)
// CHECK-NEXT:    %[[P:.*]] = func.call @ccompiler_conv_pool_conv_0(%[[A]])
// CHECK-NEXT:    %[[D:.*]] = func.call @cblas_conv_pool_conv_1(%[[P]])
// CHECK-NEXT:    func.return %[[D]]
// CHECK:       func.func private @cblas_conv_pool_conv_0
// CHECK-SAME:      attributes {byoc.compiler = "cblas"}
// CHECK:         byoc.composite "cblas.conv2d_bias_relu"
// CHECK:       func.func private @ccompiler_conv_pool_conv_0
// CHECK-SAME:      attributes {byoc.compiler = "ccompiler"}
// CHECK-NEXT:    nn.max_pool2d
// CHECK:       func.func private @cblas_conv_pool_conv_1
// CHECK:         byoc.composite "cblas.conv2d_relu"
// CC-LABEL:    func.func @conv_pool_conv
// CC-NEXT:       func.call @ccompiler_conv_pool_conv_0(%x, %b)
// CC-NOT:        byoc.composite
func.func @conv_pool_conv(%x: tensor<1x3x8x8xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %w = nn.constant dense<0.5> : tensor<4x3x3x3xf32>
  %w2 = nn.constant dense<0.25> : tensor<4x4x1x1xf32>
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x8x8xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %2 = nn.relu %1 : tensor<1x4x8x8xf32>
  %3 = nn.max_pool2d %2 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %4 = nn.conv2d %3, %w2 : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %5 = nn.relu %4 : tensor<1x4x4x4xf32>
  func.return %5 : tensor<1x4x4x4xf32>
}

// -----

/// Rejected by cblas's check, a depthwise conv2d (and its bias and relu) lands on ccompiler;
/// the dense -> add -> relu that follows is one cblas composite.
// CHECK-LABEL: func.func @depthwise_then_dense
// CHECK-NEXT:    %[[A:.*]] = func.call @ccompiler_depthwise_then_dense_0(%x, %b)
// CHECK-NEXT:    %[[D:.*]] = func.call @cblas_depthwise_then_dense_0(%[[A]])
// CHECK:       func.func private @ccompiler_depthwise_then_dense_0
// CHECK:         nn.conv2d {{.*}}groups = 4
// CHECK-NEXT:    nn.bias_add
// CHECK-NEXT:    nn.relu
// CHECK-NEXT:    nn.reshape
// CHECK:       func.func private @cblas_depthwise_then_dense_0
// CHECK:         byoc.composite "cblas.dense_bias_relu"
func.func @depthwise_then_dense(%x: tensor<1x4x6x6xf32>, %b: tensor<4xf32>) -> tensor<1x3xf32> {
  %dw = nn.constant dense<0.5> : tensor<4x1x3x3xf32>
  %fw = nn.constant dense<0.125> : tensor<3x64xf32>
  %fb = nn.constant dense<[1.0, -1.0, 0.5]> : tensor<3xf32>
  %0 = nn.conv2d %x, %dw {groups = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %2 = nn.relu %1 : tensor<1x4x4x4xf32>
  %3 = nn.reshape %2 {newshape = array<i64: 1, 64>} : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
  %4 = nn.dense %3, %fw : (tensor<1x64xf32>, tensor<3x64xf32>) -> tensor<1x3xf32>
  %5 = nn.add %4, %fb : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %6 = nn.relu %5 : tensor<1x3xf32>
  func.return %6 : tensor<1x3xf32>
}
