"""How far the weight-streaming layers let a model scale from 1 to 2 threads.

    python benchmarks/memory_bound.py bvlc_alexnet,vgg19 [--rounds 3] [--runs 3]

A batch-1 dense layer reads each weight once per inference, and its weights (alexnet: 234 MB,
vgg19: 471 MB) do not fit in any cache, so it runs at the speed of memory, not of the cores.
This script measures three things in one process and prints what they imply:

1. the machine's read bandwidth at 1 and 2 threads (a C probe compiled with the system
   compiler and OpenMP: a sum over a 512 MB array, 16 independent accumulators, best of 7);
2. the model's per-kernel profile at 1 and 2 threads (`benchmarks/kernel_profile.py`'s
   `profile`, `--stat best`), from which it takes the dense kernels (`byoc_dense_ep_f32(M, N,
   K, ...)`: N x K f32 weights) and reports their bandwidth at each thread count;
3. the bound: if the dense kernels ran at the best 2-thread bandwidth seen (the probe's or
   their own, whichever is higher) and everything else scaled perfectly, t2 >= dense bytes / bandwidth(2) + (t1 - dense t1) / 2, so the 1 -> 2
   thread speedup is at most t1 / that.

Load averages are printed with the figures: on a shared machine, read the ratios.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PROBE = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
int main(void) {
  const size_t n = (size_t)128 << 20; /* 512 MB of floats */
  float* a = aligned_alloc(64, n * sizeof(float));
  for (size_t i = 0; i < n; i++) a[i] = (float)(i & 1023) * 1e-3f;
  for (int th = 1; th <= 2; th++) {
    double best = 1e30, check = 0;
    for (int r = 0; r < 7; r++) {
      const double t0 = now();
      double total = 0;
#pragma omp parallel num_threads(th) reduction(+ : total)
      {
        float acc[16] = {0};
#pragma omp for schedule(static)
        for (size_t i = 0; i < n; i += 16)
          for (int k = 0; k < 16; k++) acc[k] += a[i + k];
        for (int k = 0; k < 16; k++) total += acc[k];
      }
      const double t = now() - t0;
      best = t < best ? t : best;
      check += total;
    }
    printf("%d %.6f %g\n", th, (double)n * sizeof(float) / best / 1e9, check);
  }
  free(a);
  return 0;
}
"""


def read_bandwidth() -> dict[int, float]:
    """GB/s read by 1 and 2 threads, from the C probe."""
    cc = shutil.which(os.environ.get("CC", "cc")) or "cc"
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text(PROBE)
        subprocess.run(
            [cc, "-O3", "-march=native", "-fopenmp", str(src), "-o", str(exe)], check=True
        )
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {int(t): float(gbs) for t, gbs, _ in (line.split() for line in out.splitlines())}


DENSE = re.compile(r"byoc_dense_ep_f32\((\d+), (\d+), (\d+)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "models", help="comma-separated light model names (tests/support/onnx_harness.py)"
    )
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)

    import kernel_profile as kp

    bw = read_bandwidth()
    print(
        f"read bandwidth: 1 thread {bw[1]:.1f} GB/s, 2 threads {bw[2]:.1f} GB/s "
        f"({bw[2] / bw[1]:.2f}x), load {os.getloadavg()[0]:.2f}"
    )
    for name in args.models.split(","):
        module = kp.load_model(name)
        x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
        prof = kp.profile(module, x, [1, 2], args.rounds, args.runs, "best")
        dense = {n: 0.0 for n in (1, 2)}
        nbytes = 0
        for site, (what, t1) in prof[1]["sites"].items():
            m = DENSE.search(what)
            if not m or what.startswith("partition "):  # a partition's row names its kernels too
                continue
            nbytes += int(m.group(2)) * int(m.group(3)) * 4
            dense[1] += t1
            dense[2] += prof[2]["sites"][site][1]
        t1, t2 = prof[1]["run"], prof[2]["run"]
        print(
            f"\n{name}: inference {t1:.2f} -> {t2:.2f} ms ({t1 / t2:.2f}x), load {os.getloadavg()[0]:.2f}"
        )
        if not nbytes:
            print("  no dense kernels")
            continue
        print(
            f"  dense kernels: {nbytes / 1e6:.0f} MB of weights, {dense[1]:.2f} ms at 1 thread "
            f"({nbytes / dense[1] / 1e6:.1f} GB/s), {dense[2]:.2f} ms at 2 threads "
            f"({nbytes / dense[2] / 1e6:.1f} GB/s)"
        )
        best = max(bw[2], nbytes / dense[2] / 1e6)  # the best 2-thread bandwidth seen
        floor = nbytes / best / 1e6 + (t1 - dense[1]) / 2
        print(
            f"  bound: t2 >= {nbytes / best / 1e6:.2f} (dense at {best:.1f} GB/s) + "
            f"{(t1 - dense[1]) / 2:.2f} (the rest, halved) = {floor:.2f} ms, "
            f"so 1 -> 2 threads at most {t1 / floor:.2f}x"
        )
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
