// RUN: %byoc-opt %s -p split-dequantize | %filecheck %s
// RUN: %byoc-opt %s -p split-dequantize,split-dequantize | %filecheck %s

/// A dequantize read three times becomes three dequantizes, one a use, in program order; an
/// unshared one is kept.
// CHECK-LABEL: func.func @shared
// CHECK:      %[[D0:.*]] = nn.dequantize %q, %s, %z
// CHECK-NEXT: %[[D1:.*]] = nn.dequantize %q, %s, %z
// CHECK-NEXT: %[[D2:.*]] = nn.dequantize %q, %s, %z
// CHECK-NEXT: nn.relu %[[D0]]
// CHECK-NEXT: nn.add %[[D1]], %[[D2]]
func.func @shared(%q: tensor<4xui8>, %s: tensor<f32>, %z: tensor<ui8>) -> (tensor<4xf32>, tensor<4xf32>) {
  %d = nn.dequantize %q, %s, %z : (tensor<4xui8>, tensor<f32>, tensor<ui8>) -> tensor<4xf32>
  %r = nn.relu %d : tensor<4xf32>
  %a = nn.add %d, %d : tensor<4xf32>
  func.return %r, %a : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @single
// CHECK:      nn.dequantize
// CHECK-NEXT: func.return
func.func @single(%q: tensor<4xi8>, %s: tensor<f32>, %z: tensor<i8>) -> tensor<4xf32> {
  %d = nn.dequantize %q, %s, %z : (tensor<4xi8>, tensor<f32>, tensor<i8>) -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}
