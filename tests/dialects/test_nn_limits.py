"""Issue 14 items 8, 12, 13: what the nn verifier rejects so that later stages need not
(shapes beyond int64, pad values outside the element type, pool padding beyond the
dilated window), and that every executor agrees on what it accepts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs
from xdsl.dialects.builtin import TensorType, f32, i32, i64
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

import byoc
from byoc.dialects import nn
from byoc.interpreters.reference import run_reference

Array = np.ndarray[Any, Any]
EXECUTORS = ([], ["ccompiler"], ["examplejson"])


# ---- item 8: shapes -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "elt", "match"),
    [
        ([2**63], f32, "does not fit int64"),
        ([-3, 8], f32, r"tensor<-3x8xf32> must have a static, non-negative shape"),
        ([2**62, 4], f32, "byte size does not fit int64"),
        ([2**61], i64, "2305843009213693952 elements of 8 bytes"),
    ],
)
def test_shapes_nn_cannot_represent_are_rejected(shape: list[int], elt: Any, match: str) -> None:
    with pytest.raises(VerifyException, match=match):
        nn.check_static_shape(TensorType(elt, shape))
    block = Block(arg_types=[TensorType(elt, shape)])
    op = nn.ReluOp.create(operands=[block.args[0]], result_types=[TensorType(elt, shape)])
    with pytest.raises(VerifyException, match=match):
        op.verify()


def test_dynamic_dims_are_legal_in_ops_but_not_static() -> None:
    dynamic = TensorType(f32, [nn.DYNAMIC, 3])
    with pytest.raises(VerifyException, match=r"tensor<\?x3xf32> must have a static, non-negative shape"):
        nn.check_static_shape(dynamic)
    nn.check_shape(dynamic)
    block = Block(arg_types=[dynamic])
    nn.ReluOp.create(operands=[block.args[0]], result_types=[dynamic]).verify()
    with pytest.raises(VerifyException, match="non-negative"):
        nn.check_shape(TensorType(f32, [-3, 3]))
    with pytest.raises(VerifyException, match="byte size does not fit int64"):
        nn.check_shape(TensorType(f32, [nn.DYNAMIC, 2**62, 4]))


def test_the_largest_representable_shapes_pass() -> None:
    nn.check_static_shape(TensorType(f32, [(2**63 - 1) // 4]))
    nn.check_static_shape(TensorType(i64, [2**20, 2**20, 2**20 - 1]))
    nn.check_static_shape(TensorType(f32, [0, 2**62]))  # empty: 0 bytes
    assert nn.MAX_TENSOR_BYTES == 2**63 - 1
    assert nn.nbytes_of(TensorType(f32, [3, 5])) == 60


# ---- item 12: pad_value fits the element type --------------------------------------


@pytest.mark.parametrize(
    ("elt", "value"),
    [
        (i32, math.inf),
        (i32, -math.inf),
        (i32, math.nan),
        (i32, 1e20),
        (i32, 2.0**31),
        (i32, -(2.0**31) - 1),
        (i32, 0.5),
        (i64, 2.0**63),
        (i64, math.nan),
        (f32, 1e300),
    ],
)
def test_pad_values_outside_the_element_type_are_rejected(elt: Any, value: float) -> None:
    x = Block(arg_types=[TensorType(elt, [2])]).args[0]
    with pytest.raises(VerifyException, match="pad_value"):
        nn.PadOp.build(x, pad_width=(1, 1), pad_value=value)


@pytest.mark.parametrize(
    ("dtype", "value"),
    [(np.int32, -(2.0**31)), (np.int32, 2.0**31 - 1), (np.float32, math.inf), (np.float32, -3.5)],
)
def test_pad_values_at_the_edge_of_the_type_agree_on_every_executor(dtype: Any, value: float) -> None:
    x = np.arange(6, dtype=dtype).reshape(2, 3)
    module = byoc.parse_module(
        f"""
        func.func @main(%x: tensor<2x3x{nn.DTYPE_NAMES[nn.element_type_of(dtype)]}>) -> tensor<4x4x{nn.DTYPE_NAMES[nn.element_type_of(dtype)]}> {{
          %0 = nn.pad %x {{pad_width = array<i64: 1, 1, 0, 1>, pad_value = {value!r} : f64}}
                 : (tensor<2x3x{nn.DTYPE_NAMES[nn.element_type_of(dtype)]}>) -> tensor<4x4x{nn.DTYPE_NAMES[nn.element_type_of(dtype)]}>
          func.return %0 : tensor<4x4x{nn.DTYPE_NAMES[nn.element_type_of(dtype)]}>
        }}
        """.replace("inf : f64", "0x7FF0000000000000 : f64")
    )
    want = np.pad(x, ((1, 1), (0, 1)), constant_values=dtype(value))
    np.testing.assert_array_equal(run_reference(module, x)[0], want)
    for targets in EXECUTORS:
        (got,) = byoc.build(module, targets=targets).run(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# ---- item 13: pool padding and the dilated window --------------------------------------


def pool_module(op: str, h: int, k: int, d: int, pads: tuple[int, ...], s: int, ceil: bool) -> Any:
    x = Block(arg_types=[nn.tensor((1, 2, h, h + 1))]).args[0]
    built = getattr(nn, op).build(
        x, pool_size=(k, k), strides=(s, s), padding=pads, dilation=(d, d), ceil_mode=ceil
    )
    out = "x".join(map(str, built.result.type.get_shape()))
    cm = ", ceil_mode = true" if ceil else ""
    name = "nn.max_pool2d" if op == "MaxPool2DOp" else "nn.avg_pool2d"
    return byoc.parse_module(
        f"""
        func.func @main(%x: tensor<1x2x{h}x{h + 1}xf32>) -> tensor<{out}xf32> {{
          %0 = {name} %x {{pool_size = array<i64: {k}, {k}>, strides = array<i64: {s}, {s}>,
                 padding = array<i64: {", ".join(map(str, pads))}>, dilation = array<i64: {d}, {d}>{cm}}}
                 : (tensor<1x2x{h}x{h + 1}xf32>) -> tensor<{out}xf32>
          func.return %0 : tensor<{out}xf32>
        }}
        """
    )


def test_pool_padding_is_checked_against_the_dilated_window() -> None:
    x = Block(arg_types=[nn.tensor((1, 1, 5, 5))]).args[0]
    # k=2, d=2: the window spans 3 rows; padding 2 is fine, 3 (< k*d = 4) is not
    nn.MaxPool2DOp.build(x, pool_size=(2, 2), padding=(2, 2, 2, 2), dilation=(2, 2))
    for pads in [(3, 0, 0, 0), (0, 3, 0, 0), (0, 0, 3, 0), (0, 0, 0, 3)]:
        with pytest.raises(VerifyException, match=r"dilated extent 3x3"):
            nn.MaxPool2DOp.build(x, pool_size=(2, 2), padding=pads, dilation=(2, 2))
    with pytest.raises(VerifyException, match="dilation must be positive"):
        nn.MaxPool2DOp.build(x, pool_size=(2, 2), dilation=(0, 1))


CASES = [
    # (h, k, d, padding, stride, ceil_mode): dilation with padding, ceil_mode, one-sided
    (5, 2, 2, (2, 2, 2, 2), 1, False),
    (5, 2, 2, (2, 1, 2, 1), 2, True),
    (5, 3, 2, (4, 4, 4, 4), 3, True),
    (6, 2, 3, (3, 0, 1, 2), 2, True),
    (4, 3, 2, (0, 0, 4, 4), 2, True),
    (1, 2, 2, (1, 1, 1, 1), 1, True),
    (5, 1, 3, (0, 0, 0, 0), 2, True),
]


@pytest.mark.parametrize("op", ["MaxPool2DOp", "AvgPool2DOp"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_dilated_padded_pools_have_one_shape_on_every_executor(op: str, case: tuple[Any, ...]) -> None:
    h, k, d, pads, s, ceil = case
    module = pool_module(op, h, k, d, pads, s, ceil)
    want_type = module.body.ops.first.function_type.outputs.data[0]  # type: ignore[union-attr]
    x = np.random.default_rng(13).standard_normal((1, 2, h, h + 1)).astype(np.float32)
    (ref,) = run_reference(module, x)
    assert ref.shape == tuple(want_type.get_shape())
    for targets in EXECUTORS:
        (got,) = byoc.build(module, targets=targets).run(x)
        assert got.shape == ref.shape, targets
        assert_graph_outputs(module, [x], [got], [ref], what=f"{op} {case} on {targets or 'host'}")
