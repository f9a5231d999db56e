// RUN: %byoc-opt %s --split-input-file -p 'merge-composite{targets=cblas}' | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p 'merge-composite{targets=cblas extra-results=true}' | %filecheck %s

/// conv2d -> bias_add -> relu: the whole chain is one composite.
// CHECK-LABEL: func.func @conv_bias_relu
// CHECK-NEXT:    %[[R:.*]] = byoc.composite "cblas.conv2d_bias_relu"(%x, %w, %b)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[C:.*]] = nn.conv2d %[[X]], %[[W]]
// CHECK-NEXT:      %[[A:.*]] = nn.bias_add %[[C]], %[[B]]
// CHECK-NEXT:      %[[Y:.*]] = nn.relu %[[A]]
// CHECK-NEXT:      byoc.yield %[[Y]]
// CHECK:         func.return %[[R]]
func.func @conv_bias_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x8x8xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %2 = nn.relu %1 : tensor<1x4x8x8xf32>
  func.return %2 : tensor<1x4x8x8xf32>
}

// -----

/// Without the relu: cblas.conv2d_bias.
// CHECK-LABEL: func.func @conv_bias
// CHECK-NEXT:    byoc.composite "cblas.conv2d_bias"(%x, %w, %b)
// CHECK-NOT:     nn.relu
func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %0 = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  func.return %1 : tensor<1x4x6x6xf32>
}

// -----

/// Without the bias: cblas.conv2d_relu; alone: cblas.conv2d.
// CHECK-LABEL: func.func @conv_relu_and_conv
// CHECK-NEXT:    %[[A:.*]] = byoc.composite "cblas.conv2d_relu"(%x, %w)
// CHECK:         %[[B:.*]] = byoc.composite "cblas.conv2d"(%x, %w)
// CHECK:         func.return %[[A]], %[[B]]
func.func @conv_relu_and_conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %0 = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = nn.relu %0 : tensor<1x4x6x6xf32>
  %2 = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %1, %2 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

/// ONNX's Conv + BatchNormalization + Relu (resnet): batch_norm is part of the epilogue; the
/// statistics become operands (a constant matched by wildcard() stays outside).
// CHECK-LABEL: func.func @conv_batch_norm_relu
// CHECK:         byoc.composite "cblas.conv2d_bias_relu"(%x, %w, %g, %be, %m, %v)
// CHECK:           nn.conv2d
// CHECK-NEXT:      nn.batch_norm
// CHECK-NEXT:      nn.relu
func.func @conv_batch_norm_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x1x1xf32>, %g: tensor<4xf32>, %be: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %0 = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x1x1xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.batch_norm %0, %g, %be, %m, %v : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %2 = nn.relu %1 : tensor<1x4x8x8xf32>
  func.return %2 : tensor<1x4x8x8xf32>
}

// -----

/// The longest epilogue (inception_v2, densenet): bias, batch_norm, a per-channel multiply
/// (operands in either order) and add, then relu.
// CHECK-LABEL: func.func @conv_full_epilogue
// CHECK:         byoc.composite "cblas.conv2d_bias_relu"
// CHECK:           nn.conv2d
// CHECK-NEXT:      nn.bias_add
// CHECK-NEXT:      nn.batch_norm
// CHECK-NEXT:      nn.multiply
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.relu
// CHECK-NEXT:      byoc.yield
func.func @conv_full_epilogue(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %s: tensor<4x1x1xf32>, %t: tensor<1x4x1x1xf32>) -> tensor<1x4x6x6xf32> {
  %0 = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = nn.batch_norm %1, %b, %b, %b, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %3 = nn.multiply %s, %2 : (tensor<4x1x1xf32>, tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %4 = nn.add %3, %t : (tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %5 = nn.relu %4 : tensor<1x4x6x6xf32>
  func.return %5 : tensor<1x4x6x6xf32>
}

// -----

/// dense -> add -> relu with a 1-D bias (ONNX Gemm's C, MatMul + Add): cblas.dense_bias_relu.
// CHECK-LABEL: func.func @dense_add_relu
// CHECK-NEXT:    %[[R:.*]] = byoc.composite "cblas.dense_bias_relu"(%x, %w, %b)
// CHECK:           nn.dense
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.relu
func.func @dense_add_relu(%x: tensor<2x8xf32>, %w: tensor<5x8xf32>, %b: tensor<5xf32>) -> tensor<2x5xf32> {
  %0 = nn.dense %x, %w : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
  %1 = nn.add %0, %b : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %2 = nn.relu %1 : tensor<2x5xf32>
  func.return %2 : tensor<2x5xf32>
}

// -----

/// A row bias (1, N), first operand, constant: taken (the constant stays outside, an operand).
// CHECK-LABEL: func.func @dense_row_bias
// CHECK:         %[[B:.*]] = nn.constant
// CHECK-NEXT:    byoc.composite "cblas.dense_bias"(%x, %w, %[[B]])
func.func @dense_row_bias(%x: tensor<2x8xf32>, %w: tensor<5x8xf32>) -> tensor<2x5xf32> {
  %b = nn.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x5xf32>
  %0 = nn.dense %x, %w : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
  %1 = nn.add %b, %0 : (tensor<1x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %1 : tensor<2x5xf32>
}

// -----

/// bias_add, relu alone, nothing: cblas.dense_bias, cblas.dense_relu, cblas.dense.
// CHECK-LABEL: func.func @dense_forms
// CHECK:         byoc.composite "cblas.dense_bias"
// CHECK:         byoc.composite "cblas.dense_relu"
// CHECK:         byoc.composite "cblas.dense"(
func.func @dense_forms(%x: tensor<2x8xf32>, %w: tensor<5x8xf32>, %b: tensor<5xf32>) -> (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>) {
  %0 = nn.dense %x, %w : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
  %1 = nn.bias_add %0, %b {axis = -1 : i64} : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %2 = nn.dense %x, %w : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
  %3 = nn.relu %2 : tensor<2x5xf32>
  %4 = nn.dense %x, %w : (tensor<2x8xf32>, tensor<5x8xf32>) -> tensor<2x5xf32>
  func.return %1, %3, %4 : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>
}

// -----

/// Batched matmul with broadcasting: cblas.matmul.
// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    byoc.composite "cblas.matmul"(%a, %b)
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x6xf32>) -> tensor<2x3x6xf32> {
  %0 = nn.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
  func.return %0 : tensor<2x3x6xf32>
}

// -----

/// Rejected by the check: groups > 1 (depthwise) is left alone, for ccompiler or the host.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT:     byoc.composite
// CHECK:         nn.conv2d
func.func @depthwise(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf32> {
  %0 = nn.conv2d %x, %w {groups = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = nn.relu %1 : tensor<1x4x6x6xf32>
  func.return %2 : tensor<1x4x6x6xf32>
}

// -----

/// Rejected by the check: a residual add (a full tensor, not one value per channel) is not
/// an epilogue; batch_norm still is, so the composite stops before the add.
// CHECK-LABEL: func.func @residual_add
// CHECK:         %[[A:.*]] = byoc.composite "cblas.conv2d_bias"
// CHECK:         %[[S:.*]] = nn.add %[[A]], %x
// CHECK-NEXT:    nn.relu %[[S]]
func.func @residual_add(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>, %g: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %0 = nn.conv2d %x, %w : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.batch_norm %0, %g, %g, %g, %g : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %2 = nn.add %1, %x : tensor<1x4x8x8xf32>
  %3 = nn.relu %2 : tensor<1x4x8x8xf32>
  func.return %3 : tensor<1x4x8x8xf32>
}

// -----

/// Rejected by the check: a 1-D add on NCHW broadcasts along W, not the channels; a
/// bias_add on axis 3 likewise. Only the conv2d (and its relu) are taken.
// CHECK-LABEL: func.func @not_per_channel
// CHECK:         %[[C:.*]] = byoc.composite "cblas.conv2d"(
// CHECK:         nn.add %[[C]], %b
// CHECK:         %[[D:.*]] = byoc.composite "cblas.conv2d"(
// CHECK:         nn.bias_add %[[D]], %b {axis = 3 : i64}
func.func @not_per_channel(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x1x1xf32>, %b: tensor<6xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %0 = nn.conv2d %x, %w : (tensor<1x3x6x6xf32>, tensor<4x3x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = nn.add %0, %b : (tensor<1x4x6x6xf32>, tensor<6xf32>) -> tensor<1x4x6x6xf32>
  %2 = nn.conv2d %x, %w : (tensor<1x3x6x6xf32>, tensor<4x3x1x1xf32>) -> tensor<1x4x6x6xf32>
  %3 = nn.bias_add %2, %b {axis = 3 : i64} : (tensor<1x4x6x6xf32>, tensor<6xf32>) -> tensor<1x4x6x6xf32>
  func.return %1, %3 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}

// -----

/// A bias whose result is also used outside cannot be inside a longer composite: the chain
/// stops at the bias (the relu stays outside). With extra-results=true too: a cblas kernel
/// yields one value, so the check refuses the longer match.
// CHECK-LABEL: func.func @bias_used_twice
// CHECK:         %[[A:.*]] = byoc.composite "cblas.conv2d_bias"(%x, %w, %b)
// CHECK:         %[[R:.*]] = nn.relu %[[A]]
// CHECK-NEXT:    func.return %[[R]], %[[A]]
func.func @bias_used_twice(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x1x1xf32>, %b: tensor<4xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>) {
  %0 = nn.conv2d %x, %w : (tensor<1x3x6x6xf32>, tensor<4x3x1x1xf32>) -> tensor<1x4x6x6xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x6x6xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %2 = nn.relu %1 : tensor<1x4x6x6xf32>
  func.return %2, %1 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>
}
