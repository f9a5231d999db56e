"""Which CPU code paths native kernels take: the best the CPU has, or a forced baseline.

Kernels in the generated C pick AVX2/FMA versions at run time (function
multiversioning and `__builtin_cpu_supports`), and OpenBLAS picks its kernels by
CPU model. `BYOC_CPU_DISPATCH=baseline` forces the paths every x86-64 CPU runs,
so what an older or different CPU computes can be reproduced and tested on any
machine:

- generated C is compiled with `-DBYOC_BASELINE_ONLY` (no clones, no AVX2/FMA
  paths; the flag is part of the library cache key);
- OpenBLAS is told to use its `Nehalem` kernels (SSE4.2, no AVX) through
  `OPENBLAS_CORETYPE`, unless that variable is already set. OpenBLAS reads it
  once, when it is first loaded into the process; the variable is set only
  while byoc loads it, so child processes and other libraries do not see it.

`BYOC_CPU_DISPATCH=avx2` forces the paths an AVX2-only CPU (no AVX-512) runs, so an
AVX-512 machine runs and tests them too:

- generated C is compiled with `-DBYOC_NO_AVX512`: every run-time test for an AVX-512
  feature in the kernel headers (`BYOC_HAS_AVX512_`) is false, the AVX2/FMA paths stay;
- OpenBLAS is told to use its `Haswell` kernels (AVX2), unless `OPENBLAS_CORETYPE` is set.

oneDNN picks its own kernels; `ONEDNN_MAX_CPU_ISA` caps them (docs/dnnl.md).

`BYOC_CPU_DISPATCH=auto` (the default) takes the best path the CPU supports.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from byoc.utils import env

DISPATCH_ENV = "BYOC_CPU_DISPATCH"
DISPATCH_LEVELS = ("auto", "avx2", "baseline")
OPENBLAS_BASELINE_CORE = "Nehalem"
OPENBLAS_AVX2_CORE = "Haswell"
_C_FLAGS = {"auto": (), "avx2": ("-DBYOC_NO_AVX512",), "baseline": ("-DBYOC_BASELINE_ONLY",)}
_OPENBLAS_CORES = {"avx2": OPENBLAS_AVX2_CORE, "baseline": OPENBLAS_BASELINE_CORE}


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The ISA flags /proc/cpuinfo lists for the first CPU (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def distinct_levels() -> tuple[str, ...]:
    """The dispatch levels that run different code on this CPU: `avx2` only where the CPU
    has AVX-512 (elsewhere it is `auto`)."""
    return DISPATCH_LEVELS if "avx512f" in cpu_flags() else ("auto", "baseline")


def dispatch_level() -> str:
    """`auto`, `avx2` or `baseline`, from $BYOC_CPU_DISPATCH (unset or empty: `auto`)."""
    return str(env.value(DISPATCH_ENV))


def c_dispatch_flags() -> tuple[str, ...]:
    """Compiler flags that select the dispatch level of the kernels in byoc_kernels.h."""
    return _C_FLAGS[dispatch_level()]


@contextmanager
def native_load() -> Iterator[None]:
    """Around loading a library that may pull in OpenBLAS: under a forced level,
    OPENBLAS_CORETYPE names that level's kernels while the load runs (an explicit
    OPENBLAS_CORETYPE wins), and is restored afterwards. OPENBLAS_NUM_THREADS is 1
    while it loads, unless the user set it: OpenBLAS would otherwise start a pool of
    one thread per core as it loads, which the cblas kernels never use (they keep
    OpenBLAS on one thread and split GEMMs across byoc's own threads, docs/threads.md)."""
    env.check_native()  # the BYOC_* variables the library's C code reads itself
    added: list[str] = []
    core = _OPENBLAS_CORES.get(dispatch_level())
    if core is not None and "OPENBLAS_CORETYPE" not in os.environ:
        os.environ["OPENBLAS_CORETYPE"] = core
        added.append("OPENBLAS_CORETYPE")
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        added.append("OPENBLAS_NUM_THREADS")
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)
