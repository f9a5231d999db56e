"""byoc-run: build a model for the given targets, run it, check it against the reference.

    byoc-run MODEL [--targets ccompiler,examplejson] [--inputs x.npz] [--repeat N]
                   [--export out.byoc] [--seed S] [--rtol R] [--atol A] [--threads N]

MODEL is `.mlir`, `.onnx`, a `torch.export` program (`.pt2`) or an exported `.byoc` artifact. Inputs come from an
`.npz` file (by input name, or `arr_0`, `arr_1`, ... by position) or are seeded
random. Prints a table of partitions (target, op count, time), host time,
total, and the max abs/rel error against `run_reference`; exits 1 when the
error is beyond tolerance, and on any bad input (never a traceback).
`--threads N` is the thread setting of the run (default `$BYOC_NUM_THREADS`,
else the cores the process may use); the partition times come from runs that
take the steps one after another, the total from ordinary runs (independent
branches at once).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class RunError(ValueError):
    pass


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="byoc-run", description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a .mlir, .onnx, .pt2 or .byoc file")
    p.add_argument("--targets", default="", help="comma-separated targets, in priority order")
    p.add_argument("--inputs", help=".npz file with the inputs (by name, or arr_0, arr_1, ...)")
    p.add_argument("--repeat", type=int, default=10, help="timed runs (default 10)")
    p.add_argument("--export", metavar="OUT", help="write the built model as one artifact file")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="threads per run (default: $BYOC_NUM_THREADS, else the cores this process may use)",
    )
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D0xD1x...",
        help="static shape for an ONNX or .pt2 input with symbolic dimensions (repeatable)",
    )
    return p.parse_args(argv)


class _Located:
    """The parsed source of an .mlir model, to place errors about its ops."""

    parsed: Any = None


def _parse_mlir(path: Path) -> Any:
    from byoc.context import make_context
    from byoc.diagnostics import (
        SourceBuffer,
        SourceError,
        decode_source,
        parse_source,
        verify_module,
    )

    source = SourceBuffer(str(path), decode_source(path.read_bytes(), str(path)))
    parsed = parse_source(make_context(), source)
    problem = verify_module(parsed)
    if problem is not None:
        raise SourceError([problem])
    _Located.parsed = parsed
    return parsed.module


def _load_ir(path: Path, args: argparse.Namespace) -> Any:
    if path.suffix == ".onnx":
        from byoc.frontend.onnx import import_model

        shapes: dict[str, list[int]] = {}
        for spec in args.input_shape:
            name, _, dims = spec.partition("=")
            try:
                shapes[name] = [int(d) for d in dims.split("x")]
            except ValueError:
                raise RunError(f"--input-shape {spec!r}: expected NAME=D0xD1x...") from None
        return import_model(str(path), input_shapes=shapes or None)
    if path.suffix == ".pt2":
        from byoc.frontend.torch.pt2 import load_pt2, parse_input_shapes

        try:
            pt2_shapes = parse_input_shapes(args.input_shape)
        except ValueError as e:
            raise RunError(str(e)) from None
        _Located.parsed = load_pt2(path, str(path), pt2_shapes or None)
        return _Located.parsed.module
    return _parse_mlir(path)


def _random_inputs(specs: Sequence[Any], seed: int) -> list[Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        dt = np.dtype(spec.dtype)
        shape = tuple(1 if d < 0 else d for d in spec.shape)  # a dynamic (?) dim: size 1
        if dt.kind == "f":
            out.append(rng.standard_normal(shape).astype(dt))
        else:
            out.append(rng.integers(-8, 8, size=shape).astype(dt))
    return out


def _load_inputs(path: str, names: Sequence[str]) -> list[Any]:
    import numpy as np

    with np.load(path) as data:
        keys = list(data.keys())
        if all(n in keys for n in names):
            return [data[n] for n in names]
        positional = [f"arr_{i}" for i in range(len(names))]
        if all(k in keys for k in positional):
            return [data[k] for k in positional]
    raise RunError(
        f"{path}: inputs must be named {', '.join(names)} (or arr_0..arr_{len(names) - 1}); "
        f"found {', '.join(keys) or 'none'}"
    )


def _progress(msg: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{msg} ...")
        sys.stderr.flush()


def _run(args: argparse.Namespace) -> int:
    import numpy as np

    import byoc
    from byoc.runtime.loaders import load_module

    path = Path(args.model)
    if not path.exists():
        raise RunError("no such file")
    targets = [t for t in args.targets.split(",") if t]

    module = None
    t0 = time.perf_counter()
    if path.suffix == ".byoc":
        if targets:
            raise RunError("--targets cannot re-partition an exported artifact")
        exe = load_module(str(path))
        if args.threads is not None:
            exe.set_num_threads(args.threads)
    else:
        module = _load_ir(path, args)
        exe = byoc.build(
            module, targets=targets or None, progress=_progress, num_threads=args.threads
        )
    build_time = time.perf_counter() - t0
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")

    specs = exe.plan.input_specs
    inputs = (
        _load_inputs(args.inputs, exe.input_names)
        if args.inputs
        else _random_inputs(specs, args.seed)
    )
    outputs, _ = exe.run_profiled(*inputs)  # warm-up (and first-call checks)
    totals: dict[str, float] = {}
    repeat = max(1, args.repeat)
    for _ in range(repeat):
        outputs, table = exe.run_profiled(*inputs)
        for key, value in table.items():
            totals[key] = totals.get(key, 0.0) + value
    wall = 0.0
    for _ in range(repeat):
        t = time.perf_counter()
        outputs = exe.run(*inputs)
        wall += time.perf_counter() - t

    print(
        f"model: {path}  targets: {', '.join(targets) or '(none: host only)'}  "
        f"threads: {exe.num_threads}"
    )
    print(f"build: {build_time * 1e3:.1f} ms   runs: {repeat}")
    header = f"{'partition':<36} {'target':<12} {'ops':>5} {'time (ms)':>11}"
    print(header)
    print("-" * len(header))
    for info in exe.partitions():
        ms = totals.get(info.symbol, 0.0) / repeat * 1e3
        print(f"{info.symbol:<36} {info.target:<12} {info.num_ops:>5} {ms:>11.3f}")
    specializations = getattr(exe, "specializations", None)
    entries = specializations() if specializations is not None else []
    plan = entries[-1].executable.plan if entries else exe.plan
    host_steps = sum(1 for s in plan.steps if s.kind == "kernel")
    print(f"{'host':<36} {'numpy':<12} {host_steps:>5} {totals.get('host', 0.0) / repeat * 1e3:>11.3f}")
    print(f"{'total':<36} {'':<12} {'':>5} {wall / repeat * 1e3:>11.3f}")
    if specializations is not None:
        print(
            f"dynamic input dims: partitions built per input shape "
            f"(cache {len(entries)}/{exe.cache_size}, {exe.evictions} evicted)"  # type: ignore[attr-defined]
        )
        for entry in entries:
            print(f"  {entry.describe()}")

    if module is None:
        print("reference: not available for an exported artifact (no IR inside)")
        return 0
    reference = byoc.run_reference(module, inputs)
    max_abs = 0.0
    max_rel = 0.0
    ok = True
    for got, want in zip(outputs, reference, strict=True):
        g = np.asarray(got, dtype=np.float64)
        w = np.asarray(want, dtype=np.float64)
        if g.shape != w.shape:
            ok = False
            continue
        diff = np.abs(g - w)
        finite = np.isfinite(diff)
        max_abs = max(max_abs, float(diff[finite].max(initial=0.0)))
        max_rel = max(max_rel, float((diff / np.maximum(np.abs(w), 1e-30))[finite].max(initial=0.0)))
        ok &= bool(np.allclose(g, w, rtol=args.rtol, atol=args.atol, equal_nan=True))
    print(f"max abs error: {max_abs:.3e}   max rel error: {max_rel:.3e}")
    if args.export:
        exe.export_library(args.export)
        print(f"exported: {args.export}")
    if not ok:
        print(f"error: outputs differ from the reference beyond rtol={args.rtol} atol={args.atol}", file=sys.stderr)
        return 1
    print("outputs match the reference")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `byoc-run ... | head`: the reader left; say nothing more
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - every failure is reported as one error line
        print(_format_error(exc, args.model), file=sys.stderr)
        return 1


def _format_error(exc: BaseException, model: str) -> str:
    from byoc.diagnostics import Diagnostic, OpError, SourceError, describe_exception

    if isinstance(exc, SourceError):
        return str(exc)
    if isinstance(exc, OpError) and _Located.parsed is not None:
        return _Located.parsed.diagnostic(exc.op, exc.message).render()
    message = exc.message if isinstance(exc, OpError) else describe_exception(exc)
    return Diagnostic("error", message, model).render()


if __name__ == "__main__":
    sys.exit(main())
