/*
 * BYOC_CLAIM_ (byoc_kernels.h): threads claim the runs of a split one after another, so a
 * thread that stops for a while (here: sleeps in its first run, as a preempted thread would)
 * holds up one run while the others take the rest. Checks that every item is computed exactly
 * once, whatever the thread counts and run counts, and that the stopped thread ran at most
 * one run when the split had 16 (a fixed split would have given it 8). Built and run by
 * tests/runtime/test_team.py. Prints "ok" or what failed; exits 0 only when all held.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "byoc_kernels.h"

enum { N = 1000 };
static int hits[N];
static int runs_by[BYOC_TEAM_MAX + 1];
static int slept;

static void run(int64_t lo, int64_t hi, int stall) {
  const int32_t me = byoc_thread_id();
  __atomic_add_fetch(&runs_by[me], 1, __ATOMIC_RELAXED);
  if (stall && me == 1 && !__atomic_exchange_n(&slept, 1, __ATOMIC_RELAXED)) usleep(50000);
  for (int64_t i = lo; i < hi; ++i) __atomic_add_fetch(&hits[i], 1, __ATOMIC_RELAXED);
}

static int check(int32_t nt, int64_t n, int64_t pieces, int stall) {
  for (int64_t i = 0; i < N; ++i) hits[i] = 0;
  for (int i = 0; i <= BYOC_TEAM_MAX; ++i) runs_by[i] = 0;
  slept = 0;
  BYOC_CLAIM_(nt, n, pieces, lo, hi, run(lo, hi, stall));
  for (int64_t i = 0; i < N; ++i)
    if (hits[i] != (i < n)) {
      printf("nt %d n %lld pieces %lld: item %lld computed %d times\n", nt, (long long)n,
             (long long)pieces, (long long)i, hits[i]);
      return 1;
    }
  return 0;
}

int main(void) {
  int bad = 0;
  const int32_t counts[] = {1, 2, 3, 4};
  const int64_t sizes[] = {1, 2, 7, 64, 999, 1000};
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 6; ++b)
      for (int64_t pieces = 1; pieces <= 40 && pieces <= sizes[b]; pieces += 3)
        bad += check(counts[a], sizes[b], pieces, 0);
  /* a thread that stops in its first run: the others take the other runs */
  bad += check(2, 64, 16, 1);
  if (slept && runs_by[1] > 1) {
    printf("the stopped thread ran %d of 16 runs\n", runs_by[1]);
    ++bad;
  }
  if (runs_by[0] + runs_by[1] != 16) {
    printf("runs %d + %d, not 16\n", runs_by[0], runs_by[1]);
    ++bad;
  }
  printf(bad ? "bad %d\n" : "ok\n", bad);
  return bad != 0;
}
