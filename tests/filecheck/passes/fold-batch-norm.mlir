// RUN: %byoc-opt %s --split-input-file -p fold-batch-norm | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p fold-batch-norm,fold-batch-norm | %filecheck %s
// RUN: %byoc-opt %s --split-input-file -p fold-batch-norm | %byoc-opt --split-input-file | %filecheck %s

/// conv2d -> bias_add -> batch_norm, all constant: the conv gets w * s per output channel and
/// a bias_add of (c - mean) * s + beta, s = gamma / sqrt(var + eps) = [0.5, 2, 4]. The old
/// constants are erased; the relu reads the new bias_add; the tag of the batch_norm stays.
// CHECK-LABEL: func.func @conv_bias_bn
// CHECK-NEXT:  %[[W:.*]] = nn.constant dense<[0.25, 0.25, 1.0, 1.0, 2.0, 2.0]> : tensor<3x2x1x1xf32>
// CHECK-NEXT:  %[[C:.*]] = nn.conv2d %x, %[[W]] {strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:  %[[B:.*]] = nn.constant dense<[1.5, 3.0, 5.0]> : tensor<3xf32>
// CHECK-NEXT:  %[[Y:.*]] = nn.bias_add %[[C]], %[[B]] {byoc.target = "dnnl"} : (tensor<1x3x2x2xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:  %[[R:.*]] = nn.relu %[[Y]] : tensor<1x3x2x2xf32>
// CHECK-NEXT:  func.return %[[R]]
// CHECK-NOT:   nn.batch_norm
func.func @conv_bias_bn(%x: tensor<1x2x4x4xf32>) -> tensor<1x3x2x2xf32> {
  %w = nn.constant dense<0.5> : tensor<3x2x1x1xf32>
  %c = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %g = nn.constant dense<[1.0, 8.0, 32.0]> : tensor<3xf32>
  %beta = nn.constant dense<1.0> : tensor<3xf32>
  %mean = nn.constant dense<[0.0, 1.0, 2.0]> : tensor<3xf32>
  %v = nn.constant dense<[3.0, 15.0, 63.0]> : tensor<3xf32>
  %0 = nn.conv2d %x, %w {strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x2x2xf32>
  %1 = nn.bias_add %0, %c : (tensor<1x3x2x2xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  %2 = nn.batch_norm %1, %g, %beta, %mean, %v {epsilon = 1.0 : f32, byoc.target = "dnnl"} : (tensor<1x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  %3 = nn.relu %2 : tensor<1x3x2x2xf32>
  func.return %3 : tensor<1x3x2x2xf32>
}

// -----

/// No bias, a grouped conv (groups = 2: the scale still goes by output channel), and an
/// nn.add of a (C, 1, 1) constant as the bias; one batch_norm per conv.
// CHECK-LABEL: func.func @grouped_and_add
// CHECK-NEXT:  %[[W:.*]] = nn.constant dense<[2.0, 2.0, 4.0, 4.0]> : tensor<2x2x1x1xf32>
// CHECK-NEXT:  %[[C:.*]] = nn.conv2d %x, %[[W]] {groups = 2 : i64} : (tensor<1x4x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  %[[B:.*]] = nn.constant dense<[-2.0, -4.0]> : tensor<2xf32>
// CHECK-NEXT:  %[[Y:.*]] = nn.bias_add %[[C]], %[[B]] : (tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  %[[W2:.*]] = nn.constant dense<[4.0, 4.0, 8.0, 8.0]> : tensor<2x2x1x1xf32>
// CHECK-NEXT:  %[[C2:.*]] = nn.conv2d %[[Y]], %[[W2]] : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  %[[B2:.*]] = nn.constant dense<[2.0, 0.0]> : tensor<2xf32>
// CHECK-NEXT:  %[[Y2:.*]] = nn.bias_add %[[C2]], %[[B2]] : (tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  func.return %[[Y2]]
func.func @grouped_and_add(%x: tensor<1x4x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = nn.constant dense<1.0> : tensor<2x2x1x1xf32>
  %g = nn.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %zero = nn.constant dense<0.0> : tensor<2xf32>
  %one = nn.constant dense<1.0> : tensor<2xf32>
  %0 = nn.conv2d %x, %w {groups = 2 : i64} : (tensor<1x4x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = nn.batch_norm %0, %g, %zero, %one, %one {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %w2 = nn.constant dense<2.0> : tensor<2x2x1x1xf32>
  %c = nn.constant dense<[[[1.0]], [[0.0]]]> : tensor<2x1x1xf32>
  %2 = nn.conv2d %1, %w2 : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %3 = nn.add %c, %2 : (tensor<2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %4 = nn.batch_norm %3, %g, %zero, %zero, %one {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %4 : tensor<1x2x3x3xf32>
}

// -----

/// Left alone: the conv's value is read twice; a parameter is computed; the weight is
/// computed; the batch_norm is not on the channel axis of NCHW (NHWC); the bias is not
/// per channel; var + epsilon is 0 (the scale is not finite: the batch_norm's inf/NaN stay
/// where the reference puts them).
// CHECK-LABEL: func.func @not_folded
// CHECK-COUNT-6: nn.batch_norm
// CHECK-NOT:   nn.batch_norm
func.func @not_folded(%x: tensor<1x2x3x3xf32>, %p: tensor<2xf32>, %wx: tensor<2x2x1x1xf32>, %xh: tensor<1x3x3x2xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x3x3x2xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = nn.constant dense<1.0> : tensor<2x2x1x1xf32>
  %k = nn.constant dense<1.0> : tensor<2xf32>
  %0 = nn.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = nn.batch_norm %0, %k, %k, %k, %k : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %2 = nn.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %3 = nn.batch_norm %2, %k, %p, %k, %k : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %4 = nn.conv2d %x, %wx : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %5 = nn.batch_norm %4, %k, %k, %k, %k : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %wh = nn.constant dense<1.0> : tensor<1x1x2x2xf32>
  %6 = nn.conv2d %xh, %wh {data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x3x3x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x3x3x2xf32>
  %7 = nn.batch_norm %6, %k, %k, %k, %k {axis = 3 : i64, data_layout = "NHWC"} : (tensor<1x3x3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x3x3x2xf32>
  %full = nn.constant dense<1.0> : tensor<1x2x3x3xf32>
  %8 = nn.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %9 = nn.add %8, %full : tensor<1x2x3x3xf32>
  %10 = nn.batch_norm %9, %k, %k, %k, %k : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %z = nn.constant dense<0.0> : tensor<2xf32>
  %11 = nn.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %12 = nn.batch_norm %11, %k, %k, %k, %z {epsilon = 0.0 : f32} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %0, %1, %3, %5, %7, %10, %12 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x3x3x2xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
