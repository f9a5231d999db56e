"""The thread setting: how many threads one Executable may use, and its default.

    byoc.build(module, targets=[...], num_threads=2)     # or BYOC_NUM_THREADS=2
    exe.set_num_threads(1)                               # exactly one thread everywhere

One number governs every pool a run may use: the OpenMP teams of the generated
C (`byoc_runtime.h`; OpenBLAS of the cblas target stays on one thread and the
kernels split its GEMMs across that team), the vendor engine of a graph
runtime component (its `set_num_threads`), and the host executor's pool for
independent branches (`host.py`). With 1, no byoc code starts a thread.

The default (`default_num_threads`) is `$BYOC_NUM_THREADS` when set, else the
physical cores this process may use: the CPUs of its affinity mask
(`os.sched_getaffinity`), counting SMT siblings of one core once, capped by the
cgroup CPU quota (v2 `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`),
rounded up. `OMP_NUM_THREADS` and `OPENBLAS_NUM_THREADS` do not change it: byoc
names the team size of every region it starts. They still size what byoc does
not start — numpy's own OpenBLAS, which the host executor's dense/matmul
kernels use (docs/threads.md).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from byoc.utils import env

ENV = "BYOC_NUM_THREADS"
MAX_THREADS = 1024
"""The most a setting may ask for (the C runtime clamps to this too)."""


def check_num_threads(n: object, what: str = "num_threads") -> int:
    """`n` as a thread count: an int from 1 to MAX_THREADS, else a ValueError/TypeError."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{what} must be an int, got {type(n).__name__}")
    if not 1 <= n <= MAX_THREADS:
        raise ValueError(f"{what} must be between 1 and {MAX_THREADS}, got {n}")
    return n


def _cpus() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return set(range(os.cpu_count() or 1))


def physical_cores(cpus: set[int], sysfs: Path = Path("/sys/devices/system/cpu")) -> int:
    """How many distinct physical cores the logical CPUs `cpus` sit on (SMT siblings once);
    `len(cpus)` where the topology is not readable."""
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topo = sysfs / f"cpu{cpu}" / "topology"
        try:
            package = (topo / "physical_package_id").read_text().strip()
            core = (topo / "core_id").read_text().strip()
        except OSError:
            return len(cpus)
        cores.add((package, core))
    return max(1, len(cores))


def cgroup_cpu_limit(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPUs the cgroup quota allows (quota / period), None if there is no quota."""
    candidates = [(root / "cpu.max", None)]
    try:  # the process's own cgroup v2 path
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                rel = line[3:].strip().lstrip("/")
                if rel:
                    candidates.insert(0, (root / rel / "cpu.max", None))
    except OSError:
        pass
    for path, _ in candidates:
        try:
            quota, period = path.read_text().split()[:2]
        except (OSError, ValueError):
            continue
        if quota != "max" and float(period) > 0:
            return float(quota) / float(period)
        return None
    for base in (root / "cpu", root / "cpu,cpuacct"):
        try:
            quota_us = int((base / "cpu.cfs_quota_us").read_text())
            period_us = int((base / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        if quota_us > 0 and period_us > 0:
            return quota_us / period_us
        return None
    return None


def available_cores() -> int:
    """The physical cores this process may use: affinity mask, then the cgroup quota."""
    n = physical_cores(_cpus())
    limit = cgroup_cpu_limit()
    if limit is not None:
        n = min(n, max(1, math.ceil(limit)))
    return max(1, min(n, MAX_THREADS))


def default_num_threads() -> int:
    """`$BYOC_NUM_THREADS` if set (an int from 1 to MAX_THREADS, else an `EnvError`
    naming it, byoc.utils.env), else `available_cores()`."""
    n = env.value(ENV)
    return available_cores() if n is None else check_num_threads(n, ENV)


def resolve_num_threads(n: int | None) -> int:
    """An explicit count (checked), or the default."""
    return default_num_threads() if n is None else check_num_threads(n)


def split_budget(total: int, ways: int) -> list[int]:
    """`total` threads shared by `ways` concurrent tasks: every task at least 1, the sum
    `max(total, ways)`, the first tasks one more when it does not divide."""
    ways = max(1, ways)
    base, extra = divmod(max(total, ways), ways)
    return [base + (1 if i < extra else 0) for i in range(ways)]


__all__ = [
    "ENV",
    "MAX_THREADS",
    "available_cores",
    "cgroup_cpu_limit",
    "check_num_threads",
    "default_num_threads",
    "physical_cores",
    "resolve_num_threads",
    "split_budget",
]
