"""The int8 average pooling and reshape composites of the ccompiler target (issue #13):
`qavgpool` (quantize(avg_pool2d | global_avg_pool2d(dequantize(x)))) and `qreshape`
(quantize(reshape | flatten(dequantize(x)))) — byoc/targets/qdq.py, byoc_qpool.h — give exactly
the integers of the float QDQ block (byoc's numpy reference) on the best CPU path and the
baseline one, at 1 and 2 threads; a target without int8 kernels leaves them to the host."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import helper

import byoc
from byoc import run_reference
from byoc.frontend.onnx import import_model

sys.path.insert(0, str(Path(__file__).parents[1] / "frontend"))
sys.path.insert(0, str(Path(__file__).parent))
from test_nn_to_c_qfused import SHAPE, check, composites, qdq_model  # noqa: E402
from test_onnx_quant import ort_session, quantize_static_model, small_cnn  # noqa: E402

Array = np.ndarray[Any, Any]


SLOW = pytest.mark.slow  # the wider sweeps; one case of each stays in the quick suite


@pytest.mark.parametrize("x,y", [
    ((np.uint8, 0.05, 128), (np.uint8, 0.0123, 7)),
    pytest.param((np.int8, 0.0371, -3), (np.uint8, 0.05, 128), marks=SLOW),
    pytest.param((np.uint8, 0.3333333, 0), (np.int8, 0.3333333, 0), marks=SLOW),
    ((np.uint8, 0.01031515747308731, 0), (np.uint8, 0.005, 0)),  # linear_split form 2
])
def test_qavgpool_global_is_exact(x: tuple[type, float, int], y: tuple[type, float, int], dispatch: str) -> None:
    node = helper.make_node("GlobalAveragePool", ["x_d"], ["f"])
    model = qdq_model([node], {"x": x}, y, SHAPE)
    check(model, "qavgpool", SHAPE)
    odd = [2, 3, 37, 41]  # planes of 1517 bytes: the 64-byte steps and a tail
    check(qdq_model([node], {"x": x}, y, odd), "qavgpool", odd)


def test_linear_split_reproduces_the_table() -> None:
    """qavgpool's fast form: table[b] = m * u(b) + c + r[b] + r[256 + b] on every byte, for
    many scales and zero points of both types, and which forms occur."""
    from byoc.targets.qdq import linear_split, sum_table

    rng = np.random.default_rng(0)
    forms = set()
    for dtype in (np.uint8, np.int8):
        q = np.arange(256, dtype=np.uint8).view(dtype)
        b = np.arange(256)
        u = b if dtype == np.uint8 else b ^ 0x80
        for _ in range(300):
            scale = np.asarray(np.exp(rng.uniform(-12, 3)), np.float32)
            z = np.asarray(rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1), dtype)
            got = sum_table(q, scale, z)
            assert got is not None
            table = got[0]
            form, m, c, r = linear_split(table, dtype == np.uint8)
            forms.add(form)
            assert form in (1, 2)
            np.testing.assert_array_equal(table, m * u + c + r[:256].astype(np.int64) + r[256:])
            assert form == 2 or not r[256:].any()
    assert forms == {1, 2}


@pytest.mark.parametrize("pool", [
    "3x3s1-pad", pytest.param("3x3s1-pad-include", marks=SLOW), pytest.param("2x2s2", marks=SLOW), "3x3s2-ceil",
    pytest.param("2x3-dilated-pads", marks=SLOW),
])
def test_qavgpool_windows_are_exact(pool: str, dispatch: str) -> None:
    attrs: dict[str, Any] = {
        "3x3s1-pad": dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        "3x3s1-pad-include": dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1),
        "2x2s2": dict(kernel_shape=[2, 2], strides=[2, 2]),
        "3x3s2-ceil": dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 1, 0], ceil_mode=1),
        "2x3-dilated-pads": dict(kernel_shape=[2, 3], strides=[1, 2], pads=[1, 2, 0, 2], dilations=[2, 2]),
    }[pool]
    node = helper.make_node("AveragePool", ["x_d"], ["f"], **attrs)
    shape = [1, 8, 33, 31]
    model = qdq_model([node], {"x": (np.int8, 0.05, -3)}, (np.uint8, 0.031, 10), shape)
    model = _with_opset(model, 19)  # dilations on AveragePool: opset 19
    check(model, "qavgpool", shape, ort_exact=False)


def _with_opset(model: Any, version: int) -> Any:
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", version))
    return model


@pytest.mark.parametrize("same", [True, False])
def test_qreshape_is_the_input_or_its_table(same: bool, dispatch: str) -> None:
    node = helper.make_node("Flatten", ["x_d"], ["f"])
    x = (np.uint8, 0.05, 128)
    y = x if same else (np.int8, 0.07, -5)
    model = qdq_model([node], {"x": x}, y, SHAPE, out_shape=[1, int(np.prod(SHAPE[1:]))])
    check(model, "qreshape", SHAPE)


def test_the_window_sum_is_exact_on_every_byte() -> None:
    """The exactness argument of qavgpool: d(byte) = table[byte] * 2^e for every byte and
    several scales and zero points, |table| < 2^33, and numpy's f64 sum of the dequantized
    values of a large window (as the reference computes it) equals the integer sum of the
    table times 2^e, in any order."""
    from byoc.interpreters.qkernels import dequantize
    from byoc.targets.qdq import sum_table

    rng = np.random.default_rng(0)
    for dtype in (np.uint8, np.int8):
        q = np.arange(256, dtype=np.uint8).view(dtype)
        for scale in (1e-4, 0.05, 0.3333333, 7.1, 123.456, 2.0**-140, 1.0e36):
            for z in (0, 5, -128 if dtype == np.int8 else 255):
                s, zp = np.asarray(scale, np.float32), np.asarray(z, dtype)
                got = sum_table(q, s, zp)
                assert got is not None
                table, e = got
                d = dequantize(q, s, zp, axis=1, block_size=0).astype(np.float64)
                np.testing.assert_array_equal(np.ldexp(table.astype(np.float64), e), d)
                assert np.abs(table).max() < 2**33
                window = rng.integers(0, 256, 1 << 16)
                vals = d[window]
                exact = np.ldexp(float(table[window].sum()), e)
                assert exact == vals.sum() == vals[::-1].sum() == np.sort(vals).sum()
                assert exact == np.sum(vals.astype(np.float32), dtype=np.float64)
    assert sum_table(np.arange(256, dtype=np.uint8), np.asarray(3.0e38, np.float32), np.asarray(0, np.uint8)) is None


def test_per_axis_input_stays_float_and_exact() -> None:
    """An average pool whose input is quantized per channel is no qavgpool; the float block
    gives the reference's integers."""
    node = helper.make_node("GlobalAveragePool", ["x_d"], ["f"])
    model = qdq_model([node], {"x": (np.uint8, 0.05, 128)}, (np.uint8, 0.02, 3), [1, 4, 6, 6])
    inits = {t.name: t for t in model.graph.initializer}
    from onnx import numpy_helper

    inits["x_s"].CopyFrom(numpy_helper.from_array(np.asarray([0.05, 0.04, 0.03, 0.02], np.float32), "x_s"))
    inits["x_z"].CopyFrom(numpy_helper.from_array(np.asarray([128, 120, 100, 90], np.uint8), "x_z"))
    for n in model.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear") and n.input[1] == "x_s":
            n.attribute.append(helper.make_attribute("axis", 1))
    assert "ccompiler.qavgpool" not in composites(model)
    x = np.random.default_rng(1).standard_normal((1, 4, 6, 6)).astype(np.float32)
    exe = byoc.build(import_model(model), targets=["ccompiler"])
    np.testing.assert_array_equal(exe.run(x)[0], run_reference(import_model(model), x)[0])


def test_a_target_without_int8_kernels_leaves_the_block_to_the_host() -> None:
    node = helper.make_node("GlobalAveragePool", ["x_d"], ["f"])
    model = qdq_model([node], {"x": (np.uint8, 0.05, 128)}, (np.uint8, 0.02, 3), [1, 4, 6, 6])
    module = import_model(model)
    byoc.partition_for(module, targets=["examplejson"])
    assert not [op for op in module.walk() if op.name == "byoc.composite"]
    x = np.random.default_rng(1).standard_normal((1, 4, 6, 6)).astype(np.float32)
    got = byoc.build(import_model(model), targets=["examplejson"]).run(x)[0]
    np.testing.assert_array_equal(got, run_reference(import_model(model), x)[0])


def test_quantize_static_small_cnn_pools_in_int8(tmp_path: Any) -> None:
    """The quantizer tests' small CNN: its global average pool is a qavgpool and its flatten a
    qreshape; the integers are the reference's and onnxruntime's (optimised), at 1 and 2 threads."""
    q = quantize_static_model(small_cnn(), tmp_path, "u8")
    found = composites(q)
    assert "ccompiler.qavgpool" in found and "ccompiler.qreshape" in found
    (name,) = [i.name for i in q.graph.input if i.name not in {t.name for t in q.graph.initializer}]
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    ref = run_reference(import_model(q), x)
    want = ort_session(q).run(None, {name: x})
    for threads in (1, 2):
        got = byoc.build(import_model(q), targets=["ccompiler"], num_threads=threads).run(x)
        for g, r, w in zip(got, ref, want, strict=True):
            np.testing.assert_array_equal(g, r)
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("scale", [
    pytest.param(0.05, marks=SLOW), pytest.param(0.3333333, marks=SLOW), 0.0123, 7.1, pytest.param(1e-30, marks=SLOW),
])
def test_quantize_and_qadd_near_every_half(scale: float, dispatch: str) -> None:
    """The lone quantize and qadd kernels divide as numpy does: on values at, and 1-3 ulps
    around, every (k + 1/2) * s and k * s of the range, NaN, inf and random values, the bytes
    are the reference's. (A multiply by f32(1 / s) that divided only vectors with a lane near a
    half-integer gave the same bytes but was slower: 24.7 against 19.3 us for 65,536 qadd
    elements; this test caught the version without the division.)"""
    from onnx import TensorProto, numpy_helper

    s = np.float32(scale)
    k = np.arange(-300, 301, dtype=np.float32)
    base = np.concatenate([(k + np.float32(0.5)) * s, k * s]).astype(np.float32)
    vals = [base]
    for step in (1, 2, 3):
        up, down = base.copy(), base.copy()
        for _ in range(step):
            up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(-np.inf))
        vals += [up, down]
    rng = np.random.default_rng(2)
    vals.append((rng.standard_normal(4096) * 200 * s).astype(np.float32))
    x = np.concatenate(vals).astype(np.float32)
    x = np.concatenate([x, np.full(5, np.nan, np.float32), np.asarray([np.inf, -np.inf], np.float32)])
    n = x.size
    inits = [numpy_helper.from_array(np.asarray(s, np.float32), "s"), numpy_helper.from_array(np.asarray(3, np.uint8), "z"),
             numpy_helper.from_array(np.asarray(s * np.float32(0.7), np.float32), "s2"),
             numpy_helper.from_array(np.asarray(-7, np.int8), "z2")]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("QuantizeLinear", ["x", "s2", "z2"], ["q2"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["a"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["c"]),
        helper.make_node("QuantizeLinear", ["c", "s2", "z2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "quantize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info(v, t, [1, n]) for v, t in
         (("q", TensorProto.UINT8), ("q2", TensorProto.INT8), ("y", TensorProto.INT8))], inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    found = composites(model)
    assert "ccompiler.quantize" in found and "ccompiler.qadd" in found
    want = run_reference(import_model(model), x[None])
    got = byoc.build(import_model(model), targets=["ccompiler"], num_threads=1).run(x[None])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("shape,attrs,dtype", [
    ([1, 4, 9, 7], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), np.int8),  # rows under 16 bytes
    pytest.param([1, 4, 9, 7], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), np.uint8, marks=SLOW),
    ([1, 3, 23, 37], dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 0, 0], ceil_mode=1), np.uint8),
    pytest.param([1, 2, 40, 53], dict(kernel_shape=[2, 3], strides=[1, 3], pads=[0, 2, 1, 2]), np.int8,
                 marks=SLOW),  # stride 3: scalar windows
])
def test_qmaxpool_column_max_on_narrow_and_odd_rows(shape: list[int], attrs: dict[str, Any], dtype: type, dispatch: str) -> None:
    """qmaxpool's one pass over the window's rows (byoc_q_colmax_) and its edge outputs, on rows
    narrower than a vector, with a tail, padding on both sides and ceil_mode."""
    node = helper.make_node("MaxPool", ["x_d"], ["f"], **attrs)
    model = qdq_model([node], {"x": (dtype, 0.05, 3)}, (np.uint8, 0.031, 10), shape)
    check(model, "qmaxpool", shape)


@pytest.mark.parametrize("n,axis", [
    (2, 1), pytest.param(4, 1, marks=SLOW), pytest.param(2, 2, marks=SLOW), (3, 3), pytest.param(5, 1, marks=SLOW),
])
def test_qconcat_in_one_pass(n: int, axis: int, dispatch: str) -> None:
    """qconcat of 2 to 4 inputs (byoc_qconcat<n>: each input through its table or copied into
    its slice, rows split across threads), on axis 1 and inner axes (several outer rows), with
    u8 and i8 inputs; 5 inputs keep the tables and the block copies. The reference's bytes."""
    params = [(np.uint8, 0.05, 128), (np.int8, 0.02, 4), (np.uint8, 0.05, 128), (np.uint8, 0.09, 17), (np.int8, 0.05, 0)]
    names = "abcde"[:n]
    node = helper.make_node("Concat", [f"{c}_d" for c in names], ["f"], axis=axis)
    shape = [1, 8, 64, 72]
    out_shape = list(shape)
    out_shape[axis] *= n
    model = qdq_model([node], dict(zip(names, params, strict=False)), (np.uint8, 0.05, 128), shape, out_shape=out_shape)
    if n <= 4:
        source = _c_source(model)
        assert f"byoc_qconcat{n}(" in source
    check(model, "qconcat", shape)


def _c_source(model: Any) -> str:
    from byoc.context import make_context
    from byoc.lowering.emit.c import emit_c_source
    from byoc.lowering.nn_to_c.lower_to_c import LowerToCPass

    module = import_model(model)
    byoc.partition_for(module, targets=["ccompiler"])
    LowerToCPass().apply(make_context(), module)
    return emit_c_source(module)


@pytest.mark.parametrize("shape,x_dtype", [
    ([1, 16, 7, 7], np.int8), pytest.param([1, 16, 7, 7], np.uint8, marks=SLOW),
    pytest.param([1, 4, 13, 11], np.int8, marks=SLOW), pytest.param([2, 3, 9, 8], np.int8, marks=SLOW),
])
def test_qlut_per_channel_on_short_rows(shape: list[int], x_dtype: type, dispatch: str) -> None:
    """qlut's rows shorter than, or not a multiple of, 64 bytes (a 7x7 plane is all tail: masked
    AVX-512 loads and stores where the CPU has VBMI): the reference's bytes."""
    rng = np.random.default_rng(4)
    c = shape[1]
    consts = {
        "g": (rng.random(c) + 0.5).astype(np.float32), "b": rng.standard_normal(c).astype(np.float32),
        "m": rng.standard_normal(c).astype(np.float32), "v": (rng.random(c) + 0.1).astype(np.float32),
    }
    body = [helper.make_node("BatchNormalization", ["x_d", "g", "b", "m", "v"], ["bn"]),
            helper.make_node("Relu", ["bn"], ["f"])]
    xz = 128 if x_dtype == np.uint8 else 0
    model = qdq_model(body, {"x": (x_dtype, 0.05, xz)}, (np.uint8, 0.03, 3), shape, consts)
    check(model, "qlut", shape, ort_exact=False)
