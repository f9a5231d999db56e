// RUN: %byoc-opt %s --split-input-file -p lower-to-c | %filecheck %s --check-prefixes=CHECK,FUSED
// RUN: %byoc-opt %s --split-input-file -p 'lower-to-c{fuse=false}' | %filecheck %s --check-prefixes=CHECK,PEROP

/// Concatenation in place (buffers.place_concat_inputs): both inputs of an axis-1 concatenation
/// of batch 1 are computed straight into their slices of its workspace buffer (the second at
/// element 108 = 3 x 6 x 6), and no copy is left. Fused, the ReLU is the first conv's
/// epilogue; per op, the ReLU step writes the slice and the conv its own buffer.
// CHECK-LABEL: c.func static @byoc_p_ccompiler_fire_(
// FUSED-NEXT:    %[[CAT:.*]] = c.buffer %ws[0, 1152] : !c.ptr<f32>
// FUSED-NEXT:    %{{.*}} = c.buffer
// FUSED-NEXT:    c.call @byoc_p_ccompiler_fire_0(%in0, %in1, %[[CAT]], %{{.*}})
// PEROP:         %[[CAT:.*]] = c.buffer %ws[1216, 1152] : !c.ptr<f32>
// PEROP-NEXT:    c.call @byoc_p_ccompiler_fire_1(%{{.*}}, %[[CAT]])
// CHECK:         %[[OFF:.*]] = c.constant 108 : index
// CHECK-NEXT:    %[[B:.*]] = c.ptr_offset %[[CAT]], %[[OFF]] : !c.ptr<f32>
// CHECK:         c.call @byoc_p_ccompiler_fire_{{[0-9]+}}(%in0, %in2, %[[B]], %{{.*}})
// CHECK:         %[[C:.*]] = c.cast %[[CAT]] : !c.ptr<f32> to !c.ptr<f32, const>
// CHECK-NEXT:    c.call @byoc_p_ccompiler_fire_{{[0-9]+}}(%[[C]], %out0)
// CHECK-NOT:   byoc_copy_blocks
func.func private @ccompiler_fire(%x: tensor<1x4x6x6xf32>, %w1: tensor<3x4x1x1xf32>, %w2: tensor<5x4x3x3xf32>) -> tensor<1x8x6x6xf32> attributes {byoc.compiler = "ccompiler"} {
  %a = "nn.conv2d"(%x, %w1) : (tensor<1x4x6x6xf32>, tensor<3x4x1x1xf32>) -> tensor<1x3x6x6xf32>
  %r = "nn.relu"(%a) : (tensor<1x3x6x6xf32>) -> tensor<1x3x6x6xf32>
  %b = "nn.conv2d"(%x, %w2) {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x6x6xf32>, tensor<5x4x3x3xf32>) -> tensor<1x5x6x6xf32>
  %c = "nn.concatenate"(%r, %b) {axis = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<1x5x6x6xf32>) -> tensor<1x8x6x6xf32>
  %t = "nn.tanh"(%c) : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  func.return %t : tensor<1x8x6x6xf32>
}

// -----

/// What stays a copy: a partition input (its storage is the caller's), an input read twice,
/// and every input of a concatenation on an inner axis (its slice is several ranges); each
/// concatenation is a partition output. The conv's ReLU is placed in the first
/// concatenation (which reads it once); the second, which reads it twice, copies it from there.
// CHECK:         c.verbatim "/* nn.concatenate: 1x7x2x2 f32 */"
// CHECK-NEXT:    c.call_opaque "byoc_copy_blocks"(%in0, %out0) {{.*}}1 : i64, 64 : i64, 112 : i64
// CHECK-NEXT:    c.return
// CHECK:         c.verbatim "/* nn.concatenate: 1x6x2x2 f32 */"
// CHECK-NEXT:    c.call_opaque "byoc_copy_blocks"(%in0, %out0) {{.*}}1 : i64, 48 : i64, 96 : i64
// CHECK-NEXT:    c.constant
// CHECK-NEXT:    c.ptr_offset %out0
// CHECK-NEXT:    c.call_opaque "byoc_copy_blocks"
// CHECK:         c.verbatim "/* nn.concatenate: 1x4x2x4 f32 */"
// CHECK-NEXT:    c.call_opaque "byoc_copy_blocks"(%in0, %out0) {{.*}}8 : i64, 8 : i64, 16 : i64
// CHECK-NEXT:    c.constant
// CHECK-NEXT:    c.ptr_offset %out0
// CHECK-NEXT:    c.call_opaque "byoc_copy_blocks"(%in1
// CHECK-LABEL: c.func static @byoc_p_ccompiler_kept_(
// CHECK:         %[[OFF:.*]] = c.constant 16 : index
// CHECK-NEXT:    %{{.*}} = c.ptr_offset %out0, %[[OFF]] : !c.ptr<f32>
func.func private @ccompiler_kept(%x: tensor<1x4x2x2xf32>, %w: tensor<3x4x1x1xf32>) -> (tensor<1x7x2x2xf32>, tensor<1x6x2x2xf32>, tensor<1x4x2x4xf32>) attributes {byoc.compiler = "ccompiler"} {
  %a = "nn.conv2d"(%x, %w) : (tensor<1x4x2x2xf32>, tensor<3x4x1x1xf32>) -> tensor<1x3x2x2xf32>
  %r = "nn.relu"(%a) : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %c1 = "nn.concatenate"(%x, %r) {axis = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<1x3x2x2xf32>) -> tensor<1x7x2x2xf32>
  %c2 = "nn.concatenate"(%r, %r) {axis = 1 : i64} : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) -> tensor<1x6x2x2xf32>
  %n = "nn.negative"(%x) : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %c3 = "nn.concatenate"(%x, %n) {axis = 3 : i64} : (tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x2x4xf32>
  func.return %c1, %c2, %c3 : tensor<1x7x2x2xf32>, tensor<1x6x2x2xf32>, tensor<1x4x2x4xf32>
}
