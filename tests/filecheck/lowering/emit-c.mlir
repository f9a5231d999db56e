// RUN: %byoc-opt %s --split-input-file -p 'lower-to-c{fuse=false}' -t c | %filecheck %s --check-prefix=PEROP
// RUN: %byoc-opt %s --split-input-file -p lower-to-c -t c | %filecheck %s --check-prefix=FUSED

/// `-t c` of the seed's subgraph. Per-op mode is the seed's C: a kernel per op,
/// a buffer per intermediate (carved from the workspace, not malloc'd), the
/// subgraph function `<sym>_`, the typed DLTensor wrapper, the packed entry.
// PEROP:      #include "byoc_runtime.h"
// PEROP-NEXT: #include "byoc_kernels.h"
// PEROP-EMPTY:
// PEROP-NEXT: static void byoc_p_ccompiler_main_0_0(const float* restrict in0, const float* restrict in1, float* restrict out0) {
// PEROP-NEXT:   /* nn.add: 10x10 f32 */
// PEROP-NEXT:   BYOC_SIMD
// PEROP-NEXT:   for (int64_t i0 = 0; i0 < 100; ++i0) {
// PEROP-NEXT:     out0[i0] = (in0[i0] + in1[i0]);
// PEROP-NEXT:   }
// PEROP-NEXT: }
// PEROP:      static void byoc_p_ccompiler_main_0_1(const float* restrict in0, const float* restrict in1, float* restrict out0) {
// PEROP:          out0[i0] = (in0[i0] - in1[i0]);
// PEROP:      static void byoc_p_ccompiler_main_0_2(const float* restrict in0, const float* restrict in1, float* restrict out0) {
// PEROP:          out0[i0] = (in0[i0] * in1[i0]);
// PEROP:      #ifdef BYOC_PROFILE_KERNELS
// PEROP-NEXT: #include "byoc_profile.h"
// PEROP-NEXT: #define byoc_p_ccompiler_main_0_0(...) BYOC_PROFILE_CALL("byoc_p_ccompiler_main_0_0", "nn.add: 10x10 f32", byoc_p_ccompiler_main_0_0(__VA_ARGS__))
// PEROP-NEXT: #define byoc_p_ccompiler_main_0_1(...) BYOC_PROFILE_CALL("byoc_p_ccompiler_main_0_1", "nn.subtract: 10x10 f32", byoc_p_ccompiler_main_0_1(__VA_ARGS__))
// PEROP-NEXT: #define byoc_p_ccompiler_main_0_2(...) BYOC_PROFILE_CALL("byoc_p_ccompiler_main_0_2", "nn.multiply: 10x10 f32", byoc_p_ccompiler_main_0_2(__VA_ARGS__))
// PEROP-NEXT: #endif
// PEROP-EMPTY:
// PEROP-NEXT: static void byoc_p_ccompiler_main_0_(const float* in0, const float* in1, const float* in2, const float* in3, float* out0, int8_t* ws) {
// PEROP-NEXT:   float* buf0 = ((float*)(ws + 0));
// PEROP-NEXT:   byoc_p_ccompiler_main_0_0(in0, in1, buf0);
// PEROP-NEXT:   float* buf1 = ((float*)(ws + 448));
// PEROP-NEXT:   byoc_p_ccompiler_main_0_1(buf0, in2, buf1);
// PEROP-NEXT:   byoc_p_ccompiler_main_0_2(buf1, in3, out0);
// PEROP-NEXT: }
/// The profiling hook (docs/threads.md): compiled only with -DBYOC_PROFILE_KERNELS.
// PEROP-EMPTY:
// PEROP-NEXT: #ifdef BYOC_PROFILE_KERNELS
// PEROP-NEXT: #include "byoc_profile.h"
// PEROP-NEXT: #define byoc_p_ccompiler_main_0_(...) BYOC_PROFILE_CALL("byoc_p_ccompiler_main_0_", "partition byoc_p_ccompiler_main_0_wrapper", byoc_p_ccompiler_main_0_(__VA_ARGS__))
// PEROP-NEXT: #endif
// PEROP-EMPTY:
// PEROP-NEXT: BYOC_EXPORT int32_t byoc_p_ccompiler_main_0_wrapper(DLTensor*, DLTensor*, DLTensor*, DLTensor*, DLTensor*);
// PEROP-NEXT: BYOC_EXPORT int32_t byoc_p_ccompiler_main_0_wrapper(DLTensor* in0, DLTensor* in1, DLTensor* in2, DLTensor* in3, DLTensor* out0) {
// PEROP-NEXT:   if (byoc_check_tensor("ccompiler_main_0", "input 'a' (#0)", in0, kDLFloat, 32, 2, (const int64_t[]){10, 10}) != 0) return -1;
// PEROP:        if (byoc_check_tensor("ccompiler_main_0", "output 'out0' (#0)", out0, kDLFloat, 32, 2, (const int64_t[]){10, 10}) != 0) return -1;
// PEROP-NEXT:   if (byoc_check_disjoint("ccompiler_main_0", 5, 1, (const DLTensor* const[]){in0, in1, in2, in3, out0}, (const char* const[]){"a", "b", "c", "d", "out0"}, (const int64_t[]){400, 400, 400, 400, 400}) != 0) return -1;
// PEROP-NEXT:   const float* in0_data = ((const float*)byoc_tensor_data(in0));
// PEROP:        float* out0_data = ((float*)byoc_tensor_data(out0));
// PEROP-NEXT:   int8_t* ws = (int8_t*)byoc_workspace(896u);
// PEROP-NEXT:   if (ws == NULL) return byoc_fail("%s: cannot allocate 896 bytes of workspace", "ccompiler_main_0");
// PEROP-NEXT:   byoc_p_ccompiler_main_0_(in0_data, in1_data, in2_data, in3_data, out0_data, ws);
// PEROP-NEXT:   return 0;
// PEROP-NEXT: }
// PEROP-EMPTY:
// PEROP-NEXT: BYOC_EXPORT int32_t byoc_p_ccompiler_main_0(DLTensor**, int32_t);
// PEROP-NEXT: BYOC_EXPORT int32_t byoc_p_ccompiler_main_0(DLTensor** args, int32_t num_args) {
// PEROP-NEXT:   if (num_args != 5) {
// PEROP-NEXT:     return byoc_fail("%s: expected 5 arguments (4 inputs, 1 output), got %d", "ccompiler_main_0", (int)num_args);
// PEROP-NEXT:   }
// PEROP-NEXT:   const int32_t v0 = byoc_p_ccompiler_main_0_wrapper(args[0], args[1], args[2], args[3], args[4]);
// PEROP-NEXT:   return v0;
// PEROP-NEXT: }
// PEROP-EMPTY:
// PEROP-NEXT: BYOC_EXPORT int32_t byoc_init(const void* const*, int32_t);
// PEROP-NEXT: BYOC_EXPORT int32_t byoc_init(const void* const* consts, int32_t num_consts) {
// PEROP-NEXT:   (void)consts;

/// Fused mode: one loop reading the four inputs, no workspace.
// FUSED:      static void byoc_p_ccompiler_main_0_0(const float* restrict in0, const float* restrict in1, const float* restrict in2, const float* restrict in3, float* restrict out0) {
// FUSED-NEXT:   /* nn.add, nn.subtract, nn.multiply: 10x10 f32 */
// FUSED-NEXT:   BYOC_SIMD
// FUSED-NEXT:   for (int64_t i0 = 0; i0 < 100; ++i0) {
// FUSED-NEXT:     out0[i0] = (((in0[i0] + in1[i0]) - in2[i0]) * in3[i0]);
// FUSED-NEXT:   }
// FUSED-NEXT: }
// FUSED-EMPTY:
// FUSED-NEXT: #ifdef BYOC_PROFILE_KERNELS
// FUSED-NEXT: #include "byoc_profile.h"
// FUSED-NEXT: #define byoc_p_ccompiler_main_0_0(...) BYOC_PROFILE_CALL("byoc_p_ccompiler_main_0_0", "nn.add, nn.subtract, nn.multiply: 10x10 f32", byoc_p_ccompiler_main_0_0(__VA_ARGS__))
// FUSED-NEXT: #endif
// FUSED-EMPTY:
// FUSED-NEXT: static void byoc_p_ccompiler_main_0_(const float* in0, const float* in1, const float* in2, const float* in3, float* out0) {
// FUSED-NEXT:   byoc_p_ccompiler_main_0_0(in0, in1, in2, in3, out0);
// FUSED-NEXT: }
// FUSED-NOT:  byoc_workspace
// FUSED:      BYOC_EXPORT int32_t byoc_p_ccompiler_main_0(DLTensor** args, int32_t num_args) {
func.func private @ccompiler_main_0(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> attributes {byoc.compiler = "ccompiler"} {
  %0 = nn.add %a, %b : tensor<10x10xf32>
  %1 = nn.subtract %0, %c : tensor<10x10xf32>
  %2 = nn.multiply %1, %d : tensor<10x10xf32>
  func.return %2 : tensor<10x10xf32>
}

// -----

/// The emitter on hand-written C dialect: exact float literals (inf, nan in
/// hex in the IR), INT32_MIN, i32 arithmetic done in unsigned so it wraps,
/// a load kept in a local when a store comes between it and its use, and the
/// argument checks with an escaped name.
// PEROP:      static _Alignas(64) const float small[6] BYOC_MAYBE_UNUSED = {
// PEROP-NEXT:   1.5f, -0.1f, INFINITY, (-INFINITY), NAN, 1e-08f,
// PEROP-NEXT: };
// PEROP:      static _Alignas(64) const int32_t ints[3] BYOC_MAYBE_UNUSED = {
// PEROP-NEXT:   INT32_MIN, 2147483647, 0,
// PEROP-NEXT: };
// PEROP:      /* 2048 f32, bound by byoc_init to constant #0 */
// PEROP-NEXT: static const float* big BYOC_MAYBE_UNUSED;
// PEROP:      static void wrap(const int32_t* restrict a, int32_t* restrict out) {
// PEROP-NEXT:   for (int64_t i = 0; i < 8; i += 2) {
// PEROP-NEXT:     const int32_t x = a[i];
// PEROP-NEXT:     out[i] = (int32_t)((uint32_t)(int32_t)((uint32_t)0 - (uint32_t)(int32_t)((uint32_t)x + (uint32_t)x)) * (uint32_t)x);
// PEROP:      static void reads_after_write(float* p) {
// PEROP-NEXT:   const float v0 = p[0];
// PEROP-NEXT:   p[0] = 2.0f;
// PEROP-NEXT:   p[1] = v0;
// PEROP-NEXT: }
// PEROP:        if (byoc_check_tensor("my_entry", "input 'x \"q\"' (#0)", t, kDLFloat, 32, 0, (const int64_t*)0) != 0) return -1;
// PEROP-NEXT:   if (big == NULL) return byoc_fail("%s: constant '%s' is not loaded; call byoc_init first", "my_entry", "big");
// PEROP-NEXT:   return 0;
c.module {
  c.include "byoc_runtime.h"
  c.global @small = dense<"0x0000C03FCDCCCCBD0000807F000080FF0000C07F77CC2B32"> : tensor<6xf32>
  c.global @ints = dense<[-2147483648, 2147483647, 0]> : tensor<3xi32>
  c.global @big init 0 = dense<0.0> : tensor<2048xf32>
  c.func static noalias @wrap(%a: !c.ptr<i32, const>, %out: !c.ptr<i32>) {
    c.for %i = 0 to 8 step 2 {
      %x = c.load %a[%i] : !c.ptr<i32, const>
      %1 = c.add %x, %x : i32
      %2 = c.neg %1 : i32
      %3 = c.mul %2, %x : i32
      c.store %3, %out[%i] : !c.ptr<i32>
    }
    c.return
  }
  c.func static @reads_after_write(%p: !c.ptr<f32>) {
    %0 = c.constant 0 : index
    %1 = c.constant 1 : index
    %2 = c.load %p[%0] : !c.ptr<f32>
    %3 = c.constant 2.0 : f32
    c.store %3, %p[%0] : !c.ptr<f32>
    c.store %2, %p[%1] : !c.ptr<f32>
    c.return
  }
  c.func @entry(%t: !c.ptr<!c.opaque<"DLTensor">>, %n: i32) -> i32 attributes {c.diagnostic_name = "my_entry"} {
    c.check_arg_count %n, 1 inputs, 0 outputs
    c.check_tensor %t, input 0 "x \"q\"" : tensor<f32>
    c.check_bound @big
    %z = c.constant 0 : i32
    c.return %z : i32
  }
}
