"""byoc-run: build a model for the given targets, run it, check it against the reference.

    byoc-run MODEL [--targets ccompiler,examplejson] [--inputs x.npz] [--repeat N]
                   [--export out.byoc] [--seed S] [--rtol R] [--atol A] [--threads N]
                   [--input-shape NAME=DxDx...] [--no-fallback]

MODEL is `.mlir`, `.onnx`, a `torch.export` program (`.pt2`) or an exported `.byoc` artifact. Inputs come from an
`.npz` file (by input name, or `arr_0`, `arr_1`, ... by position) or are seeded
random. Prints what was run (the targets, the build time, or for an artifact where
it was loaded from and its targets), a table of partitions (target, op count,
time), host time, total, the placement (`Executable.placement()`: each partition's target
and why, and the targets left out because they cannot run here), and the max abs/rel
error against `run_reference`; exits
1 when the error is beyond tolerance, and on any bad input (never a traceback).
`--threads N` is the thread setting of the run (default `$BYOC_NUM_THREADS`,
else the cores the process may use). Every time in the table is the median over
the same `--repeat` profiled runs (`Executable.run_profiled`: the steps one after
another), after one warm-up run that is not counted. A listed target that cannot run here
is left out with a warning and its ops go to the other targets (`byoc.build`'s
`fallback`); `--no-fallback` makes that an error instead.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class RunError(ValueError):
    """A bad invocation or model, reported as `<model>: error: <message>`."""


class FileError(RunError):
    """What is wrong with one file (the model, the inputs, the export), reported as
    `<file>: error: <message>`."""

    def __init__(self, path: str | Path, message: str) -> None:
        super().__init__(message)
        self.path = str(path)
        self.message = message


class OptionError(RunError):
    """A bad command-line option, reported as `byoc-run: error: <message>`."""


def _os_problem(error: OSError, action: str) -> str:
    """`no such file`, `is a directory`, or `cannot <action> it: <reason>`."""
    if isinstance(error, FileNotFoundError):
        return "no such file" if action == "read" else "no such directory"
    if isinstance(error, IsADirectoryError):
        return "is a directory"
    return f"cannot {action} it: {(error.strerror or str(error)).lower()}"


TARGETS_HELP = (
    "comma-separated targets, in priority order (default: none, so every op runs on the "
    "host, unless the model is already partitioned; an artifact keeps its own)"
)


class _Parser(argparse.ArgumentParser):
    """Lists the known targets under --targets in `--help` only, so that other runs do not
    import the target registry before they need it."""

    def format_help(self) -> str:
        from byoc.targets import known_targets_text

        for action in self._actions:
            if action.dest == "targets":
                action.help = f"{TARGETS_HELP}; known: {known_targets_text()}"
        return super().format_help()


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = _Parser(prog="byoc-run", description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a .mlir, .onnx, .pt2 or .byoc file")
    p.add_argument("--targets", default="", help=TARGETS_HELP)
    p.add_argument("--inputs", help=".npz file with the inputs (by name, or arr_0, arr_1, ...)")
    p.add_argument("--repeat", type=int, default=10, help="timed runs (default 10)")
    p.add_argument("--export", metavar="OUT", help="write the built model as one artifact file")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance (default 1e-3)")
    p.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance (default 1e-4)")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="threads per run (default: $BYOC_NUM_THREADS, else the cores this process may use)",
    )
    p.add_argument(
        "--placement",
        choices=("priority", "measure", "cost-model"),
        default="priority",
        help="how each op's target is chosen: 'priority' (the order of --targets), 'measure' "
        "(timed on seeded random inputs; docs/placement.md) or 'cost-model' (cached figures)",
    )
    p.add_argument(
        "--placement-cache",
        metavar="FILE",
        help="the measurement cache of --placement measure|cost-model "
        "(default: placement.json in byoc's cache directory)",
    )
    p.add_argument(
        "--load-plugin",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="load the targets of a module or .py file before the build (repeatable)",
    )
    p.add_argument(
        "--no-fallback",
        action="store_true",
        help="a listed target that cannot run here (not installed, or its build fails) is an "
        "error; by default it is left out with a warning and its ops go to the other targets",
    )
    p.add_argument(
        "--tiered",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run C partitions at once on the first tier while the C compiles in the "
        "background (default: on, unless $BYOC_TIERED says otherwise; docs/cli.md)",
    )
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=DxDx...",
        help="give ONNX (or .pt2) input NAME the static shape DxDx... in place of its "
        "symbolic, '?' or -1 dims (repeatable: one per input)",
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

    try:
        data = path.read_bytes()
    except OSError as e:
        raise FileError(path, _os_problem(e, "read")) from None
    source = SourceBuffer(str(path), decode_source(data, str(path)))
    parsed = parse_source(make_context(), source)
    problem = verify_module(parsed)
    if problem is not None:
        raise SourceError([problem])
    _Located.parsed = parsed
    return parsed.module


def _load_ir(path: Path, args: argparse.Namespace) -> Any:
    from byoc.frontend.onnx_frontend import parse_input_shapes, unknown_input_message

    if path.suffix == ".onnx":
        from byoc.frontend.onnx import OnnxMissing, UnknownInputError, import_model

        try:
            shapes = parse_input_shapes(args.input_shape)
        except ValueError as e:
            raise OptionError(str(e)) from None
        try:
            return import_model(str(path), input_shapes=shapes or None)
        except OSError as e:
            raise FileError(path, _os_problem(e, "read")) from None
        except OnnxMissing as e:
            raise RunError(str(e)) from None
        except UnknownInputError as e:
            raise RunError(unknown_input_message(e)) from None
    if path.suffix == ".pt2":
        from byoc.frontend.torch.pt2 import load_pt2
        from byoc.frontend.torch.pt2 import parse_input_shapes as pt2_input_shapes

        try:
            pt2_shapes = pt2_input_shapes(args.input_shape)
        except ValueError as e:
            raise OptionError(str(e)) from None
        _Located.parsed = load_pt2(path, str(path), pt2_shapes or None)
        return _Located.parsed.module
    if args.input_shape:
        raise OptionError(f"--input-shape applies to .onnx and .pt2 models; '{path}' is not one")
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
    """The arrays of an `.npz` file (numpy.savez) in input order: by input name, else
    `arr_0`, `arr_1`, ...; any problem with the file is a FileError naming it."""
    import numpy as np

    try:
        data = np.load(path)
    except OSError as e:
        raise FileError(path, _os_problem(e, "read")) from None
    except (ValueError, EOFError):  # numpy's words for "not an .npy/.npz" (pickled data, ...)
        raise FileError(path, "not an .npz file of arrays (numpy.savez writes one)") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise FileError(
            path, "holds one array (.npy); give the inputs as an .npz file (numpy.savez)"
        )
    with data:
        keys = list(data.keys())
        try:
            if all(n in keys for n in names):
                return [data[n] for n in names]
            positional = [f"arr_{i}" for i in range(len(names))]
            if all(k in keys for k in positional):
                return [data[k] for k in positional]
        except (OSError, ValueError, EOFError) as e:  # a member that is not an array
            raise FileError(path, f"cannot read the arrays: {e}") from None
    raise FileError(
        path,
        f"inputs must be named {', '.join(names)} (or arr_0..arr_{len(names) - 1}); "
        f"found {', '.join(keys) or 'none'}",
    )


def _progress(msg: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{msg} ...")
        sys.stderr.flush()


@dataclass
class _Timings:
    """Median seconds over the timed runs: each run timed as a whole (`total`) and step by
    step (`steps`: per partition symbol, and `host` for every host step together)."""

    total: float
    steps: dict[str, float]


def _time_runs(exe: Any, inputs: Sequence[Any], repeat: int) -> tuple[list[Any], _Timings]:
    """The outputs and the median times of `repeat` profiled runs, after one warm-up run
    (first-call checks, caches, a dynamic-shape model's build for these shapes) that is
    not counted. Every row of the table comes from the same runs, so no partition's time
    exceeds the total's."""
    outputs, _ = exe.run_profiled(*inputs)
    walls: list[float] = []
    steps: dict[str, list[float]] = {}
    for _ in range(repeat):
        start = time.perf_counter()
        outputs, table = exe.run_profiled(*inputs)
        walls.append(time.perf_counter() - start)
        for key, seconds in table.items():
            steps.setdefault(key, []).append(seconds)
    return outputs, _Timings(
        statistics.median(walls), {k: statistics.median(v) for k, v in steps.items()}
    )


def _tiered(flag: bool | None) -> bool | None:
    """`--tiered`/`--no-tiered`; without either, on unless `BYOC_TIERED` is set (None: the
    build reads it). A run of byoc-run is a few inferences, so time to the first one counts
    more than the steady speed reached after the compile (docs/cli.md)."""
    from byoc.utils import env

    if flag is not None:
        return flag
    return None if env.is_set("BYOC_TIERED") else True


def _targets_text(exe: Any, requested: Sequence[str], loaded: bool) -> str:
    """The targets of the header line: those asked for; else those of the partitions an
    artifact or an already-partitioned model holds; else that every op runs on the host."""
    if requested:
        return ", ".join(requested)
    held = list(dict.fromkeys(p.target for p in exe.partitions))
    if not held:
        return "(none: host only)"
    return f"{', '.join(held)} ({'from the artifact' if loaded else 'partitioned in the model'})"


def _run(args: argparse.Namespace) -> int:
    import numpy as np

    import byoc
    from byoc.driver import TargetFallbackWarning
    from byoc.runtime.executable import InputError
    from byoc.runtime.loaders import load_module
    from byoc.targets import load_plugin

    for spec in args.load_plugin:
        load_plugin(spec)
    path = Path(args.model)
    if not path.exists():
        raise FileError(path, "no such file")
    if path.is_dir():
        raise FileError(path, "is a directory")
    if args.repeat < 1:
        raise OptionError(f"--repeat {args.repeat}: need at least 1 timed run")
    if args.threads is not None:
        from byoc.runtime.threads import check_num_threads

        try:
            check_num_threads(args.threads, "--threads")
        except ValueError as e:
            raise OptionError(str(e)) from None
    targets = [t for t in args.targets.split(",") if t]

    module = None
    loaded = path.suffix == ".byoc"
    t0 = time.perf_counter()
    if loaded:
        if targets:
            raise OptionError(
                f"--targets cannot re-partition an exported artifact ('{path}' keeps its own)"
            )
        if args.input_shape:
            raise OptionError(f"--input-shape applies to .onnx and .pt2 models; '{path}' is not one")
        try:
            exe = load_module(str(path))
        except OSError as e:
            raise FileError(path, _os_problem(e, "read")) from None
        if args.threads is not None:
            exe.set_num_threads(args.threads)
    else:
        module = _load_ir(path, args)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TargetFallbackWarning)
            exe = byoc.build(
                module,
                targets=targets or None,
                progress=_progress,
                num_threads=args.threads,
                fallback=not args.no_fallback,
                placement=args.placement,
                placement_cache=args.placement_cache,
                tiered=_tiered(args.tiered),
            )
        _report_warnings(caught, path)
    setup_ms = (time.perf_counter() - t0) * 1e3
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")

    specs = exe.plan.input_specs
    inputs = (
        _load_inputs(args.inputs, exe.input_names)
        if args.inputs
        else _random_inputs(specs, args.seed)
    )
    repeat = args.repeat
    try:  # a dynamic-shape model builds its partitions in the first run
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TargetFallbackWarning)
            outputs, timings = _time_runs(exe, inputs, repeat)
        _report_warnings(caught, path)
    except InputError as e:
        if args.inputs:  # the arrays of the file do not fit the model
            raise FileError(args.inputs, str(e)) from None
        raise

    print(
        f"model: {path}  targets: {_targets_text(exe, targets, loaded)}  "
        f"threads: {exe.num_threads}"
    )
    setup = f"loaded: {path} ({setup_ms:.1f} ms)" if loaded else f"build: {setup_ms:.1f} ms"
    tier = getattr(exe, "tier", "compiled")
    tier_text = "" if tier == "compiled" else "   tier: first (the compile had not finished by the last run)"
    print(f"{setup}   runs: {repeat} (median times){tier_text}")
    header = f"{'partition':<36} {'target':<12} {'ops':>5} {'time (ms)':>11}"
    print(header)
    print("-" * len(header))
    for info in exe.partitions:
        ms = timings.steps.get(info.symbol, 0.0) * 1e3
        print(f"{info.symbol:<36} {info.target:<12} {info.num_ops:>5} {ms:>11.3f}")
    specializations = getattr(exe, "specializations", None)
    entries = specializations() if specializations is not None else []
    plan = entries[-1].executable.plan if entries else exe.plan
    host_steps = sum(1 for s in plan.steps if s.kind == "kernel")
    host_ms = timings.steps.get("host", 0.0) * 1e3
    print(f"{'host':<36} {'numpy':<12} {host_steps:>5} {host_ms:>11.3f}")
    print(f"{'total':<36} {'':<12} {'':>5} {timings.total * 1e3:>11.3f}")
    if specializations is not None:
        print(
            f"dynamic input dims: partitions built per input shape "
            f"(cache {len(entries)}/{exe.cache_size}, {exe.evictions} evicted)"  # type: ignore[attr-defined]
        )
        for entry in entries:
            print(f"  {entry.describe()}")
    _print_placement(exe)

    if module is None:
        print("reference: not available for an exported artifact (no IR inside)")
        _export(exe, args.export)
        return 0
    reference = byoc.run_reference(module, *inputs)
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
    _export(exe, args.export)
    if not ok:
        print(f"error: outputs differ from the reference beyond rtol={args.rtol} atol={args.atol}", file=sys.stderr)
        return 1
    print("outputs match the reference")
    return 0


def _report_warnings(caught: Sequence[warnings.WarningMessage], model: Path) -> None:
    """The warnings of the build, each one `<model>: warning: <message>` line on stderr."""
    from byoc.diagnostics import Diagnostic
    from byoc.driver import TargetFallbackWarning

    for w in caught:
        if issubclass(w.category, TargetFallbackWarning):
            print(Diagnostic("warning", str(w.message), str(model)).render(), file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def _print_placement(exe: Any) -> None:
    """The `placement:` section: `Executable.placement()` indented under its heading."""
    print("placement:")
    for line in str(exe.placement()).splitlines():
        print(f"  {line}")


def _export(exe: Any, path: str | None) -> None:
    """`--export`: write the artifact; a path that cannot be written is a FileError."""
    if not path:
        return
    try:
        exe.export_library(path)
    except OSError as e:
        raise FileError(path, _os_problem(e, "write")) from None
    print(f"exported: {path}")


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
    """One `file: error: message` line (with the source line and a caret when the error is
    located in an .mlir model). byoc's own exceptions are written for the user and show
    their message only; another library's show their class too (`KeyError: 'x'`), which
    is what a bug report needs."""
    from byoc.diagnostics import Diagnostic, OpError, SourceError, describe_exception

    if isinstance(exc, SourceError):
        return str(exc)
    if isinstance(exc, FileError):
        return Diagnostic("error", exc.message, exc.path).render()
    if isinstance(exc, OptionError):
        return f"byoc-run: error: {exc}"
    if isinstance(exc, OpError) and _Located.parsed is not None:
        return _Located.parsed.diagnostic(exc.op, exc.message).render()
    if isinstance(exc, OpError):
        message = exc.message
    elif type(exc).__module__.split(".")[0] == "byoc":
        message = str(exc).strip() or type(exc).__name__
    else:
        message = describe_exception(exc)
    if message.startswith(f"{model}: "):  # a message that names the model file already
        message = message[len(model) + 2 :]
    return Diagnostic("error", message, model).render()


if __name__ == "__main__":
    sys.exit(main())
