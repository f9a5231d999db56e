"""Time to first inference: onnxruntime against byoc, empty caches, a fresh process each.

Per corpus model (benchmarks/corpus.py), each engine in a fresh process, alternating:

- onnxruntime: `import onnxruntime`, then `InferenceSession(path)` (one intra-op thread) and
  the first run; then its steady run time (min of 7);
- byoc (the default table), with an empty library cache (a fresh `BYOC_CACHE_DIR`): its
  modules imported first, with those a build imports on first use (`BUILD_MODULES`; the
  `modules` column, not counted, as `import onnxruntime` is not: `ort mod`; the line "with
  the imports" counts both), then the ONNX import,
  `byoc.build(..., targets=["ccompiler"], tiered=True)` and the first run, which runs on the
  first tier (docs/c-codegen.md, "The first tier") while the C compiles in the background.
  Time to first inference is import + build + first run, against onnxruntime's session +
  first run. Then: a second run (`2nd ms`, on the first tier if the compile is still going),
  the time until the compiled library is in use (`compiled`), the largest difference between
  the first tier's and the compiled library's outputs (`diff`), and the steady run time once
  compiled against an untiered build of the same model in the same process (its library a
  cache hit), alternating, min of 7 each (`x`: must be 1).

`--untiered` gives the untiered build phase by phase instead — import (ONNX to the nn
dialect), partition (prepare and byoc passes), codegen (lower-to-c and the C text), compile
(gcc: the model's glue unit linked with the kernel library), load (dlopen, the host plan,
the Executable) — against onnxruntime's session creation, with the compiler's CPU seconds
(`cc cpu`); `--whole` adds the build without the kernel library (`BYOC_KERNEL_LIBRARY=0`).

The kernel library (byoc/runtime/kernel_library.py), the plan runner (byoc_plan_runner.c)
and the first tier (byoc_first_tier.c) are model-independent, built once per machine into
the kernel cache: each build into an empty kernel cache, and a lookup, is timed first on
rows of its own; every model's empty library cache then finds them.

    python benchmarks/cold_start.py                  # every corpus model
    python benchmarks/cold_start.py --models ocr_cls,magika --untiered --whole

Goals (docs/benchmarks.md): the slowest model's time to first inference under 1 s, and the
geometric mean of byoc / onnxruntime at most 3; the steady run once compiled no slower.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402

PHASES = ("import", "partition", "codegen", "compile", "load")

BUILD_MODULES = (
    "byoc.context",
    "byoc.lowering.nn_to_c.quant",
    "byoc.passes.byoc_pipeline",
    "byoc.specialize",
    "_cffi_backend",
    "ctypes.util",
)
"""Modules a first ccompiler build imports when it needs them (byoc imports lazily, so that
`import byoc` and `byoc-opt --help` stay light): the `modules` column imports them with the
rest, as `import onnxruntime` loads all of onnxruntime. A module missing here is counted in
the build, never left out."""


def import_build_modules() -> None:
    """byoc's modules as a build uses them (`BUILD_MODULES`, the ONNX protobuf classes)."""
    import importlib

    from byoc.frontend.onnx import proto
    from byoc.passes import ALL_PASSES

    for name in BUILD_MODULES:
        importlib.import_module(name)
    proto.pb2()
    ALL_PASSES["lower-to-c"]()


# ---- workers (one fresh process each) --------------------------------------------------


def work_byoc(name: str) -> dict[str, Any]:
    """The phases of `byoc.build` for the ccompiler target, timed one by one (as driver.build)."""
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp

    import byoc
    from byoc.context import make_context
    from byoc.dialects.byoc import partition_target
    from byoc.driver import _ops_of, prepare_for
    from byoc.lowering.c_build import c_library
    from byoc.passes import ALL_PASSES
    from byoc.passes.byoc_pipeline import partition_for
    from byoc.runtime.c_module import CModule
    from byoc.runtime.executable import Executable, PartitionInfo
    from byoc.runtime.host import plan_function
    from byoc.runtime.native_plan import runner_library
    from byoc.runtime.toolchain import DEFAULT_FLAGS, compile_source

    import_build_modules()
    times["import byoc"] = time.perf_counter() - t0
    path, feeds = corpus.load(name)
    cpu0 = _cpu()
    t0 = time.perf_counter()
    module = byoc.import_onnx(str(path), input_shapes=corpus.input_shapes(name), bind_inputs=corpus.bind_inputs(name))
    times["import"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    module = module.clone()
    prepare_for(module, ["ccompiler"])
    partition_for(module, ["ccompiler"])
    module.verify()
    funcs = [op for op in module.ops if isinstance(op, FuncOp) and partition_target(op) == "ccompiler"]
    times["partition"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    unit = ModuleOp([f.clone() for f in funcs])
    ALL_PASSES["lower-to-c"]()().apply(make_context(), unit)
    lib = c_library(unit)
    times["codegen"] = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), _children_cpu()
    built = compile_source(lib.source, DEFAULT_FLAGS)
    times["compile"] = time.perf_counter() - t0
    times["compile cpu"] = _children_cpu() - c0
    t0 = time.perf_counter()
    cmod = CModule(built.library_path, lib.functions, lib.constants, library=built.library)
    plan, constants = plan_function(module)
    partitions = [PartitionInfo(f.sym_name.data, "ccompiler", _ops_of(f)) for f in funcs]
    t1 = time.perf_counter()
    runner_library()  # what the Executable loads first: the plan runner, built once per cache
    times["runner"] = time.perf_counter() - t1
    exe = Executable(plan, constants, {"ccompiler": cmod}, partitions)
    times["load"] = time.perf_counter() - t0
    times["cpu"] = _cpu() - cpu0
    t0 = time.perf_counter()
    exe.run(**feeds)
    times["first run"] = time.perf_counter() - t0
    source = built.source_path.read_text() if built.source_path.exists() else ""
    return {
        "times": times,
        "partitions": len(funcs),
        "glue": source.startswith("#define BYOC_GLUE"),
        "source_kb": len(source) / 1024,
    }


def work_tiered(name: str) -> dict[str, Any]:
    """Time to first inference as a user meets it: `byoc.build(..., tiered=True)` and the first
    run (on the first tier), then, once the compiled library is in use, the steady run time
    against an untiered build of the same model in this process (its library is then a
    cache hit), alternating, min of 7 each."""
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    import numpy as np

    import byoc
    import byoc.driver
    import byoc.frontend.onnx
    import byoc.lowering.c_build
    import byoc.runtime.first_tier
    import byoc.runtime.tiered  # noqa: F401

    import_build_modules()
    times["import byoc"] = time.perf_counter() - t0  # byoc's modules, as work_byoc imports them
    path, feeds = corpus.load(name)
    cpu0 = _cpu()
    t0 = time.perf_counter()
    module = byoc.import_onnx(str(path), input_shapes=corpus.input_shapes(name), bind_inputs=corpus.bind_inputs(name))
    times["import"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    exe = byoc.build(module, targets=["ccompiler"], tiered=True)
    times["build"] = time.perf_counter() - t0
    t_built = time.perf_counter()
    first_tier = exe.tier == "first"
    first = exe.run(**feeds)
    times["first run"] = time.perf_counter() - t_built
    times["cpu"] = _cpu() - cpu0
    t0 = time.perf_counter()
    exe.run(**feeds)  # a second run, still on the first tier if the compile is not done
    times["second run"] = time.perf_counter() - t0
    second_first = exe.tier == "first"
    exe.wait_compiled()
    times["compiled"] = time.perf_counter() - t_built
    compiled = exe.run(**feeds)
    err = max((float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0)
              for a, b in zip(first, compiled, strict=True))  # fmt: skip
    untiered = byoc.build(module, targets=["ccompiler"], tiered=False)
    steady = {"tiered": math.inf, "untiered": math.inf}
    for _ in range(7):
        for key, e in (("tiered", exe), ("untiered", untiered)):
            t0 = time.perf_counter()
            e.run(**feeds)
            steady[key] = min(steady[key], time.perf_counter() - t0)
    component = exe.components.get("ccompiler")
    waiting = len(getattr(component, "waiting", {}) or {})
    return {"times": times, "steady": steady, "first_tier": first_tier, "max_diff": err,
            "second_on_first": second_first,
            "partitions": len(exe.partitions), "waiting": waiting}  # fmt: skip


def _cpu() -> float:
    """CPU seconds of this process (all its threads, `time.process_time`: os.times counts in
    clock ticks of 10 ms, the size of a small model's whole session creation) and of its
    finished children (user and system)."""
    return time.process_time() + _children_cpu()


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's finished child processes: the compiler's,
    which the machine's load does not inflate as it does wall time."""
    t = os.times()
    return t.children_user + t.children_system


def work_onnxruntime(name: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    import onnxruntime as ort

    t_import = time.perf_counter() - t0
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    feeds = corpus.onnxruntime_feeds(name)
    t0, cpu0 = time.perf_counter(), _cpu()
    session = ort.InferenceSession(str(corpus.model_path(name)), options, providers=["CPUExecutionProvider"])
    t_session = time.perf_counter() - t0
    t0 = time.perf_counter()
    session.run(None, feeds)
    t_first = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    steady = math.inf
    for _ in range(7):
        t0 = time.perf_counter()
        session.run(None, feeds)
        steady = min(steady, time.perf_counter() - t0)
    return {"times": {"import onnxruntime": t_import, "session": t_session, "first run": t_first,
                      "cpu": cpu, "steady": steady}}  # fmt: skip


def work_kernels() -> dict[str, Any]:
    from byoc.runtime.first_tier import first_tier_library
    from byoc.runtime.native_plan import runner_library
    from byoc.runtime.toolchain import kernel_library

    built = kernel_library()
    t0 = time.perf_counter()
    runner_library()
    t1 = time.perf_counter()
    first_tier_library()
    return {"seconds": built.seconds, "cache_hit": built.cache_hit, "kernels": len(built.entries),
            "object_kb": len(built.object) / 1024, "runner": t1 - t0,
            "first_tier": time.perf_counter() - t1}  # fmt: skip


def work_warm() -> dict[str, Any]:
    """Import what the workers import, so that their bytecode is in the cache (`spawn`)."""
    import onnxruntime  # noqa: F401

    import byoc.frontend.onnx  # noqa: F401
    import byoc.lowering.c_build  # noqa: F401
    import byoc.runtime.executable  # noqa: F401
    import byoc.runtime.first_tier  # noqa: F401
    import byoc.runtime.tiered  # noqa: F401
    from byoc.driver import prepare_for  # noqa: F401

    import_build_modules()
    return {}


def spawn(what: str, name: str, env: dict[str, str]) -> dict[str, Any]:
    """Run a worker in a fresh process. Every worker reads Python bytecode from one cache
    (`PYTHONPYCACHEPREFIX` in the scratch folder, filled by the first import), as an
    installed package's modules are compiled once at install: without it, a process run
    with PYTHONDONTWRITEBYTECODE would compile byoc's sources again on every import."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", what, "--models", name]
    environment = {**os.environ, **env}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT ") :]))
    tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": tail}


# ---- the driver ---------------------------------------------------------------------------


def byoc_total(result: dict[str, Any]) -> float:
    return sum(result["times"][p] for p in PHASES)


def tiered_table(names: list[str], scratch: str, kernels: str) -> int:
    """Per model, alternating engines, each in a fresh process with an empty library cache:
    time to first inference (byoc: import + tiered build + first run; onnxruntime: session +
    first run), then the steady run time once compiled. `2nd ms` is byoc's second run, on the
    first tier while the compile goes on (`(cc)`: it had already switched)."""
    header = (f"{'model':<14} {'ort s':>6} {'ort 1st':>7} | {'import':>6} {'build':>6} {'1st run':>7} | "
              f"{'byoc s':>6} {'x ort':>6} | {'tier':>5} {'wait':>4} {'diff':>7} {'compiled':>8} | "
              f"{'steady ms':>9} {'untiered':>8} {'x':>5} {'ort ms':>7} {'2nd ms':>7} | {'cpu s':>5} {'ort cpu':>7} {'modules':>7} {'ort mod':>7}")  # fmt: skip
    print(header)
    rows: list[tuple[str, float, float]] = []
    cpu_ratios: list[float] = []
    steady_ratios: list[float] = []
    with_imports: list[float] = []
    failed = False
    for i, name in enumerate(names):
        ort = spawn("onnxruntime", name, {})
        env = {"BYOC_CACHE_DIR": str(Path(scratch) / f"tcache{i}"), "BYOC_KERNEL_CACHE_DIR": kernels}
        res = spawn("tiered", name, env)
        if "error" in ort or "error" in res:
            print(f"{name:<14} failed: {ort.get('error') or res.get('error')}")
            failed = True
            continue
        t, o = res["times"], ort["times"]
        total = t["import"] + t["build"] + t["first run"]
        ort_total = o["session"] + o["first run"]
        steady, untiered = res["steady"]["tiered"], res["steady"]["untiered"]
        second = f"{t['second run'] * 1e3:7.2f}" if res["second_on_first"] else f"{'(cc)':>7}"
        print(f"{name:<14} {o['session']:6.3f} {o['first run']:7.3f} | {t['import']:6.3f} {t['build']:6.3f} "
              f"{t['first run']:7.3f} | {total:6.2f} {total / ort_total:6.1f} | "
              f"{'first' if res['first_tier'] else 'cc':>5} {res['waiting']:4d} {res['max_diff']:7.1e} "
              f"{t['compiled']:8.2f} | {steady * 1e3:9.2f} {untiered * 1e3:8.2f} {steady / untiered:5.2f} "
              f"{o['steady'] * 1e3:7.2f} {second} | {t['cpu']:5.2f} {o['cpu']:7.3f} {t['import byoc']:7.3f} "
              f"{o['import onnxruntime']:7.3f}", flush=True)  # fmt: skip
        rows.append((name, total, ort_total))
        with_imports.append((total + t["import byoc"]) / (ort_total + o["import onnxruntime"]))
        cpu_ratios.append(t["cpu"] / max(o["cpu"], 1e-6))
        steady_ratios.append(steady / untiered)
    if rows:
        slowest = max(rows, key=lambda r: r[1])
        geo = math.exp(sum(math.log(t / s) for _, t, s in rows) / len(rows))
        cpu_geo = math.exp(sum(math.log(r) for r in cpu_ratios) / len(cpu_ratios))
        steady_geo = math.exp(sum(math.log(r) for r in steady_ratios) / len(steady_ratios))
        print()
        print(f"slowest byoc import + build + first run: {slowest[0]} {slowest[1]:.2f} s (goal: under 1 s)")
        print(f"geometric mean of byoc / onnxruntime, time to first inference: {geo:.1f}x (goal: at most 3x)")
        imports_geo = math.exp(sum(math.log(r) for r in with_imports) / len(with_imports))
        print(f"with the imports (byoc's modules; onnxruntime's module): {imports_geo:.1f}x")
        print(f"the same in CPU seconds (byoc's process, onnxruntime's session and first run): {cpu_geo:.1f}x")
        print(f"steady run once compiled / untiered build's, geometric mean: {steady_geo:.2f}x (goal: 1)")
        print(f"load average: {', '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cores")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(m.name for m in corpus.MODELS))
    parser.add_argument("--whole", action="store_true", help="also build without the kernel library (--untiered)")
    parser.add_argument("--untiered", action="store_true",
                        help="the untiered build phase by phase (import, partition, codegen, compile, load)")  # fmt: skip
    parser.add_argument("--worker", choices=("byoc", "tiered", "onnxruntime", "kernels", "warm"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        workers = {"kernels": work_kernels, "warm": work_warm}
        models = {"byoc": work_byoc, "tiered": work_tiered, "onnxruntime": work_onnxruntime}
        result = workers[args.worker]() if args.worker in workers else models[args.worker](args.models)
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    names = [n for n in args.models.split(",") if n]
    failed = False
    with tempfile.TemporaryDirectory(prefix="byoc-cold-") as scratch:
        kernels = str(Path(scratch) / "kernels")
        os.environ["PYTHONPYCACHEPREFIX"] = str(Path(scratch) / "pycache")
        spawn("warm", "", {})
        first = spawn("kernels", "", {"BYOC_KERNEL_CACHE_DIR": kernels, "BYOC_CACHE_DIR": str(Path(scratch) / "k1")})
        again = spawn("kernels", "", {"BYOC_KERNEL_CACHE_DIR": kernels, "BYOC_CACHE_DIR": str(Path(scratch) / "k2")})
        if "error" in first or "error" in again:
            print(f"kernel library: {first.get('error') or again.get('error')}")
            return 1
        print(f"kernel library, built once per machine (empty kernel cache): {first['seconds']:.2f} s "
              f"({first['kernels']} kernels, {first['object_kb']:.0f} KiB object); "
              f"found in the cache: {again['seconds'] * 1000:.1f} ms")  # fmt: skip
        print(f"plan runner, built once per machine (empty kernel cache): {first['runner']:.2f} s; "
              f"found in the cache: {again['runner'] * 1000:.1f} ms")  # fmt: skip
        print(f"first tier, built once per machine (empty kernel cache): {first['first_tier']:.2f} s; "
              f"found in the cache: {again['first_tier'] * 1000:.1f} ms")  # fmt: skip
        print()
        if not args.untiered:
            return tiered_table(names, scratch, kernels)
        header = (f"{'model':<14} {'ort s':>6} | " + " ".join(f"{p:>9}" for p in PHASES)
                  + f" | {'byoc s':>6} {'x ort':>6} | {'modules':>7} | {'cpu s':>6} {'ort cpu':>7} {'cc cpu':>6} {'runner':>6} {'run s':>6} {'parts':>5} {'glue':>4}")  # fmt: skip
        if args.whole:
            header += f" | {'whole s':>7}"
        print(header)
        rows: list[tuple[str, float, float]] = []
        with_imports: list[float] = []
        cpu_ratios: list[float] = []
        for i, name in enumerate(names):
            ort = spawn("onnxruntime", name, {})
            cache = Path(scratch) / f"cache{i}"  # empty: the runner is in the kernel cache
            env = {"BYOC_CACHE_DIR": str(cache), "BYOC_KERNEL_CACHE_DIR": kernels}
            res = spawn("byoc", name, env)
            if "error" in ort or "error" in res:
                print(f"{name:<14} failed: {ort.get('error') or res.get('error')}")
                failed = True
                continue
            total = byoc_total(res)
            session = ort["times"]["session"]
            line = (f"{name:<14} {session:6.3f} | " + " ".join(f"{res['times'][p]:9.3f}" for p in PHASES)
                    + f" | {total:6.2f} {total / session:6.1f} | {res['times']['import byoc']:7.3f}"
                    f" | {res['times']['cpu']:6.2f} {ort['times']['cpu']:7.3f} "
                    f"{res['times']['compile cpu']:6.2f} "
                    f"{res['times']['runner']:6.3f} {res['times']['first run']:6.3f} {res['partitions']:5d} "
                    f"{'yes' if res['glue'] else 'no':>4}")  # fmt: skip
            if args.whole:
                whole = spawn("byoc", name, {**env, "BYOC_CACHE_DIR": str(Path(scratch) / f"whole{i}"),
                                             "BYOC_KERNEL_LIBRARY": "0"})  # fmt: skip
                line += f" | {byoc_total(whole):7.2f}" if "error" not in whole else f" | {'failed':>7}"
            print(line, flush=True)
            rows.append((name, total, session))
            ort_total = ort["times"]["import onnxruntime"] + session
            with_imports.append((total + res["times"]["import byoc"]) / ort_total)
            cpu_ratios.append(res["times"]["cpu"] / max(ort["times"]["cpu"], 1e-6))
    if rows:
        slowest = max(rows, key=lambda r: r[1])
        geo = math.exp(sum(math.log(t / s) for _, t, s in rows) / len(rows))
        print()
        print(f"slowest byoc import + build: {slowest[0]} {slowest[1]:.2f} s (goal: under 1 s)")
        print(f"geometric mean of byoc / onnxruntime: {geo:.1f}x (goal: at most 3x)")
        cpu_geo = math.exp(sum(math.log(r) for r in cpu_ratios) / len(cpu_ratios))
        imports_geo = math.exp(sum(math.log(r) for r in with_imports) / len(with_imports))
        print(f"with the imports (byoc's modules; onnxruntime's module): {imports_geo:.1f}x")
        print(f"the same in CPU seconds (byoc's process and compilers, onnxruntime's session): {cpu_geo:.1f}x")
        print(f"load average: {', '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cores")
    return 1 if failed else 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, lambda: main(sys.argv[1:])))
