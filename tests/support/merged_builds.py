"""Many small cases in one build: the kernel sweeps of the C target and the ONNX node tests.

A model library costs one compiler run whatever it holds, so a parametrized test over many
shapes builds all of them as one model (`merge_mains`) per CPU dispatch level, and each case
checks its share of that run (`check_in_sweep`). A sweep whose merged model does not build
or run is checked case by case (`check_alone`), so a failure is always the case's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue

Array = np.ndarray[Any, Any]
Make = Callable[..., tuple[str, list[Array]]]
"""A case of a sweep from its parameters: the model's text (a `func.func @main`) and inputs."""

THREADS = (1, 2)
"""Every case runs at 1 and 2 threads; the two must give the same bits."""


def main_function(module: ModuleOp) -> FuncOp:
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == "main":
            return op
    raise ValueError("the module has no func.func @main")


def merge_mains(modules: Sequence[ModuleOp]) -> tuple[ModuleOp, list[tuple[int, int]]]:
    """One module whose @main runs every module's @main side by side.

    Its inputs are the modules' inputs in order, its results their results in
    order; returns it and, per module, the (start, stop) of its results. The
    graphs share nothing, so the partitioner may group ops of different
    modules together (sibling merges): every op still runs on the target its
    predicates choose.
    """
    mains = [main_function(m) for m in modules]
    block = Block(arg_types=[a.type for f in mains for a in f.body.block.args])
    results: list[SSAValue] = []
    spans: list[tuple[int, int]] = []
    args = iter(block.args)
    for f in mains:
        mapper: dict[SSAValue, SSAValue] = {a: next(args) for a in f.body.block.args}
        start = len(results)
        for op in f.body.block.ops:
            if isinstance(op, ReturnOp):
                results.extend(mapper.get(v, v) for v in op.operands)
            else:
                block.add_op(op.clone(value_mapper=mapper))
        spans.append((start, len(results)))
    block.add_op(ReturnOp(*results))
    main = FuncOp("main", ([a.type for a in block.args], [r.type for r in results]), Region(block))
    return ModuleOp([main]), spans


def _outputs(out: Any) -> list[Array]:
    return list(out) if isinstance(out, list | tuple) else [out]


def _expected(module: ModuleOp, inputs: list[Array]) -> list[Array]:
    from byoc.interpreters import run_reference

    with np.errstate(all="ignore"):
        return _outputs(run_reference(module, *inputs))


def _checked(text: str, inputs: list[Array], runs: Sequence[list[Array]]) -> list[Array]:
    """`runs` (the outputs at each of `THREADS`) within the bounds of the reference and equal
    to each other; returns the first."""
    import byoc
    from support.bounds import assert_graph_outputs

    module = byoc.parse_module(text)
    expected = _expected(module, inputs)
    for threads, actual in zip(THREADS, runs, strict=True):
        assert_graph_outputs(module, inputs, actual, expected, what=f"{threads} thread(s)")
    for other in runs[1:]:
        for one, two in zip(runs[0], other, strict=True):
            assert np.array_equal(one, two, equal_nan=True), "2 threads differ from 1"
    return runs[0]


class _Sweep(NamedTuple):
    runs: list[list[list[Array]]] | None
    """Per case, its outputs at each of `THREADS`; None where the merged model did not build
    or run."""
    offloaded: tuple[str, ...]
    """The ops of the merged model's C partitions."""


def _run(module: ModuleOp, inputs: list[Array], dispatch: str, cflags: str) -> tuple[list[list[Array]], tuple[str, ...]]:
    """`module` built for ccompiler under `dispatch` and `cflags` (BYOC_CFLAGS), run at each
    of `THREADS` (the thread count is a setting of the built library, not of its code);
    returns the runs' outputs and the ops of its C partitions."""
    import pytest

    import byoc
    from byoc.runtime.cpu import DISPATCH_ENV

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(DISPATCH_ENV, dispatch)
        mp.setenv("BYOC_CFLAGS", cflags)
        exe = byoc.build(module, targets=["ccompiler"], num_threads=THREADS[0])
        runs = []
        for threads in THREADS:
            exe.set_num_threads(threads)
            with np.errstate(all="ignore"):
                runs.append(_outputs(exe.run(*inputs)))
    return runs, tuple(op for p in exe.partitions for op in p.ops)


def check_alone(text: str, inputs: list[Array], dispatch: str, cflags: str = "") -> list[Array]:
    """Build `text` alone under `dispatch` (and `cflags`), run it at 1 and 2 threads: both
    within the bounds of the reference and equal to each other. Returns the outputs."""
    import byoc

    return _checked(text, inputs, _run(byoc.parse_module(text), inputs, dispatch, cflags)[0])


_SWEEPS: dict[tuple[Make, str, str, str], _Sweep] = {}
"""Per process, the merged run of each sweep under each dispatch level and `BYOC_CFLAGS`."""


def _sweep(make: Make, params: tuple[Any, ...], dispatch: str, cflags: str) -> _Sweep:
    key = (make, repr(params), dispatch, cflags)  # parameters may hold dicts
    if key not in _SWEEPS:
        import byoc

        cases = [make(*p) for p in params]
        merged, spans = merge_mains([byoc.parse_module(text) for text, _ in cases])
        try:
            runs, offloaded = _run(merged, [x for _, xs in cases for x in xs], dispatch, cflags)
        except Exception:  # noqa: BLE001 - each case then builds alone and reports its own error
            _SWEEPS[key] = _Sweep(None, ())
        else:
            _SWEEPS[key] = _Sweep([[run[start:stop] for run in runs] for start, stop in spans], offloaded)
    return _SWEEPS[key]


def sweep_runs(
    make: Make, params: Sequence[Any], param: Any, dispatch: str, cflags: str = ""
) -> tuple[list[list[Array]], tuple[str, ...]]:
    """The outputs of case `make(*param)` at each of `THREADS`, built under `dispatch` and
    `cflags` together with every case of the sweep (`make(*p)` for each `p` of `params`) in
    one model, made once per process; and the ops of that model's C partitions. Where the
    merged model does not build or run, the case is built alone (and the ops are its own).
    The cases share no values, so each op runs the kernel path its own shape chooses, with
    the whole thread budget."""
    params = tuple(params)
    found = _sweep(make, params, dispatch, cflags)
    if found.runs is None:
        import byoc

        text, inputs = make(*param)
        return _run(byoc.parse_module(text), inputs, dispatch, cflags)
    return found.runs[params.index(param)], found.offloaded


def check_in_sweep(
    make: Make, params: Sequence[Any], param: Any, dispatch: str, cflags: str = ""
) -> list[Array]:
    """`check_alone(*make(*param), dispatch, cflags)`, with the outputs from `sweep_runs`.
    Returns the outputs at 1 thread."""
    text, inputs = make(*param)
    return _checked(text, inputs, sweep_runs(make, params, param, dispatch, cflags)[0])
