"""Fixed cost of a run: byoc `Executable.run` against onnxruntime `session.run` on tiny models.

    python benchmarks/fixed_cost.py [--rounds 7] [--calls 20000] [--alternations 3]
    python benchmarks/fixed_cost.py --quick            # fewer calls and one alternation
    python benchmarks/fixed_cost.py --models add,split20 --breakdown

The models (ONNX, built here; 10x10 float32 tensors):

- `add`, `relu`: one op;
- `chain2`, `chain5`, `chain20`: that many ops, elementwise ops with constants and
  glue (reshape, transpose) between them, on `ccompiler` (one partition: one step);
- `split5`, `split20`: that many ops alternating between `graphref` (add, relu) and
  `ccompiler` (negative, abs): one partition per op, so a run is that many steps
  across two kinds of runtime component (a C library and a graph runtime);
- `hosted5`: `split5` with `graphref` alone: negative and abs are host kernels
  between three graph partitions (the compiled plan calls back into Python for them).

Each engine runs in a process of its own (`--child`), and the engines take turns,
`--alternations` times per model: byoc with the compiled host plan (`byoc`), byoc
with the Python host executor (`byoc-python`, the reference path), onnxruntime
(`intra_op_num_threads=1`). A process builds its model, checks it against numpy once,
warms up, then times `--rounds` rounds of `--calls` calls; the best round of all its
processes is printed in microseconds per run, with byoc / onnxruntime. The per-step
cost is the slope between `split5` and `split20`.

`--breakdown` adds, in the byoc process, where the time of one `exe.run` goes: the
bare native call with ready buffers, the output allocation, the input checks.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BYOC_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MODELS = ("add", "relu", "chain2", "chain5", "chain20", "split5", "split20", "hosted5")
ENGINES = ("byoc", "byoc-python", "onnxruntime")
SHAPE = (10, 10)


def _chain_ops(n: int) -> list[str]:
    cycle = ["Add", "Relu", "Reshape", "Mul", "Transpose", "Tanh", "Reshape", "Sigmoid"]
    return [cycle[i % len(cycle)] for i in range(n)]


def make_model(name: str) -> tuple[onnx.ModelProto, str]:
    """The ONNX model `name` and the byoc targets it is built for."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))]
    shape = list(SHAPE)
    x = "x"
    targets = "ccompiler"

    def const(value: np.ndarray[Any, Any]) -> str:
        cname = f"c{len(inits)}"
        inits.append(numpy_helper.from_array(value, cname))
        return cname

    if name == "add":
        inputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, list(SHAPE)))
        nodes.append(helper.make_node("Add", ["x", "y"], ["out"]))
        x = "out"
    elif name == "relu":
        nodes.append(helper.make_node("Relu", ["x"], ["out"]))
        x = "out"
    elif name.startswith("chain"):
        rng = np.random.default_rng(0)
        for i, op in enumerate(_chain_ops(int(name[5:]))):
            y = f"v{i}"
            if op in ("Add", "Mul"):
                c = const(rng.uniform(0.5, 1.5, shape).astype(np.float32))
                nodes.append(helper.make_node(op, [x, c], [y]))
            elif op == "Reshape":
                shape = [shape[0] * shape[1] // 5, 5] if shape[1] != 5 else [10, 10]
                c = const(np.array(shape, np.int64))
                nodes.append(helper.make_node(op, [x, c], [y]))
            elif op == "Transpose":
                shape = shape[::-1]
                nodes.append(helper.make_node(op, [x], [y], perm=[1, 0]))
            else:
                nodes.append(helper.make_node(op, [x], [y]))
            x = y
    elif name.startswith("split") or name.startswith("hosted"):
        targets = "graphref,ccompiler" if name.startswith("split") else "graphref"
        cycle = ["Add", "Neg", "Relu", "Abs"]  # cheap kernels: the slope is the overhead
        for i in range(int(name.removeprefix("split").removeprefix("hosted"))):
            op, y = cycle[i % len(cycle)], f"v{i}"
            if op == "Add":
                nodes.append(
                    helper.make_node(op, [x, const(np.full(SHAPE, 0.25, np.float32))], [y])
                )
            else:
                nodes.append(helper.make_node(op, [x], [y]))
            x = y
    else:
        raise SystemExit(f"unknown model '{name}' (models: {', '.join(MODELS)})")
    outputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)]
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, targets


def feeds(model: onnx.ModelProto) -> dict[str, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(1)
    return {
        i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(
            np.float32
        )
        for i in model.graph.input
    }


def time_calls(fn: Callable[[], Any], calls: int, rounds: int) -> list[float]:
    """Microseconds per call of each round."""
    fn()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    return out


def child(engine: str, name: str, calls: int, rounds: int, breakdown: bool) -> dict[str, Any]:
    model, targets = make_model(name)
    feed = feeds(model)
    args = list(feed.values())
    result: dict[str, Any] = {}
    if engine == "onnxruntime":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        session.run(None, feed)
        result["us"] = time_calls(lambda: session.run(None, feed), calls, rounds)
        return result
    import byoc
    from byoc.runtime.executable import Executable

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.onnx"
        onnx.save(model, path)
        exe = byoc.build(byoc.import_onnx(str(path)), targets=targets.split(","), num_threads=1)
    if engine == "byoc-python":
        exe = Executable(
            exe.plan, exe.constants, exe.components, exe.partitions, num_threads=1, native=False
        )
    elif exe.native_plan is None:
        raise SystemExit(f"{name}: the plan does not run natively ({exe.native_reason})")
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, feed)[0]
    got = exe.run(*args)[0]
    result["max_error"] = float(np.max(np.abs(got - want)))
    result["steps"] = len(exe.plan.steps)
    result["us"] = time_calls(lambda: exe.run(*args), calls, rounds)
    if breakdown and exe.native_plan is not None:
        result["breakdown"] = _breakdown(exe, args, calls, rounds)
    return result


def _breakdown(
    exe: Any, args: list[np.ndarray[Any, Any]], calls: int, rounds: int
) -> dict[str, float]:
    """Where one exe.run goes: the bare native call (buffers ready), plus output allocation
    and the input checks (NativePlan.run), plus the Executable's dispatch (exe.run)."""
    native = exe.native_plan
    ffi, run, handle = native._ffi, native._run, native._handle
    outs = [np.empty(s, d) for s, d in native._out]
    ins_c = [ffi.from_buffer(a) for a in args]
    outs_c = [ffi.from_buffer(o) for o in outs]
    best = min
    times = {
        "NativePlan.run": best(time_calls(lambda: native.run(args), calls, rounds)),
        "exe.run": best(time_calls(lambda: exe.run(*args), calls, rounds)),
    }
    if not native.host_steps:  # a host step needs the run's Python state that run() sets up
        times = {
            "native call": best(time_calls(lambda: run(handle, ins_c, outs_c), calls, rounds)),
            **times,
        }
    return times


def parent(args: argparse.Namespace) -> int:
    models = args.models.split(",") if args.models else list(MODELS)
    engines = args.engines.split(",")
    print(
        f"fixed cost: us per run, best round of {args.alternations} alternation(s) x "
        f"{args.rounds} rounds x {args.calls} calls"
    )
    print(
        f"{'model':9} {'steps':>5} "
        + " ".join(f"{e:>12}" for e in engines)
        + f" {'byoc/ort':>9} {'max err':>9}"
    )
    table: dict[str, dict[str, float]] = {}
    for name in models:
        best: dict[str, float] = {}
        info: dict[str, Any] = {}
        for _ in range(args.alternations):
            for engine in engines:
                command = [
                    sys.executable,
                    __file__,
                    "--child",
                    engine,
                    name,
                    "--calls",
                    str(args.calls),
                    "--rounds",
                    str(args.rounds),
                ] + (["--breakdown"] if args.breakdown and engine == "byoc" else [])
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    print(done.stdout + done.stderr, file=sys.stderr)
                    return 1
                res = json.loads(done.stdout.strip().splitlines()[-1])
                best[engine] = min(best.get(engine, float("inf")), min(res["us"]))
                for key in ("steps", "max_error"):
                    if key in res:
                        info[key] = max(info.get(key, 0), res[key])
                if "breakdown" in res:
                    prev = info.get("breakdown", {})
                    info["breakdown"] = {
                        k: min(v, prev.get(k, v)) for k, v in res["breakdown"].items()
                    }
        table[name] = best
        ratio = (
            best["byoc"] / best["onnxruntime"]
            if "byoc" in best and "onnxruntime" in best
            else float("nan")
        )
        print(
            f"{name:9} {info.get('steps', 0):>5} "
            + " ".join(f"{best[e]:>12.2f}" for e in engines)
            + f" {ratio:>9.2f} {info.get('max_error', 0.0):>9.1e}"
        )
        if "breakdown" in info:
            print("          " + ", ".join(f"{k} {v:.2f}" for k, v in info["breakdown"].items()))
    if "split5" in table and "split20" in table:
        for engine in engines:
            slope = (table["split20"][engine] - table["split5"][engine]) / 15
            print(f"per extra step ({engine}, split5 -> split20): {slope:.2f} us")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="", help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="2000 calls, 5 rounds, one alternation"
    )
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.calls, args.rounds, args.alternations = 2000, 5, 1
    if args.child:
        engine, name = args.child
        print(json.dumps(child(engine, name, args.calls, args.rounds, args.breakdown)))
        return 0
    return parent(args)


if __name__ == "__main__":
    if "--child" in sys.argv:
        raise SystemExit(main(sys.argv[1:]))
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, lambda: main(sys.argv[1:])))
