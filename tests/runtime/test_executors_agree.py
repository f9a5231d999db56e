"""Every executor gives the same answer, or the same rejection (issue 14, items 11, 14, 15).

The executors: the numpy reference, a host-only build, and builds for ccompiler,
cblas (with ccompiler beside it, so the GEMM goes to OpenBLAS and the rest to C)
and examplejson.

- item 11: `nn.clip` with a NaN bound is NaN everywhere (numpy's and ONNX's clip);
  the C lowering used to skip the bound (a comparison with NaN is false).
- item 14: an `np.matrix` input is read as a plain array (no matrix products),
  and every output is a fresh array the caller owns.
- item 15: a valid input at a misaligned address is accepted (copied) everywhere;
  the C partitions used to reject it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs, assert_within

import byoc
from byoc.runtime.c_module import CFunctionError
from byoc.runtime.examplejson_module import ExampleJsonModule
from byoc.runtime.executable import InputError, load_executable

Array = np.ndarray[Any, Any]

TARGETS: dict[str, list[str] | None] = {
    "host": None,
    "ccompiler": ["ccompiler"],
    "cblas": ["cblas", "ccompiler"],
    "examplejson": ["examplejson"],
}
EXECUTORS = ["reference", *TARGETS]


def _run(executor: str, text: str, inputs: list[Any]) -> list[Array]:
    module = byoc.parse_module(text)
    if executor == "reference":
        return byoc.run_reference(module, *inputs)
    return byoc.build(module, targets=TARGETS[executor]).run(*inputs)


def _f64(v: float) -> str:
    """An f64 attribute value as MLIR text: hex bits for NaN and the infinities."""
    if math.isnan(v) or math.isinf(v):
        return f"0x{np.float64(v).view(np.uint64):016X}"
    return repr(float(v))


# ---------------------------------------------------------------------------
# item 11: nn.clip with a NaN bound
# ---------------------------------------------------------------------------


def _clip_graph(lo: float, hi: float) -> str:
    attrs = f"{{a_min = {_f64(lo)} : f64, a_max = {_f64(hi)} : f64}}"
    return f"""
func.func @main(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>) {{
  %0 = nn.clip %x {attrs} : tensor<2x4xf32>
  %d = nn.dense %y, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %1 = nn.clip %d {attrs} : tensor<2x3xf32>
  func.return %0, %1 : tensor<2x4xf32>, tensor<2x3xf32>
}}"""


def _clip_inputs() -> list[Array]:
    x = np.array([[-2.0, 0.5, 3.0, np.nan], [np.inf, -np.inf, 0.0, 1.0]], np.float32)
    rng = np.random.default_rng(3)
    y = rng.standard_normal((2, 4)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    return [x, y, w]


NAN_BOUNDS = [
    (math.nan, 1.0),
    (0.0, math.nan),
    (math.nan, math.nan),
    (-math.inf, math.nan),
    (math.nan, math.inf),
]


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize(("lo", "hi"), NAN_BOUNDS, ids=lambda v: str(v))
def test_clip_with_a_nan_bound_is_nan_everywhere(executor: str, lo: float, hi: float) -> None:
    outs = _run(executor, _clip_graph(lo, hi), _clip_inputs())
    assert [o.shape for o in outs] == [(2, 4), (2, 3)]
    for o in outs:
        assert o.dtype == np.float32
        assert np.isnan(o).all(), f"{executor}: clip to [{lo}, {hi}] gave {o}"
    # numpy's clip, the reference kernels' definition
    with np.errstate(invalid="ignore"):
        assert np.isnan(np.clip(_clip_inputs()[0], np.float32(lo), np.float32(hi))).all()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_clip_keeps_nan_elements_and_clamps_infinities(executor: str) -> None:
    text = _clip_graph(0.0, 1.0)
    inputs = _clip_inputs()
    outs = _run(executor, text, inputs)
    expected = np.clip(inputs[0], np.float32(0.0), np.float32(1.0))
    assert_within(outs[0], expected, 0.0, f"{executor} clip")
    assert np.isnan(outs[0][0, 3])
    module = byoc.parse_module(text)
    assert_graph_outputs(module, inputs, outs, byoc.run_reference(module, *inputs), what=executor)


def test_clip_with_a_nan_bound_runs_in_c() -> None:
    """The NaN case is lowered to C (not left on the host), and the C code agrees."""
    exe = byoc.build(byoc.parse_module(_clip_graph(math.nan, 1.0)), targets=["ccompiler"])
    assert any("nn.clip" in p.ops for p in exe.partitions)
    c_source = exe.components["ccompiler"].source
    assert c_source is not None and "NAN" in c_source
    assert all(np.isnan(o).all() for o in exe(*_clip_inputs()))


@pytest.mark.parametrize("executor", list(TARGETS))
def test_clip_with_a_nan_bound_survives_an_artifact(executor: str, tmp_path: Path) -> None:
    exe = byoc.build(byoc.parse_module(_clip_graph(0.0, math.nan)), targets=TARGETS[executor])
    path = tmp_path / "clip.byoc"
    exe.export_library(str(path))
    outs = load_executable(path)(*_clip_inputs())
    assert all(np.isnan(o).all() for o in outs)


# ---------------------------------------------------------------------------
# item 14: np.matrix inputs, and outputs the caller owns
# ---------------------------------------------------------------------------

MATRIX_GRAPH = """
func.func @main(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<4xf32>) {
  %0 = nn.multiply %a, %b : tensor<2x2xf32>
  %1 = nn.hard_swish %a : tensor<2x2xf32>
  %2 = nn.reshape %b {newshape = array<i64: 4>} : (tensor<2x2xf32>) -> tensor<4xf32>
  func.return %0, %1, %2 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<4xf32>
}"""


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("executor", EXECUTORS)
def test_matrix_inputs_are_plain_arrays(executor: str) -> None:
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    plain = _run(executor, MATRIX_GRAPH, [a, b])
    outs = _run(executor, MATRIX_GRAPH, [np.asmatrix(a), np.asmatrix(b)])
    for o, p in zip(outs, plain, strict=True):
        assert type(o) is np.ndarray
        assert_within(o, p, 0.0, executor)
    assert_within(outs[0], a * b, 0.0, f"{executor}: elementwise, not a matrix product")
    assert outs[2].shape == (4,)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_matrix_inputs_to_an_examplejson_function() -> None:
    exe = byoc.build(byoc.parse_module(MATRIX_GRAPH), targets=["examplejson"])
    (partition,) = exe.partitions
    f = exe.components["examplejson"].get_function(partition.symbol)
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    n_in = len(f.plan.inputs)
    outs, plain = f(*[np.asmatrix(a)] * n_in), f(*[a] * n_in)
    assert isinstance(outs, tuple) and isinstance(plain, tuple)
    for o, p in zip(outs, plain, strict=True):
        assert type(o) is np.ndarray
        assert_within(o, p, 0.0, "examplejson function")


ALIAS_GRAPH = """
func.func @main(%a: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2x3xf32>, tensor<3x1xf32>, tensor<2x3xf32>) {
  %0 = nn.reshape %a {newshape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %c = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %t = nn.transpose %a {axes = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %r = nn.reshape %c {newshape = array<i64: 3, 1>} : (tensor<3xf32>) -> tensor<3x1xf32>
  %e = nn.exp %a : tensor<2x3xf32>
  func.return %0, %a, %c, %t, %a, %r, %e : tensor<6xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2x3xf32>, tensor<3x1xf32>, tensor<2x3xf32>
}"""


def _assert_owned(outs: list[Array], inputs: list[Array], what: str) -> None:
    for k, o in enumerate(outs):
        assert type(o) is np.ndarray, f"{what}: output {k} is a {type(o).__name__}"
        assert o.flags.writeable and o.flags.c_contiguous, f"{what}: output {k} flags {o.flags}"
        for x in inputs:
            assert o is not x and not np.shares_memory(o, x), f"{what}: output {k} aliases an input"
        for j, p in enumerate(outs[:k]):
            assert not np.shares_memory(o, p), f"{what}: outputs {j} and {k} share memory"


@pytest.mark.parametrize("executor", EXECUTORS)
def test_outputs_are_fresh_arrays_the_caller_owns(executor: str) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    keep = a.copy()
    module = byoc.parse_module(ALIAS_GRAPH)
    if executor == "reference":
        first, second = byoc.run_reference(module, a), byoc.run_reference(module, a)
    else:
        exe = byoc.build(module, targets=TARGETS[executor])
        first, second = exe(a), exe(a)
        profiled, _ = exe.run_profiled(a)
        _assert_owned(profiled, [a], f"{executor} run_profiled")
    _assert_owned(first, [a], executor)
    for o, p in zip(first, second, strict=True):
        assert not np.shares_memory(o, p), f"{executor}: two calls return the same memory"
    for o in first:
        o[...] = -7.0  # the caller owns it: writing changes nothing else
    np.testing.assert_array_equal(a, keep)
    third = byoc.run_reference(module, a) if executor == "reference" else exe(a)
    np.testing.assert_array_equal(third[2], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(third[1], keep)
    np.testing.assert_array_equal(third[3], keep.T)


# ---------------------------------------------------------------------------
# item 15: misaligned inputs
# ---------------------------------------------------------------------------

SEED_GRAPH = """
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = nn.add %a, %b : tensor<10x10xf32>
  %1 = nn.subtract %0, %c : tensor<10x10xf32>
  %2 = nn.multiply %1, %d : tensor<10x10xf32>
  func.return %2 : tensor<10x10xf32>
}"""


def _misaligned(values: Array) -> Array:
    """A float32 view of `values` at an odd byte offset: valid, C-contiguous, misaligned."""
    raw = np.zeros(values.nbytes + 1, np.uint8)
    view = raw[1:].view(values.dtype).reshape(values.shape)
    view[...] = values
    assert not view.flags.aligned and view.flags.c_contiguous
    return view


def _seed_inputs() -> list[Array]:
    rng = np.random.default_rng(5)
    return [rng.standard_normal((10, 10)).astype(np.float32) for _ in range(4)]


@pytest.mark.parametrize("executor", EXECUTORS)
def test_misaligned_input_is_accepted_everywhere(executor: str) -> None:
    xs = _seed_inputs()
    mis = _misaligned(xs[0])
    module = byoc.parse_module(SEED_GRAPH)
    if executor == "reference":
        run = lambda *v: byoc.run_reference(module, *v)  # noqa: E731
    else:
        run = byoc.build(module, targets=TARGETS[executor]).run
    aligned = run(*xs)[0]
    assert_within(run(mis, *xs[1:])[0], aligned, 0.0, executor)
    # the same object again, changed in between: no stale copy is read
    mis[0, 0] = 100.0
    out = run(mis, *xs[1:])[0]
    assert out[0, 0] == np.float32((np.float32(100.0) + xs[1][0, 0] - xs[2][0, 0]) * xs[3][0, 0])


@pytest.mark.parametrize("executor", list(TARGETS))
def test_misaligned_and_strided_input_is_rejected_naming_it(executor: str) -> None:
    xs = _seed_inputs()
    raw = np.zeros(10 * 20 * 4 + 1, np.uint8)
    strided = raw[1:].view(np.float32).reshape(10, 20)[:, ::2]
    exe = byoc.build(byoc.parse_module(SEED_GRAPH), targets=TARGETS[executor])
    with pytest.raises(InputError, match="input 'a' is not C-contiguous"):
        exe(strided, *xs[1:])


def test_c_function_copies_a_misaligned_input_and_rejects_a_misaligned_output() -> None:
    xs = _seed_inputs()
    exe = byoc.build(byoc.parse_module(SEED_GRAPH), targets=["ccompiler"])
    (partition,) = exe.partitions
    f = exe.components["ccompiler"].get_function(partition.symbol)
    expected = f(*xs)
    mis = _misaligned(xs[0])
    assert_within(f(mis, *xs[1:]), expected, 0.0, "misaligned input")
    mis[0, 0] = 100.0
    again = f(mis, *xs[1:])
    assert again[0, 0] == np.float32((np.float32(100.0) + xs[1][0, 0] - xs[2][0, 0]) * xs[3][0, 0])
    out = _misaligned(np.zeros((10, 10), np.float32))
    with pytest.raises(CFunctionError, match="output '.*' .*not aligned"):
        f(*xs, out)


def test_c_function_reads_a_list_input_afresh_each_call() -> None:
    """A list is converted (copied) on each call, even when the same list object is passed again."""
    xs = _seed_inputs()
    exe = byoc.build(byoc.parse_module(SEED_GRAPH), targets=["ccompiler"])
    (partition,) = exe.partitions
    f = exe.components["ccompiler"].get_function(partition.symbol)
    a = xs[0].tolist()
    first = f(a, *xs[1:])
    a[0][0] = 100.0
    second = f(a, *xs[1:])
    assert first[0, 0] != second[0, 0]
    assert second[0, 0] == np.float32((np.float32(100.0) + xs[1][0, 0] - xs[2][0, 0]) * xs[3][0, 0])


def test_examplejson_function_accepts_a_misaligned_input() -> None:
    xs = _seed_inputs()
    exe = byoc.build(byoc.parse_module(SEED_GRAPH), targets=["examplejson"])
    (partition,) = exe.partitions
    module = exe.components["examplejson"]
    assert isinstance(module, ExampleJsonModule)
    f = module.get_function(partition.symbol)
    assert_within(f(_misaligned(xs[0]), *xs[1:]), f(*xs), 0.0, "examplejson function")


@pytest.mark.parametrize("executor", list(TARGETS))
def test_outputs_of_a_loaded_artifact_are_fresh(executor: str, tmp_path: Path) -> None:
    """Constants read back from an artifact are read-only views of its sections: an
    output that is one of them is still a writable copy of its own."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = tmp_path / "alias.byoc"
    byoc.build(byoc.parse_module(ALIAS_GRAPH), targets=TARGETS[executor]).export_library(str(path))
    exe = load_executable(path)
    first, second = exe(a), exe(a)
    _assert_owned(first, [a], f"loaded {executor}")
    assert not np.shares_memory(first[2], second[2])
    first[2][...] = 0.0
    np.testing.assert_array_equal(exe(a)[2], [1.0, 2.0, 3.0])
