// The quantized nn ops (issue #13) parse, print and parse back to the same text, in the
// custom and in the generic form (the same RUN lines as nn.mlir).
// RUN: %byoc-opt %s | %byoc-opt | %filecheck %s
// RUN: %byoc-opt %s --print-op-generic | %byoc-opt | %filecheck %s
// RUN: %byoc-opt %s > %t.custom && %byoc-opt %t.custom > %t.custom2 && diff %t.custom %t.custom2
// RUN: %byoc-opt %s --print-op-generic > %t.generic && %byoc-opt %t.generic --print-op-generic > %t.generic2 && diff %t.generic %t.generic2
// RUN: %byoc-opt %t.generic > %t.fromgeneric && diff %t.custom %t.fromgeneric
// RUN: %byoc-opt %s --print-op-generic | %filecheck %s --check-prefix=GENERIC

/// Quantized ops (issue #13): scales and zero points are operands; results i32 or the zero point's type.
// CHECK-LABEL: func.func @quantized
// CHECK:      %[[Q:.*]] = nn.quantize %x, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
// CHECK-NEXT: %[[A:.*]] = nn.qconv2d %[[Q]], %w, %z, %wz {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xui8>, tensor<3x2x3x3xi8>, tensor<ui8>, tensor<3xi8>) -> tensor<1x3x4x4xi32>
// CHECK-NEXT: %[[R:.*]] = nn.requantize %[[A]], %ws, %bz, %s, %z : (tensor<1x3x4x4xi32>, tensor<3xf32>, tensor<3xi32>, tensor<f32>, tensor<ui8>) -> tensor<1x3x4x4xui8>
// CHECK-NEXT: %[[D:.*]] = nn.qdense %m, %wd, %mz, %mz : (tensor<2x8xi8>, tensor<4x8xi8>, tensor<i8>, tensor<i8>) -> tensor<2x4xi32>
// CHECK-NEXT: %[[M:.*]] = nn.qmatmul %m, %wm, %mz, %mz : (tensor<2x8xi8>, tensor<8x4xi8>, tensor<i8>, tensor<i8>) -> tensor<2x4xi32>
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = nn.dynamic_quantize %x : (tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>)
// CHECK-NEXT: %{{.*}} = nn.dequantize %[[R]], %s, %z {axis = 0 : i64} : (tensor<1x3x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x3x4x4xf32>
// GENERIC-LABEL: sym_name = "quantized"
// GENERIC: "nn.quantize"(%x, %s, %z) <{axis = 1 : i64, block_size = 0 : i64}> : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
func.func @quantized(%x: tensor<1x2x4x4xf32>, %s: tensor<f32>, %z: tensor<ui8>, %w: tensor<3x2x3x3xi8>, %wz: tensor<3xi8>, %ws: tensor<3xf32>, %bz: tensor<3xi32>, %m: tensor<2x8xi8>, %mz: tensor<i8>, %wd: tensor<4x8xi8>, %wm: tensor<8x4xi8>) -> tensor<1x3x4x4xf32> {
  %0 = nn.quantize %x, %s, %z : (tensor<1x2x4x4xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xui8>
  %1 = nn.qconv2d %0, %w, %z, %wz {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xui8>, tensor<3x2x3x3xi8>, tensor<ui8>, tensor<3xi8>) -> tensor<1x3x4x4xi32>
  %2 = nn.requantize %1, %ws, %bz, %s, %z : (tensor<1x3x4x4xi32>, tensor<3xf32>, tensor<3xi32>, tensor<f32>, tensor<ui8>) -> tensor<1x3x4x4xui8>
  %3 = nn.qdense %m, %wd, %mz, %mz : (tensor<2x8xi8>, tensor<4x8xi8>, tensor<i8>, tensor<i8>) -> tensor<2x4xi32>
  %4 = nn.qmatmul %m, %wm, %mz, %mz : (tensor<2x8xi8>, tensor<8x4xi8>, tensor<i8>, tensor<i8>) -> tensor<2x4xi32>
  %5, %6, %7 = nn.dynamic_quantize %x : (tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>)
  %8 = nn.dequantize %2, %s, %z {axis = 0 : i64} : (tensor<1x3x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x3x4x4xf32>
  func.return %8 : tensor<1x3x4x4xf32>
}
