"""The C codegen's data movement, logic and index ops over every element type it holds.

Property tests: random shapes, element types (f32, i64, i32, i8, ui8, bool), axes, negative
and out-of-range indices, each partition compiled at both dispatch levels
(BYOC_CPU_DISPATCH=baseline and auto) and run at 1 and 2 threads, against the numpy
reference: exact for data movement and integers, the suite's f32 bound for float math.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.bounds import assert_within, graph_bounds
from support.c_codegen_cases import random_inputs
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from byoc.context import make_context, parse_module
from byoc.dialects import nn
from byoc.dialects.nn import indexing, logic_ops, math_ops
from byoc.interpreters import run_reference
from byoc.lowering.c_build import build_c_module
from byoc.lowering.nn_to_c import LowerToCPass
from byoc.targets.ccompiler import unsupported_reason

Array = np.ndarray[Any, Any]

DTYPES = ["f32", "i64", "i32", "i8", "ui8", "i1"]
NUMS = ["f32", "i64", "i32", "i8", "ui8"]
INDEX = ["i32", "i64"]


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("byoc_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


class Spec:
    """One partition: argument (shape, dtype) pairs, constants, how to build the body."""

    def __init__(
        self,
        name: str,
        inputs: list[tuple[tuple[int, ...], str]],
        build: Any,
        consts: list[Array] | None = None,
        int_range: tuple[int, int] = (-1000, 1000),
    ):
        self.name = name
        self.inputs = inputs
        self.build = build
        self.consts = consts or []
        self.int_range = int_range
        self.positive = False

    def partition(self, sym: str) -> func.FuncOp:
        """The ccompiler partition: every result of the last op is returned."""
        types = [nn.tensor(s, nn.element_type_named(d)) for s, d in self.inputs]
        block = Block(arg_types=types)
        consts = [nn.ConstantOp.from_array(a) for a in self.consts]
        block.add_ops(consts)
        operands: list[SSAValue] = [*block.args, *(k.result for k in consts)]
        built = self.build(operands)
        ops: list[Operation] = built if isinstance(built, list) else [built]
        block.add_ops(ops)
        results = list(ops[-1].results)
        block.add_op(func.ReturnOp(*results))
        f = func.FuncOp(sym, (types, [r.type for r in results]), Region(block), visibility="private")
        f.attributes["byoc.compiler"] = StringAttr("ccompiler")
        return f


def run_specs(specs: list[Spec], seed: int) -> None:
    """Compile every spec into one library at each dispatch level, run at 1 and 2 threads,
    compare with the reference."""
    names = [f"ccompiler_g{k}" for k in range(len(specs))]
    rng = np.random.default_rng(seed)
    inputs = {n: random_inputs(s, rng) for n, s in zip(names, specs, strict=True)}  # type: ignore[arg-type]
    module = ModuleOp([s.partition(n) for n, s in zip(names, specs, strict=True)])
    for n, s in zip(names, specs, strict=True):
        f = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == n)
        for op in f.body.walk():
            if isinstance(op, nn.NNOp) and not isinstance(op, nn.ConstantOp):
                assert unsupported_reason(op) is None, (s.name, unsupported_reason(op))
    with np.errstate(all="ignore"):
        expected = {n: run_reference(module, *inputs[n], function=n) for n in names}
    bounds = {n: graph_bounds(module, inputs[n], expected[n], function=n) for n in names}
    for dispatch in ("baseline", "auto"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BYOC_CPU_DISPATCH", dispatch)
            lowered = module.clone()
            LowerToCPass().apply(make_context(), lowered)
            lib = build_c_module(lowered)
        for threads in (1, 2):
            lib.set_num_threads(threads)
            for n, s in zip(names, specs, strict=True):
                got = lib.get_function(n)(*inputs[n])
                got = got if isinstance(got, tuple) else (got,)
                for g, w, b in zip(got, expected[n], bounds[n], strict=True):
                    assert_within(g, w, b, f"{s.name} ({dispatch}, {threads} threads)")


# ---- strategies ----------------------------------------------------------------------------

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@st.composite
def take_specs(draw: st.DrawFn) -> Spec:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shapes)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    dim = shape[axis % len(shape)]
    idx_shape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    idx_type = draw(st.sampled_from(INDEX))
    build = lambda vs: nn.TakeOp.build(*vs, axis=axis)  # noqa: E731
    if draw(st.booleans()):  # indices from a constant: negative and out of range too
        values = draw(st.lists(st.integers(-3 * dim, 3 * dim), min_size=1, max_size=4))
        idx = np.resize(np.array(values, nn.numpy_dtype(nn.element_type_named(idx_type))), idx_shape)
        return Spec(f"take_const_{dtype}", [(shape, dtype)], build, consts=[idx])
    return Spec(
        f"take_{dtype}_{idx_type}", [(shape, dtype), (idx_shape, idx_type)], build, int_range=(-2 * dim, 2 * dim)
    )


@st.composite
def slice_specs(draw: st.DrawFn) -> Spec:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shapes)
    begin: list[int] = []
    end: list[int] = []
    steps: list[int] = []
    for d in shape:
        s = draw(st.sampled_from([-3, -2, -1, 1, 2, 3]))
        b = draw(st.integers(0, d - 1))
        e = draw(st.integers(b + 1, d)) if s > 0 else draw(st.integers(-1, b - 1))
        begin.append(b)
        end.append(e)
        steps.append(s)
    then_add = dtype in NUMS and draw(st.booleans())  # read by a fused loop

    def build(vs: list[SSAValue]) -> list[Operation]:
        sl = nn.StridedSliceOp.build(vs[0], begin=begin, end=end, strides=steps)
        return [sl, nn.AddOp.build(sl, sl)] if then_add else [sl]

    return Spec(f"strided_slice_{dtype}", [(shape, dtype)], build)


@st.composite
def split_specs(draw: st.DrawFn) -> Spec:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shapes.filter(lambda s: max(s) > 1))
    axis = draw(st.sampled_from([d for d, n in enumerate(shape) if n > 1]))
    cuts = sorted(draw(st.sets(st.integers(1, shape[axis] - 1), min_size=1)))
    return Spec(f"split_{dtype}", [(shape, dtype)], lambda vs: nn.SplitOp.build(vs[0], indices=cuts, axis=axis))


@st.composite
def broadcast_specs(draw: st.DrawFn) -> Spec:
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shapes)
    target = tuple(draw(st.integers(1, 3)) if d == 1 else d for d in shape)
    target = (*draw(st.lists(st.integers(1, 3), max_size=1)), *target)
    if draw(st.booleans()):
        return Spec(f"broadcast_to_{dtype}", [(shape, dtype)], lambda vs: math_ops.BroadcastToOp.build(vs[0], shape=target))
    reps = tuple(draw(st.integers(1, 3)) for _ in shape)
    return Spec(f"tile_{dtype}", [(shape, dtype)], lambda vs: math_ops.TileOp.build(vs[0], reps=reps))


@st.composite
def logic_specs(draw: st.DrawFn) -> Spec:
    shape = draw(shapes)
    other = shape[draw(st.integers(0, len(shape) - 1)) :]
    kind = draw(st.sampled_from(["compare", "logical", "not", "where", "cast"]))
    if kind == "compare":
        cls = draw(st.sampled_from([logic_ops.EqualOp, logic_ops.LessOp, logic_ops.GreaterOp, logic_ops.LessEqualOp, logic_ops.GreaterEqualOp]))
        dtype = draw(st.sampled_from(DTYPES if cls is logic_ops.EqualOp else NUMS))
        return Spec(f"{cls.name}_{dtype}", [(shape, dtype), (other, dtype)], lambda vs: cls.build(*vs), int_range=(-3, 3))
    if kind == "logical":
        lcls = draw(st.sampled_from([logic_ops.LogicalAndOp, logic_ops.LogicalOrOp, logic_ops.LogicalXorOp]))
        return Spec(lcls.name, [(shape, "i1"), (other, "i1")], lambda vs: lcls.build(*vs))
    if kind == "not":
        return Spec("logical_not", [(shape, "i1")], lambda vs: logic_ops.LogicalNotOp.build(vs[0]))
    if kind == "where":
        dtype = draw(st.sampled_from(DTYPES))
        return Spec(f"where_{dtype}", [(other, "i1"), (shape, dtype), (other, dtype)], lambda vs: logic_ops.WhereOp.build(*vs))
    src, dst = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    return Spec(f"cast_{src}_{dst}", [(shape, src)], lambda vs: nn.CastOp.build(vs[0], dtype=dst))


@st.composite
def kernel_specs(draw: st.DrawFn) -> Spec:
    shape = draw(shapes)
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    kind = draw(st.sampled_from(["reduce", "arg", "cumsum", "one_hot", "transpose", "pad", "concat"]))
    if kind == "reduce":
        cls, dtype = draw(st.sampled_from([
            (nn.ReduceSumOp, "i64"), (nn.ReduceSumOp, "i32"), (nn.ReduceMaxOp, "i64"),
            (math_ops.ReduceMinOp, "f32"), (math_ops.ReduceMinOp, "i32"), (math_ops.ReduceMinOp, "i64"),
            (math_ops.ReduceProdOp, "i32"), (math_ops.ReduceProdOp, "i64"),
        ]))  # fmt: skip
        axes = sorted(draw(st.sets(st.integers(0, rank - 1))))
        keep = draw(st.booleans())
        return Spec(f"{cls.name}_{dtype}", [(shape, dtype)], lambda vs: cls.build(vs[0], axes=axes, keepdims=keep))
    if kind == "arg":
        acls = draw(st.sampled_from([math_ops.ArgMaxOp, math_ops.ArgMinOp]))
        dtype = draw(st.sampled_from(NUMS))
        last, keep = draw(st.booleans()), draw(st.booleans())
        return Spec(
            f"{acls.name}_{dtype}", [(shape, dtype)],
            lambda vs: acls.build(vs[0], axis=axis, keepdims=keep, select_last_index=last), int_range=(-2, 2),
        )  # fmt: skip
    if kind == "cumsum":
        dtype = draw(st.sampled_from(["f32", "i32", "i64"]))
        excl, rev = draw(st.booleans()), draw(st.booleans())
        return Spec(f"cumsum_{dtype}", [(shape, dtype)], lambda vs: math_ops.CumSumOp.build(vs[0], axis=axis, exclusive=excl, reverse=rev))
    if kind == "one_hot":
        depth = draw(st.integers(1, 5))
        idx_type, dtype = draw(st.sampled_from(["i32", "i64", "f32"])), draw(st.sampled_from(DTYPES))
        hot_axis = draw(st.integers(-rank - 1, rank))
        values = np.array([0, 1], nn.numpy_dtype(nn.element_type_named(dtype)))
        return Spec(
            f"one_hot_{idx_type}_{dtype}", [(shape, idx_type)],
            lambda vs: indexing.OneHotOp.build(*vs, depth=depth, axis=hot_axis), consts=[values],
            int_range=(-depth - 2, depth + 2),
        )  # fmt: skip
    dtype = draw(st.sampled_from(DTYPES))
    if kind == "transpose":
        perm = draw(st.permutations(range(rank)))
        return Spec(f"transpose_{dtype}", [(shape, dtype)], lambda vs: nn.TransposeOp.build(vs[0], axes=perm))
    if kind == "pad":
        mode = draw(st.sampled_from(["constant", "edge", "wrap"]))
        widths = [draw(st.integers(0, 2)) for _ in range(2 * rank)]
        return Spec(f"pad_{mode}_{dtype}", [(shape, dtype)], lambda vs: nn.PadOp.build(vs[0], pad_width=widths, pad_mode=mode, pad_value=1.0))
    other = tuple(draw(st.integers(1, 3)) if d == axis % rank else n for d, n in enumerate(shape))
    return Spec(f"concat_{dtype}", [(shape, dtype), (other, dtype)], lambda vs: nn.ConcatenateOp.build(*vs, axis=axis))


any_spec = st.one_of(take_specs(), slice_specs(), split_specs(), broadcast_specs(), logic_specs(), kernel_specs())

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(specs=st.lists(any_spec, min_size=8, max_size=8), seed=st.integers(0, 2**31))
def test_glue_ops_match_the_reference(specs: list[Spec], seed: int) -> None:
    run_specs(specs, seed)


# ---- float math of the new kernels -------------------------------------------------------------


@SETTINGS
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple), data=st.data())
def test_float_kernels_within_the_bound(shape: tuple[int, ...], data: st.DataObject) -> None:
    rank = len(shape)
    axis = data.draw(st.integers(0, rank - 1))
    axes = sorted(data.draw(st.sets(st.integers(0, rank - 1), min_size=1)))
    inner = shape[axis:]
    specs = [
        Spec("layer_norm", [(shape, "f32"), (inner, "f32"), (inner[-1:], "f32")],
             lambda vs: indexing.LayerNormOp.build(*vs, axis=axis, epsilon=1e-3)),
        Spec("reduce_log_sum_exp", [(shape, "f32")], lambda vs: math_ops.ReduceLogSumExpOp.build(vs[0], axes=axes)),
        Spec("reduce_prod", [(shape, "f32")], lambda vs: math_ops.ReduceProdOp.build(vs[0], axes=axes)),
        Spec("cumsum", [(shape, "f32")], lambda vs: math_ops.CumSumOp.build(vs[0], axis=axis)),
        Spec("einsum", [((2, *shape[-1:], 3), "f32"), ((2, 4, 3), "f32")],
             lambda vs: math_ops.EinsumOp.build(*vs, equation="bkm,bnm->bnk")),
    ]  # fmt: skip
    run_specs(specs, data.draw(st.integers(0, 2**31)))


# ---- index arithmetic past 2^31, extreme indices, what stays on the host ---------------------------


def test_a_view_of_a_view_past_2_31_elements_reads_the_operand() -> None:
    """A slice far into a broadcast of 5 x 2^32 elements: the broadcast is never stored, the
    slice reads the operand through both views with int64 offsets."""
    text = """
    func.func private @ccompiler_big(%x: tensor<5x1xf32>) -> tensor<4x3xf32> attributes {byoc.compiler = "ccompiler"} {
      %b = nn.broadcast_to %x {shape = array<i64: 5, 4294967296>} : (tensor<5x1xf32>) -> tensor<5x4294967296xf32>
      %s = nn.strided_slice %b {begin = array<i64: 1, 4294967293>, end = array<i64: 5, 4294967296>} : (tensor<5x4294967296xf32>) -> tensor<4x3xf32>
      func.return %s : tensor<4x3xf32>
    }
    """
    module = parse_module(text)
    LowerToCPass().apply(make_context(), module)
    lib = build_c_module(module)
    x = np.arange(5, dtype=np.float32).reshape(5, 1)
    want = np.broadcast_to(x, (5, 2**32))[1:5, 2**32 - 3 :]
    np.testing.assert_array_equal(lib.get_function("ccompiler_big")(x), want)


def test_take_clamps_extreme_indices_without_reading_out_of_bounds() -> None:
    spec = Spec("take_extremes", [((3, 4), "f32")], lambda vs: nn.TakeOp.build(*vs, axis=1),
                consts=[np.array([-(2**63), 2**63 - 1, -(2**40), 2**40, -4, -5, 3, 4], np.int64)])  # fmt: skip
    run_specs([spec], 0)


def test_zero_size_and_non_matmul_einsum_stay_on_the_host() -> None:
    text = """
    func.func @main(%x: tensor<0x3xf32>, %a: tensor<3x3xf32>) -> (tensor<0x3xf32>, tensor<3xf32>) {
      %0 = nn.relu %x : tensor<0x3xf32>
      %1 = nn.einsum %a {equation = "ii->i"} : (tensor<3x3xf32>) -> tensor<3xf32>
      func.return %0, %1 : tensor<0x3xf32>, tensor<3xf32>
    }
    """
    ops = [op for op in parse_module(text).walk() if isinstance(op, nn.NNOp)]
    reasons = [unsupported_reason(op) for op in ops]
    assert reasons[0] is not None and "zero-size" in reasons[0]
    assert reasons[1] is not None and "not a batched matmul" in reasons[1]


def test_the_reason_kept_per_signature_is_the_reason_computed_afresh() -> None:
    """`unsupported_reason` answers from its cache by op name, types and properties: ops of one
    signature share an answer, ops that differ in a property or a type get their own, and
    the answer equals a fresh computation; an `nn.constant` (its weights) is never kept."""
    from byoc.targets import ccompiler

    text = """
    func.func @main(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %y: tensor<2x8x8x3xf32>, %v: tensor<3x3x3x4xf32>, %z: tensor<0x3xf32>) -> (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x6x6x4xf32>, tensor<0x3xf32>) {
      %c = nn.constant dense<1.0> : tensor<3xf32>
      %0 = nn.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
      %1 = nn.conv2d %x, %w : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
      %2 = nn.conv2d %y, %v {data_layout = "NHWC", kernel_layout = "HWIO"} : (tensor<2x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x6x6x4xf32>
      %3 = nn.relu %z : tensor<0x3xf32>
      func.return %0, %1, %2, %3 : tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x6x6x4xf32>, tensor<0x3xf32>
    }
    """
    ops = [op for op in parse_module(text).walk() if isinstance(op, nn.NNOp)]
    constant, conv, same, nhwc, empty = ops
    kept = len(ccompiler._REASONS)  # pyright: ignore[reportPrivateUsage]
    for op in ops:
        assert unsupported_reason(op) == ccompiler._unsupported_reason(op)  # pyright: ignore[reportPrivateUsage]
    assert unsupported_reason(conv) is None and unsupported_reason(same) is None
    assert unsupported_reason(nhwc) is not None and "NCHW/OIHW only" in unsupported_reason(nhwc)
    assert unsupported_reason(empty) is not None and "zero-size" in unsupported_reason(empty)
    assert unsupported_reason(constant) is None
    new = len(ccompiler._REASONS) - kept  # pyright: ignore[reportPrivateUsage]
    assert new <= 3  # conv and same share one entry; the constant has none


def test_every_nn_op_is_lowered_or_has_a_documented_host_reason() -> None:
    from byoc.targets.ccompiler import HOST_REASONS, SUPPORTED_OPS

    names = {op.name for op in nn.Nn.operations}
    missing = sorted(n for n in names if n not in SUPPORTED_OPS and n not in HOST_REASONS)
    assert not missing, f"give these a C lowering or a reason in HOST_REASONS: {missing}"
    docs = (Path(__file__).resolve().parents[2] / "docs" / "c-codegen.md").read_text()
    undocumented = sorted(n for n in HOST_REASONS if f"`{n.removeprefix('nn.')}`" not in docs)
    assert not undocumented, f"docs/c-codegen.md does not list {undocumented}"


@pytest.mark.parametrize(
    "values",
    [[], [0, 1, -1], [2**63 - 1, -(2**63), 12345], np.arange(-500, 700, 3, dtype=np.int64)],
    ids=["empty", "small", "extremes", "numpy"],
)
def test_i64_array_packs_what_from_list_packs(values: Any) -> None:
    """The kernel arguments' int64 arrays (resize tables, shapes, strides) are packed by numpy:
    the same attribute as xDSL's `DenseArrayBase.from_list`."""
    from xdsl.dialects.builtin import DenseArrayBase, i64

    from byoc.lowering.nn_to_c.graph import i64_array

    assert i64_array(values) == DenseArrayBase.from_list(i64, [int(v) for v in values])


def test_i64_array_rejects_a_value_outside_int64() -> None:
    from byoc.lowering.nn_to_c.graph import i64_array

    with pytest.raises(OverflowError):
        i64_array([2**63])
