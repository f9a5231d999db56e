// RUN: %byoc-opt %s --split-input-file -p 'convert-layout{layouts=NHWC}' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'convert-layout{layouts=NHWC},convert-layout{targets=ccompiler}' | %filecheck %s --check-prefix=BACK
// RUN: %byoc-opt %s --split-input-file -p 'convert-layout{layouts=NHWC},annotate-target{targets=ccompiler}' | %filecheck %s --check-prefix=TAGGED

/// A CNN block in NCHW becomes NHWC: one transpose at the input, one at the output; the
/// transposes between the layers meet and cancel; constant weights become HWIO constants;
/// bias_add and batch_norm take the channel axis 3. convert-layout{targets=ccompiler}
/// (its preferred layout is NCHW) brings the graph back, with no transpose left.
// CHECK-LABEL: func.func @cnn
// CHECK:      %[[T:.*]] = nn.transpose %x {axes = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
// CHECK-NEXT: %[[W:.*]] = nn.constant dense<"0x{{.*}}"> : tensor<3x3x3x4xf32>
// CHECK-NEXT: %[[C:.*]] = nn.conv2d %[[T]], %[[W]] {padding = array<i64: 1, 1, 1, 1>, data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK-NEXT: %[[B:.*]] = nn.bias_add %[[C]], %b {axis = 3 : i64} : (tensor<1x8x8x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
// CHECK-NEXT: %[[R:.*]] = nn.relu %[[B]] : tensor<1x8x8x4xf32>
// CHECK-NEXT: %[[P:.*]] = nn.max_pool2d %[[R]] {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, data_layout = "NHWC"} : (tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT: %[[W2:.*]] = nn.constant dense<{{.*}}> : tensor<1x1x4x4xf32>
// CHECK-NEXT: %[[C2:.*]] = nn.conv2d %[[P]], %[[W2]] {data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x4x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT: %[[N:.*]] = nn.batch_norm %[[C2]], %b, %b, %b, %b {axis = 3 : i64, data_layout = "NHWC"}
// CHECK-NEXT: %[[A:.*]] = nn.add %[[N]], %[[C2]] : tensor<1x4x4x4xf32>
// CHECK-NEXT: %[[G:.*]] = nn.global_avg_pool2d %[[A]] {data_layout = "NHWC"} : (tensor<1x4x4x4xf32>) -> tensor<1x1x1x4xf32>
// CHECK-NEXT: %[[O:.*]] = nn.transpose %[[G]] {axes = array<i64: 0, 3, 1, 2>} : (tensor<1x1x1x4xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT: func.return %[[O]] : tensor<1x4x1x1xf32>
// BACK-LABEL: func.func @cnn
// BACK-NOT:   nn.transpose
// BACK-NOT:   data_layout
// BACK:       func.return
/// The C target does not implement NHWC: the layout ops stay on the host, untagged.
// TAGGED-LABEL: func.func @cnn
// TAGGED:     nn.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 1, 1, 1>, data_layout = "NHWC", kernel_layout = "HWIO"} :
// TAGGED:     nn.relu %{{.*}} {byoc.target = "ccompiler"}
// TAGGED:     nn.max_pool2d %{{.*}} {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, data_layout = "NHWC"} :
func.func @cnn(%x: tensor<1x3x8x8xf32>, %b: tensor<4xf32>) -> tensor<1x4x1x1xf32> {
  %w = nn.constant dense<"0x0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF000000000000003F0000803F0000C03F0000C0BF000080BF000000BF"> : tensor<4x3x3x3xf32>
  %w2 = nn.constant dense<0.25> : tensor<4x4x1x1xf32>
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x8x8xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %2 = nn.relu %1 : tensor<1x4x8x8xf32>
  %3 = nn.max_pool2d %2 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %4 = nn.conv2d %3, %w2 : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %5 = nn.batch_norm %4, %b, %b, %b, %b : (tensor<1x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %6 = nn.add %5, %4 : tensor<1x4x4x4xf32>
  %7 = nn.global_avg_pool2d %6 : (tensor<1x4x4x4xf32>) -> tensor<1x4x1x1xf32>
  func.return %7 : tensor<1x4x1x1xf32>
}

// -----

/// A weight computed at run time is transposed by an op; a transpose that meets no partner
/// (the function's result is the conv's) stays at the edge.
// CHECK-LABEL: func.func @runtime_weight
// CHECK:      %[[T:.*]] = nn.transpose %x {axes = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[W:.*]] = nn.transpose %w {axes = array<i64: 2, 3, 1, 0>} : (tensor<2x3x1x1xf32>) -> tensor<1x1x3x2xf32>
// CHECK-NEXT: %[[C:.*]] = nn.conv2d %[[T]], %[[W]] {data_layout = "NHWC", kernel_layout = "HWIO"}
// CHECK-NEXT: %[[O:.*]] = nn.transpose %[[C]] {axes = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT: func.return %[[O]]
func.func @runtime_weight(%x: tensor<1x3x4x4xf32>, %w: tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %0 = nn.conv2d %x, %w : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}

// -----

/// An op already in the wanted layout, and a model without layout ops, are left alone.
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT: nn.max_pool2d %x {data_layout = "NHWC", pool_size = array<i64: 2, 2>}
// CHECK-NEXT: nn.relu
// CHECK-NOT:  nn.transpose
func.func @untouched(%x: tensor<1x4x4x3xf32>) -> tensor<1x3x3x3xf32> {
  %0 = nn.max_pool2d %x {data_layout = "NHWC", pool_size = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x3x3x3xf32>
  %1 = nn.relu %0 : tensor<1x3x3x3xf32>
  func.return %1 : tensor<1x3x3x3xf32>
}
