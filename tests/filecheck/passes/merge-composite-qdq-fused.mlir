// The ccompiler target's fused int8 blocks (issue #13, byoc/targets/qdq.py): a residual add, a
// max pool, a concatenation and a batch norm + relu between a dequantize and a quantize each
// become one composite; an add whose operand is broadcast does not.
// RUN: %byoc-opt %s -p 'merge-composite{targets=ccompiler}' | %filecheck %s

// CHECK-LABEL: func.func @fused
// CHECK:      byoc.composite "ccompiler.qadd"
// CHECK:      byoc.composite "ccompiler.qmaxpool"
// CHECK:      byoc.composite "ccompiler.qconcat"
// CHECK:      byoc.composite "ccompiler.qlut"
// CHECK:        nn.batch_norm
// CHECK-NEXT:   nn.relu
func.func @fused(%a: tensor<1x2x4x4xui8>, %b: tensor<1x2x4x4xui8>) -> (tensor<1x2x4x4xui8>, tensor<1x2x2x2xui8>, tensor<1x4x4x4xui8>, tensor<1x2x4x4xui8>) {
  %s = nn.constant dense<0.05> : tensor<f32>
  %z = nn.constant dense<128> : tensor<ui8>
  %t = nn.constant dense<0.07> : tensor<f32>
  %g = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %da = nn.dequantize %a, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %db = nn.dequantize %b, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %sum = nn.add %da, %db : tensor<1x2x4x4xf32>
  %q0 = nn.quantize %sum, %t, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
  %dc = nn.dequantize %a, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %p = nn.max_pool2d %dc {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %q1 = nn.quantize %p, %s, %z : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x2x2xui8>
  %dd = nn.dequantize %a, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %de = nn.dequantize %b, %t, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %c = nn.concatenate %dd, %de {axis = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
  %q2 = nn.quantize %c, %s, %z : (tensor<1x4x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x4x4xui8>
  %df = nn.dequantize %b, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %n = nn.batch_norm %df, %g, %g, %g, %g : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %r = nn.relu %n : tensor<1x2x4x4xf32>
  %q3 = nn.quantize %r, %t, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
  func.return %q0, %q1, %q2, %q3 : tensor<1x2x4x4xui8>, tensor<1x2x2x2xui8>, tensor<1x4x4x4xui8>, tensor<1x2x4x4xui8>
}

// CHECK-LABEL: func.func @broadcast_add_stays_float
// CHECK-NOT:  ccompiler.qadd
// CHECK:      nn.add
func.func @broadcast_add_stays_float(%a: tensor<1x2x4x4xui8>, %b: tensor<1x2x1x1xui8>) -> tensor<1x2x4x4xui8> {
  %s = nn.constant dense<0.05> : tensor<f32>
  %z = nn.constant dense<128> : tensor<ui8>
  %da = nn.dequantize %a, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %db = nn.dequantize %b, %s, %z : (tensor<1x2x1x1xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x1x1xf32>
  %sum = nn.add %da, %db : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %q = nn.quantize %sum, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
  func.return %q : tensor<1x2x4x4xui8>
}
