/*
 * byoc_runtime.h — support code for the C that `lower-to-c` generates.
 *
 * Included by exactly one translation unit (the generated library): it
 * defines the exported `byoc_last_error`, `byoc_retain` and `byoc_release`.
 * Everything else is `static inline`,
 * so helpers a library does not use cost nothing and raise no warnings.
 *
 *   - error reporting: `byoc_fail(fmt, ...)` records a message in a
 *     thread-local buffer and returns -1; `byoc_last_error()` reads it;
 *   - argument checks of the DLTensor ABI: device, dtype, rank, shape,
 *     contiguity, alignment (`byoc_check_tensor`), output overlap
 *     (`byoc_check_disjoint`);
 *   - the per-thread workspace holding intermediate buffers
 *     (`byoc_workspace`): allocated on a thread's first call, grown if a
 *     bigger partition needs more, freed when the thread exits or when the
 *     library is released (`byoc_retain` / `byoc_release`, called by the
 *     loader around the library's lifetime). No call allocates after the
 *     first, and concurrent calls never share one;
 *   - threads (`byoc_threads_for`, `BYOC_PARALLEL_FOR`): loops split across an
 *     OpenMP team sized by the thread setting (`byoc_set_num_threads`, and a
 *     per-calling-thread budget `byoc_set_call_threads`), never below a work
 *     threshold. See "threads" below.
 *
 * Two builds split this header across translation units (docs/c-codegen.md, "The
 * kernel library"): `BYOC_KERNEL_LIBRARY` (the object built once per machine: every
 * definition below, with the state hidden but shared across the library's units) and
 * `BYOC_GLUE` (a model's generated C linked with that object: the inline helpers, with
 * the state and the out-of-line functions only declared). Without either, one unit holds
 * everything and the state is `static`.
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

/*
 * BYOC_HAS_AVX512_("avx512...") is __builtin_cpu_supports for the AVX-512 features the
 * kernels test at run time; -DBYOC_NO_AVX512 (BYOC_CPU_DISPATCH=avx2) makes it 0, so an
 * AVX-512 machine runs and tests the AVX2 paths an AVX2-only CPU takes.
 */
#ifdef BYOC_NO_AVX512
#define BYOC_HAS_AVX512_(feature) 0
#else
#define BYOC_HAS_AVX512_(feature) __builtin_cpu_supports(feature)
#endif

/* hidden even without -fvisibility=hidden: calls bind inside this library, never to libgomp */
#define BYOC_HIDDEN_ __attribute__((visibility("hidden")))

/* The runtime's state: `BYOC_STATE_(declaration, = initialiser)` defines it static in one
 * unit, hidden in the kernel library, and only declares it in a model's glue unit. */
#if defined(BYOC_GLUE)
#define BYOC_STATE_(decl, ...) extern BYOC_HIDDEN_ decl
#elif defined(BYOC_KERNEL_LIBRARY)
#define BYOC_STATE_(decl, ...) BYOC_HIDDEN_ decl __VA_ARGS__
#else
#define BYOC_STATE_(decl, ...) static decl __VA_ARGS__
#endif
/* A function the runtime defines once: static in one unit, hidden in the kernel library. */
#if defined(BYOC_GLUE) || defined(BYOC_KERNEL_LIBRARY)
#define BYOC_SHARED_FN_ BYOC_HIDDEN_
#else
#define BYOC_SHARED_FN_ static
#endif

/* ---- errors -------------------------------------------------------------- */

BYOC_STATE_(_Thread_local char byoc_error_message_[1024], );

/* The message of the last failed call on this thread ("" if none failed). */
BYOC_EXPORT const char* byoc_last_error(void);
#ifndef BYOC_GLUE
BYOC_EXPORT const char* byoc_last_error(void) { return byoc_error_message_; }
#endif

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

/*
 * Every thread's workspace is a block on one list, so that `byoc_release`
 * can free them all before the library is unloaded. A block is also the
 * value of the thread's slot under `byoc_ws_key_`, whose destructor frees it
 * when the thread exits first. `byoc_release` deletes the key (no destructor
 * of this library runs after it returns) and bumps the generation, so a
 * thread's cached block from before is never used again if the same library
 * is loaded anew. All list and key changes hold `byoc_ws_mutex_`.
 */
typedef struct byoc_ws_block_ {
  struct byoc_ws_block_* prev;
  struct byoc_ws_block_* next;
  void* data;
  size_t size;
} byoc_ws_block_;

BYOC_STATE_(unsigned long byoc_ws_generation_, = 1);
BYOC_STATE_(_Thread_local byoc_ws_block_* byoc_ws_mine_, );
BYOC_STATE_(_Thread_local unsigned long byoc_ws_mine_generation_, );
BYOC_SHARED_FN_ void* byoc_workspace_grow_(size_t size);

#ifndef BYOC_GLUE
static pthread_mutex_t byoc_ws_mutex_ = PTHREAD_MUTEX_INITIALIZER;
static byoc_ws_block_ byoc_ws_all_ = {&byoc_ws_all_, &byoc_ws_all_, NULL, 0};
static pthread_key_t byoc_ws_key_;
static int byoc_ws_key_ok_;
static long byoc_users_;

static inline void byoc_ws_unlink_(byoc_ws_block_* b) {
  b->prev->next = b->next;
  b->next->prev = b->prev;
  free(b->data);
  free(b);
}

/* Thread exit: free the thread's block unless `byoc_release` already did. */
static BYOC_MAYBE_UNUSED void byoc_ws_thread_exit_(void* p) {
  pthread_mutex_lock(&byoc_ws_mutex_);
  for (byoc_ws_block_* b = byoc_ws_all_.next; b != &byoc_ws_all_; b = b->next) {
    if (b == p) {
      byoc_ws_unlink_(b);
      break;
    }
  }
  pthread_mutex_unlock(&byoc_ws_mutex_);
}

BYOC_SHARED_FN_ BYOC_MAYBE_UNUSED void* byoc_workspace_grow_(size_t size) {
  size_t rounded = (size + BYOC_ALIGNMENT - 1) / BYOC_ALIGNMENT * BYOC_ALIGNMENT;
  if (rounded < size) return NULL; /* size near SIZE_MAX */
  if (rounded == 0) rounded = BYOC_ALIGNMENT;
  void* p = aligned_alloc(BYOC_ALIGNMENT, rounded);
  if (p == NULL) return NULL;
  pthread_mutex_lock(&byoc_ws_mutex_);
  byoc_ws_block_* b = byoc_ws_mine_;
  if (b == NULL || byoc_ws_mine_generation_ != byoc_ws_generation_) {
    b = (byoc_ws_block_*)calloc(1, sizeof *b);
    if (b == NULL) {
      pthread_mutex_unlock(&byoc_ws_mutex_);
      free(p);
      return NULL;
    }
    b->next = &byoc_ws_all_;
    b->prev = byoc_ws_all_.prev;
    b->prev->next = b;
    byoc_ws_all_.prev = b;
    if (!byoc_ws_key_ok_) byoc_ws_key_ok_ = pthread_key_create(&byoc_ws_key_, byoc_ws_thread_exit_) == 0;
    /* without a key (all taken) the block lives until byoc_release */
    if (byoc_ws_key_ok_) pthread_setspecific(byoc_ws_key_, b);
    byoc_ws_mine_ = b;
    byoc_ws_mine_generation_ = byoc_ws_generation_;
  } else {
    free(b->data);
  }
  b->data = p;
  b->size = rounded;
  pthread_mutex_unlock(&byoc_ws_mutex_);
  return p;
}
#endif /* BYOC_GLUE */

/*
 * A 64-byte aligned scratch area of at least `size` bytes, private to the
 * calling thread. Allocated on the thread's first call (and when a larger
 * size is asked for), freed when the thread exits or by `byoc_release`.
 * NULL if out of memory.
 */
static inline void* byoc_workspace(size_t size) {
  byoc_ws_block_* b = byoc_ws_mine_;
  if (b != NULL && byoc_ws_mine_generation_ == byoc_ws_generation_ && size <= b->size)
    return b->data;
  return byoc_workspace_grow_(size);
}

/*
 * The calling thread is done with this library: free its workspace now and
 * clear its thread-exit hook, so that no code of the library runs when the
 * thread exits. Worker threads of the loader (the host executor's pool) call
 * it before they end; calling it with no workspace is harmless.
 */
BYOC_EXPORT void byoc_thread_release(void);
BYOC_EXPORT int32_t byoc_retain(void);
BYOC_EXPORT int32_t byoc_release(void);
#ifndef BYOC_GLUE
BYOC_EXPORT void byoc_thread_release(void) {
  pthread_mutex_lock(&byoc_ws_mutex_);
  byoc_ws_block_* mine = byoc_ws_mine_;
  if (mine != NULL && byoc_ws_mine_generation_ == byoc_ws_generation_) {
    for (byoc_ws_block_* b = byoc_ws_all_.next; b != &byoc_ws_all_; b = b->next) {
      if (b == mine) {
        byoc_ws_unlink_(b);
        break;
      }
    }
    if (byoc_ws_key_ok_) pthread_setspecific(byoc_ws_key_, NULL);
  }
  byoc_ws_mine_ = NULL;
  pthread_mutex_unlock(&byoc_ws_mutex_);
}

/*
 * Loader protocol: whoever loads the library calls `byoc_retain()` once, and
 * `byoc_release()` once when it is done with it, with no call of the library
 * in flight, before it unloads it. The last release frees every thread's
 * workspace and deletes the thread-exit hook, so unloading neither leaks the
 * workspaces nor leaves a destructor pointing into unmapped code. Both return
 * the number of users left.
 */
BYOC_EXPORT int32_t byoc_retain(void) {
  pthread_mutex_lock(&byoc_ws_mutex_);
  long users = ++byoc_users_;
  pthread_mutex_unlock(&byoc_ws_mutex_);
  return (int32_t)users;
}

static void byoc_team_release_(void); /* stops the library's team (see "threads") */

BYOC_EXPORT int32_t byoc_release(void) {
  pthread_mutex_lock(&byoc_ws_mutex_);
  if (byoc_users_ > 0) --byoc_users_;
  long users = byoc_users_;
  if (users == 0) {
    if (byoc_ws_key_ok_) pthread_key_delete(byoc_ws_key_);
    byoc_ws_key_ok_ = 0;
    while (byoc_ws_all_.next != &byoc_ws_all_) byoc_ws_unlink_(byoc_ws_all_.next);
    ++byoc_ws_generation_;
  }
  pthread_mutex_unlock(&byoc_ws_mutex_);
  if (users == 0) byoc_team_release_();
  return (int32_t)users;
}
#endif /* BYOC_GLUE */

/* ---- threads ------------------------------------------------------------- */

/*
 * Intra-op parallelism: OpenMP from the compiler's runtime (gcc's libgomp;
 * the library is compiled and linked with -fopenmp). Without -fopenmp (a
 * sanitizer build, a compiler without OpenMP) every macro below is a no-op
 * and every loop runs on the calling thread.
 *
 * How many threads a call may use:
 *   - the library's setting, `byoc_set_num_threads(n)` (exported; the runtime
 *     calls it at load and whenever `Executable.set_num_threads` changes it).
 *     Each loaded library is its own instance (the loader dlopens a private
 *     copy), so two models in one process keep their own settings;
 *   - overridden, for the calls made from one thread, by
 *     `byoc_set_call_threads(n)` (exported; thread-local; 0 clears it): the
 *     host executor gives each of the branches it runs at once a share of the
 *     budget this way;
 *   - 1 inside an OpenMP parallel region (no nested teams).
 * `byoc_threads()` is that count. Nothing here reads OMP_NUM_THREADS: every
 * region names its team size (`num_threads`), so the setting alone decides.
 *
 * A kernel parallelises a loop with
 *
 *     const int32_t nt = byoc_threads_for(work, BYOC_PAR_GRAIN);
 *     BYOC_PARALLEL_FOR(nt)
 *     for (int64_t i = 0; i < n; ++i) { ... }        // iterations independent
 *
 * where `work` estimates the loop's total cost in simple operations (e.g.
 * multiply-adds, or elements for an elementwise loop). `byoc_threads_for`
 * gives at most `byoc_threads()` threads and at least `grain` work to each, so
 * a loop too small to gain from a second thread (waking one costs a few
 * microseconds) runs on the caller alone, with no region at all (`if`).
 * The schedule is static: iteration i always runs the same code on the same
 * data, so a loop whose iterations do not accumulate into a shared value
 * gives bit-identical results at any thread count. Reductions must keep
 * their summation order per output element (split over outputs, not over
 * the reduced axis) to stay identical.
 *
 * Without OpenMP the three macros taking `nt` expand to `(void)(nt);` — a
 * statement — so put them where a statement may stand (not as the body of an
 * unbraced if/for).
 *
 * Other forms: `BYOC_PARALLEL_FOR_COLLAPSE(nt, k)` (k perfectly nested
 * loops); `BYOC_PARALLEL(nt)` before a block, with `BYOC_FOR` before a loop
 * in it, and `byoc_thread_id()` / `byoc_team_size()` inside.
 *
 * Per-thread scratch inside a region: take it from the calling thread's
 * workspace *before* the region (`nt` slices, one per thread, indexed by
 * `byoc_thread_id()`); do not call `byoc_workspace` inside a region. OpenMP
 * team threads then hold nothing of the library, so their exit (whenever
 * libgomp ends them) runs no code of a library that may be unloaded by then.
 * `byoc_fail` is safe anywhere (its buffer needs no cleanup), but a failure
 * found inside a region must be reported after it, by the calling thread.
 */
/* ---- byoc's own OpenMP team ---------------------------------------------------
 *
 * With gcc, the regions the kernels open (`BYOC_PARALLEL_FOR`, `BYOC_PARALLEL`) are
 * run by a team this library owns rather than by libgomp's: gcc compiles each region
 * into an outlined function and a call of `GOMP_parallel`, and the outlined body asks
 * `omp_get_num_threads()` / `omp_get_thread_num()` for its share. This translation unit
 * defines those three functions itself (hidden, like every symbol here: the library's
 * own regions bind to them, no other library's do), so each region is handed to
 * the team below. Why not libgomp's team (docs/threads.md, "The team"):
 *
 *   - wait policy by run: libgomp's idle workers spin a fixed count, read once per
 *     process (GOMP_SPINCOUNT), then sleep, and waking a sleeping worker costs tens of
 *     microseconds here (hundreds when the machine is loaded), once per region. These
 *     workers spin without limit while a run holds the team (`byoc_team_hold`, which
 *     the Executable calls around each run with more than one thread; capped at
 *     BYOC_TEAM_HOLD_SPIN_US after the last region), and otherwise only
 *     BYOC_TEAM_IDLE_SPIN_US after a region before they sleep: awake through a run,
 *     asleep between runs;
 *   - no waiting for a late worker: a region's shares (one per team member, thread
 *     number t) are claimed, the calling thread runs share 0 and then every share no
 *     worker has claimed yet, as thread t. A worker without a core (a loaded machine)
 *     costs the region nothing; the calling thread waits only for shares a worker has
 *     started. So regions must not contain a barrier (`BYOC_FOR` is `nowait`;
 *     `GOMP_barrier` aborts);
 *   - one team per library, used by one calling thread at a time: a region whose team is
 *     busy (another thread's run, a host branch) runs on its caller alone, so concurrent
 *     callers never oversubscribe the cores.
 *
 * The team's workers are started by the first region with more than one thread (never
 * with a setting of 1), and stopped and joined by the last `byoc_release`, before the
 * library is unloaded: no worker outlives the library's code. `byoc_set_team_mode(1)`
 * hands the regions to libgomp instead (for comparisons; `BYOC_TEAM=libgomp`).
 */
#if defined(_OPENMP) && defined(__GNUC__) && !defined(__clang__)
#define BYOC_OWN_TEAM 1
#include <dlfcn.h>
#include <omp.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

typedef void (*byoc_region_fn_)(void*);
BYOC_HIDDEN_ int omp_get_thread_num(void);
BYOC_HIDDEN_ int omp_get_num_threads(void);
BYOC_HIDDEN_ int omp_in_parallel(void);
BYOC_HIDDEN_ void GOMP_parallel(byoc_region_fn_ fn, void* data, unsigned num_threads, unsigned flags);
BYOC_HIDDEN_ void GOMP_barrier(void);

#ifndef BYOC_GLUE
#define BYOC_TEAM_IDLE_SPIN_US 200 /* spin after a region when no run holds the team */
#define BYOC_TEAM_HOLD_SPIN_US 20000 /* the most a held team spins after its last region */
#define BYOC_TEAM_PAUSES 4096 /* spin rounds (pause) before a waiting worker starts to yield */
#define BYOC_TEAM_MAX 64

#define BYOC_RTLD_DEFAULT_ ((void*)0) /* RTLD_DEFAULT (glibc), which needs _GNU_SOURCE */

typedef struct {
  pthread_mutex_t mutex;
  pthread_cond_t wake;
  uint64_t gen;             /* region number, published last (release) */
  byoc_region_fn_ fn;       /* the current region, valid while gen is */
  void* data;
  int32_t size;             /* its team size */
  int32_t busy;             /* a calling thread owns the team */
  int32_t pending;          /* shares claimed by workers and not finished */
  int32_t hold;             /* runs holding the team awake */
  int32_t sleepers;         /* workers asleep (or about to be) on `wake` */
  uint32_t pokes;           /* bumped by a hold: sleeping workers wake and spin (no region) */
  int32_t stop;
  int32_t nworkers;
  pid_t pid;                /* the process that started the workers (a forked child has none) */
  uint64_t claim[BYOC_TEAM_MAX]; /* the last region whose share t was claimed */
  pthread_t threads[BYOC_TEAM_MAX];
  int64_t counters[5]; /* regions, shares run by workers, shares taken back, alone, sleeps */
} byoc_team_t_;

static BYOC_MAYBE_UNUSED byoc_team_t_ byoc_team_ = {.mutex = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};
static pthread_mutex_t byoc_team_start_mutex_ = PTHREAD_MUTEX_INITIALIZER;
static int32_t byoc_team_mode_; /* 0: this team, 1: libgomp */
static _Thread_local int32_t byoc_team_id_;
static _Thread_local int32_t byoc_team_size_; /* 0 outside a region */

static inline uint64_t byoc_now_ns_(void) {
  struct timespec ts; /* C11's clock (-std=c11 hides clock_gettime): only spans are used */
  timespec_get(&ts, TIME_UTC);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void byoc_relax_(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* libgomp's entry points, for byoc_set_team_mode(1) */
typedef void (*byoc_gomp_parallel_t_)(byoc_region_fn_, void*, unsigned, unsigned);
typedef int (*byoc_gomp_int_t_)(void);
static byoc_gomp_parallel_t_ byoc_gomp_parallel_;
static byoc_gomp_int_t_ byoc_gomp_thread_num_, byoc_gomp_num_threads_, byoc_gomp_in_parallel_;

int omp_get_thread_num(void) {
  if (__builtin_expect(byoc_team_mode_ != 0, 0)) return byoc_gomp_thread_num_();
  return byoc_team_id_;
}
int omp_get_num_threads(void) {
  if (__builtin_expect(byoc_team_mode_ != 0, 0)) return byoc_gomp_num_threads_();
  return byoc_team_size_ > 0 ? byoc_team_size_ : 1;
}
/* Inside any region of this library (even one that runs on its caller alone). */
int omp_in_parallel(void) {
  if (__builtin_expect(byoc_team_mode_ != 0, 0)) return byoc_gomp_in_parallel_();
  return byoc_team_size_ > 0;
}
void GOMP_barrier(void) {
  fprintf(stderr, "byoc_runtime.h: a barrier inside a region is not supported (see the team)\n");
  abort();
}

/* Run share t of the current region as thread t of a team of `size`. */
static inline void byoc_team_share_(byoc_region_fn_ fn, void* data, int32_t t, int32_t size) {
  const int32_t id = byoc_team_id_, sz = byoc_team_size_;
  byoc_team_id_ = t;
  byoc_team_size_ = size;
  fn(data);
  byoc_team_id_ = id;
  byoc_team_size_ = sz;
}

static BYOC_MAYBE_UNUSED void* byoc_team_worker_(void* arg) {
  byoc_team_t_* tm = &byoc_team_;
  const int32_t t = (int32_t)(intptr_t)arg;
  uint64_t seen = __atomic_load_n(&tm->gen, __ATOMIC_ACQUIRE);
  for (;;) {
    /* wait for a new region: spin while a run holds the team (up to the cap) or for a
     * moment, then sleep */
    uint64_t g;
    uint32_t k = 0;
    uint64_t since = byoc_now_ns_();
    while ((g = __atomic_load_n(&tm->gen, __ATOMIC_ACQUIRE)) == seen) {
      if (__atomic_load_n(&tm->stop, __ATOMIC_ACQUIRE)) return NULL;
      byoc_relax_();
      if ((++k & 63) != 0) continue;
      /* past the first moments, give the core to any other runnable thread now and then
       * (the calling thread, when the machine has fewer free cores than the team) */
      if (k > BYOC_TEAM_PAUSES) sched_yield();
      const uint64_t idle = byoc_now_ns_() - since;
      const uint64_t limit = __atomic_load_n(&tm->hold, __ATOMIC_RELAXED) > 0
                                 ? (uint64_t)BYOC_TEAM_HOLD_SPIN_US * 1000u
                                 : (uint64_t)BYOC_TEAM_IDLE_SPIN_US * 1000u;
      if (idle < limit) continue;
      __atomic_add_fetch(&tm->counters[4], 1, __ATOMIC_RELAXED);
      pthread_mutex_lock(&tm->mutex);
      __atomic_add_fetch(&tm->sleepers, 1, __ATOMIC_SEQ_CST);
      const uint32_t poked = __atomic_load_n(&tm->pokes, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(&tm->gen, __ATOMIC_SEQ_CST) == seen &&
             __atomic_load_n(&tm->pokes, __ATOMIC_SEQ_CST) == poked &&
             !__atomic_load_n(&tm->stop, __ATOMIC_SEQ_CST))
        pthread_cond_wait(&tm->wake, &tm->mutex);
      __atomic_sub_fetch(&tm->sleepers, 1, __ATOMIC_SEQ_CST);
      pthread_mutex_unlock(&tm->mutex);
      k = 0;
      since = byoc_now_ns_();
    }
    seen = g;
    /* the region's fields are those of g until share t of g is claimed: the caller
     * publishes the next region only once every share of this one is claimed and done */
    byoc_region_fn_ fn = __atomic_load_n(&tm->fn, __ATOMIC_ACQUIRE);
    void* data = __atomic_load_n(&tm->data, __ATOMIC_ACQUIRE);
    const int32_t size = __atomic_load_n(&tm->size, __ATOMIC_ACQUIRE);
    if (t >= size) continue;
    uint64_t c = __atomic_load_n(&tm->claim[t], __ATOMIC_ACQUIRE);
    if (c >= g || !__atomic_compare_exchange_n(&tm->claim[t], &c, g, false, __ATOMIC_ACQ_REL,
                                               __ATOMIC_ACQUIRE))
      continue; /* taken back by the caller */
    byoc_team_share_(fn, data, t, size);
    __atomic_add_fetch(&tm->counters[1], 1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&tm->pending, 1, __ATOMIC_RELEASE);
  }
}

/* Start workers until the team has `want` (the calling thread owns the team). */
static BYOC_MAYBE_UNUSED int32_t byoc_team_grow_(int32_t want) {
  byoc_team_t_* tm = &byoc_team_;
  if (want > BYOC_TEAM_MAX - 1) want = BYOC_TEAM_MAX - 1;
  pthread_mutex_lock(&byoc_team_start_mutex_);
  if (tm->nworkers > 0 && tm->pid != getpid()) tm->nworkers = 0; /* forked: none here */
  tm->pid = getpid();
  while (tm->nworkers < want && !tm->stop) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    int rc = pthread_create(&tm->threads[tm->nworkers + 1], &attr, byoc_team_worker_,
                            (void*)(intptr_t)(tm->nworkers + 1));
    pthread_attr_destroy(&attr);
    if (rc != 0) break;
    ++tm->nworkers;
  }
  const int32_t n = tm->nworkers;
  pthread_mutex_unlock(&byoc_team_start_mutex_);
  return n;
}

void GOMP_parallel(byoc_region_fn_ fn, void* data, unsigned num_threads, unsigned flags) {
  (void)flags; /* proc_bind: not used */
  if (__builtin_expect(byoc_team_mode_ != 0, 0)) {
    byoc_gomp_parallel_(fn, data, num_threads, flags);
    return;
  }
  byoc_team_t_* tm = &byoc_team_;
  int32_t size = num_threads > BYOC_TEAM_MAX ? BYOC_TEAM_MAX : (int32_t)num_threads;
  int32_t free_ = 0;
  if (size <= 1 || byoc_team_size_ > 0 ||
      !__atomic_compare_exchange_n(&tm->busy, &free_, 1, false, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED)) {
    /* one thread, nested, or the team is another caller's: the whole region here */
    __atomic_add_fetch(&tm->counters[3], 1, __ATOMIC_RELAXED);
    byoc_team_share_(fn, data, 0, 1);
    return;
  }
  if (tm->nworkers < size - 1) {
    const int32_t n = byoc_team_grow_(size - 1);
    if (size > n + 1) size = n + 1;
  }
  const uint64_t g = tm->gen + 1;
  /* shares outside this team size are not to be taken (a worker reading a later size
   * with this region's number must find its share claimed) */
  for (int32_t t = size; t <= tm->nworkers; ++t) __atomic_store_n(&tm->claim[t], g, __ATOMIC_RELAXED);
  __atomic_store_n(&tm->pending, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&tm->fn, fn, __ATOMIC_RELEASE);
  __atomic_store_n(&tm->data, data, __ATOMIC_RELEASE);
  __atomic_store_n(&tm->size, size, __ATOMIC_RELEASE);
  __atomic_store_n(&tm->gen, g, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&tm->sleepers, __ATOMIC_SEQ_CST) > 0) {
    pthread_mutex_lock(&tm->mutex);
    pthread_cond_broadcast(&tm->wake);
    pthread_mutex_unlock(&tm->mutex);
  }
  byoc_team_share_(fn, data, 0, size);
  /* every share no worker has claimed yet: here, as its thread */
  for (int32_t t = 1; t < size; ++t) {
    uint64_t c = __atomic_load_n(&tm->claim[t], __ATOMIC_ACQUIRE);
    if (c < g && __atomic_compare_exchange_n(&tm->claim[t], &c, g, false, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE)) {
      byoc_team_share_(fn, data, t, size);
      __atomic_add_fetch(&tm->counters[2], 1, __ATOMIC_RELAXED);
    } else {
      __atomic_add_fetch(&tm->pending, 1, __ATOMIC_ACQ_REL);
    }
  }
  /* pending counts up for each share a worker claimed, down when it finishes: wait for 0 */
  uint32_t k = 0;
  while (__atomic_load_n(&tm->pending, __ATOMIC_ACQUIRE) != 0) {
    byoc_relax_();
    if ((++k & 1023) == 0) sched_yield(); /* a worker without a core: let it run */
  }
  __atomic_add_fetch(&tm->counters[0], 1, __ATOMIC_RELAXED);
  __atomic_store_n(&tm->busy, 0, __ATOMIC_RELEASE);
}

/* A run holds the team awake (on != 0) or lets it go; holds count (concurrent runs). A hold
 * also wakes the workers that fell asleep since the last run, so that they are spinning by
 * the run's first region: waking a sleeping thread takes tens of microseconds (more on a
 * loaded machine), which the first regions otherwise paid, on the calling thread alone. */
BYOC_EXPORT void byoc_team_hold(int32_t on);
BYOC_EXPORT void byoc_team_hold(int32_t on) {
  byoc_team_t_* tm = &byoc_team_;
  if (on) {
    __atomic_add_fetch(&tm->hold, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&tm->pokes, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&tm->sleepers, __ATOMIC_SEQ_CST) > 0) {
      pthread_mutex_lock(&tm->mutex);
      pthread_cond_broadcast(&tm->wake);
      pthread_mutex_unlock(&tm->mutex);
    }
  } else if (__atomic_sub_fetch(&byoc_team_.hold, 1, __ATOMIC_RELAXED) < 0)
    __atomic_store_n(&byoc_team_.hold, 0, __ATOMIC_RELAXED);
}

/* 0: this library's team runs its regions; 1: libgomp's (returns the previous mode, or -1
 * when libgomp's entry points cannot be found). Only with no region in flight. */
BYOC_EXPORT int32_t byoc_set_team_mode(int32_t mode);
BYOC_EXPORT int32_t byoc_set_team_mode(int32_t mode) {
  if (mode != 0 && byoc_gomp_parallel_ == NULL) {
    byoc_gomp_parallel_ = (byoc_gomp_parallel_t_)dlsym(BYOC_RTLD_DEFAULT_, "GOMP_parallel");
    byoc_gomp_thread_num_ = (byoc_gomp_int_t_)dlsym(BYOC_RTLD_DEFAULT_, "omp_get_thread_num");
    byoc_gomp_num_threads_ = (byoc_gomp_int_t_)dlsym(BYOC_RTLD_DEFAULT_, "omp_get_num_threads");
    byoc_gomp_in_parallel_ = (byoc_gomp_int_t_)dlsym(BYOC_RTLD_DEFAULT_, "omp_in_parallel");
    if (!byoc_gomp_parallel_ || !byoc_gomp_thread_num_ || !byoc_gomp_num_threads_ ||
        !byoc_gomp_in_parallel_) {
      byoc_gomp_parallel_ = NULL;
      return -1;
    }
  }
  const int32_t old = byoc_team_mode_;
  byoc_team_mode_ = mode != 0;
  return old;
}

/* Counters since load: regions run by the team, shares run by workers, shares the caller
 * took back (no worker had claimed them), regions run on the caller alone, how often a
 * worker went to sleep; then the workers asleep now. */
BYOC_EXPORT void byoc_team_counters(int64_t* out);
BYOC_EXPORT void byoc_team_counters(int64_t* out) {
  for (int i = 0; i < 5; ++i) out[i] = __atomic_load_n(&byoc_team_.counters[i], __ATOMIC_RELAXED);
  out[5] = __atomic_load_n(&byoc_team_.sleepers, __ATOMIC_SEQ_CST);
}

/* Stop and join the workers (byoc_release, before the library is unloaded). */
static BYOC_MAYBE_UNUSED void byoc_team_stop_(void) {
  byoc_team_t_* tm = &byoc_team_;
  pthread_mutex_lock(&byoc_team_start_mutex_);
  pthread_mutex_lock(&tm->mutex);
  __atomic_store_n(&tm->stop, 1, __ATOMIC_SEQ_CST);
  pthread_cond_broadcast(&tm->wake);
  pthread_mutex_unlock(&tm->mutex);
  if (tm->pid == getpid()) /* a forked child has no workers to join */
    for (int32_t t = 1; t <= tm->nworkers; ++t) pthread_join(tm->threads[t], NULL);
  tm->nworkers = 0;
  __atomic_store_n(&tm->stop, 0, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&byoc_team_start_mutex_);
}
static void byoc_team_release_(void) { byoc_team_stop_(); }
#endif /* BYOC_GLUE */
#else
#define BYOC_OWN_TEAM 0
#ifndef BYOC_GLUE
static void byoc_team_release_(void) {}
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#endif

/* Default minimum work per thread (simple operations): ~10-20 us of work. */
#define BYOC_PAR_GRAIN 32768
#define BYOC_MAX_THREADS 1024

BYOC_STATE_(int32_t byoc_num_threads_, = 1);
BYOC_STATE_(_Thread_local int32_t byoc_call_threads_, );

static inline int32_t byoc_clamp_threads_(int32_t n) {
  return n < 1 ? 1 : n > BYOC_MAX_THREADS ? BYOC_MAX_THREADS : n;
}

/* The library's thread setting (at least 1); returns the previous one. */
BYOC_EXPORT int32_t byoc_set_num_threads(int32_t n);
BYOC_EXPORT int32_t byoc_get_num_threads(void);
BYOC_EXPORT int32_t byoc_set_call_threads(int32_t n);
#ifndef BYOC_GLUE
BYOC_EXPORT int32_t byoc_set_num_threads(int32_t n) {
  return __atomic_exchange_n(&byoc_num_threads_, byoc_clamp_threads_(n), __ATOMIC_RELAXED);
}

BYOC_EXPORT int32_t byoc_get_num_threads(void) {
  return __atomic_load_n(&byoc_num_threads_, __ATOMIC_RELAXED);
}

/* The calling thread's budget for its next calls (0: the library's setting); returns the
 * previous one. */
BYOC_EXPORT int32_t byoc_set_call_threads(int32_t n) {
  int32_t old = byoc_call_threads_;
  byoc_call_threads_ = n <= 0 ? 0 : byoc_clamp_threads_(n);
  return old;
}
#endif /* BYOC_GLUE */

/* Threads this call may use now (see above). */
static inline int32_t byoc_threads(void) {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
#endif
  int32_t n = byoc_call_threads_;
  if (n <= 0) n = __atomic_load_n(&byoc_num_threads_, __ATOMIC_RELAXED);
  return n < 1 ? 1 : n;
}

/* Threads for a loop of `work` operations: at most byoc_threads(), at least `grain` work
 * each; 1 means "run it on the calling thread". */
static inline int32_t byoc_threads_for(int64_t work, int64_t grain) {
  int32_t n = byoc_threads();
  if (n <= 1) return 1;
  if (grain < 1) grain = 1;
  int64_t most = work / grain;
  if (most < 2) return 1;
  return most < (int64_t)n ? (int32_t)most : n;
}

#define BYOC_PRAGMA_(x) _Pragma(#x)
#ifdef _OPENMP
#define BYOC_PARALLEL_FOR(nt) \
  BYOC_PRAGMA_(omp parallel for num_threads(nt) if ((nt) > 1) schedule(static))
#define BYOC_PARALLEL_FOR_COLLAPSE(nt, k) \
  BYOC_PRAGMA_(omp parallel for collapse(k) num_threads(nt) if ((nt) > 1) schedule(static))
#define BYOC_PARALLEL(nt) BYOC_PRAGMA_(omp parallel num_threads(nt) if ((nt) > 1))
#define BYOC_FOR BYOC_PRAGMA_(omp for schedule(static) nowait) /* no barrier in a region */
/* The split copy of a generated elementwise loop: gcc outlines a region's body into a
 * function that receives the pointers through a struct, without their `restrict`, and at -O2
 * does not vectorise a loop that would need a run-time alias check. The emitter already
 * promises no aliasing (every pointer is restrict), so it marks the innermost contiguous loop
 * `omp simd` (`BYOC_PARALLEL_FOR_SIMD` when that loop is the split one). Lanes compute each
 * element with the same operations as the scalar loop: results are unchanged. */
#define BYOC_SIMD BYOC_PRAGMA_(omp simd)
#define BYOC_PARALLEL_FOR_SIMD(nt) \
  BYOC_PRAGMA_(omp parallel for simd num_threads(nt) if ((nt) > 1) schedule(static))
static inline int32_t byoc_thread_id(void) { return (int32_t)omp_get_thread_num(); }
static inline int32_t byoc_team_size(void) { return (int32_t)omp_get_num_threads(); }
#else
/* no OpenMP: the loop runs on the calling thread; `nt` is still used (no unused-variable
 * warning under -Werror), so the macro is a statement before the loop or block */
#define BYOC_PARALLEL_FOR(nt) (void)(nt);
#define BYOC_PARALLEL_FOR_COLLAPSE(nt, k) (void)(nt);
#define BYOC_PARALLEL(nt) (void)(nt);
#define BYOC_FOR
#define BYOC_SIMD
#define BYOC_PARALLEL_FOR_SIMD(nt) (void)(nt);
static inline int32_t byoc_thread_id(void) { return 0; }
static inline int32_t byoc_team_size(void) { return 1; }
#endif

#endif /* BYOC_RUNTIME_H_ */
