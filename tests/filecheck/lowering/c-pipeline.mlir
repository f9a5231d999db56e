// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=ccompiler},lower-to-c{fuse=false}' | %filecheck %s --check-prefix=PEROP
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=ccompiler},lower-to-c' | %filecheck %s --check-prefix=FUSED
// RUN: %byoc-opt %s --split-input-file -p 'byoc{targets=ccompiler},lower-to-c' -t c | %filecheck %s --check-prefix=TEXT

/// End to end: the seed's graph becomes one ccompiler partition; per-op mode
/// shows the seed's three kernels, two buffers and the wrapper; fused mode one loop.
// PEROP-LABEL: func.func @main
// PEROP-NEXT:    %[[R:.*]] = func.call @ccompiler_main_0(%a, %b, %c, %d)
// PEROP-NEXT:    func.return %[[R]]
// PEROP:       func.func private @ccompiler_main_0({{.*}}) -> tensor<10x10xf32> attributes {byoc.compiler = "ccompiler"}{{$}}
// PEROP:       c.func static noalias @byoc_p_ccompiler_main_0_0(
// PEROP:         c.add
// PEROP:       c.func static noalias @byoc_p_ccompiler_main_0_1(
// PEROP:         c.sub
// PEROP:       c.func static noalias @byoc_p_ccompiler_main_0_2(
// PEROP:         c.mul
// PEROP:       c.func static @byoc_p_ccompiler_main_0_(
// PEROP-NEXT:    c.buffer %ws[0, 400]
// PEROP-NEXT:    c.call @byoc_p_ccompiler_main_0_0
// PEROP-NEXT:    c.cast
// PEROP-NEXT:    c.buffer %ws[448, 400]
// PEROP:       c.func @byoc_p_ccompiler_main_0_wrapper(
// PEROP:       c.func @byoc_p_ccompiler_main_0(

// FUSED:       c.func static noalias @byoc_p_ccompiler_main_0_0(
// FUSED:         c.for %{{.*}} = 0 to 100 {
// FUSED-NOT:   c.for
// FUSED-NOT:   c.func static noalias @byoc_p_ccompiler_main_0_1(
// FUSED:       c.func @byoc_p_ccompiler_main_0(

// TEXT:        out0[i0] = (((in0[i0] + in1[i0]) - in2[i0]) * in3[i0]);
// TEXT:        BYOC_EXPORT int32_t byoc_p_ccompiler_main_0(DLTensor** args, int32_t num_args) {
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = nn.add %a, %b : tensor<10x10xf32>
  %1 = nn.subtract %0, %c : tensor<10x10xf32>
  %2 = nn.multiply %1, %d : tensor<10x10xf32>
  func.return %2 : tensor<10x10xf32>
}

// -----

/// conv2d -> bias_add -> relu is offloaded; the i16 add the C codegen cannot
/// emit stays on the host (the predicate rejects it; nothing is miscompiled).
// PEROP-LABEL: func.func @main
// PEROP-NEXT:    %[[R:.*]] = func.call @ccompiler_main_0(%x, %w, %b)
// PEROP-NEXT:    %[[H:.*]] = nn.add %n, %n : tensor<4xi16>
// PEROP-NEXT:    func.return %[[R]], %[[H]]
// PEROP:       c.call_opaque "byoc_conv2d_f32"
// PEROP:       c.func static noalias @byoc_p_ccompiler_main_0_1(
// PEROP:       c.func static noalias @byoc_p_ccompiler_main_0_2(

// FUSED:       c.verbatim "/* nn.conv2d, nn.bias_add, nn.relu: 1x4x8x8 f32 */"
// FUSED-NEXT:  c.call_opaque "byoc_conv2d_ep_f32"
// FUSED-NOT:   c.func static noalias @byoc_p_ccompiler_main_0_1(

// TEXT:        byoc_conv2d_ep_f32(in0, in1, in2, in1, in1, out0, tmp0, 1, 3, 8, 8, 4, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.0f, 0.0f);
func.func @main(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %n: tensor<4xi16>) -> (tensor<1x4x8x8xf32>, tensor<4xi16>) {
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x8x8xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %2 = nn.relu %1 : tensor<1x4x8x8xf32>
  %3 = nn.add %n, %n : tensor<4xi16>
  func.return %2, %3 : tensor<1x4x8x8xf32>, tensor<4xi16>
}
