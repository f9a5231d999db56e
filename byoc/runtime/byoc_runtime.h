/*
 * byoc_runtime.h — support code for the C that `lower-to-c` generates.
 *
 * Included by exactly one translation unit (the generated library): it
 * defines the exported `byoc_last_error`. Everything else is `static inline`,
 * so helpers a library does not use cost nothing and raise no warnings.
 *
 *   - error reporting: `byoc_fail(fmt, ...)` records a message in a
 *     thread-local buffer and returns -1; `byoc_last_error()` reads it;
 *   - argument checks of the DLTensor ABI: device, dtype, rank, shape,
 *     contiguity, alignment (`byoc_check_tensor`), output overlap
 *     (`byoc_check_disjoint`);
 *   - the per-thread workspace holding intermediate buffers
 *     (`byoc_workspace`): allocated on a thread's first call, grown if a
 *     bigger partition needs more, freed when the thread exits. No call
 *     allocates after the first, and concurrent calls never share one.
 */
#ifndef BYOC_RUNTIME_H_
#define BYOC_RUNTIME_H_

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlpack.h"

#if defined(__GNUC__) || defined(__clang__)
#define BYOC_EXPORT __attribute__((visibility("default")))
#define BYOC_MAYBE_UNUSED __attribute__((unused))
#define BYOC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define BYOC_EXPORT
#define BYOC_MAYBE_UNUSED
#define BYOC_PRINTF(a, b)
#endif

/* ---- errors -------------------------------------------------------------- */

static _Thread_local char byoc_error_message_[1024];

/* The message of the last failed call on this thread ("" if none failed). */
BYOC_EXPORT const char* byoc_last_error(void);
BYOC_EXPORT const char* byoc_last_error(void) { return byoc_error_message_; }

static inline int32_t byoc_fail(const char* fmt, ...) BYOC_PRINTF(1, 2);
static inline int32_t byoc_fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(byoc_error_message_, sizeof byoc_error_message_, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- DLTensor checks ----------------------------------------------------- */

static inline void byoc_format_dtype_(char* buf, size_t n, DLDataType t) {
  const char* base = NULL;
  switch (t.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLComplex: base = "complex"; break;
    case kDLBool: base = "bool"; break;
    default: break;
  }
  if (base == NULL) {
    snprintf(buf, n, "code%u", (unsigned)t.code);
  } else if (t.code == kDLBool) {
    snprintf(buf, n, "bool");
  } else {
    snprintf(buf, n, "%s%u", base, (unsigned)t.bits);
  }
  if (t.lanes != 1) {
    size_t len = strlen(buf);
    snprintf(buf + len, n - len, "x%u", (unsigned)t.lanes);
  }
}

static inline void byoc_format_shape_(char* buf, size_t n, int32_t ndim, const int64_t* shape) {
  size_t len = 0;
  buf[0] = '\0';
  len += (size_t)snprintf(buf, n, "[");
  for (int32_t i = 0; i < ndim && len < n; ++i) {
    len += (size_t)snprintf(buf + len, n - len, i ? ", %lld" : "%lld", (long long)shape[i]);
  }
  if (len < n) snprintf(buf + len, n - len, "]");
}

/*
 * Check one argument of partition `fn` against its expected element type and
 * shape. `what` names it in messages ("input 'a' (#0)"). Returns 0 or fails.
 */
static inline int32_t byoc_check_tensor(const char* fn, const char* what, const DLTensor* t,
                                        uint8_t code, uint8_t bits, int32_t ndim,
                                        const int64_t* shape) {
  char got[160], want[160];
  if (t == NULL) return byoc_fail("%s: %s is NULL", fn, what);
  if (t->device.device_type != kDLCPU)
    return byoc_fail("%s: %s is on device type %d, expected CPU (%d)", fn, what,
                     (int)t->device.device_type, (int)kDLCPU);
  if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != 1) {
    DLDataType w;
    w.code = code;
    w.bits = bits;
    w.lanes = 1;
    byoc_format_dtype_(got, sizeof got, t->dtype);
    byoc_format_dtype_(want, sizeof want, w);
    return byoc_fail("%s: %s has dtype %s, expected %s", fn, what, got, want);
  }
  if (t->ndim != ndim) {
    byoc_format_shape_(want, sizeof want, ndim, shape);
    if (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL))
      return byoc_fail("%s: %s has rank %d, expected %d (shape %s)", fn, what, (int)t->ndim,
                       (int)ndim, want);
    byoc_format_shape_(got, sizeof got, t->ndim, t->shape);
    return byoc_fail("%s: %s has rank %d (shape %s), expected rank %d (shape %s)", fn, what,
                     (int)t->ndim, got, (int)ndim, want);
  }
  int64_t numel = 1;
  for (int32_t i = 0; i < ndim; ++i) {
    if (t->shape[i] != shape[i]) {
      byoc_format_shape_(got, sizeof got, t->ndim, t->shape);
      byoc_format_shape_(want, sizeof want, ndim, shape);
      return byoc_fail("%s: %s has shape %s, expected %s", fn, what, got, want);
    }
    numel *= shape[i];
  }
  if (t->strides != NULL) {
    int64_t expect = 1;
    for (int32_t i = ndim - 1; i >= 0; --i) {
      if (shape[i] != 1 && t->strides[i] != expect) {
        byoc_format_shape_(got, sizeof got, ndim, t->strides);
        return byoc_fail("%s: %s is not contiguous (strides %s in elements); pass a "
                         "row-major compact tensor",
                         fn, what, got);
      }
      expect *= shape[i];
    }
  }
  if (numel > 0) {
    if (t->data == NULL) return byoc_fail("%s: %s has no data (NULL)", fn, what);
    if (((uintptr_t)t->data + (uintptr_t)t->byte_offset) % (uintptr_t)(bits / 8) != 0)
      return byoc_fail("%s: %s is not aligned to its %u-byte elements", fn, what,
                       (unsigned)(bits / 8));
  }
  return 0;
}

/* First element of a checked tensor. */
static inline void* byoc_tensor_data(const DLTensor* t) {
  return (void*)((char*)t->data + t->byte_offset);
}

/*
 * Outputs must not share memory with any other argument (the generated
 * kernels read inputs and write outputs through `restrict` pointers).
 * `ts` holds the `n` arguments, inputs first; the last `n_out` are outputs;
 * `nbytes` their sizes.
 */
static inline int32_t byoc_check_disjoint(const char* fn, int32_t n, int32_t n_out,
                                          const DLTensor* const* ts, const char* const* names,
                                          const int64_t* nbytes) {
  for (int32_t o = n - n_out; o < n; ++o) {
    if (nbytes[o] == 0) continue;
    uintptr_t lo = (uintptr_t)byoc_tensor_data(ts[o]);
    uintptr_t hi = lo + (uintptr_t)nbytes[o];
    for (int32_t i = 0; i < n; ++i) {
      if (i == o || nbytes[i] == 0) continue;
      uintptr_t a = (uintptr_t)byoc_tensor_data(ts[i]);
      uintptr_t b = a + (uintptr_t)nbytes[i];
      if (a < hi && lo < b)
        return byoc_fail("%s: output '%s' overlaps %s '%s'; outputs must not share memory with "
                         "other arguments",
                         fn, names[o], i < n - n_out ? "input" : "output", names[i]);
    }
  }
  return 0;
}

/* ---- per-thread workspace ------------------------------------------------ */

#define BYOC_ALIGNMENT 64

static _Thread_local void* byoc_ws_ptr_;
static _Thread_local size_t byoc_ws_size_;
static pthread_key_t byoc_ws_key_;
static pthread_once_t byoc_ws_once_ = PTHREAD_ONCE_INIT;
static int byoc_ws_key_ok_;

static inline void byoc_ws_release_(void* p) { free(p); }
static inline void byoc_ws_make_key_(void) {
  byoc_ws_key_ok_ = pthread_key_create(&byoc_ws_key_, byoc_ws_release_) == 0;
}

/*
 * A 64-byte aligned scratch area of at least `size` bytes, private to the
 * calling thread. Allocated on the thread's first call (and when a larger
 * size is asked for), freed when the thread exits. NULL if out of memory.
 */
static inline void* byoc_workspace(size_t size) {
  if (size <= byoc_ws_size_) return byoc_ws_ptr_;
  pthread_once(&byoc_ws_once_, byoc_ws_make_key_);
  const size_t rounded = (size + BYOC_ALIGNMENT - 1) / BYOC_ALIGNMENT * BYOC_ALIGNMENT;
  void* p = aligned_alloc(BYOC_ALIGNMENT, rounded);
  if (p == NULL) return NULL;
  free(byoc_ws_ptr_);
  byoc_ws_ptr_ = p;
  byoc_ws_size_ = rounded;
  if (byoc_ws_key_ok_) pthread_setspecific(byoc_ws_key_, p);
  return p;
}

#endif /* BYOC_RUNTIME_H_ */
