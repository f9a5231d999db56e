// RUN: %byoc-opt %s --split-input-file -p lower-to-c | %filecheck %s

/// A split into two pieces read by one add: no piece is stored, the add's loop reads both
/// halves of the operand (the second at element 12), and the second piece, also returned,
/// is stored by the same loop.
// CHECK-LABEL: c.func static noalias @byoc_p_ccompiler_split_0(
// CHECK:         c.verbatim "/* nn.split, nn.split, nn.add: 2x6 f32 */"
// CHECK-NEXT:    c.verbatim "BYOC_SIMD"
// CHECK-NEXT:    c.for %i0 = 0 to 12 {
// CHECK-NEXT:      %[[OFF:.*]] = c.constant 12 : index
// CHECK-NEXT:      %[[AT:.*]] = c.add %i0, %[[OFF]] : index
// CHECK-NEXT:      %[[LO:.*]] = c.load %in0[%i0] : !c.ptr<f32, const>
// CHECK-NEXT:      %[[HI:.*]] = c.load %in0[%[[AT]]] : !c.ptr<f32, const>
// CHECK-NEXT:      %[[SUM:.*]] = c.add %[[LO]], %[[HI]] : f32
// CHECK-NEXT:      c.store %[[HI]], %out0[%i0] : !c.ptr<f32>
// CHECK-NEXT:      c.store %[[SUM]], %out1[%i0] : !c.ptr<f32>
// CHECK-NOT:   c.func static noalias @byoc_p_ccompiler_split_1(
func.func private @ccompiler_split(%x: tensor<4x6xf32>) -> (tensor<2x6xf32>, tensor<2x6xf32>) attributes {byoc.compiler = "ccompiler"} {
  %p:2 = nn.split %x {indices = array<i64: 2>, axis = 0 : i64} : (tensor<4x6xf32>) -> (tensor<2x6xf32>, tensor<2x6xf32>)
  %s = nn.add %p#0, %p#1 : tensor<2x6xf32>
  func.return %p#1, %s : tensor<2x6xf32>, tensor<2x6xf32>
}

// -----

/// A gather (nn.take on axis 1, i64 indices): the index is loaded in the loop, counted from
/// the end when negative and clamped into [0, 5], in int64; then the data is read there.
// CHECK-LABEL: c.func static noalias @byoc_p_ccompiler_take_0(
// CHECK:         %[[I:.*]] = c.load %in1[%i1] : !c.ptr<i64, const>
// CHECK-NEXT:    %[[W:.*]] = c.cast %[[I]] : i64 to index
// CHECK:         %[[NEG:.*]] = c.cmp lt, %[[W]], %{{.*}} : index
// CHECK:         c.select %[[NEG]]
// CHECK:         c.cmp gt, %{{.*}}, %{{.*}} : index
// CHECK:         %[[V:.*]] = c.load %in0[%{{.*}}] : !c.ptr<f32, const>
// CHECK-NEXT:    c.store %[[V]], %out0[%{{.*}}] : !c.ptr<f32>
func.func private @ccompiler_take(%x: tensor<4x6xf32>, %i: tensor<3xi64>) -> tensor<4x3xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.take %x, %i {axis = 1 : i64} : (tensor<4x6xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

/// A slice far into a broadcast of 5 x 2^32 elements: the broadcast is never stored; the
/// slice reads element i0 + 1 of the operand (both views composed, int64 offsets).
// CHECK-LABEL: c.func static noalias @byoc_p_ccompiler_big_0(
// CHECK-NEXT:    c.verbatim "/* nn.strided_slice: 4x3 f32 */"
// CHECK:         %[[AT:.*]] = c.add %i0, %{{.*}} : index
// CHECK-NEXT:    %[[V:.*]] = c.load %in0[%[[AT]]] : !c.ptr<f32, const>
// CHECK-NOT:   c.buffer
func.func private @ccompiler_big(%x: tensor<5x1xf32>) -> tensor<4x3xf32> attributes {byoc.compiler = "ccompiler"} {
  %b = nn.broadcast_to %x {shape = array<i64: 5, 4294967296>} : (tensor<5x1xf32>) -> tensor<5x4294967296xf32>
  %s = nn.strided_slice %b {begin = array<i64: 1, 4294967293>, end = array<i64: 5, 4294967296>} : (tensor<5x4294967296xf32>) -> tensor<4x3xf32>
  func.return %s : tensor<4x3xf32>
}

// -----

/// Bool and i64 element types: a comparison gives i1, where selects i64 values.
// CHECK-LABEL: c.func static noalias @byoc_p_ccompiler_where_0(
// CHECK:         %[[C:.*]] = c.cmp lt, %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    %[[S:.*]] = c.select %[[C]], %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    c.store %[[S]], %out0[%i0] : !c.ptr<i64>
func.func private @ccompiler_where(%a: tensor<8xi64>, %b: tensor<8xi64>) -> tensor<8xi64> attributes {byoc.compiler = "ccompiler"} {
  %c = nn.less %a, %b : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi1>
  %0 = nn.where %c, %a, %b : (tensor<8xi1>, tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>
  func.return %0 : tensor<8xi64>
}
