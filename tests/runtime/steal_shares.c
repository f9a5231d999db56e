/*
 * BYOC_STEAL_ (byoc_kernels.h): fixed shares that idle threads steal from. Checks that every
 * item is computed exactly once for any thread count, size, claim size and alignment, and
 * that a worker that stops in its first claim (sleeps, as a preempted thread would) holds up
 * that claim only: the calling thread takes the rest of its share. Built and run by
 * tests/runtime/test_team.py. Prints "ok" or what failed; exits 0 only when all held.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "byoc_kernels.h"

enum { N = 1000 };
static int hits[N];
static int by[N];
static int slept;
static _Thread_local int on_caller;

/* `me`: 0 on the calling thread, 1 on a worker (whichever share it runs) */
static void run(int64_t lo, int64_t hi, int stall) {
  const int me = !on_caller;
  if (stall && me == 1 && !__atomic_exchange_n(&slept, 1, __ATOMIC_RELAXED)) usleep(100000);
  for (int64_t i = lo; i < hi; ++i) {
    if (stall) /* about 10 us an item: the worker has time to come */
      for (volatile int k = 0; k < 20000; ++k) {
      }
    __atomic_add_fetch(&hits[i], 1, __ATOMIC_RELAXED);
    by[i] = me;
  }
}

static int check(int32_t nt, int64_t n, int64_t grain, int64_t align, int stall) {
  for (int64_t i = 0; i < N; ++i) hits[i] = 0, by[i] = -1;
  slept = 0;
  BYOC_STEAL_(nt, n, grain, align, lo, hi, run(lo, hi, stall));
  for (int64_t i = 0; i < N; ++i)
    if (hits[i] != (i < n)) {
      printf("nt %d n %lld grain %lld align %lld: item %lld computed %d times\n", nt,
             (long long)n, (long long)grain, (long long)align, (long long)i, hits[i]);
      return 1;
    }
  return 0;
}

int main(void) {
  int bad = 0;
  on_caller = 1;
  const int32_t counts[] = {1, 2, 3, 4};
  const int64_t sizes[] = {0, 1, 2, 7, 64, 999, 1000};
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 7; ++b)
      for (int64_t grain = 1; grain <= 40; grain += 3)
        for (int64_t align = 1; align <= 11; align += 5)
          bad += check(counts[a], sizes[b], grain, align, 0);
  /* a worker that stops in its first claim: the caller takes the rest of its share (when no
   * worker came, the caller ran everything and nothing stopped) */
  bad += check(2, 1000, 50, 1, 1);
  int by1 = 0;
  for (int64_t i = 0; i < 1000; ++i) by1 += by[i] == 1;
  if (slept && by1 > 50) {
    printf("the stopped thread computed %d items, more than its first claim of 50\n", by1);
    ++bad;
  }
  printf(bad ? "bad %d\n" : "ok\n", bad);
  return bad != 0;
}
