// Every nn op parses, prints and parses back to the same text, in the custom
// and in the generic form, and both forms describe the same IR.
// RUN: %byoc-opt %s | %byoc-opt | %filecheck %s
// RUN: %byoc-opt %s --print-op-generic | %byoc-opt | %filecheck %s
// RUN: %byoc-opt %s > %t.custom && %byoc-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2
// RUN: %byoc-opt %s --print-op-generic > %t.generic && %byoc-opt %t.generic --print-op-generic > %t.generic2 && diff %t.generic %t.generic2
// RUN: %byoc-opt %t.generic > %t.fromgeneric && diff %t.custom %t.fromgeneric
// RUN: %byoc-opt %s --print-op-generic | %filecheck %s --check-prefix=GENERIC

/// Binary ops: one type when all agree, a functional type when they broadcast.
// CHECK-LABEL: func.func @binary
// CHECK:      %[[A:.*]] = nn.add %a, %b : tensor<2x3xf32>
// CHECK-NEXT: %[[S:.*]] = nn.subtract %[[A]], %b : tensor<2x3xf32>
// CHECK-NEXT: %[[M:.*]] = nn.multiply %[[S]], %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[D:.*]] = nn.divide %[[M]], %col : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %[[X:.*]] = nn.maximum %[[D]], %a : tensor<2x3xf32>
// CHECK-NEXT: %[[N:.*]] = nn.minimum %[[X]], %a : tensor<2x3xf32>
// CHECK-NEXT: %[[P:.*]] = nn.power %[[N]], %b : tensor<2x3xf32>
// CHECK-NEXT: %[[R:.*]] = nn.prelu %[[P]], %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf32>
// GENERIC-LABEL: sym_name = "binary"
// GENERIC: "nn.add"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC: "nn.multiply"(%{{.*}}, %row) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %row: tensor<3xf32>, %col: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %0 = nn.add %a, %b : tensor<2x3xf32>
  %1 = nn.subtract %0, %b : tensor<2x3xf32>
  %2 = nn.multiply %1, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = nn.divide %2, %col : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %4 = nn.maximum %3, %a : tensor<2x3xf32>
  %5 = nn.minimum %4, %a : tensor<2x3xf32>
  %6 = nn.power %5, %b : tensor<2x3xf32>
  %7 = nn.prelu %6, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %7 : tensor<2x3xf32>
}

/// The same ops on integer tensors, and a broadcast of both operands.
// CHECK-LABEL: func.func @binary_int
// CHECK:      nn.add %a, %b : tensor<4xi32>
// CHECK-NEXT: nn.subtract %{{.*}}, %b : tensor<4xi32>
// CHECK-NEXT: nn.multiply %{{.*}}, %b : tensor<4xi32>
// CHECK-NEXT: nn.maximum %{{.*}}, %b : tensor<4xi32>
// CHECK-NEXT: nn.minimum %{{.*}}, %b : tensor<4xi32>
// CHECK-NEXT: nn.add %c, %d : (tensor<3x1xi64>, tensor<1x5xi64>) -> tensor<3x5xi64>
func.func @binary_int(%a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<3x1xi64>, %d: tensor<1x5xi64>) -> tensor<3x5xi64> {
  %0 = nn.add %a, %b : tensor<4xi32>
  %1 = nn.subtract %0, %b : tensor<4xi32>
  %2 = nn.multiply %1, %b : tensor<4xi32>
  %3 = nn.maximum %2, %b : tensor<4xi32>
  %4 = nn.minimum %3, %b : tensor<4xi32>
  %5 = nn.add %c, %d : (tensor<3x1xi64>, tensor<1x5xi64>) -> tensor<3x5xi64>
  func.return %5 : tensor<3x5xi64>
}

/// Unary ops without attributes.
// CHECK-LABEL: func.func @unary
// CHECK:      nn.relu %x : tensor<2x2xf32>
// CHECK-NEXT: nn.sigmoid %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.tanh %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.exp %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.log %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.sqrt %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.negative %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.abs %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.erf %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.reciprocal %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.hard_swish %{{.*}} : tensor<2x2xf32>
// CHECK-NEXT: nn.relu %i : tensor<3xi64>
// CHECK-NEXT: nn.negative %{{.*}} : tensor<3xi64>
// CHECK-NEXT: nn.abs %{{.*}} : tensor<3xi64>
// GENERIC-LABEL: sym_name = "unary"
// GENERIC: "nn.relu"(%x) : (tensor<2x2xf32>) -> tensor<2x2xf32>
func.func @unary(%x: tensor<2x2xf32>, %i: tensor<3xi64>) -> (tensor<2x2xf32>, tensor<3xi64>) {
  %0 = nn.relu %x : tensor<2x2xf32>
  %1 = nn.sigmoid %0 : tensor<2x2xf32>
  %2 = nn.tanh %1 : tensor<2x2xf32>
  %3 = nn.exp %2 : tensor<2x2xf32>
  %4 = nn.log %3 : tensor<2x2xf32>
  %5 = nn.sqrt %4 : tensor<2x2xf32>
  %6 = nn.negative %5 : tensor<2x2xf32>
  %7 = nn.abs %6 : tensor<2x2xf32>
  %8 = nn.erf %7 : tensor<2x2xf32>
  %9 = nn.reciprocal %8 : tensor<2x2xf32>
  %10 = nn.hard_swish %9 : tensor<2x2xf32>
  %11 = nn.relu %i : tensor<3xi64>
  %12 = nn.negative %11 : tensor<3xi64>
  %13 = nn.abs %12 : tensor<3xi64>
  func.return %10, %13 : tensor<2x2xf32>, tensor<3xi64>
}

/// Unary ops with attributes: only values that differ from the default print.
// CHECK-LABEL: func.func @unary_attrs
// CHECK:      nn.clip %x {a_min = 0.000000e+00 : f64, a_max = 6.000000e+00 : f64} : tensor<8xf32>
// CHECK-NEXT: nn.clip %{{.*}} : tensor<8xf32>
// CHECK-NEXT: nn.leaky_relu %{{.*}} {alpha = 2.000000e-01 : f64} : tensor<8xf32>
// CHECK-NEXT: nn.leaky_relu %{{.*}} : tensor<8xf32>
// CHECK-NEXT: nn.hard_sigmoid %{{.*}} {alpha = 1.666000e-01 : f64} : tensor<8xf32>
// CHECK-NEXT: nn.cast %{{.*}} {dtype = "i32"} : (tensor<8xf32>) -> tensor<8xi32>
// CHECK-NEXT: nn.cast %{{.*}} {dtype = "f32"} : (tensor<8xi32>) -> tensor<8xf32>
// GENERIC-LABEL: sym_name = "unary_attrs"
// GENERIC: "nn.clip"(%x) <{a_min = 0.000000e+00 : f64, a_max = 6.000000e+00 : f64}> : (tensor<8xf32>) -> tensor<8xf32>
// GENERIC: "nn.cast"(%{{.*}}) <{dtype = "i32"}> : (tensor<8xf32>) -> tensor<8xi32>
func.func @unary_attrs(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = nn.clip %x {a_min = 0.0 : f64, a_max = 6.0 : f64} : tensor<8xf32>
  %1 = nn.clip %0 : tensor<8xf32>
  %2 = nn.leaky_relu %1 {alpha = 0.2 : f64} : tensor<8xf32>
  %3 = nn.leaky_relu %2 {alpha = 0.01 : f64} : tensor<8xf32>
  %4 = nn.hard_sigmoid %3 {alpha = 0.1666 : f64, beta = 0.5 : f64} : tensor<8xf32>
  %5 = nn.cast %4 {dtype = "i32"} : (tensor<8xf32>) -> tensor<8xi32>
  %6 = nn.cast %5 {dtype = "f32"} : (tensor<8xi32>) -> tensor<8xf32>
  func.return %6 : tensor<8xf32>
}

/// Convolutions: strides, padding (top, left, bottom, right), dilation, groups.
/// The generic form shows every property, defaults included.
// CHECK-LABEL: func.func @conv
// CHECK:      nn.conv2d %x, %w : (tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x7x7xf32>
// CHECK-NEXT: nn.conv2d %x, %wg {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x5x5xf32>
// CHECK-NEXT: nn.conv2d %x, %w {padding = array<i64: 0, 1, 2, 0>, dilation = array<i64: 2, 3>} : (tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x7x4xf32>
// CHECK-NEXT: nn.conv2d_transpose %x, %wt {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : (tensor<2x4x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x18x18xf32>
// GENERIC-LABEL: sym_name = "conv"
// GENERIC: "nn.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, data_layout = "NCHW", kernel_layout = "OIHW"}> : (tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x7x7xf32>
// GENERIC: "nn.conv2d"(%x, %wg) <{strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64
func.func @conv(%x: tensor<2x4x9x9xf32>, %w: tensor<8x4x3x3xf32>, %wg: tensor<8x2x3x3xf32>, %wt: tensor<4x3x3x3xf32>) -> tensor<2x3x18x18xf32> {
  %0 = nn.conv2d %x, %w : (tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x7x7xf32>
  %1 = nn.conv2d %x, %wg {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x5x5xf32>
  %2 = nn.conv2d %x, %w {padding = array<i64: 0, 1, 2, 0>, dilation = array<i64: 2, 3>} : (tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x7x4xf32>
  %3 = nn.conv2d_transpose %x, %wt {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : (tensor<2x4x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x18x18xf32>
  func.return %3 : tensor<2x3x18x18xf32>
}

/// dense is x . W^T; matmul is numpy.matmul (batched, broadcasting, 1-D operands).
// CHECK-LABEL: func.func @linear
// CHECK:      nn.dense %x, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: nn.bias_add %{{.*}}, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: nn.matmul %l, %r : (tensor<5x1x2x3xf32>, tensor<4x3x6xf32>) -> tensor<5x4x2x6xf32>
// CHECK-NEXT: nn.matmul %v, %r : (tensor<3xf32>, tensor<4x3x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: nn.dense %x3, %w : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
func.func @linear(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>, %l: tensor<5x1x2x3xf32>, %r: tensor<4x3x6xf32>, %v: tensor<3xf32>, %x3: tensor<2x4x16xf32>) -> tensor<4x8xf32> {
  %0 = nn.dense %x, %w : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = nn.matmul %l, %r : (tensor<5x1x2x3xf32>, tensor<4x3x6xf32>) -> tensor<5x4x2x6xf32>
  %3 = nn.matmul %v, %r : (tensor<3xf32>, tensor<4x3x6xf32>) -> tensor<4x6xf32>
  %4 = nn.dense %x3, %w : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
  func.return %1 : tensor<4x8xf32>
}

/// Normalisation: bias_add and batch_norm on a non-default axis, lrn, softmax.
// CHECK-LABEL: func.func @norm
// CHECK:      nn.bias_add %x, %c {axis = 3 : i64} : (tensor<2x3x4x5xf32>, tensor<5xf32>) -> tensor<2x3x4x5xf32>
// CHECK-NEXT: nn.batch_norm %x, %g, %b, %m, %v {epsilon = 1.000000e-03 : f64} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
// CHECK-NEXT: nn.lrn %{{.*}} {size = 3 : i64} : tensor<2x3x4x5xf32>
// CHECK-NEXT: nn.softmax %{{.*}} {axis = 1 : i64} : tensor<2x3x4x5xf32>
// CHECK-NEXT: nn.softmax %{{.*}} : tensor<2x3x4x5xf32>
func.func @norm(%x: tensor<2x3x4x5xf32>, %c: tensor<5xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x4x5xf32> {
  %0 = nn.bias_add %x, %c {axis = 3 : i64} : (tensor<2x3x4x5xf32>, tensor<5xf32>) -> tensor<2x3x4x5xf32>
  %1 = nn.batch_norm %x, %g, %b, %m, %v {epsilon = 0.001 : f64} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  %2 = nn.lrn %1 {size = 3 : i64} : tensor<2x3x4x5xf32>
  %3 = nn.softmax %2 {axis = 1 : i64} : tensor<2x3x4x5xf32>
  %4 = nn.softmax %3 {axis = -1 : i64} : tensor<2x3x4x5xf32>
  func.return %4 : tensor<2x3x4x5xf32>
}

/// Pools: ceil_mode adds a partial window; count_include_pad; global pools.
/// (A pool that keeps the shape prints one type, like an elementwise op.)
// CHECK-LABEL: func.func @pool
// CHECK:      nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
// CHECK-NEXT: nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: nn.avg_pool2d %x {pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = true} : tensor<1x3x7x7xf32>
// CHECK-NEXT: nn.global_avg_pool2d %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT: nn.global_max_pool2d %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
// GENERIC-LABEL: sym_name = "pool"
// GENERIC: "nn.max_pool2d"(%x) <{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true
func.func @pool(%x: tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32> {
  %0 = nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf32>) -> tensor<1x3x3x3xf32>
  %1 = nn.max_pool2d %x {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>, ceil_mode = true} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  %2 = nn.avg_pool2d %x {pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = true} : (tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %3 = nn.global_avg_pool2d %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
  %4 = nn.global_max_pool2d %x : (tensor<1x3x7x7xf32>) -> tensor<1x3x1x1xf32>
  func.return %4 : tensor<1x3x1x1xf32>
}

/// Layout ops.
// CHECK-LABEL: func.func @layout
// CHECK:      nn.reshape %x {newshape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT: nn.flatten %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: nn.flatten %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
// CHECK-NEXT: nn.transpose %x {axes = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: nn.transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT: nn.concatenate %x, %y, %x {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1x4xf32>, tensor<2x3x4xf32>) -> tensor<2x7x4xf32>
// CHECK-NEXT: nn.pad %x {pad_width = array<i64: 0, 0, 1, 2, 3, 0>, pad_value = 1.500000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x6x7xf32>
// CHECK-NEXT: nn.pad %x {pad_width = array<i64: 1, 1, 2, 2, 0, 0>, pad_mode = "reflect"} : (tensor<2x3x4xf32>) -> tensor<4x7x4xf32>
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = nn.split %x {indices = array<i64: 1, 3>, axis = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x2xf32>, tensor<2x3x1xf32>)
// CHECK-NEXT: nn.strided_slice %x {begin = array<i64: 0, 2, 1>, end = array<i64: 2, -1, 4>, strides = array<i64: 1, -1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT: nn.resize2d %img {size = array<i64: 8, 6>, method = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x2x4x3xf32>) -> tensor<1x2x8x6xf32>
// CHECK-NEXT: nn.concatenate %i : tensor<3xi32>
// GENERIC-LABEL: sym_name = "layout"
// GENERIC: "nn.concatenate"(%x, %y, %x) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x1x4xf32>, tensor<2x3x4xf32>) -> tensor<2x7x4xf32>
// GENERIC: "nn.split"(%x) <{indices = array<i64: 1, 3>, axis = 2 : i64}> : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x2xf32>, tensor<2x3x1xf32>)
func.func @layout(%x: tensor<2x3x4xf32>, %y: tensor<2x1x4xf32>, %img: tensor<1x2x4x3xf32>, %i: tensor<3xi32>) -> tensor<2x3x2xf32> {
  %0 = nn.reshape %x {newshape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = nn.flatten %x : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %2 = nn.flatten %x {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  %3 = nn.transpose %x {axes = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %4 = nn.transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %5 = nn.concatenate %x, %y, %x {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1x4xf32>, tensor<2x3x4xf32>) -> tensor<2x7x4xf32>
  %6 = nn.pad %x {pad_width = array<i64: 0, 0, 1, 2, 3, 0>, pad_value = 1.5 : f64} : (tensor<2x3x4xf32>) -> tensor<2x6x7xf32>
  %7 = nn.pad %x {pad_width = array<i64: 1, 1, 2, 2, 0, 0>, pad_mode = "reflect"} : (tensor<2x3x4xf32>) -> tensor<4x7x4xf32>
  %8:3 = nn.split %x {indices = array<i64: 1, 3>, axis = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x2xf32>, tensor<2x3x1xf32>)
  %9 = nn.strided_slice %x {begin = array<i64: 0, 2, 1>, end = array<i64: 2, -1, 4>, strides = array<i64: 1, -1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  %10 = nn.resize2d %img {size = array<i64: 8, 6>, method = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x2x4x3xf32>) -> tensor<1x2x8x6xf32>
  %11 = nn.concatenate %i : (tensor<3xi32>) -> tensor<3xi32>
  func.return %9 : tensor<2x3x2xf32>
}

/// take gathers along an axis with integer indices of any shape.
// CHECK-LABEL: func.func @take
// CHECK:      nn.take %x, %idx {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x2xi64>) -> tensor<2x2x2x4xf32>
// CHECK-NEXT: nn.take %x, %one : (tensor<2x3x4xf32>, tensor<i32>) -> tensor<3x4xf32>
// GENERIC-LABEL: sym_name = "take"
// GENERIC: "nn.take"(%x, %idx) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x2xi64>) -> tensor<2x2x2x4xf32>
func.func @take(%x: tensor<2x3x4xf32>, %idx: tensor<2x2xi64>, %one: tensor<i32>) -> tensor<3x4xf32> {
  %0 = nn.take %x, %idx {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x2xi64>) -> tensor<2x2x2x4xf32>
  %1 = nn.take %x, %one : (tensor<2x3x4xf32>, tensor<i32>) -> tensor<3x4xf32>
  func.return %1 : tensor<3x4xf32>
}

/// Reductions: all axes by default, keepdims, negative axes.
// CHECK-LABEL: func.func @reduce
// CHECK:      nn.reduce_mean %x : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT: nn.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT: nn.reduce_max %x {axes = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: nn.reduce_sum %i {axes = array<i64: 0>} : (tensor<5x2xi64>) -> tensor<2xi64>
func.func @reduce(%x: tensor<2x3x4xf32>, %i: tensor<5x2xi64>) -> tensor<3xf32> {
  %0 = nn.reduce_mean %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %1 = nn.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %2 = nn.reduce_max %x {axes = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %3 = nn.reduce_sum %i {axes = array<i64: 0>} : (tensor<5x2xi64>) -> tensor<2xi64>
  func.return %2 : tensor<3xf32>
}

/// Constants: a list up to 16 elements (exact f32 values), hex above, splats,
/// nested lists, integers; discardable attributes such as byoc.target are kept.
/// (inf, nan and large integral floats are in nn-constant-special.mlir: xDSL's
/// generic form of a dense list does not read back the hex it prints for them.)
// CHECK-LABEL: func.func @constants
// CHECK:      nn.constant dense<[1.0, -2.5, 0.0, 3.25]> : tensor<2x2xf32>
// CHECK-NEXT: nn.constant dense<"0x0000803F0000003F0000803E0000003E0000803D0000003D0000803C0000003C0000803B0000003B0000803A0000003A0000803900000039000080380000003800008037">
// CHECK-SAME: : tensor<17xf32>
// CHECK-NEXT: nn.constant dense<[3.0000000054977558e+38, -9.999999350456404e-39, 0.10000000149011612]> : tensor<3xf32>
// CHECK-NEXT: nn.constant dense<[7, 7, 7, 7, 7, 7]> : tensor<2x3xi32>
// CHECK-NEXT: nn.constant dense<[1, -2, 3]> {byoc.target = "ccompiler"} : tensor<3xi64>
// CHECK-NEXT: nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<2x2xf32>
// CHECK-NEXT: nn.constant dense<[0.5]> : tensor<f32>
// CHECK-NEXT: nn.constant dense<[]> : tensor<0x3xf32>
// GENERIC-LABEL: sym_name = "constants"
// GENERIC: "nn.constant"() <{value = dense<[[1.000000e+00, -2.500000e+00], [0.000000e+00, 3.250000e+00]]> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
// GENERIC: "nn.constant"() <{value = dense<[1, -2, 3]> : tensor<3xi64>}> {byoc.target = "ccompiler"} : () -> tensor<3xi64>
func.func @constants() -> tensor<2x2xf32> {
  %0 = nn.constant dense<[1.0, -2.5, 0.0, 3.25]> : tensor<2x2xf32>
  %1 = nn.constant dense<"0x0000803F0000003F0000803E0000003E0000803D0000003D0000803C0000003C0000803B0000003B0000803A0000003A0000803900000039000080380000003800008037"> : tensor<17xf32>
  %2 = nn.constant dense<[3.0e+38, -1.0e-38, 0.1]> : tensor<3xf32>
  %3 = nn.constant dense<7> : tensor<2x3xi32>
  %4 = nn.constant dense<[1, -2, 3]> {byoc.target = "ccompiler"} : tensor<3xi64>
  %5 = nn.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %6 = nn.constant dense<0.5> : tensor<f32>
  %7 = nn.constant dense<[]> : tensor<0x3xf32>
  func.return %5 : tensor<2x2xf32>
}

/// Discardable attributes on any op print in the same dictionary as its properties.
// CHECK-LABEL: func.func @discardable
// CHECK:      nn.add %a, %a {byoc.target = "ccompiler"} : tensor<4xf32>
// CHECK-NEXT: nn.softmax %{{.*}} {axis = 0 : i64, byoc.target = "dnnl", note = 3 : i64} : tensor<4xf32>
// GENERIC-LABEL: sym_name = "discardable"
// GENERIC: "nn.softmax"(%{{.*}}) <{axis = 0 : i64}> {byoc.target = "dnnl", note = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
func.func @discardable(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.add %a, %a {byoc.target = "ccompiler"} : tensor<4xf32>
  %1 = nn.softmax %0 {byoc.target = "dnnl", axis = 0 : i64, note = 3 : i64} : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

/// Recurrent ops (ONNX LSTM/GRU/RNN): an absent operand is a tensor with no elements.
// CHECK-LABEL: func.func @recurrent
// CHECK:      %{{.*}}, %{{.*}}, %{{.*}} = nn.lstm %x, %w, %r, %b, %seq, %h, %h, %p {direction = "bidirectional", hidden_size = 6 : i64, activations = "Sigmoid,Tanh,Tanh,HardSigmoid,Elu,Softsign", activation_alpha = array<f64: 2.500000e-01, 5.000000e-01>, clip = 3.000000e+00 : f64} : (tensor<5x2x4xf32>, tensor<2x24x4xf32>, tensor<2x24x6xf32>, tensor<2x48xf32>, tensor<2xi32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>, tensor<2x18xf32>) -> (tensor<5x2x2x6xf32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>)
// CHECK-NEXT: %{{.*}}, %{{.*}} = nn.gru %x, %wg, %rg, %none, %noseq, %none {hidden_size = 6 : i64, linear_before_reset = 1 : i64, direction = "reverse"} : (tensor<5x2x4xf32>, tensor<1x18x4xf32>, tensor<1x18x6xf32>, tensor<0xf32>, tensor<0xi32>, tensor<0xf32>) -> (tensor<5x1x2x6xf32>, tensor<1x2x6xf32>)
// CHECK-NEXT: %{{.*}}, %{{.*}} = nn.rnn %x, %wr, %rr, %none, %noseq, %none {hidden_size = 6 : i64, layout = 1 : i64} : (tensor<5x2x4xf32>, tensor<1x6x4xf32>, tensor<1x6x6xf32>, tensor<0xf32>, tensor<0xi32>, tensor<0xf32>) -> (tensor<5x2x1x6xf32>, tensor<5x1x6xf32>)
// GENERIC-LABEL: sym_name = "recurrent"
// GENERIC: "nn.lstm"(%x, %w, %r, %b, %seq, %h, %h, %p) <{direction = "bidirectional", hidden_size = 6 : i64
func.func @recurrent(%x: tensor<5x2x4xf32>, %w: tensor<2x24x4xf32>, %r: tensor<2x24x6xf32>, %b: tensor<2x48xf32>, %seq: tensor<2xi32>, %h: tensor<2x2x6xf32>, %p: tensor<2x18xf32>, %none: tensor<0xf32>, %noseq: tensor<0xi32>, %wg: tensor<1x18x4xf32>, %rg: tensor<1x18x6xf32>, %wr: tensor<1x6x4xf32>, %rr: tensor<1x6x6xf32>) -> tensor<5x2x2x6xf32> {
  %y, %yh, %yc = nn.lstm %x, %w, %r, %b, %seq, %h, %h, %p {direction = "bidirectional", hidden_size = 6 : i64, activations = "Sigmoid,Tanh,Tanh,HardSigmoid,Elu,Softsign", activation_alpha = array<f64: 0.25, 0.5>, clip = 3.0 : f64} : (tensor<5x2x4xf32>, tensor<2x24x4xf32>, tensor<2x24x6xf32>, tensor<2x48xf32>, tensor<2xi32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>, tensor<2x18xf32>) -> (tensor<5x2x2x6xf32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>)
  %gy, %gh = nn.gru %x, %wg, %rg, %none, %noseq, %none {hidden_size = 6 : i64, linear_before_reset = 1 : i64, direction = "reverse"} : (tensor<5x2x4xf32>, tensor<1x18x4xf32>, tensor<1x18x6xf32>, tensor<0xf32>, tensor<0xi32>, tensor<0xf32>) -> (tensor<5x1x2x6xf32>, tensor<1x2x6xf32>)
  %ry, %rh = nn.rnn %x, %wr, %rr, %none, %noseq, %none {hidden_size = 6 : i64, layout = 1 : i64} : (tensor<5x2x4xf32>, tensor<1x6x4xf32>, tensor<1x6x6xf32>, tensor<0xf32>, tensor<0xi32>, tensor<0xf32>) -> (tensor<5x2x1x6xf32>, tensor<5x1x6xf32>)
  func.return %y : tensor<5x2x2x6xf32>
}

/// Layouts: data_layout / kernel_layout print when they differ from NCHW / OIHW.
// CHECK-LABEL: func.func @layouts
// CHECK:      nn.conv2d %x, %w {data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x6x6x4xf32>
// CHECK-NEXT: nn.max_pool2d %{{.*}} {data_layout = "NHWC", pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x6x4xf32>) -> tensor<1x3x3x4xf32>
// CHECK-NEXT: nn.global_avg_pool2d %{{.*}} {data_layout = "NHWC"} : (tensor<1x3x3x4xf32>) -> tensor<1x1x1x4xf32>
// CHECK-NEXT: nn.batch_norm %{{.*}}, %g, %g, %g, %g {axis = 3 : i64, data_layout = "NHWC"} : (tensor<1x1x1x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x1x1x4xf32>
func.func @layouts(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>, %g: tensor<4xf32>) -> tensor<1x1x1x4xf32> {
  %0 = nn.conv2d %x, %w {data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x6x6x4xf32>
  %1 = nn.max_pool2d %0 {data_layout = "NHWC", pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x6x6x4xf32>) -> tensor<1x3x3x4xf32>
  %2 = nn.global_avg_pool2d %1 {data_layout = "NHWC"} : (tensor<1x3x3x4xf32>) -> tensor<1x1x1x4xf32>
  %3 = nn.batch_norm %2, %g, %g, %g, %g {axis = 3 : i64, data_layout = "NHWC"} : (tensor<1x1x1x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x1x1x4xf32>
  func.return %3 : tensor<1x1x1x4xf32>
}

/// Dynamic dims: `?` propagates through the type relations.
// CHECK-LABEL: func.func @dynamic
// CHECK:      nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>) -> tensor<?x8x?x?xf32>
// CHECK-NEXT: nn.global_avg_pool2d %{{.*}} : (tensor<?x8x?x?xf32>) -> tensor<?x8x1x1xf32>
func.func @dynamic(%x: tensor<?x3x?x?xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<?x8x1x1xf32> {
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<?x3x?x?xf32>, tensor<8x3x3x3xf32>) -> tensor<?x8x?x?xf32>
  %1 = nn.global_avg_pool2d %0 : (tensor<?x8x?x?xf32>) -> tensor<?x8x1x1xf32>
  func.return %1 : tensor<?x8x1x1xf32>
}

/// ONNX coverage, part B (byoc/dialects/nn/indexing.py): gathers, scatters, norms, resize.
// CHECK-LABEL: func.func @indexing
// CHECK:      nn.gather_elements %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
// CHECK-NEXT: nn.gather_nd %x, %n : (tensor<2x3xf32>, tensor<4x2xi64>) -> tensor<4xf32>
// CHECK-NEXT: nn.scatter_elements %x, %i, %x {reduction = "add"} : (tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: nn.scatter_nd %x, %n, %u : (tensor<2x3xf32>, tensor<4x2xi64>, tensor<4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: nn.trilu %x {k = 1 : i64, upper = false} : tensor<2x3xf32>
// CHECK-NEXT: nn.one_hot %i, %v {depth = 4 : i64} : (tensor<2x3xi64>, tensor<2xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: nn.reverse_sequence %x, %l {batch_axis = 0 : i64, time_axis = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
// CHECK-NEXT: nn.layer_norm %x, %g, %g {epsilon = 1.000000e-03 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: nn.rms_norm %x, %g : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: nn.log_softmax %x {axis = 0 : i64} : tensor<2x3xf32>
// CHECK-NEXT: nn.hardmax %x : tensor<2x3xf32>
// CHECK-NEXT: nn.resize %x {size = array<i64: 4, 2>, scales = array<f64: 2.000000e+00, 7.500000e-01>, mode = "linear", antialias = true} : (tensor<2x3xf32>) -> tensor<4x2xf32>
// GENERIC-LABEL: sym_name = "indexing"
// GENERIC: "nn.resize"(%x) <{size = array<i64: 4, 2>, scales = array<f64: 2.000000e+00, 7.500000e-01>, mode = "linear", antialias = true, roi = array<f64>
func.func @indexing(%x: tensor<2x3xf32>, %i: tensor<2x3xi64>, %n: tensor<4x2xi64>, %u: tensor<4xf32>, %v: tensor<2xf32>, %l: tensor<2xi64>, %g: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = nn.gather_elements %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  %1 = nn.gather_nd %x, %n : (tensor<2x3xf32>, tensor<4x2xi64>) -> tensor<4xf32>
  %2 = nn.scatter_elements %x, %i, %x {reduction = "add"} : (tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = nn.scatter_nd %x, %n, %u : (tensor<2x3xf32>, tensor<4x2xi64>, tensor<4xf32>) -> tensor<2x3xf32>
  %4 = nn.trilu %x {k = 1 : i64, upper = false} : tensor<2x3xf32>
  %5 = nn.one_hot %i, %v {depth = 4 : i64} : (tensor<2x3xi64>, tensor<2xf32>) -> tensor<2x3x4xf32>
  %6 = nn.reverse_sequence %x, %l {batch_axis = 0 : i64, time_axis = 1 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %7 = nn.layer_norm %x, %g, %g {epsilon = 1.0e-03 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %8 = nn.rms_norm %x, %g : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %9 = nn.log_softmax %x {axis = 0 : i64} : tensor<2x3xf32>
  %10 = nn.hardmax %x : tensor<2x3xf32>
  %11 = nn.resize %x {size = array<i64: 4, 2>, scales = array<f64: 2.0, 0.75>, mode = "linear", antialias = true} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  func.return %10 : tensor<2x3xf32>
}

/// Attention (several results) and the NLL loss.
// CHECK-LABEL: func.func @attention
// CHECK:      %{{.*}}, %{{.*}}, %{{.*}} = nn.attention %q, %k, %v {num_outputs = 3 : i64, is_causal = true, q_num_heads = 2 : i64, kv_num_heads = 1 : i64} : (tensor<1x3x8xf32>, tensor<1x5x4xf32>, tensor<1x5x4xf32>) -> (tensor<1x3x8xf32>, tensor<1x1x5x4xf32>, tensor<1x1x5x4xf32>)
// CHECK-NEXT: nn.nll_loss %q, %t {reduction = "sum"} : (tensor<1x3x8xf32>, tensor<1x8xi64>) -> tensor<f32>
// CHECK-NEXT: nn.grid_sample %g, %gr {padding_mode = "border", align_corners = true} : (tensor<1x2x4x4xf32>, tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT: nn.col2im %c {image_shape = array<i64: 3, 4>, block_shape = array<i64: 2, 2>} : (tensor<1x8x6xf32>) -> tensor<1x2x3x4xf32>
func.func @attention(%q: tensor<1x3x8xf32>, %k: tensor<1x5x4xf32>, %v: tensor<1x5x4xf32>, %t: tensor<1x8xi64>, %g: tensor<1x2x4x4xf32>, %gr: tensor<1x3x4x2xf32>, %c: tensor<1x8x6xf32>) -> tensor<1x3x8xf32> {
  %y, %ck, %cv = nn.attention %q, %k, %v {num_outputs = 3 : i64, is_causal = true, q_num_heads = 2 : i64, kv_num_heads = 1 : i64} : (tensor<1x3x8xf32>, tensor<1x5x4xf32>, tensor<1x5x4xf32>) -> (tensor<1x3x8xf32>, tensor<1x1x5x4xf32>, tensor<1x1x5x4xf32>)
  %l = nn.nll_loss %q, %t {reduction = "sum"} : (tensor<1x3x8xf32>, tensor<1x8xi64>) -> tensor<f32>
  %s = nn.grid_sample %g, %gr {padding_mode = "border", align_corners = true} : (tensor<1x2x4x4xf32>, tensor<1x3x4x2xf32>) -> tensor<1x2x3x4xf32>
  %c2 = nn.col2im %c {image_shape = array<i64: 3, 4>, block_shape = array<i64: 2, 2>} : (tensor<1x8x6xf32>) -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x3x8xf32>
}

/// Detectors and transformers (issue 16): RoiAlign and RotaryEmbedding.
// CHECK-LABEL: func.func @detection
// CHECK:      %{{.*}} = nn.roi_align %x, %r, %b {mode = "max", output_height = 2 : i64, output_width = 3 : i64, spatial_scale = 5.000000e-01 : f64} : (tensor<1x3x8x8xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x3x2x3xf32>
// CHECK-NEXT: %{{.*}} = nn.rotary_embedding %q, %c, %c, %p {interleaved = true, num_heads = 2 : i64} : (tensor<2x3x16xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x16xf32>
// CHECK-NEXT: %{{.*}} = nn.deform_conv2d %x, %w, %o, %nb, %nb {padding = array<i64: 1, 1, 1, 1>, offset_group = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<2x3x3x3xf32>, tensor<1x54x8x8xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x2x8x8xf32>
// CHECK-NEXT: %{{.*}} = nn.tensor_scatter %q, %u, %wi {mode = "circular", axis = 1 : i64} : (tensor<2x3x16xf32>, tensor<2x1x16xf32>, tensor<2xi64>) -> tensor<2x3x16xf32>
// CHECK-NEXT: %{{.*}}, %{{.*}} = nn.linear_attention %q, %q, %q, %nb, %nb, %nb {q_num_heads = 2 : i64, kv_num_heads = 2 : i64, update_rule = "linear"} : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> (tensor<2x3x16xf32>, tensor<2x2x8x8xf32>)
func.func @detection(%x: tensor<1x3x8x8xf32>, %r: tensor<5x4xf32>, %b: tensor<5xi64>, %q: tensor<2x3x16xf32>, %c: tensor<10x4xf32>, %p: tensor<2x3xi64>, %w: tensor<2x3x3x3xf32>, %o: tensor<1x54x8x8xf32>, %nb: tensor<0xf32>, %u: tensor<2x1x16xf32>, %wi: tensor<2xi64>) -> tensor<5x3x2x3xf32> {
  %y = nn.roi_align %x, %r, %b {mode = "max", output_height = 2 : i64, output_width = 3 : i64, spatial_scale = 5.000000e-01 : f64} : (tensor<1x3x8x8xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x3x2x3xf32>
  %e = nn.rotary_embedding %q, %c, %c, %p {interleaved = true, num_heads = 2 : i64} : (tensor<2x3x16xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x16xf32>
  %d = nn.deform_conv2d %x, %w, %o, %nb, %nb {padding = array<i64: 1, 1, 1, 1>, offset_group = 3 : i64} : (tensor<1x3x8x8xf32>, tensor<2x3x3x3xf32>, tensor<1x54x8x8xf32>, tensor<0xf32>, tensor<0xf32>) -> tensor<1x2x8x8xf32>
  %t = nn.tensor_scatter %q, %u, %wi {mode = "circular", axis = 1 : i64} : (tensor<2x3x16xf32>, tensor<2x1x16xf32>, tensor<2xi64>) -> tensor<2x3x16xf32>
  %la, %ls = nn.linear_attention %q, %q, %q, %nb, %nb, %nb {q_num_heads = 2 : i64, kv_num_heads = 2 : i64, update_rule = "linear"} : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<0xf32>, tensor<0xf32>, tensor<0xf32>) -> (tensor<2x3x16xf32>, tensor<2x2x8x8xf32>)
  func.return %y : tensor<5x3x2x3xf32>
}
