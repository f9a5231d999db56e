/*
 * byoc_profile.h — per-kernel wall time of generated partitions (docs/threads.md,
 * "Where the time goes"). Off by default and absent from the code then: emit-c writes,
 * before the first function that calls a unit's kernels,
 *
 *   #ifdef BYOC_PROFILE_KERNELS
 *   #include "byoc_profile.h"
 *   #define byoc_p_x_3(...) BYOC_PROFILE_CALL("byoc_p_x_3", "nn.conv2d, nn.relu: 1x64x56x56 f32", byoc_p_x_3(__VA_ARGS__))
 *   #endif
 *
 * (a macro does not expand inside its own expansion, so the call inside is the real
 * function). A library built with -DBYOC_PROFILE_KERNELS (`BYOC_PROFILE_KERNELS=1` in
 * the environment of the build: byoc.runtime.toolchain) times each call and hands it
 * to `byoc_profile_record`, a weak symbol: without the sink loaded, nothing is recorded.
 *
 * The sink is this header compiled with -DBYOC_PROFILE_SINK into a library of its own
 * (byoc.runtime.kernel_profile loads it with RTLD_GLOBAL before any model is built):
 * a table keyed by the call site's name and description, shared by every library in the
 * process, so that the 1-thread and 2-thread builds of one model land on the same rows, and
 * another model's site of the same name (its kernels are numbered from 0 too) on rows of its own.
 */
#ifndef BYOC_PROFILE_H_
#define BYOC_PROFILE_H_

#include <stdint.h>
#include <time.h>

static inline double byoc_profile_now_(void) {
  struct timespec ts; /* C11's clock (the units are built with -std=c11, no POSIX names) */
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#ifdef BYOC_PROFILE_SINK

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BYOC_PROFILE_SLOTS 8192

typedef struct {
  char* site;
  char* what;
  double seconds;
  double best; /* the fastest call */
  int64_t calls;
} byoc_profile_row_;

static char* byoc_profile_copy_(const char* s) {
  const size_t n = strlen(s) + 1;
  char* d = (char*)malloc(n);
  if (d != NULL) memcpy(d, s, n);
  return d;
}

static byoc_profile_row_ byoc_profile_rows_[BYOC_PROFILE_SLOTS];
static int64_t byoc_profile_order_[BYOC_PROFILE_SLOTS]; /* slots in order of first record */
static int64_t byoc_profile_n_;
static pthread_mutex_t byoc_profile_lock_ = PTHREAD_MUTEX_INITIALIZER;

__attribute__((visibility("default"))) void byoc_profile_record(const char* site, const char* what,
                                                               double seconds) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char* p = site; *p; ++p) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  for (const char* p = what; *p; ++p) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  pthread_mutex_lock(&byoc_profile_lock_);
  for (int64_t i = 0; i < BYOC_PROFILE_SLOTS; ++i) {
    byoc_profile_row_* r = &byoc_profile_rows_[(h + (uint64_t)i) % BYOC_PROFILE_SLOTS];
    if (r->site == NULL) {
      r->site = byoc_profile_copy_(site);
      r->what = byoc_profile_copy_(what);
      byoc_profile_order_[byoc_profile_n_++] = r - byoc_profile_rows_;
    } else if (strcmp(r->site, site) != 0 || strcmp(r->what, what) != 0) {
      continue;
    }
    r->seconds += seconds;
    if (r->calls == 0 || seconds < r->best) r->best = seconds;
    r->calls += 1;
    break;
  }
  pthread_mutex_unlock(&byoc_profile_lock_);
}

/* Rows recorded so far, in order of first record. */
__attribute__((visibility("default"))) int64_t byoc_profile_count(void) { return byoc_profile_n_; }

__attribute__((visibility("default"))) void byoc_profile_row(int64_t i, const char** site,
                                                            const char** what, double* seconds,
                                                            double* best, int64_t* calls) {
  const byoc_profile_row_* r = &byoc_profile_rows_[byoc_profile_order_[i]];
  *site = r->site, *what = r->what, *seconds = r->seconds, *best = r->best, *calls = r->calls;
}

/* Zero every row's time and count (the rows stay). */
__attribute__((visibility("default"))) void byoc_profile_reset(void) {
  pthread_mutex_lock(&byoc_profile_lock_);
  for (int64_t i = 0; i < byoc_profile_n_; ++i) {
    byoc_profile_rows_[byoc_profile_order_[i]].seconds = 0.0;
    byoc_profile_rows_[byoc_profile_order_[i]].best = 0.0;
    byoc_profile_rows_[byoc_profile_order_[i]].calls = 0;
  }
  pthread_mutex_unlock(&byoc_profile_lock_);
}

#else

extern void byoc_profile_record(const char* site, const char* what, double seconds)
    __attribute__((weak));

#define BYOC_PROFILE_CALL(site, what, CALL)                                            \
  do {                                                                                 \
    const double byoc_profile_t0_ = byoc_profile_now_();                               \
    CALL;                                                                              \
    if (byoc_profile_record)                                                           \
      byoc_profile_record(site, what, byoc_profile_now_() - byoc_profile_t0_);         \
  } while (0)

#endif /* BYOC_PROFILE_SINK */
#endif /* BYOC_PROFILE_H_ */
