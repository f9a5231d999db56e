"""Concatenation in place (lower-to-c's `place_concat_inputs`, byoc/lowering/nn_to_c/buffers.py):
a concatenation input whose slice of the output is contiguous, computed by a step of the
partition, is written there by its producer; the copy disappears.

Checked here: which inputs are placed (not a partition input, not one read twice, not a
slice of several ranges); the workspace plan never gives two values alive at the same step
overlapping bytes (a slice counts as part of its base, from the first write into the base);
the results equal the copying lowering's bit for bit (same kernels, same arithmetic) and the
reference within the f32 bound, fused and per-op, at 1 and 2 threads, at both CPU dispatch
levels; the int8 `byoc_qconcat<n>` skips exactly the inputs without a table, and its model
gives onnxruntime's integers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.bounds import assert_within, graph_bounds
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Region

import byoc
from byoc.context import make_context
from byoc.dialects import c, nn
from byoc.frontend.onnx import import_model
from byoc.interpreters import run_reference
from byoc.lowering.c_build import build_c_module
from byoc.lowering.emit.c import emit_c_source
from byoc.lowering.nn_to_c import LowerToCPass, emission
from byoc.lowering.nn_to_c.buffers import Storage, storage_root
from byoc.lowering.nn_to_c.fusion import KernelPlan
from byoc.lowering.nn_to_c.graph import Tensor

sys.path.insert(0, str(Path(__file__).parents[1] / "frontend"))
from test_onnx_quant import ort_session, quantize_static_model  # noqa: E402

Array = np.ndarray[Any, Any]
NAME = "ccompiler_fire"


def fire_partition() -> func.FuncOp:
    """A fire module and more around it: `a` (a conv with its bias and ReLU) and `b` (a conv
    after a chain of intermediates that live between the two) concatenated into `c`; `c` and
    a conv of it concatenated into `d` (a nested concatenation: `c` lives in `d`, which lives
    in the workspace: its ReLU is returned); `a` read
    again after both (a sigmoid, returned); `concat(a, a)` (read twice: copied);
    `concat(x, s)` (a partition input: copied; `s` placed although three steps read it);
    a concatenation on axis 2 of a 6-channel map (six ranges: copied)."""
    shapes = [(1, 8, 12, 12), (6, 8, 1, 1), (10, 6, 1, 1), (10,), (6, 6, 3, 3), (12, 6, 3, 3), (5, 22, 1, 1)]
    types = [nn.tensor(s, nn.f32) for s in shapes]
    block = Block(arg_types=types)
    x, w_s, w_a, b_a, w_t, w_b, w_n = block.args
    ops: list[Any] = []

    def add(op: Any) -> Any:
        ops.append(op)
        return op.results[0]

    s = add(nn.ReluOp.build(add(nn.Conv2DOp.build(x, w_s))))
    a = add(nn.ReluOp.build(add(nn.BiasAddOp.build(add(nn.Conv2DOp.build(s, w_a)), b_a))))
    t1 = add(nn.ReluOp.build(add(nn.Conv2DOp.build(s, w_t, padding=(1, 1, 1, 1)))))
    t2 = add(nn.MultiplyOp.build(add(nn.TanhOp.build(t1)), t1))
    b = add(nn.Conv2DOp.build(t2, w_b, padding=(1, 1, 1, 1)))
    cat = add(nn.ConcatenateOp.build(a, b, axis=1))
    n = add(nn.ReluOp.build(add(nn.Conv2DOp.build(cat, w_n))))
    d = add(nn.ConcatenateOp.build(cat, n, axis=1))
    e = add(nn.SigmoidOp.build(a))
    twice = add(nn.ConcatenateOp.build(a, a, axis=1))
    with_input = add(nn.ConcatenateOp.build(x, s, axis=1))
    rows = add(nn.ConcatenateOp.build(t1, t2, axis=2))
    outs = [add(nn.ReluOp.build(d)), e, twice, with_input, rows]
    block.add_ops(ops)
    block.add_op(func.ReturnOp(*outs))
    f = func.FuncOp(NAME, (types, [o.type for o in outs]), Region(block), visibility="private")
    f.attributes["byoc.compiler"] = StringAttr("ccompiler")
    return f


COPIES = 2 + 1 + 2
"""Block copies left: `concat(a, a)` both, `concat(x, s)` the input, the axis-2 one both."""


def inputs() -> list[Array]:
    rng = np.random.default_rng(11)
    shapes = [(1, 8, 12, 12), (6, 8, 1, 1), (10, 6, 1, 1), (10,), (6, 6, 3, 3), (12, 6, 3, 3), (5, 22, 1, 1)]
    return [(rng.standard_normal(s) * (1.0 if k == 0 else 0.4)).astype(np.float32) for k, s in enumerate(shapes)]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("byoc_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


Plan = tuple[list[KernelPlan], dict[Tensor, Storage]]


def lower(fuse: bool, in_place: bool = True) -> tuple[ModuleOp, list[Plan]]:
    """The partition through lower-to-c (`in_place=False`: without `place_concat_inputs`, the
    copying lowering), and each partition's steps and storage as the planner left them."""
    plans: list[Plan] = []
    real_plan = emission.plan_buffers

    def recording(steps: list[KernelPlan], storage: dict[Tensor, Storage], reuse: bool) -> int:
        size = real_plan(steps, storage, reuse)
        plans.append((steps, storage))
        return size

    module = ModuleOp([fire_partition()])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(emission, "plan_buffers", recording)
        if not in_place:
            mp.setattr(emission, "place_concat_inputs", lambda steps, storage: steps)
        LowerToCPass(fuse=fuse).apply(make_context(), module)
    module.verify()
    return module, plans


def source_of(module: ModuleOp) -> str:
    unit = next(op for op in module.ops if isinstance(op, c.ModuleOp))
    return emit_c_source(unit)


def overlapping_live_buffers(steps: list[KernelPlan], storage: dict[Tensor, Storage]) -> list[str]:
    """Pairs of workspace values alive at a common step whose bytes overlap. A value's life
    runs from the first step that writes it (or, for a base, any value placed in it) to the
    last step that reads or writes it; computed here from the steps, not from the planner."""
    first: dict[Tensor, int] = {}
    last: dict[Tensor, int] = {}
    for s, step in enumerate(steps):
        for v in [*step.reads, *step.writes, *step.scratch]:
            base = storage_root(v, storage)[0]
            first.setdefault(base, s)
            last[base] = s
    bufs = [(v, storage[v]) for v in first if storage[v].kind == "buffer"]
    bad: list[str] = []
    for i, (u, su) in enumerate(bufs):
        for v, sv in bufs[i + 1 :]:
            alive = first[u] <= last[v] and first[v] <= last[u]
            overlap = su.offset < sv.offset + sv.size and sv.offset < su.offset + su.size
            if alive and overlap:
                bad.append(f"{u.shape} [{first[u]}, {last[u]}] and {v.shape} [{first[v]}, {last[v]}]")
    return bad


@pytest.mark.parametrize("fuse", [True, False])
def test_placed_inputs_and_a_sound_workspace(fuse: bool) -> None:
    module, plans = lower(fuse)
    source = source_of(module)
    assert source.count("  byoc_copy_blocks(in") == COPIES  # the calls (not the profile hook's labels)
    ((steps, storage),) = plans
    slices = [v for v, st in storage.items() if st.kind == "slice"]
    # a, b, s (in concat(x, s)), cat (in d) and n: five values computed in place
    assert len(slices) == 5
    assert any(storage[st.base].kind == "slice" for st in (storage[v] for v in slices) if st.base)  # nested
    assert overlapping_live_buffers(steps, storage) == []
    if fuse:  # the check has teeth: the fused plan does reuse bytes
        offsets = [st.offset for st in storage.values() if st.kind == "buffer"]
        assert len(offsets) > len(set(offsets))


def test_the_checker_sees_a_base_allocated_too_late() -> None:
    """What the planner must not do: allocate the concatenation's output at the
    concatenation's step, after its first input was already written into it. Simulated on
    the real plan by moving the base onto a value alive before the concatenation."""
    _, plans = lower(True)
    ((steps, storage),) = plans
    base = next(st.base for st in storage.values() if st.kind == "slice" and st.base is not None
                and storage[st.base].kind == "buffer")
    assert base is not None
    victims = [v for v, st in storage.items() if st.kind == "buffer" and v is not base]
    for v in victims:
        moved = dict(storage)
        moved[base] = Storage("buffer", offset=storage[v].offset, size=storage[base].size)
        if overlapping_live_buffers(steps, moved):
            return
    pytest.fail("no placement of the base conflicted: the check would not catch a wrong plan")


def _run(lib: Any, xs: list[Array], threads: int) -> list[Array]:
    lib.set_num_threads(threads)
    out = lib.get_function(NAME)(*xs)
    return list(out) if isinstance(out, tuple | list) else [out]


def test_in_place_equals_copying_and_the_reference(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fused and per-op, 1 and 2 threads, the best dispatch level (the baseline: below)."""
    dispatch = "auto"
    monkeypatch.setenv("BYOC_CPU_DISPATCH", dispatch)
    xs = inputs()
    copying = build_c_module(lower(True, in_place=False)[0])
    want = _run(copying, xs, 1)
    ref_module = ModuleOp([fire_partition()])
    with np.errstate(all="ignore"):
        ref = run_reference(ref_module, *xs, function=NAME)
    bounds = graph_bounds(ref_module, xs, ref, function=NAME)
    for fuse in (True, False):
        lib = build_c_module(lower(fuse)[0])
        for threads in (1, 2):
            got = _run(lib, xs, threads)
            for k, (g, w, r, bd) in enumerate(zip(got, want, ref, bounds, strict=True)):
                what = f"output {k} (fuse={fuse}, {threads} threads, {dispatch})"
                if fuse:  # the copying build is fused: the same kernels, the same values
                    np.testing.assert_array_equal(g, w, err_msg=what)
                assert_within(g, r, bd, what)


def test_baseline_dispatch_in_place(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The placed build at the baseline level, 1 and 2 threads: the reference's values."""
    monkeypatch.setenv("BYOC_CPU_DISPATCH", "baseline")
    xs = inputs()
    lib = build_c_module(lower(True)[0])
    ref_module = ModuleOp([fire_partition()])
    with np.errstate(all="ignore"):
        ref = run_reference(ref_module, *xs, function=NAME)
    bounds = graph_bounds(ref_module, xs, ref, function=NAME)
    one = _run(lib, xs, 1)
    two = _run(lib, xs, 2)
    for k, (a, b, r, bd) in enumerate(zip(one, two, ref, bounds, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"output {k}: 2 threads vs 1")
        assert_within(a, r, bd, f"output {k} (baseline)")


# ---- int8: byoc_qconcat<n> skips the inputs computed in place --------------------------------------

def fire_model(seed: int = 0) -> onnx.ModelProto:
    """squeeze 1x1 -> relu; expand 1x1 -> relu and expand 3x3 -> relu; concat; a 1x1 conv."""
    rng = np.random.default_rng(seed)
    inits = {
        "Ws": rng.standard_normal((8, 16, 1, 1)) * 0.3, "Bs": rng.standard_normal(8) * 0.1,
        "W1": rng.standard_normal((16, 8, 1, 1)) * 0.4, "B1": rng.standard_normal(16) * 0.1,
        "W3": rng.standard_normal((16, 8, 3, 3)) * 0.2, "B3": rng.standard_normal(16) * 0.1,
        "Wo": rng.standard_normal((10, 32, 1, 1)) * 0.2,
    }
    nodes = [
        helper.make_node("Conv", ["x", "Ws", "Bs"], ["s0"]),
        helper.make_node("Relu", ["s0"], ["s"]),
        helper.make_node("Conv", ["s", "W1", "B1"], ["e10"]),
        helper.make_node("Relu", ["e10"], ["e1"]),
        helper.make_node("Conv", ["s", "W3", "B3"], ["e30"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["e30"], ["e3"]),
        helper.make_node("Concat", ["e1", "e3"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "Wo"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "fire", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 20, 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10, 20, 20])],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_int8_fire_module(tmp_path: Path, dispatch: str) -> None:
    """quantize_static's fire module: the concatenation keeps one input's scale (copied: placed,
    skipped by byoc_qconcat2, bit 8 + k of its mask) and requantizes the other (through its
    table: not placed). onnxruntime's integers at 1 and 2 threads; the copying build's too."""
    q = quantize_static_model(fire_model(), tmp_path, "u8")
    module = import_model(q)
    byoc.partition_for(module, targets=["ccompiler"])
    LowerToCPass().apply(make_context(), module)
    source = source_of(module)
    (call,) = [line for line in source.splitlines() if line.startswith("  byoc_qconcat2(")]
    mask = int(call.rsplit(",", 1)[1].strip(" );"))
    tables, placed = mask & 0xFF, mask >> 8
    assert tables and placed and tables & placed == 0 and tables | placed == 0b11, call
    x = np.random.default_rng(3).standard_normal((1, 16, 20, 20)).astype(np.float32)
    want = ort_session(q).run(None, {"x": x})[0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(emission, "place_concat_inputs", lambda steps, storage: steps)
        copying = byoc.build(import_model(q), targets=["ccompiler"], num_threads=1).run(x)[0]
    np.testing.assert_array_equal(copying, want)
    exe = byoc.build(import_model(q), targets=["ccompiler"], num_threads=2)
    for threads in (1, 2):
        exe.set_num_threads(threads)
        np.testing.assert_array_equal(exe.run(x)[0], want, err_msg=f"{threads} threads")


def test_with_the_kernel_profile_hook(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Built with the profiling hook (every kernel call timed): the same outputs, a row per
    kernel, and none of them a copy of a placed input (5 copies left: COPIES)."""
    import os

    from byoc.runtime import kernel_profile, toolchain

    xs = inputs()
    want = _run(build_c_module(lower(True)[0]), xs, 1)
    monkeypatch.setenv(toolchain.PROFILE_ENV, os.environ.get(toolchain.PROFILE_ENV, ""))  # restored after
    kernel_profile.enable()
    module, _ = lower(True)
    source = source_of(module)
    assert "#ifdef BYOC_PROFILE_KERNELS" in source
    lib = build_c_module(module)
    kernel_profile.reset()
    for threads in (1, 2):
        for k, (g, w) in enumerate(zip(_run(lib, xs, threads), want, strict=True)):
            np.testing.assert_array_equal(g, w, err_msg=f"output {k}, {threads} threads, profiled")
    rows = [r for r in kernel_profile.rows() if r.calls and r.site.startswith("byoc_p_ccompiler_fire_")]
    concats = [r for r in rows if "nn.concatenate" in r.what]
    assert len(concats) == 3 and all(r.calls == 2 for r in concats)  # concat(a, a), (x, s), axis 2
