/*
 * kernel_equal_lib.c — the pooling and depthwise kernels of one tree's byoc_kernels.h behind
 * plain entry points, for benchmarks/kernel_equal.c (which loads two builds of this file,
 * e.g. main's headers and a branch's, and compares their outputs bit for bit); OLD is a
 * checkout of the other tree (`git worktree add /tmp/old main`):
 *
 *   for t in old:$OLD new:.; do
 *     cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden -fopenmp -I${t#*:}/byoc/runtime \
 *        benchmarks/kernel_equal_lib.c -o /tmp/ke-${t%%:*}.so -lm -pthread; done
 *   cc -O2 benchmarks/kernel_equal.c -o /tmp/kernel_equal -ldl -lm
 *   /tmp/kernel_equal /tmp/ke-old.so /tmp/ke-new.so     # add -DBYOC_BASELINE_ONLY to both builds for the baseline
 */
#include "byoc_kernels.h"
__attribute__((visibility("default"))) void run_dw(const float* x, const float* w, const float* b, const float* s, const float* t, float* y, float* scratch,
  int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t K, int64_t OH, int64_t OW, int64_t S, int64_t P, int64_t D, int32_t parts, int32_t act, int nt) {
  byoc_set_num_threads(nt);
  byoc_conv2d_ep_f32(x, w, b, s, t, y, scratch, N, C, H, W, O, K, K, OH, OW, S, S, P, P, D, D, C, parts, act, 0.1f, 0.5f);
}
__attribute__((visibility("default"))) void run_avg(const float* x, float* y, int64_t NC, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K, int64_t S, int64_t P, int64_t PB, int32_t inc, int nt, int64_t D) {
  byoc_set_num_threads(nt);
  byoc_avg_pool2d_f32(x, y, NC, H, W, OH, OW, K, K, S, S, P, P, PB, PB, D, D, inc);
}
__attribute__((visibility("default"))) void run_gavg(const float* x, float* y, int64_t NC, int64_t HW, int nt) {
  byoc_set_num_threads(nt);
  byoc_global_avg_pool2d_f32(x, y, NC, HW);
}
__attribute__((visibility("default"))) void run_max(const float* x, float* y, int64_t NC, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t K, int64_t S, int64_t P, int64_t D, int nt) {
  byoc_set_num_threads(nt);
  byoc_max_pool2d_f32(x, y, NC, H, W, OH, OW, K, K, S, S, P, P, D, D);
}
