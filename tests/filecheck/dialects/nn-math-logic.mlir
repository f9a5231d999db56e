// The nn ops of the ONNX-coverage work (math_ops.py, logic_ops.py) parse, print and parse
// back to the same text (the generic form: tests/dialects/test_nn.py round-trips each op).
// RUN: %byoc-opt %s | %byoc-opt | %filecheck %s
// RUN: %byoc-opt %s > %t.custom && %byoc-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2

// CHECK-LABEL: func.func @unary
// CHECK:      %0 = nn.sin %x : tensor<2x3xf32>
// CHECK-NEXT: %1 = nn.cos %0 : tensor<2x3xf32>
// CHECK-NEXT: %2 = nn.tan %1 : tensor<2x3xf32>
// CHECK-NEXT: %3 = nn.asin %2 : tensor<2x3xf32>
// CHECK-NEXT: %4 = nn.acos %3 : tensor<2x3xf32>
// CHECK-NEXT: %5 = nn.atan %4 : tensor<2x3xf32>
// CHECK-NEXT: %6 = nn.sinh %5 : tensor<2x3xf32>
// CHECK-NEXT: %7 = nn.cosh %6 : tensor<2x3xf32>
// CHECK-NEXT: %8 = nn.asinh %7 : tensor<2x3xf32>
// CHECK-NEXT: %9 = nn.acosh %8 : tensor<2x3xf32>
// CHECK-NEXT: %10 = nn.atanh %9 : tensor<2x3xf32>
// CHECK-NEXT: %11 = nn.floor %10 : tensor<2x3xf32>
// CHECK-NEXT: %12 = nn.ceil %11 : tensor<2x3xf32>
// CHECK-NEXT: %13 = nn.round %12 : tensor<2x3xf32>
// CHECK-NEXT: %14 = nn.softplus %13 : tensor<2x3xf32>
// CHECK-NEXT: %15 = nn.softsign %14 : tensor<2x3xf32>
// CHECK-NEXT: %16 = nn.mish %15 : tensor<2x3xf32>
// CHECK-NEXT: %17 = nn.gelu %16 {approximate = "tanh"} : tensor<2x3xf32>
// CHECK-NEXT: %18 = nn.elu %17 {alpha = 5.000000e-01 : f64} : tensor<2x3xf32>
// CHECK-NEXT: %19 = nn.selu %18 : tensor<2x3xf32>
// CHECK-NEXT: %20 = nn.celu %19 {alpha = 2.000000e+00 : f64} : tensor<2x3xf32>
// CHECK-NEXT: %21 = nn.thresholded_relu %20 {alpha = 2.500000e-01 : f64} : tensor<2x3xf32>
// CHECK-NEXT: %22 = nn.swish %21 : tensor<2x3xf32>
// CHECK-NEXT: %23 = nn.shrink %22 {bias = 5.000000e-01 : f64, lambd = 1.000000e+00 : f64} : tensor<2x3xf32>
// CHECK-NEXT: %24 = nn.sign %23 : tensor<2x3xf32>
// CHECK-NEXT: %25 = nn.mod %24, %x {fmod = true} : tensor<2x3xf32>
// CHECK-NEXT: %26 = nn.sin %d : tensor<2x3xf64>
// CHECK-NEXT: %27 = nn.gelu %h : tensor<4xf16>
// CHECK-NEXT: func.return %25 : tensor<2x3xf32>
func.func @unary(%x: tensor<2x3xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>) -> tensor<2x3xf32> {
  %0 = nn.sin %x : tensor<2x3xf32>
  %1 = nn.cos %0 : tensor<2x3xf32>
  %2 = nn.tan %1 : tensor<2x3xf32>
  %3 = nn.asin %2 : tensor<2x3xf32>
  %4 = nn.acos %3 : tensor<2x3xf32>
  %5 = nn.atan %4 : tensor<2x3xf32>
  %6 = nn.sinh %5 : tensor<2x3xf32>
  %7 = nn.cosh %6 : tensor<2x3xf32>
  %8 = nn.asinh %7 : tensor<2x3xf32>
  %9 = nn.acosh %8 : tensor<2x3xf32>
  %10 = nn.atanh %9 : tensor<2x3xf32>
  %11 = nn.floor %10 : tensor<2x3xf32>
  %12 = nn.ceil %11 : tensor<2x3xf32>
  %13 = nn.round %12 : tensor<2x3xf32>
  %14 = nn.softplus %13 : tensor<2x3xf32>
  %15 = nn.softsign %14 : tensor<2x3xf32>
  %16 = nn.mish %15 : tensor<2x3xf32>
  %17 = nn.gelu %16 {approximate = "tanh"} : tensor<2x3xf32>
  %18 = nn.elu %17 {alpha = 0.5 : f64} : tensor<2x3xf32>
  %19 = nn.selu %18 : tensor<2x3xf32>
  %20 = nn.celu %19 {alpha = 2.0 : f64} : tensor<2x3xf32>
  %21 = nn.thresholded_relu %20 {alpha = 0.25 : f64} : tensor<2x3xf32>
  %22 = nn.swish %21 : tensor<2x3xf32>
  %23 = nn.shrink %22 {bias = 0.5 : f64, lambd = 1.0 : f64} : tensor<2x3xf32>
  %24 = nn.sign %23 : tensor<2x3xf32>
  %25 = nn.mod %24, %x {fmod = true} : tensor<2x3xf32>
  %26 = nn.sin %d : tensor<2x3xf64>
  %27 = nn.gelu %h : tensor<4xf16>
  func.return %25 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @predicates
// CHECK:      %0 = nn.is_nan %x : (tensor<2x3xf64>) -> tensor<2x3xi1>
// CHECK-NEXT: %1 = nn.is_inf %x {detect_negative = false} : (tensor<2x3xf64>) -> tensor<2x3xi1>
// CHECK-NEXT: func.return %0, %1 : tensor<2x3xi1>, tensor<2x3xi1>
func.func @predicates(%x: tensor<2x3xf64>) -> (tensor<2x3xi1>, tensor<2x3xi1>) {
  %0 = nn.is_nan %x : (tensor<2x3xf64>) -> tensor<2x3xi1>
  %1 = nn.is_inf %x {detect_negative = false} : (tensor<2x3xf64>) -> tensor<2x3xi1>
  func.return %0, %1 : tensor<2x3xi1>, tensor<2x3xi1>
}

// CHECK-LABEL: func.func @integers
// CHECK:      %0 = nn.bitwise_and %a, %b : tensor<4xui8>
// CHECK-NEXT: %1 = nn.bitwise_or %0, %b : tensor<4xui8>
// CHECK-NEXT: %2 = nn.bitwise_xor %1, %a : tensor<4xui8>
// CHECK-NEXT: %3 = nn.bitwise_not %2 : tensor<4xui8>
// CHECK-NEXT: %4 = nn.bit_shift %3, %b {direction = "left"} : tensor<4xui8>
// CHECK-NEXT: %5 = nn.mod %c, %c : tensor<2x4xi16>
// CHECK-NEXT: func.return %5 : tensor<2x4xi16>
func.func @integers(%a: tensor<4xui8>, %b: tensor<4xui8>, %c: tensor<2x4xi16>) -> tensor<2x4xi16> {
  %0 = nn.bitwise_and %a, %b : tensor<4xui8>
  %1 = nn.bitwise_or %0, %b : tensor<4xui8>
  %2 = nn.bitwise_xor %1, %a : tensor<4xui8>
  %3 = nn.bitwise_not %2 : tensor<4xui8>
  %4 = nn.bit_shift %3, %b {direction = "left"} : tensor<4xui8>
  %5 = nn.mod %c, %c : tensor<2x4xi16>
  func.return %5 : tensor<2x4xi16>
}

// CHECK-LABEL: func.func @reductions
// CHECK:      %0 = nn.reduce_min %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %1 = nn.reduce_prod %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT: %2 = nn.reduce_l1 %x : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT: %3 = nn.reduce_l2 %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %4 = nn.reduce_sum_square %x {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %5 = nn.reduce_log_sum %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %6 = nn.reduce_log_sum_exp %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %7 = nn.reduce_min %b : (tensor<3xi1>) -> tensor<i1>
// CHECK-NEXT: func.return %7 : tensor<i1>
func.func @reductions(%x: tensor<2x3x4xf32>, %b: tensor<3xi1>) -> tensor<i1> {
  %0 = nn.reduce_min %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %1 = nn.reduce_prod %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %2 = nn.reduce_l1 %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %3 = nn.reduce_l2 %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %4 = nn.reduce_sum_square %x {axes = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
  %5 = nn.reduce_log_sum %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %6 = nn.reduce_log_sum_exp %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %7 = nn.reduce_min %b : (tensor<3xi1>) -> tensor<i1>
  func.return %7 : tensor<i1>
}

// CHECK-LABEL: func.func @indices
// CHECK:      %0 = nn.argmax %x {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x1xi64>
// CHECK-NEXT: %1 = nn.argmin %x {keepdims = false, select_last_index = true} : (tensor<2x5xf32>) -> tensor<5xi64>
// CHECK-NEXT: %2 = nn.cumsum %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x5xf32>
// CHECK-NEXT: %3 = nn.cumprod %2 {axis = -1 : i64} : tensor<2x5xf32>
// CHECK-NEXT: %4, %5 = nn.topk %x {k = 3 : i64, largest = false} : (tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
// CHECK-NEXT: %6 = nn.einsum %x, %y {equation = "ij,kl->il"} : (tensor<2x5xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: func.return %0, %1, %2, %4, %5, %6 : tensor<2x1xi64>, tensor<5xi64>, tensor<2x5xf32>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x4xf32>
func.func @indices(%x: tensor<2x5xf32>, %y: tensor<3x4xf32>) -> (tensor<2x1xi64>, tensor<5xi64>, tensor<2x5xf32>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x4xf32>) {
  %0 = nn.argmax %x {axis = 1} : (tensor<2x5xf32>) -> tensor<2x1xi64>
  %1 = nn.argmin %x {keepdims = false, select_last_index = true} : (tensor<2x5xf32>) -> tensor<5xi64>
  %2 = nn.cumsum %x {axis = 1, exclusive = true, reverse = true} : tensor<2x5xf32>
  %6 = nn.cumprod %2 {axis = -1} : tensor<2x5xf32>
  %3, %4 = nn.topk %x {k = 3, largest = false} : (tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  %5 = nn.einsum %x, %y {equation = "ij,kl->il"} : (tensor<2x5xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<2x1xi64>, tensor<5xi64>, tensor<2x5xf32>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x4xf32>
}

// CHECK-LABEL: func.func @building
// CHECK:      %0 = nn.tile %x {reps = array<i64: 2, 3>} : (tensor<2x1xi1>) -> tensor<4x3xi1>
// CHECK-NEXT: %1 = nn.broadcast_to %x {shape = array<i64: 3, 1, 4>} : (tensor<2x1xi1>) -> tensor<3x2x4xi1>
// CHECK-NEXT: %2 = nn.bitcast %x {dtype = "ui8"} : (tensor<2x1xi1>) -> tensor<2x1xui8>
// CHECK-NEXT: func.return %0, %1 : tensor<4x3xi1>, tensor<3x2x4xi1>
func.func @building(%x: tensor<2x1xi1>) -> (tensor<4x3xi1>, tensor<3x2x4xi1>) {
  %0 = nn.tile %x {reps = array<i64: 2, 3>} : (tensor<2x1xi1>) -> tensor<4x3xi1>
  %1 = nn.broadcast_to %x {shape = array<i64: 3, 1, 4>} : (tensor<2x1xi1>) -> tensor<3x2x4xi1>
  %2 = nn.bitcast %x {dtype = "ui8"} : (tensor<2x1xi1>) -> tensor<2x1xui8>
  func.return %0, %1 : tensor<4x3xi1>, tensor<3x2x4xi1>
}

// CHECK-LABEL: func.func @logic
// CHECK:      %0 = nn.equal %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT: %1 = nn.less %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT: %2 = nn.greater %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT: %3 = nn.less_equal %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT: %4 = nn.greater_equal %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT: %5 = nn.logical_and %0, %1 : tensor<2x3xi1>
// CHECK-NEXT: %6 = nn.logical_or %5, %2 : tensor<2x3xi1>
// CHECK-NEXT: %7 = nn.logical_xor %6, %3 : tensor<2x3xi1>
// CHECK-NEXT: %8 = nn.logical_not %7 : tensor<2x3xi1>
// CHECK-NEXT: %9 = nn.equal %8, %4 : tensor<2x3xi1>
// CHECK-NEXT: %10 = nn.where %9, %f, %f : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: func.return %10 : tensor<2x3xf32>
func.func @logic(%a: tensor<2x3xi64>, %b: tensor<3xi64>, %f: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = nn.equal %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %1 = nn.less %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %2 = nn.greater %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %3 = nn.less_equal %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %4 = nn.greater_equal %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %5 = nn.logical_and %0, %1 : tensor<2x3xi1>
  %6 = nn.logical_or %5, %2 : tensor<2x3xi1>
  %7 = nn.logical_xor %6, %3 : tensor<2x3xi1>
  %8 = nn.logical_not %7 : tensor<2x3xi1>
  %9 = nn.equal %8, %4 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %10 = nn.where %9, %f, %f : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %10 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @det
// CHECK:      %0 = nn.det %m : (tensor<2x3x3xf64>) -> tensor<2xf64>
// CHECK-NEXT: func.return %0 : tensor<2xf64>
func.func @det(%m: tensor<2x3x3xf64>) -> tensor<2xf64> {
  %0 = nn.det %m : (tensor<2x3x3xf64>) -> tensor<2xf64>
  func.return %0 : tensor<2xf64>
}
