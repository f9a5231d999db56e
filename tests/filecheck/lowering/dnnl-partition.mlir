// RUN: %byoc-opt %s -p 'byoc{targets=dnnl},lower-to-graph{target=dnnl}' -t graph | %filecheck %s
// RUN: %byoc-opt %s -p 'byoc{targets=dnnl}' | %filecheck %s --check-prefix=HOST

/// The dnnl target: conv2d -> bias_add -> add(residual) -> relu is one composite
/// (`dnnl.conv2d_bias_sum`: bias folded, the add a sum post-op, the relu an eltwise one);
/// nn.log (oneDNN's is outside the ulp bound) and a subtract broadcasting its first operand
/// (oneDNN broadcasts the second only) stay on the host.
// CHECK:      byoc-graph version 1
// CHECK-NEXT: constant @dnnl_main_0_const_0: f32[8, 4, 3, 3] (1152 bytes)
// CHECK-NEXT: constant @dnnl_main_0_const_1: f32[8] (32 bytes)
// CHECK-NEXT: graph @dnnl_main_0 {
// CHECK-NEXT:   input %0: f32[1, 4, 6, 6] "x"
// CHECK-NEXT:   input %1: f32[1, 8, 6, 6] "r"
// CHECK:        %3: f32[1, 8, 6, 6] = dnnl.conv2d_bias_sum(%0, %2, %1, %4) {
// CHECK-NEXT:     %5: f32[1, 8, 6, 6] = nn.conv2d(%0, %2) {strides = [1, 1], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1, data_layout = "NCHW", kernel_layout = "OIHW"}
// CHECK-NEXT:     %6: f32[1, 8, 6, 6] = nn.bias_add(%5, %4) {axis = 1}
// CHECK-NEXT:     %7: f32[1, 8, 6, 6] = nn.add(%6, %1)
// CHECK-NEXT:     %3: f32[1, 8, 6, 6] = nn.relu(%7)
// CHECK-NEXT:   }
// CHECK-NEXT:   output %3
// CHECK-NEXT: }

// HOST:      %0 = func.call @dnnl_main_0(%x, %r)
// HOST-NEXT: %1 = nn.log %0
// HOST-NEXT: %2 = nn.subtract %v, %1
// HOST:      byoc.composite "dnnl.conv2d_bias_sum"
func.func @main(%x: tensor<1x4x6x6xf32>, %r: tensor<1x8x6x6xf32>, %v: tensor<6xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) {
  %w = nn.constant dense<0.1> : tensor<8x4x3x3xf32>
  %b = nn.constant dense<0.5> : tensor<8xf32>
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x8x6x6xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  %2 = nn.add %1, %r : tensor<1x8x6x6xf32>
  %3 = nn.relu %2 : tensor<1x8x6x6xf32>
  %4 = nn.log %3 : tensor<1x8x6x6xf32>
  %5 = nn.subtract %v, %4 : (tensor<6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  func.return %3, %5 : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>
}
