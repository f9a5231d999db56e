/*
 * byoc_first_tier.c — runs C partitions without compiling them (the first tier).
 *
 * Generic code shipped with byoc, compiled once per machine against the kernel library
 * (byoc/runtime/first_tier.py appends one trampoline per kernel of the library and builds
 * it like a model's glue unit). A partition is a program Python writes once per model
 * from the partition's `c` dialect (after lower-to-c): the same kernel calls with the same
 * arguments as the generated C, and each fused elementwise loop as a list of operations
 * interpreted over blocks of BYOC_FT_BLOCK elements of its innermost loop.
 *
 * Values of a loop live in registers of BYOC_FT_BLOCK 8-byte lanes: floats as double,
 * integers (every width, index, bool) as int64_t. An f32 result is rounded to float after
 * each operation (exact: +, -, *, / and sqrt of two floats computed in double and rounded
 * give the float result), an integer result narrower than 64 bits is wrapped to its width,
 * so a register holds what the C variable would.
 *
 * Program (int64 words):
 *   top level:  BUF dst offset | CPTR dst k | PADD dst src bytes |
 *               KERNEL tramp nptr ptr... nint int... nflt fidx... |
 *               LOOP par work regs nconst (reg bits)... len body... |
 *               END
 *   loop body:  FOR var lower upper step inner len body... | <op> dst a b c
 * A pointer operand of KERNEL is a pointer register, or -1 - k for the k-th int64 array
 * literal (`ilits` + k words).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byoc_runtime.h"
#include "byoc_kernels.h"
#include "byoc_qkernels.h"
#include "byoc_math.h"

#define BYOC_FT_EXPORT __attribute__((visibility("default")))
#define BYOC_FT_BLOCK 128
#define BYOC_FT_STACK_REGS 96 /* registers a loop keeps on the stack (96 KiB); more are allocated */

/* BEGIN byoc_first_tier cdef */
typedef struct {
  int32_t num_args;  /* DLTensor arguments: pointer registers 0 .. num_args-1 */
  int32_t num_ptrs;  /* pointer registers */
  int32_t code_len;
  uint64_t ws_size;  /* the partition's workspace (its intermediates) */
  const int64_t* code;
  const double* flits;
  const int64_t* ilits;
  void* const* consts;
} byoc_ft_program;
/* END byoc_first_tier cdef */

typedef int64_t (*byoc_ft_tramp_fn)(void* const* p, const int64_t* i, const double* f);
extern const byoc_ft_tramp_fn byoc_ft_trampolines_[];
extern const int32_t byoc_ft_num_trampolines_;

enum {
  FT_END = 0, FT_BUF, FT_CPTR, FT_PADD, FT_KERNEL, FT_LOOP, FT_FOR,
  /* loop operations: dst a b c */
  FT_FILL, FT_BCAST, FT_MOV,
  FT_ADD_I, FT_SUB_I, FT_MUL_I, FT_DIV_I, FT_REM_I, FT_NEG_I,
  FT_ADD_F, FT_SUB_F, FT_MUL_F, FT_DIV_F, FT_NEG_F, FT_ROUND_F32,
  FT_WRAP_I32, FT_WRAP_I16, FT_WRAP_I8, FT_WRAP_U8, FT_WRAP_U16, FT_WRAP_U32, FT_WRAP_BOOL,
  FT_EQ_I, FT_NE_I, FT_LT_I, FT_LE_I, FT_GT_I, FT_GE_I,
  FT_EQ_F, FT_NE_F, FT_LT_F, FT_LE_F, FT_GT_F, FT_GE_F,
  FT_SELECT, FT_AND, FT_OR, FT_I2F, FT_F2I,
  FT_LD_F32, FT_LD_F64, FT_LD_I64, FT_LD_I32, FT_LD_I16, FT_LD_I8, FT_LD_U8, FT_LD_U16,
  FT_LD_U32, FT_LD_BOOL,
  FT_ST_F32, FT_ST_F64, FT_ST_I64, FT_ST_I32, FT_ST_I16, FT_ST_I8, FT_ST_U8, FT_ST_U16,
  FT_ST_U32, FT_ST_BOOL,
  FT_CALL1F, FT_CALL1D, FT_CALL2F, FT_CALL2D, /* dst a b fn: the scalar functions below */
  /* loads and stores at consecutive indices (b[0], b[0] + 1, ...), and loads of one index */
  FT_LDC_F32, FT_LDC_F64, FT_LDC_I64, FT_LDC_I32, FT_LDC_I16, FT_LDC_I8, FT_LDC_U8, FT_LDC_U16,
  FT_LDC_U32, FT_LDC_BOOL,
  FT_STC_F32, FT_STC_F64, FT_STC_I64, FT_STC_I32, FT_STC_I16, FT_STC_I8, FT_STC_U8, FT_STC_U16,
  FT_STC_U32, FT_STC_BOOL,
  FT_LD1_F32, FT_LD1_F64, FT_LD1_I64, FT_LD1_I32, FT_LD1_I16, FT_LD1_I8, FT_LD1_U8, FT_LD1_U16,
  FT_LD1_U32, FT_LD1_BOOL,
  FT_NUM_OPS
};

/* The state of one thread running one loop: its pointers and registers. */
typedef struct {
  void* const* ptrs;
  const double* flits;
  union byoc_ft_lane_ {
    int64_t i;
    double f;
  } * regs;
} byoc_ft_loop_;

/* The scalar functions a fused loop calls, in first_tier.py's order (`MATH_*`). */
static float byoc_ft_tanhf_(float x) { return byoc_tanhf(x); }
static float byoc_ft_expf_(float x) { return byoc_expf(x); }
static float byoc_ft_gelu_erff_(float x) { return byoc_gelu_erff(x); }
static float byoc_ft_sigmoidf_(float x) { return byoc_sigmoidf(x); }
static float (*const byoc_ft_fn1f_[])(float) = {
    expf, logf, sqrtf, tanhf, erff, fabsf, byoc_ft_tanhf_, sinf, cosf, tanf, asinf, acosf,
    atanf, sinhf, coshf, asinhf, acoshf, atanhf, floorf, ceilf, rintf, expm1f, log1pf,
    byoc_ft_expf_, byoc_ft_gelu_erff_, byoc_ft_sigmoidf_};
static double (*const byoc_ft_fn1d_[])(double) = {exp, log, sqrt, tanh, erf, fabs};
static float (*const byoc_ft_fn2f_[])(float, float) = {powf, fminf, fmaxf, fmodf};
static double (*const byoc_ft_fn2d_[])(double, double) = {pow, fmod};

#define R_(k) (st->regs + (size_t)(k) * BYOC_FT_BLOCK)
#define LOOPI_(expr) \
  for (int64_t j = 0; j < n; ++j) d[j].i = (expr)
#define LOOPF_(expr) \
  for (int64_t j = 0; j < n; ++j) d[j].f = (expr)

/* The lanes' loops are also compiled for AVX2 and picked at load time, as the kernels'
 * BYOC_CLONES are (byoc_kernels_simd.h): the same operations in the same order, so the same
 * results; BYOC_CPU_DISPATCH=baseline keeps the baseline version. */
#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute) && !defined(BYOC_BASELINE_ONLY)
#if __has_attribute(target_clones) && !defined(__SANITIZE_ADDRESS__)
#define BYOC_FT_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef BYOC_FT_CLONES
#define BYOC_FT_CLONES
#endif

/* One operation over `n` lanes. A destination is never an operand (each SSA value has a
 * register of its own), hence `restrict`; O3 vectorises the lanes' loops. */
BYOC_FT_CLONES __attribute__((optimize("O3"))) static void byoc_ft_op_(const byoc_ft_loop_* st, const int64_t* w,
                                                         int64_t n) {
  union byoc_ft_lane_* restrict d = R_(w[1]);
  const union byoc_ft_lane_* restrict a = R_(w[2]);
  const union byoc_ft_lane_* restrict b = R_(w[3]);
  const union byoc_ft_lane_* restrict c = R_(w[4]);
  switch (w[0]) {
    case FT_FILL: { int64_t v = w[2]; LOOPI_(v); } break;
    case FT_BCAST: { int64_t v = a[0].i; LOOPI_(v); } break;
    case FT_MOV: LOOPI_(a[j].i); break;
    case FT_ADD_I: LOOPI_((int64_t)((uint64_t)a[j].i + (uint64_t)b[j].i)); break;
    case FT_SUB_I: LOOPI_((int64_t)((uint64_t)a[j].i - (uint64_t)b[j].i)); break;
    case FT_MUL_I: LOOPI_((int64_t)((uint64_t)a[j].i * (uint64_t)b[j].i)); break;
    case FT_DIV_I: LOOPI_(b[j].i != 0 ? a[j].i / b[j].i : 0); break;
    case FT_REM_I: LOOPI_(b[j].i != 0 ? a[j].i % b[j].i : 0); break;
    case FT_NEG_I: LOOPI_((int64_t)(0 - (uint64_t)a[j].i)); break;
    case FT_ADD_F: LOOPF_(a[j].f + b[j].f); break;
    case FT_SUB_F: LOOPF_(a[j].f - b[j].f); break;
    case FT_MUL_F: LOOPF_(a[j].f * b[j].f); break;
    case FT_DIV_F: LOOPF_(a[j].f / b[j].f); break;
    case FT_NEG_F: LOOPF_(-a[j].f); break;
    case FT_ROUND_F32: LOOPF_((double)(float)a[j].f); break;
    case FT_WRAP_I32: LOOPI_((int32_t)a[j].i); break;
    case FT_WRAP_I16: LOOPI_((int16_t)a[j].i); break;
    case FT_WRAP_I8: LOOPI_((int8_t)a[j].i); break;
    case FT_WRAP_U8: LOOPI_((uint8_t)a[j].i); break;
    case FT_WRAP_U16: LOOPI_((uint16_t)a[j].i); break;
    case FT_WRAP_U32: LOOPI_((uint32_t)a[j].i); break;
    case FT_WRAP_BOOL: LOOPI_(a[j].i != 0); break;
    case FT_EQ_I: LOOPI_(a[j].i == b[j].i); break;
    case FT_NE_I: LOOPI_(a[j].i != b[j].i); break;
    case FT_LT_I: LOOPI_(a[j].i < b[j].i); break;
    case FT_LE_I: LOOPI_(a[j].i <= b[j].i); break;
    case FT_GT_I: LOOPI_(a[j].i > b[j].i); break;
    case FT_GE_I: LOOPI_(a[j].i >= b[j].i); break;
    case FT_EQ_F: LOOPI_(a[j].f == b[j].f); break;
    case FT_NE_F: LOOPI_(a[j].f != b[j].f); break;
    case FT_LT_F: LOOPI_(a[j].f < b[j].f); break;
    case FT_LE_F: LOOPI_(a[j].f <= b[j].f); break;
    case FT_GT_F: LOOPI_(a[j].f > b[j].f); break;
    case FT_GE_F: LOOPI_(a[j].f >= b[j].f); break;
    case FT_SELECT: /* branchless (a clamp's select is taken at random): vectorises */
      for (int64_t j = 0; j < n; ++j) {
        uint64_t m = 0 - (uint64_t)(a[j].i != 0);
        d[j].i = (int64_t)(((uint64_t)b[j].i & m) | ((uint64_t)c[j].i & ~m));
      }
      break;
    case FT_AND: LOOPI_(a[j].i && b[j].i); break;
    case FT_OR: LOOPI_(a[j].i || b[j].i); break;
    case FT_I2F: LOOPF_((double)a[j].i); break;
    case FT_F2I: LOOPI_((int64_t)a[j].f); break;
#define LD_(T, field) \
  { const T* p = (const T*)st->ptrs[w[2]]; for (int64_t j = 0; j < n; ++j) d[j].field = p[b[j].i]; }
#define ST_(T, field) \
  { T* p = (T*)st->ptrs[w[2]]; for (int64_t j = 0; j < n; ++j) p[b[j].i] = (T)c[j].field; }
    case FT_LD_F32: LD_(float, f) break;
    case FT_LD_F64: LD_(double, f) break;
    case FT_LD_I64: LD_(int64_t, i) break;
    case FT_LD_I32: LD_(int32_t, i) break;
    case FT_LD_I16: LD_(int16_t, i) break;
    case FT_LD_I8: LD_(int8_t, i) break;
    case FT_LD_U8: LD_(uint8_t, i) break;
    case FT_LD_U16: LD_(uint16_t, i) break;
    case FT_LD_U32: LD_(uint32_t, i) break;
    case FT_LD_BOOL: LD_(_Bool, i) break;
    case FT_ST_F32: ST_(float, f) break;
    case FT_ST_F64: ST_(double, f) break;
    case FT_ST_I64: ST_(int64_t, i) break;
    case FT_ST_I32: ST_(int32_t, i) break;
    case FT_ST_I16: ST_(int16_t, i) break;
    case FT_ST_I8: ST_(int8_t, i) break;
    case FT_ST_U8: ST_(uint8_t, i) break;
    case FT_ST_U16: ST_(uint16_t, i) break;
    case FT_ST_U32: ST_(uint32_t, i) break;
    case FT_ST_BOOL: ST_(_Bool, i) break;
#define LDC_(T, field) \
  { const T* p = (const T*)st->ptrs[w[2]] + b[0].i; for (int64_t j = 0; j < n; ++j) d[j].field = p[j]; }
#define STC_(T, field) \
  { T* p = (T*)st->ptrs[w[2]] + b[0].i; for (int64_t j = 0; j < n; ++j) p[j] = (T)c[j].field; }
#define LD1_(T, field) \
  { T v = ((const T*)st->ptrs[w[2]])[b[0].i]; for (int64_t j = 0; j < n; ++j) d[j].field = v; }
    case FT_LDC_F32: LDC_(float, f) break;
    case FT_LDC_F64: LDC_(double, f) break;
    case FT_LDC_I64: LDC_(int64_t, i) break;
    case FT_LDC_I32: LDC_(int32_t, i) break;
    case FT_LDC_I16: LDC_(int16_t, i) break;
    case FT_LDC_I8: LDC_(int8_t, i) break;
    case FT_LDC_U8: LDC_(uint8_t, i) break;
    case FT_LDC_U16: LDC_(uint16_t, i) break;
    case FT_LDC_U32: LDC_(uint32_t, i) break;
    case FT_LDC_BOOL: LDC_(_Bool, i) break;
    case FT_STC_F32: STC_(float, f) break;
    case FT_STC_F64: STC_(double, f) break;
    case FT_STC_I64: STC_(int64_t, i) break;
    case FT_STC_I32: STC_(int32_t, i) break;
    case FT_STC_I16: STC_(int16_t, i) break;
    case FT_STC_I8: STC_(int8_t, i) break;
    case FT_STC_U8: STC_(uint8_t, i) break;
    case FT_STC_U16: STC_(uint16_t, i) break;
    case FT_STC_U32: STC_(uint32_t, i) break;
    case FT_STC_BOOL: STC_(_Bool, i) break;
    case FT_LD1_F32: LD1_(float, f) break;
    case FT_LD1_F64: LD1_(double, f) break;
    case FT_LD1_I64: LD1_(int64_t, i) break;
    case FT_LD1_I32: LD1_(int32_t, i) break;
    case FT_LD1_I16: LD1_(int16_t, i) break;
    case FT_LD1_I8: LD1_(int8_t, i) break;
    case FT_LD1_U8: LD1_(uint8_t, i) break;
    case FT_LD1_U16: LD1_(uint16_t, i) break;
    case FT_LD1_U32: LD1_(uint32_t, i) break;
    case FT_LD1_BOOL: LD1_(_Bool, i) break;
#undef LD_
#undef ST_
#undef LDC_
#undef STC_
#undef LD1_
    case FT_CALL1F: { float (*fn)(float) = byoc_ft_fn1f_[w[4]]; LOOPF_((double)fn((float)a[j].f)); } break;
    case FT_CALL1D: { double (*fn)(double) = byoc_ft_fn1d_[w[4]]; LOOPF_(fn(a[j].f)); } break;
    case FT_CALL2F: { float (*fn)(float, float) = byoc_ft_fn2f_[w[4]]; LOOPF_((double)fn((float)a[j].f, (float)b[j].f)); } break;
    case FT_CALL2D: { double (*fn)(double, double) = byoc_ft_fn2d_[w[4]]; LOOPF_(fn(a[j].f, b[j].f)); } break;
    default: break;
  }
}

/* Run a loop body of `len` words over vectors of `n` lanes (1 outside the innermost loop). */
static void byoc_ft_body_(const byoc_ft_loop_* st, const int64_t* w, int64_t len, int64_t n);

/* One FOR at `w` over iterations [first, last) of its own range (lower + k * step). */
static void byoc_ft_for_(const byoc_ft_loop_* st, const int64_t* w, int64_t first, int64_t last) {
  const int64_t var = w[1], lower = w[2], step = w[4], inner = w[5], len = w[6];
  const int64_t* body = w + 7;
  union byoc_ft_lane_* v = R_(var);
  if (!inner) {
    for (int64_t k = first; k < last; ++k) {
      v[0].i = lower + k * step;
      byoc_ft_body_(st, body, len, 1);
    }
    return;
  }
  for (int64_t k = first; k < last; k += BYOC_FT_BLOCK) {
    int64_t n = last - k < BYOC_FT_BLOCK ? last - k : BYOC_FT_BLOCK;
    for (int64_t j = 0; j < n; ++j) v[j].i = lower + (k + j) * step;
    byoc_ft_body_(st, body, len, n);
  }
}

static int64_t byoc_ft_trips_(const int64_t* w) {
  int64_t lower = w[2], upper = w[3], step = w[4];
  return upper > lower ? (upper - lower + step - 1) / step : 0;
}

static void byoc_ft_body_(const byoc_ft_loop_* st, const int64_t* w, int64_t len, int64_t n) {
  const int64_t* end = w + len;
  while (w < end) {
    if (w[0] == FT_FOR) {
      byoc_ft_for_(st, w, 0, byoc_ft_trips_(w));
      w += 7 + w[6];
    } else {
      byoc_ft_op_(st, w, n);
      w += 5;
    }
  }
}

/* A top-level LOOP: its one FOR split across threads as the generated C splits it (the
 * outer loop's iterations, when the generated C marked the loop for threads). */
static int32_t byoc_ft_loop_run_(const byoc_ft_program* prog, void* const* ptrs, const int64_t* w) {
  const int64_t par = w[1], work = w[2], nregs = w[3] > 0 ? w[3] : 1, nconst = w[4];
  const int64_t* consts = w + 5;
  const int64_t len = w[5 + 2 * nconst];
  const int64_t* body = w + 6 + 2 * nconst;
  const size_t lanes = (size_t)nregs * BYOC_FT_BLOCK;
  const int64_t trips = len >= 7 && body[0] == FT_FOR && 7 + body[6] == len ? byoc_ft_trips_(body) : 1;
  const int32_t nt = par && len >= 7 && body[0] == FT_FOR ? byoc_threads_for(work, BYOC_PAR_GRAIN) : 1;
  const int64_t parts = nt < trips ? nt : (trips > 0 ? trips : 1);
  int32_t failed = 0;
  BYOC_PARALLEL_FOR(nt)
  for (int64_t t = 0; t < parts; ++t) {
    union byoc_ft_lane_ stack[nregs <= BYOC_FT_STACK_REGS ? lanes : 1];
    union byoc_ft_lane_* r = nregs <= BYOC_FT_STACK_REGS ? stack : malloc(lanes * sizeof *r);
    if (r == NULL) {
      failed = 1;
      continue;
    }
    for (int64_t k = 0; k < nconst; ++k) { /* the loop's constants: every lane, once */
      union byoc_ft_lane_* c = r + (size_t)consts[2 * k] * BYOC_FT_BLOCK;
      for (int64_t j = 0; j < BYOC_FT_BLOCK; ++j) c[j].i = consts[2 * k + 1];
    }
    byoc_ft_loop_ st = {ptrs, prog->flits, r};
    if (parts == 1) {
      byoc_ft_body_(&st, body, len, 1);
    } else {
      int64_t first = trips * t / parts, last = trips * (t + 1) / parts;
      if (body[5]) { /* an innermost loop: blocks start at multiples of the block */
        first = first / BYOC_FT_BLOCK * BYOC_FT_BLOCK;
        last = t + 1 == parts ? trips : last / BYOC_FT_BLOCK * BYOC_FT_BLOCK;
      }
      byoc_ft_for_(&st, body, first, last);
    }
    if (r != stack) free(r);
  }
  return failed ? -1 : 0;
}

/* Run partition `prog` over its packed arguments (inputs, then outputs), as the generated
 * entry runs it: the plan runner calls this as a graph component's entry. Returns 0, or
 * nonzero with the message in byoc_last_error(). */
BYOC_FT_EXPORT int32_t byoc_ft_run(void* program, int32_t unused, DLTensor** args, int32_t num_args);
BYOC_FT_EXPORT int32_t byoc_ft_run(void* program, int32_t unused, DLTensor** args, int32_t num_args) {
  (void)unused;
  const byoc_ft_program* prog = (const byoc_ft_program*)program;
  if (num_args != prog->num_args) return byoc_fail("first tier: %d arguments, expected %d", (int)num_args, (int)prog->num_args);
  void* stack_ptrs[64];
  void** ptrs = prog->num_ptrs <= 64 ? stack_ptrs : malloc(sizeof(void*) * (size_t)prog->num_ptrs);
  if (ptrs == NULL) return byoc_fail("first tier: out of memory");
  for (int32_t i = 0; i < num_args; ++i) ptrs[i] = byoc_tensor_data(args[i]);
  uint8_t* ws = prog->ws_size ? (uint8_t*)byoc_workspace(prog->ws_size) : NULL;
  int32_t rc = 0;
  if (prog->ws_size && ws == NULL) rc = byoc_fail("first tier: cannot allocate the workspace");
  const int64_t* w = prog->code;
  while (rc == 0 && w[0] != FT_END) {
    switch (w[0]) {
      case FT_BUF: ptrs[w[1]] = ws + w[2]; w += 3; break;
      case FT_CPTR: ptrs[w[1]] = prog->consts[w[2]]; w += 3; break;
      case FT_PADD: ptrs[w[1]] = (uint8_t*)ptrs[w[2]] + w[3]; w += 4; break;
      case FT_KERNEL: {
        void* p[64];
        int64_t np = w[2];
        const int64_t* at = w + 3;
        for (int64_t k = 0; k < np && k < 64; ++k)
          p[k] = at[k] >= 0 ? ptrs[at[k]] : (void*)(prog->ilits + (-1 - at[k]));
        at += np;
        int64_t ni = at[0];
        const int64_t* ints = at + 1;
        at += 1 + ni;
        int64_t nf = at[0];
        double f[64];
        for (int64_t k = 0; k < nf && k < 64; ++k) f[k] = prog->flits[at[1 + k]];
        if (w[1] < 0 || w[1] >= byoc_ft_num_trampolines_) {
          rc = byoc_fail("first tier: no kernel %d", (int)w[1]);
          break;
        }
        int64_t r = byoc_ft_trampolines_[w[1]](p, ints, f);
        if (r != 0) {
          byoc_fail("first tier: kernel %d failed", (int)w[1]);
          rc = (int32_t)r;
        }
        w = at + 1 + nf;
      } break;
      case FT_LOOP:
        if (byoc_ft_loop_run_(prog, ptrs, w) != 0) rc = byoc_fail("first tier: out of memory");
        w += 6 + 2 * w[4] + w[5 + 2 * w[4]];
        break;
      default:
        rc = byoc_fail("first tier: bad instruction %d", (int)w[0]);
        break;
    }
  }
  if (ptrs != stack_ptrs) free(ptrs);
  return rc;
}

/* The layout of byoc_ft_program and the instruction set; first_tier.py checks it. */
BYOC_FT_EXPORT uint32_t byoc_ft_abi(void);
BYOC_FT_EXPORT uint32_t byoc_ft_abi(void) { return 5000u + FT_NUM_OPS; }
