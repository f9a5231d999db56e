// The ccompiler target's int8 average pooling and reshape blocks (issue #13, byoc/targets/qdq.py):
// an average pool, a global average pool, a reshape and a flatten between a dequantize and a
// quantize each become one composite; an average pool of an input quantized per channel does not.
// RUN: %byoc-opt %s -p 'merge-composite{targets=ccompiler}' | %filecheck %s

// CHECK-LABEL: func.func @pools
// CHECK:      byoc.composite "ccompiler.qavgpool"
// CHECK:        nn.avg_pool2d
// CHECK:      byoc.composite "ccompiler.qavgpool"
// CHECK:        nn.global_avg_pool2d
// CHECK:      byoc.composite "ccompiler.qreshape"
// CHECK:        nn.reshape
// CHECK:      byoc.composite "ccompiler.qreshape"
// CHECK:        nn.flatten
func.func @pools(%a: tensor<1x2x4x4xui8>) -> (tensor<1x2x2x2xui8>, tensor<1x2x1x1xui8>, tensor<2x16xui8>, tensor<1x32xi8>) {
  %s = nn.constant dense<0.05> : tensor<f32>
  %z = nn.constant dense<128> : tensor<ui8>
  %t = nn.constant dense<0.07> : tensor<f32>
  %zi = nn.constant dense<-3> : tensor<i8>
  %d0 = nn.dequantize %a, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %p = nn.avg_pool2d %d0 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %q0 = nn.quantize %p, %t, %z : (tensor<1x2x2x2xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x2x2xui8>
  %d1 = nn.dequantize %a, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %g = nn.global_avg_pool2d %d1 : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  %q1 = nn.quantize %g, %s, %z : (tensor<1x2x1x1xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x1x1xui8>
  %d2 = nn.dequantize %a, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %r = nn.reshape %d2 {newshape = array<i64: 2, 16>} : (tensor<1x2x4x4xf32>) -> tensor<2x16xf32>
  %q2 = nn.quantize %r, %s, %z : (tensor<2x16xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x16xui8>
  %d3 = nn.dequantize %a, %s, %z : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %f = nn.flatten %d3 {axis = 1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
  %q3 = nn.quantize %f, %t, %zi : (tensor<1x32xf32>, tensor<f32>, tensor<i8>) -> tensor<1x32xi8>
  func.return %q0, %q1, %q2, %q3 : tensor<1x2x2x2xui8>, tensor<1x2x1x1xui8>, tensor<2x16xui8>, tensor<1x32xi8>
}

// CHECK-LABEL: func.func @per_channel_input_stays_float
// CHECK-NOT:  ccompiler.qavgpool
// CHECK:      nn.global_avg_pool2d
func.func @per_channel_input_stays_float(%a: tensor<1x2x4x4xui8>) -> tensor<1x2x1x1xui8> {
  %s = nn.constant dense<[0.05, 0.04]> : tensor<2xf32>
  %z = nn.constant dense<[128, 120]> : tensor<2xui8>
  %t = nn.constant dense<0.07> : tensor<f32>
  %zo = nn.constant dense<128> : tensor<ui8>
  %d = nn.dequantize %a, %s, %z {axis = 1 : i64} : (tensor<1x2x4x4xui8>, tensor<2xf32>, tensor<2xui8>) -> tensor<1x2x4x4xf32>
  %g = nn.global_avg_pool2d %d : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  %q = nn.quantize %g, %t, %zo : (tensor<1x2x1x1xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x1x1xui8>
  func.return %q : tensor<1x2x1x1xui8>
}
