"""The ExampleJSON target: text format both ways, lowering, and the re-entrant runtime module."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from byoc.context import parse_module
from byoc.diagnostics import PassError
from byoc.dialects import examplejson as ej
from byoc.dialects import nn
from byoc.dialects.byoc import COMPILER_ATTR
from byoc.dialects.examplejson.text import to_text
from byoc.dialects.nn.indexing import float_array
from byoc.frontend.examplejson import ExampleJsonSyntaxError, parse_examplejson
from byoc.interpreters.kernels import KERNELS
from byoc.lowering.nn_to_examplejson import LowerToExampleJsonPass
from byoc.runtime.examplejson_module import (
    MAGIC,
    BinaryFormatError,
    ExampleJsonModule,
    UnknownSubgraphError,
)
from byoc.runtime.loaders import UnknownFormatError, load_module

Array = np.ndarray[Any, Any]
rng = np.random.default_rng(0)

SEED_TEXT = """\
subgraph_0
  input 0 10 10
  input 1 10 10
  input 2 10 10
  input 3 10 10
  add 4 inputs: 0 1 shape: 10 10
  sub 5 inputs: 4 2 shape: 10 10
  mul 6 inputs: 5 3 shape: 10 10
"""


def f32(*shape: int, low: float = -2.0, high: float = 2.0) -> Array:
    return rng.uniform(low, high, shape).astype(np.float32)


def lower(module: ModuleOp) -> ModuleOp:
    LowerToExampleJsonPass().apply(Context(), module)
    module.verify()
    return module


def partition_of(op_class: type[nn.NNOp], arrays: list[Array], attrs: dict[str, Any]) -> ModuleOp:
    """`func.func private @examplejson_main_0` running one op, as `partition` outlines it."""
    types = [nn.tensor(a.shape, nn.element_type_of(a.dtype)) for a in arrays]
    block = Block(arg_types=types)
    op = op_class.build(*block.args, **attrs)
    block.add_ops([op, ReturnOp(*op.results)])
    func = FuncOp(
        "examplejson_main_0",
        (types, list(op.result_types)),
        Region(block),
        visibility="private",
    )
    func.attributes[COMPILER_ATTR] = StringAttr("examplejson")
    module = ModuleOp([func])
    module.verify()
    return module


# --------------------------------------------------------------------------
# Every op the runtime executes equals its kernel reference
# --------------------------------------------------------------------------

CASES: dict[str, Callable[[], tuple[list[Array], dict[str, Any]]]] = {
    "add": lambda: ([f32(3, 4), f32(4)], {}),
    "sub": lambda: ([f32(3, 4), f32(3, 1)], {}),
    "mul": lambda: ([f32(3, 4), f32(3, 4)], {}),
    "div": lambda: ([f32(3, 4), f32(3, 4, low=0.5, high=2.0)], {}),
    "maximum": lambda: ([f32(3, 4), f32(3, 4)], {}),
    "minimum": lambda: (
        [np.arange(12, dtype=np.int32).reshape(3, 4), np.full((3, 4), 5, np.int32)],
        {},
    ),
    "power": lambda: ([f32(3, 4, low=0.1, high=2.0), f32(3, 4)], {}),
    "prelu": lambda: ([f32(2, 3), f32(3)], {}),
    "relu": lambda: ([f32(3, 4)], {}),
    "sigmoid": lambda: ([f32(3, 4)], {}),
    "tanh": lambda: ([f32(3, 4)], {}),
    "exp": lambda: ([f32(3, 4)], {}),
    "log": lambda: ([f32(3, 4, low=0.1, high=3.0)], {}),
    "sqrt": lambda: ([f32(3, 4, low=0.0, high=3.0)], {}),
    "negative": lambda: ([np.arange(6, dtype=np.int64).reshape(2, 3)], {}),
    "abs": lambda: ([f32(3, 4)], {}),
    "erf": lambda: ([f32(3, 4)], {}),
    "reciprocal": lambda: ([f32(3, 4, low=0.5, high=2.0)], {}),
    "hard_swish": lambda: ([f32(3, 4, low=-4.0, high=4.0)], {}),
    "clip": lambda: ([f32(3, 4)], {"a_min": -0.5, "a_max": 0.25}),
    "leaky_relu": lambda: ([f32(3, 4)], {"alpha": 0.2}),
    "hard_sigmoid": lambda: ([f32(3, 4)], {"alpha": 0.3, "beta": 0.4}),
    "cast": lambda: ([f32(3, 4, low=-9.0, high=9.0)], {"dtype": "i32"}),
    "conv2d": lambda: (
        [f32(1, 2, 6, 6), f32(3, 2, 3, 3)],
        {"strides": (2, 2), "padding": (1, 1, 1, 1)},
    ),
    "conv2d_transpose": lambda: (
        [f32(1, 2, 4, 4), f32(2, 3, 3, 3)],
        {"strides": (2, 2), "padding": (1, 1, 1, 1)},
    ),
    "dense": lambda: ([f32(2, 5), f32(3, 5)], {}),
    "matmul": lambda: ([f32(2, 3, 4), f32(4, 5)], {}),
    "bias_add": lambda: ([f32(2, 3, 4), f32(3)], {"axis": 1}),
    "batch_norm": lambda: (
        [f32(2, 3, 4, 4), f32(3), f32(3), f32(3), f32(3, low=0.5, high=1.5)],
        {"epsilon": 1e-3},
    ),
    "max_pool2d": lambda: (
        [f32(1, 2, 7, 7)],
        {"pool_size": (2, 2), "strides": (2, 2), "ceil_mode": True},
    ),
    "avg_pool2d": lambda: (
        [f32(1, 2, 6, 6)],
        {"pool_size": (3, 3), "padding": (1, 1, 1, 1), "count_include_pad": True},
    ),
    "global_avg_pool2d": lambda: ([f32(1, 2, 5, 5)], {}),
    "global_max_pool2d": lambda: ([f32(1, 2, 5, 5)], {}),
    "softmax": lambda: ([f32(3, 4)], {"axis": 0}),
    "reshape": lambda: ([f32(3, 4)], {"newshape": (2, 6)}),
    "flatten": lambda: ([f32(2, 3, 4)], {"axis": 2}),
    "transpose": lambda: ([f32(2, 3, 4)], {"axes": (1, 0, 2)}),
    "concatenate": lambda: ([f32(2, 3), f32(1, 3), f32(4, 3)], {"axis": 0}),
    "pad": lambda: ([f32(2, 3)], {"pad_width": (1, 0, 0, 2), "pad_value": 1.5}),
    "reduce_mean": lambda: ([f32(2, 3, 4)], {"axes": (1,), "keepdims": True}),
    "reduce_sum": lambda: ([np.arange(24, dtype=np.int32).reshape(2, 3, 4)], {"axes": (0, 2)}),
    "reduce_max": lambda: ([f32(2, 3, 4)], {"axes": (-1,)}),
    "lrn": lambda: ([f32(1, 4, 3, 3)], {"size": 3, "alpha": 0.001}),
    "take": lambda: ([f32(5, 3), np.array([4, 0, 2, 2], dtype=np.int64)], {"axis": 0}),
    "strided_slice": lambda: ([f32(4, 5)], {"begin": (0, 1), "end": (3, 4), "strides": (2, 1)}),
    "resize2d": lambda: ([f32(1, 2, 3, 4)], {"size": (6, 8), "method": "linear"}),
    # ---- nn.math_ops and nn.logic_ops (ONNX coverage, issue #16) ----
    **{n: (lambda: ([f32(3, 4, low=-0.9, high=0.9)], {})) for n in (
        "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "floor",
        "ceil", "round", "softplus", "softsign", "mish", "gelu", "elu", "selu", "celu",
        "thresholded_relu", "swish", "shrink", "sign", "is_nan", "is_inf",
    )},  # fmt: skip
    "acosh": lambda: ([f32(3, 4, low=1.0, high=3.0)], {}),
    "mod": lambda: ([f32(3, 4), f32(4, low=0.5, high=2.0)], {"fmod": True}),
    "bitwise_and": lambda: ([_u8s(3, 4), _u8s(4)], {}),
    "bitwise_or": lambda: ([_u8s(3, 4), _u8s(3, 4)], {}),
    "bitwise_xor": lambda: ([_u8s(3, 4), _u8s(3, 4)], {}),
    "bitwise_not": lambda: ([_u8s(3, 4)], {}),
    "bit_shift": lambda: ([_u8s(3, 4), _u8s(3, 4) % 9], {"direction": "left"}),
    "reduce_min": lambda: ([f32(2, 3, 4)], {"axes": (1,)}),
    "reduce_prod": lambda: ([f32(2, 3, 4)], {"axes": (0, 2), "keepdims": True}),
    "reduce_l1": lambda: ([f32(2, 3, 4)], {}),
    "reduce_l2": lambda: ([f32(2, 3, 4)], {"axes": (-1,)}),
    "reduce_sum_square": lambda: ([f32(2, 3, 4)], {"axes": (0,)}),
    "reduce_log_sum": lambda: ([f32(2, 3, 4, low=0.1, high=1.0)], {"axes": (2,)}),
    "reduce_log_sum_exp": lambda: ([f32(2, 3, 4)], {"axes": (2,)}),
    "argmax": lambda: ([f32(3, 4)], {"axis": 1}),
    "argmin": lambda: ([f32(3, 4)], {"keepdims": False, "select_last_index": True}),
    "cumsum": lambda: ([f32(3, 4)], {"axis": 1, "exclusive": True, "reverse": True}),
    "cumprod": lambda: ([f32(3, 4)], {"axis": 0, "reverse": True}),
    "einsum": lambda: ([f32(2, 3)], {"equation": "ji"}),  # a spellable one: implicit transpose
    "tile": lambda: ([f32(2, 3)], {"reps": (2, 1)}),
    "bitcast": lambda: ([f32(2, 3)], {"dtype": "ui32"}),
    "det": lambda: ([f32(2, 3, 3)], {}),
    "broadcast_to": lambda: ([f32(3, 1)], {"shape": (2, 3, 4)}),
    "equal": lambda: ([_u8s(3, 4) % 3, _u8s(4) % 3], {}),
    "less": lambda: ([f32(3, 4), f32(4)], {}),
    "greater": lambda: ([f32(3, 4), f32(3, 4)], {}),
    "less_equal": lambda: ([_u8s(3, 4) % 3, _u8s(3, 4) % 3], {}),
    "greater_equal": lambda: ([f32(3, 4), f32(3, 1)], {}),
    "logical_and": lambda: ([f32(3, 4) > 0, f32(4) > 0], {}),
    "logical_or": lambda: ([f32(3, 4) > 0, f32(3, 4) > 0], {}),
    "logical_xor": lambda: ([f32(3, 4) > 0, f32(3, 4) > 0], {}),
    "logical_not": lambda: ([f32(3, 4) > 0], {}),
    "where": lambda: ([f32(3, 1) > 0, f32(3, 4), f32(4)], {}),
    # -- ONNX coverage, part B (byoc/dialects/nn/indexing.py) --
    "gather_elements": lambda: ([f32(3, 4), np.array([[0, -1], [2, 1], [3, 3]])], {"axis": 1}),
    "gather_nd": lambda: ([f32(3, 4), np.array([[2], [0]])], {}),
    "scatter_elements": lambda: (
        [f32(3, 4), np.array([[0, 1], [2, 1]]), f32(2, 2)],
        {"axis": 0, "reduction": "add"},
    ),
    "scatter_nd": lambda: ([f32(3, 4), np.array([[1, 2], [0, 0]]), f32(2)], {"reduction": "max"}),
    "trilu": lambda: ([f32(3, 4)], {"k": 1, "upper": False}),
    "one_hot": lambda: ([np.array([0, 2, -1]), f32(2)], {"depth": 3, "axis": 0}),
    "reverse_sequence": lambda: ([f32(4, 3), np.array([1, 4, 2])], {}),
    "layer_norm": lambda: ([f32(2, 3, 4), f32(4), f32(4)], {"axis": -1, "epsilon": 1e-3}),
    "rms_norm": lambda: ([f32(2, 3, 4), f32(3, 4)], {"axis": 1}),
    "log_softmax": lambda: ([f32(3, 4)], {"axis": 0}),
    "hardmax": lambda: ([f32(3, 4)], {}),
    "resize": lambda: (
        [f32(2, 3, 4)],
        {"size": (2, 6, 2), "scales": float_array([1.0, 2.0, 0.5]), "mode": "cubic", "antialias": True},
    ),
    "nll_loss": lambda: (
        [f32(2, 3, 4), np.array([[0, 2, 1, 5], [1, 1, 0, 2]]), f32(3, low=0.5)],
        {"ignore_index": 5, "has_ignore": True},
    ),
    "grid_sample": lambda: (
        [f32(1, 2, 3, 4), f32(1, 5, 2, 2, low=-1.2, high=1.2)],
        {"mode": "linear", "padding_mode": "reflection"},
    ),
    "col2im": lambda: ([f32(1, 4, 6)], {"image_shape": (3, 4), "block_shape": (2, 2)}),
}
# issue #13: the quantized ops (scales and zero points are operands)
_Q = np.random.default_rng(13)


def _ints(dtype: Any, *shape: int) -> Array:
    info = np.iinfo(dtype)
    return _Q.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


def _scale(*shape: int) -> Array:
    return ((_Q.random(shape) + 0.1) / 10).astype(np.float32)


CASES.update({
    "quantize": lambda: ([f32(2, 3) * 8, _scale(), _ints(np.uint8)], {}),
    "dequantize": lambda: ([_ints(np.uint8, 2, 3), _scale(3), _ints(np.uint8, 3)], {"axis": 1}),
    "requantize": lambda: (
        [_ints(np.int32, 2, 4) // 65536, _scale(4), np.zeros(4, np.int32), _scale(), _ints(np.int8)], {}
    ),
    "qconv2d": lambda: (
        [_ints(np.uint8, 1, 2, 5, 5), _ints(np.int8, 3, 2, 3, 3), _ints(np.uint8), _ints(np.int8, 3)],
        {"padding": (1, 1, 1, 1)},
    ),
    "qdense": lambda: ([_ints(np.int8, 2, 8), _ints(np.int8, 4, 8), _ints(np.int8), _ints(np.int8)], {}),
    "qmatmul": lambda: (
        [_ints(np.uint8, 2, 3, 8), _ints(np.uint8, 8, 4), _ints(np.uint8), _ints(np.uint8, 4)], {}
    ),
})
# issue #16 (h16): detectors and transformers
CASES.update({
    "roi_align": lambda: (
        [f32(1, 2, 6, 6), np.array([[0, 0, 4, 4], [1, 0.5, 5.5, 3]], np.float32), np.zeros(2, np.int64)],
        {"output_height": 2, "output_width": 2, "sampling_ratio": 2},
    ),
    "rotary_embedding": lambda: (
        [f32(1, 3, 8), f32(4, 2), f32(4, 2), np.array([[0, 2, 3]], np.int64)],
        {"num_heads": 2},
    ),
    "deform_conv2d": lambda: (
        [f32(1, 2, 5, 5), f32(3, 2, 2, 2), f32(1, 8, 4, 4), f32(3), f32(1, 4, 4, 4)], {}
    ),
    "tensor_scatter": lambda: (
        [f32(2, 6, 3), f32(2, 2, 3), np.array([1, 5], np.int64)], {"mode": "circular", "axis": 1}
    ),
})


def _u8s(*shape: int) -> Array:
    return np.random.default_rng(len(shape)).integers(0, 200, shape, dtype=np.uint8)


def test_every_runtime_op_has_a_case() -> None:
    assert sorted(set(ej.OPS) - set(CASES)) == []


@pytest.mark.parametrize("name", sorted(ej.OPS))
def test_op_matches_kernel_reference(name: str) -> None:
    cls = ej.OPS[name]
    arrays, attrs = CASES[name]()
    module = lower(partition_of(cls, arrays, attrs))
    text = to_text(module)
    assert text.splitlines()[1 + len(arrays)].startswith(f"  {name} {len(arrays)} inputs: ")
    # text -> IR -> text is the identity for every op, attributes and dtypes included
    assert to_text(parse_examplejson(text)) == text
    runtime = ExampleJsonModule(text)
    got = runtime.get_function("examplejson_main_0")(*arrays)
    reference = KERNELS[cls.name](
        *arrays, **cls.build(*partition_args(arrays), **attrs).attr_values()
    )
    np.testing.assert_array_equal(got, reference)
    assert got.dtype == np.asarray(reference).dtype


def partition_args(arrays: list[Array]) -> list[Any]:
    block = Block(arg_types=[nn.tensor(a.shape, nn.element_type_of(a.dtype)) for a in arrays])
    return list(block.args)


def test_split_has_no_examplejson_line() -> None:
    # one id per line: multi-result ops are not ExampleJSON ops
    assert "nn.split" not in ej.NAME_OF and "nn.constant" not in ej.NAME_OF


# --------------------------------------------------------------------------
# The seed's text, both ways
# --------------------------------------------------------------------------


def test_seed_text_round_trips_and_runs() -> None:
    module = parse_examplejson(SEED_TEXT)
    module.verify()
    assert to_text(module) == SEED_TEXT
    a, b, c, d = (f32(10, 10) for _ in range(4))
    out = np.empty((10, 10), np.float32)
    f = ExampleJsonModule(SEED_TEXT).get_function("subgraph_0")
    result = f(a, b, c, d, out)
    assert result is out
    np.testing.assert_array_equal(out, ((a + b) - c) * d)


def test_seed_graph_lowers_to_seed_text() -> None:
    module = parse_module(
        """
        func.func private @subgraph_0(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>,
                                      %c: tensor<10x10xf32>, %d: tensor<10x10xf32>)
            -> tensor<10x10xf32> attributes {byoc.compiler = "examplejson"} {
          %0 = nn.add %a, %b : tensor<10x10xf32>
          %1 = nn.subtract %0, %c : tensor<10x10xf32>
          %2 = nn.multiply %1, %d : tensor<10x10xf32>
          func.return %2 : tensor<10x10xf32>
        }
        """
    )
    assert to_text(lower(module)) == SEED_TEXT


def test_mlir_form_round_trips() -> None:
    module = parse_examplejson(
        "g\n  input 0 2 dtype: i32\n  const 1 2 dtype: i32 data: 0x0100000002000000\n"
        "  add 2 inputs: 0 1 shape: 2 dtype: i32\n  mul 3 inputs: 2 2 shape: 2 dtype: i32\n  output 3 2\n"
    )
    printed = str(module)
    reparsed = parse_module(printed)
    assert str(reparsed) == printed
    assert to_text(reparsed) == to_text(module)


def test_input_ids_need_not_be_0_to_n_minus_1() -> None:
    # the seed copied argument i into data_entry_[i]; here arguments follow the input lines
    text = "g\n  input 7 4\n  input 2 4\n  sub 0 inputs: 7 2 shape: 4\n"
    a, b = f32(4), f32(4)
    np.testing.assert_array_equal(ExampleJsonModule(text).get_function("g")(a, b), a - b)
    assert to_text(parse_examplejson(text)) == text


def test_comments_and_blank_lines_are_ignored_and_unindented_lines_accepted() -> None:
    text = "# a graph\n\nsubgraph_0\ninput 0 3\n  # note\nrelu 1 inputs: 0 shape: 3\n"
    module = parse_examplejson(text)
    assert to_text(module) == "subgraph_0\n  input 0 3\n  relu 1 inputs: 0 shape: 3\n"


# --------------------------------------------------------------------------
# Lowering shapes: DAGs, several results, constants, composites
# --------------------------------------------------------------------------

DIAMOND_AND_MULTI = """
func.func private @examplejson_main_0(%x: tensor<4xf32>, %y: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) attributes {byoc.compiler = "examplejson"} {
  %w = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = nn.add %x, %w : tensor<4xf32>
  %1 = nn.relu %0 : tensor<4xf32>
  %2 = nn.tanh %0 : tensor<4xf32>
  %3 = nn.multiply %1, %2 : tensor<4xf32>
  func.return %3, %1 : tensor<4xf32>, tensor<4xf32>
}
func.func private @examplejson_main_1(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {byoc.compiler = "examplejson"} {
  %0 = byoc.composite "examplejson.neg_abs"(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = nn.abs %a : tensor<4xf32>
    %2 = nn.negative %1 : tensor<4xf32>
    byoc.yield %2 : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}
"""


def test_diamond_multi_output_constants_and_composites() -> None:
    module = lower(parse_module(DIAMOND_AND_MULTI))
    text = to_text(module)
    assert text == (
        "examplejson_main_0\n"
        "  input 0 4\n"
        "  input 1 4\n"
        "  const 2 4 data: 0x0000803F000000400000404000008040\n"
        "  add 3 inputs: 0 2 shape: 4\n"
        "  relu 4 inputs: 3 shape: 4\n"
        "  tanh 5 inputs: 3 shape: 4\n"
        "  mul 6 inputs: 4 5 shape: 4\n"
        "  output 6 4\n"
        "examplejson_main_1\n"
        "  input 0 4\n"
        "  abs 1 inputs: 0 shape: 4\n"
        "  negative 2 inputs: 1 shape: 4\n"
    )
    # the functions stay as declarations the host calls
    decls = [op for op in module.ops if isinstance(op, FuncOp)]
    assert [d.sym_name.data for d in decls] == ["examplejson_main_0", "examplejson_main_1"]
    assert all(not d.body.blocks for d in decls)

    runtime = ExampleJsonModule.from_ir(module)
    x, y = f32(4), f32(4)
    h = x + np.array([1, 2, 3, 4], np.float32)
    prod, relu = runtime.get_function("examplejson_main_0")(x, y)
    np.testing.assert_array_equal(relu, np.maximum(h, 0))
    np.testing.assert_array_equal(prod, np.maximum(h, 0) * np.tanh(h))
    outs = (np.empty(4, np.float32), np.empty(4, np.float32))
    got = runtime.get_function("examplejson_main_0")(x, y, *outs)
    assert got[0] is outs[0] and got[1] is outs[1]
    np.testing.assert_array_equal(outs[0], prod)
    np.testing.assert_array_equal(runtime.get_function("examplejson_main_1")(x), -np.abs(x))


def test_lowering_rejects_ops_the_runtime_cannot_run() -> None:
    module = parse_module(
        """
        func.func private @examplejson_main_0(%x: tensor<4x2xf32>) -> tensor<2x2xf32>
            attributes {byoc.compiler = "examplejson"} {
          %0:2 = nn.split %x {indices = array<i64: 2>} : (tensor<4x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
          func.return %0#0 : tensor<2x2xf32>
        }
        """
    )
    with pytest.raises(PassError, match="'nn.split' has no ExampleJSON form"):
        lower(module)


def test_other_targets_are_left_alone() -> None:
    text = """
    func.func private @ccompiler_main_0(%x: tensor<4xf32>) -> tensor<4xf32>
        attributes {byoc.compiler = "ccompiler"} {
      %0 = nn.relu %x : tensor<4xf32>
      func.return %0 : tensor<4xf32>
    }
    """
    module = lower(parse_module(text))
    assert str(module) == str(parse_module(text))


# --------------------------------------------------------------------------
# The runtime: many subgraphs, fetch order, threads, errors
# --------------------------------------------------------------------------

TWO = """\
f1
  input 0 3 4
  input 1 3 4
  add 2 inputs: 0 1 shape: 3 4
f2
  input 0 4 3
  const 1 3 data: 0x0000803F0000004000004040
  mul 2 inputs: 0 1 shape: 4 3
  relu 3 inputs: 2 shape: 4 3
"""
SCALE = np.array([1, 2, 3], np.float32)


def test_two_subgraphs_and_fetch_order() -> None:
    mod = ExampleJsonModule(TWO)
    assert mod.subgraph_names == ["f1", "f2"]
    f1 = mod.get_function("f1")
    f2 = mod.get_function("f2")  # the seed's curr_subgraph_ would now make f1 run f2
    a, b = f32(3, 4), f32(3, 4)
    np.testing.assert_array_equal(f1(a, b), a + b)
    x = f32(4, 3)
    np.testing.assert_array_equal(f2(x), np.maximum(x * SCALE, 0))


def _chain(name: str, op: str, shape: str, length: int) -> str:
    """x op y op y ... (`length` nodes): long enough for calls to interleave mid-graph."""
    lines = [name, f"  input 0 {shape}", f"  input 1 {shape}"]
    lines += [
        f"  {op} {k} inputs: {k - 1 if k > 2 else 0} 1 shape: {shape}" for k in range(2, length + 2)
    ]
    return "\n".join(lines) + "\n"


CHAINS = _chain("adds", "add", "3 4", 24) + _chain("subs", "sub", "4 3", 24)


def _expected(op: Callable[[Array, Array], Array], x: Array, y: Array) -> Array:
    for _ in range(24):
        x = op(x, y)
    return x


def test_threads_interleaving_two_subgraphs() -> None:
    mod = ExampleJsonModule(CHAINS)
    adds, subs = mod.get_function("adds"), mod.get_function("subs")
    failures: list[str] = []
    barrier = threading.Barrier(8)

    def worker(seed: int) -> None:
        r = np.random.default_rng(seed)
        barrier.wait()
        for i in range(200):
            if (i + seed) % 2:
                x = r.standard_normal((3, 4)).astype(np.float32)
                y = r.standard_normal((3, 4)).astype(np.float32)
                ok = np.array_equal(adds(x, y), _expected(np.add, x, y))
            else:
                x = r.standard_normal((4, 3)).astype(np.float32)
                y = r.standard_normal((4, 3)).astype(np.float32)
                out = np.empty((4, 3), np.float32)
                subs(x, y, out)
                ok = np.array_equal(out, _expected(np.subtract, x, y))
            if not ok:
                failures.append(f"thread {seed} call {i}")

    # Switch threads every few bytecodes, so calls really interleave mid-graph
    # (with the default 5 ms interval, a shared data_entry_ could go unnoticed).
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []


def test_allocated_outputs_never_alias_inputs_or_constants() -> None:
    text = "g\n  input 0 2 3\n  const 1 2 data: 0x0000803F00000040\n  reshape 2 inputs: 0 shape: 3 2 attrs: newshape=[3,2]\n  output 2 0 1\n"
    x = f32(2, 3)
    reshaped, same, const = ExampleJsonModule(text).get_function("g")(x)
    for out in (reshaped, same, const):
        assert not np.shares_memory(out, x) and out.flags.writeable
    const[0] = 7.0  # the module's constant is unaffected
    np.testing.assert_array_equal(ExampleJsonModule(text).get_function("g")(x)[2], [1.0, 2.0])


def test_call_errors() -> None:
    mod = ExampleJsonModule(TWO)
    with pytest.raises(UnknownSubgraphError, match=r"unknown subgraph 'f3'.*available: f1, f2"):
        mod.get_function("f3")
    f1 = mod.get_function("f1")
    a = f32(3, 4)
    with pytest.raises(TypeError, match="f1 takes 2 input.*1 output.*got 1 argument"):
        f1(a)
    with pytest.raises(TypeError, match=r"input #1 has dtype float64, expected float32"):
        f1(a, a.astype(np.float64))
    with pytest.raises(ValueError, match=r"input #0 has shape \(4, 3\), expected \(3, 4\)"):
        f1(a.T, a)
    with pytest.raises(ValueError, match=r"output #0 has shape \(3,\), expected \(3, 4\)"):
        f1(a, a, np.empty(3, np.float32))
    readonly = np.empty((3, 4), np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="output #0 is read-only"):
        f1(a, a, readonly)


def test_dlpack_inputs() -> None:
    class Wrapped:
        def __init__(self, arr: Array):
            self.arr = arr

        def __dlpack__(self, **kwargs: Any) -> Any:
            return self.arr.__dlpack__(**kwargs)

        def __dlpack_device__(self) -> Any:
            return self.arr.__dlpack_device__()

    a, b = f32(3, 4), f32(3, 4)
    got = ExampleJsonModule(TWO).get_function("f1")(Wrapped(a), Wrapped(b))
    np.testing.assert_array_equal(got, a + b)


# --------------------------------------------------------------------------
# Persistence
# --------------------------------------------------------------------------


def test_save_load_same_results(tmp_path: Path) -> None:
    mod = ExampleJsonModule(TWO)
    blob = mod.save_to_binary()
    assert blob.startswith(MAGIC)
    again = ExampleJsonModule.load_from_binary(blob)
    assert again.get_source() == TWO
    x = f32(4, 3)
    np.testing.assert_array_equal(again.get_function("f2")(x), mod.get_function("f2")(x))
    path = tmp_path / "m.bin"
    path.write_bytes(blob)
    np.testing.assert_array_equal(
        load_module(path).get_function("f2")(x), mod.get_function("f2")(x)
    )


def test_load_module_from_text_file(tmp_path: Path) -> None:
    path = tmp_path / "mysubgraph.examplejson"
    path.write_text(SEED_TEXT)
    a, b, c, d = (f32(10, 10) for _ in range(4))
    for mod in (load_module(path, "examplejson"), load_module(str(path))):
        np.testing.assert_array_equal(mod.get_function("subgraph_0")(a, b, c, d), ((a + b) - c) * d)
    other = tmp_path / "model.txt"
    other.write_text(SEED_TEXT)
    with pytest.raises(UnknownFormatError, match="cannot tell the format.*examplejson"):
        load_module(other)
    with pytest.raises(UnknownFormatError, match="unknown format 'tvm'"):
        load_module(path, "tvm")


def test_runtime_module_needs_only_the_dialect() -> None:
    # the runtime layer reads and writes the text through the dialect, not lowering or frontend
    code = (
        "import sys, byoc.runtime.examplejson_module; "
        "print(sorted(m for m in sys.modules if m.startswith('byoc.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    for layer in ("byoc.lowering", "byoc.frontend", "byoc.passes", "byoc.targets"):
        assert layer not in out, out


def _flip(blob: bytes, index: int) -> bytes:
    return blob[:index] + bytes([blob[index] ^ 0x40]) + blob[index + 1 :]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b[:12], "truncated: 12 bytes, the header alone is 24"),
        (lambda b: b[:-5], "truncated: the header announces"),
        (lambda b: b + b"\0", "1 unexpected bytes after the graph"),
        (lambda b: _flip(b, 40), "corrupted: the checksum"),
        (lambda b: _flip(b, 14), "corrupted: the checksum"),
        (lambda b: _flip(b, 8), "format version"),
        (lambda b: _flip(b, 0), "not a saved ExampleJSON module"),
        (lambda b: b"", "truncated: 0 bytes"),
        (lambda b: SEED_TEXT.encode(), "not a saved ExampleJSON module"),
    ],
)
def test_damaged_binary_is_a_clear_error(mutate: Callable[[bytes], bytes], message: str) -> None:
    blob = ExampleJsonModule(TWO).save_to_binary()
    with pytest.raises(BinaryFormatError, match=message):
        ExampleJsonModule.load_from_binary(mutate(blob))


# --------------------------------------------------------------------------
# Malformed text: file:line:col errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "col", "message"),
    [
        ("  input 0 3\n", 1, 3, "expected a subgraph name before the first line"),
        ("g\n  input 0 3\n  add 2 inputs: 0 1 shape: 3\n", 3, 19, "input id 1 is not defined"),
        ("g\n  input 0 3\n  input 0 3\n", 3, 9, "id 0 is already defined"),
        ("g\n  input 0 3\n  frob 1 inputs: 0 shape: 3\n", 3, 3, "unknown op 'frob'"),
        (
            "g\n  input 0 3\n  relu 1 inputs: 0 shape: 4\n",
            3,
            20,
            "gives tensor<3xf32>, the line declares tensor<4xf32>",
        ),
        ("g\n  input x 3\n", 2, 9, "expected an id, got 'x'"),
        ("g\n  input 0 3 -1\n", 2, 13, "a dimension"),
        ("g\n  input 0 3 dtype: bf16\n", 2, 20, "unknown dtype 'bf16'"),
        ("g\n  input 0 3\n  relu 1 shape: 3\n", 3, 10, "expected 'inputs: <ids> shape: <dims>'"),
        ("g\n  input 0 3\n  relu 1 inputs: 0\n", 3, 18, "expected 'shape: <dims>'"),
        (
            "g\n  input 0 3\n  relu 1 inputs: 0 shape: 3 attrs: alpha=1.0\n",
            3,
            36,
            "'relu' has no attribute 'alpha'",
        ),
        (
            "g\n  input 0 3\n  leaky_relu 1 inputs: 0 shape: 3 attrs: alpha=big\n",
            3,
            42,
            "attribute 'alpha': expected a number",
        ),
        (
            "g\n  input 0 2 2\n  reshape 1 inputs: 0 shape: 4 attrs: newshape=[5]\n",
            3,
            39,
            "cannot reshape 4 elements",
        ),
        ("g\n  input 0 3\n  add 1 inputs: 0 shape: 3\n", 3, 17, "'add' takes 2 inputs, got 1"),
        ("g\n  const 0 2 data: 0x00\n", 2, 19, "data holds 1 bytes, tensor<2xf32> needs 8"),
        ("g\n  const 0 1 data: 0xZZ\n", 2, 19, "malformed hex"),
        ("g\n  input 0 3\n  output 4\n", 3, 10, "output id 4 is not defined"),
        (
            "g\n  input 0 3\n  output 0\n  relu 1 inputs: 0 shape: 3\n",
            4,
            3,
            "the output line must be the last",
        ),
        ("g\n  input 0 3\ng\n  input 0 3\n", 3, 1, "subgraph 'g' is defined twice"),
        ("g\nh\n  input 0 3\n", 1, 1, "subgraph 'g' has no lines"),
        ("g\n  input 0 3\n  relu\n", 3, 3, "'relu' alone on a line"),
        ("g\n  input 0 3\n  add 1 inputs: 0 0 shape: 3 dtype: i32\n", 3, 21, "gives tensor<3xf32>"),
    ],
)
def test_malformed_text(text: str, line: int, col: int, message: str) -> None:
    with pytest.raises(ExampleJsonSyntaxError) as info:
        parse_examplejson(text, "bad.examplejson")
    err = info.value
    assert message in err.msg
    assert (err.line, err.column) == (line, col), str(err)
    assert str(err).startswith(f"bad.examplejson:{line}:{col}: error: ")


def test_verifier_checks_ids_and_types() -> None:
    good = parse_examplejson("g\n  input 0 3\n  relu 1 inputs: 0 shape: 3\n")
    good.verify()
    sub = ej.subgraphs_of(good)[0]
    node = sub.lines[-1]
    assert isinstance(node, ej.NodeOp)
    wrong = ej.NodeOp("relu", list(node.inputs), TensorType(node.tensor_type.element_type, [4]))
    Rewriter.replace_op(node, wrong)
    with pytest.raises(VerifyException, match="line 'relu 1'.*declares tensor<4xf32>"):
        good.verify()


def test_verifier_checks_line_order_and_text_ids() -> None:
    module = parse_examplejson("g\n  input 0 3\n  input 1 3\n  add 2 inputs: 0 1 shape: 3\n")
    sub = ej.subgraphs_of(module)[0]
    assert sub.ids is None  # ids 0, 1, 2, ...: the lines' positions
    _, second, node = sub.lines
    node.detach()
    sub.body.block.insert_op_before(node, second)  # now line 1 reads the input of line 2
    with pytest.raises(
        VerifyException, match="line 'add 1': input id 2 is not defined by an earlier"
    ):
        module.verify()

    # other ids are kept, one per value line, to print the text back as it was read
    module = parse_examplejson("g\n  input 7 3\n  input 2 3\n  add 0 inputs: 7 2 shape: 3\n")
    sub = ej.subgraphs_of(module)[0]
    assert list(sub.ids.get_values()) == [7, 2, 0]  # type: ignore[union-attr]
    sub.ids = DenseArrayBase.from_list(i64, [7, 7, 0])
    with pytest.raises(VerifyException, match="line 'input 7': id 7 is already defined"):
        module.verify()
    sub.ids = DenseArrayBase.from_list(i64, [7, 2])
    with pytest.raises(VerifyException, match="2 ids for 3 value lines"):
        module.verify()


# --------------------------------------------------------------------------
# The target: support is exactly what the runtime runs; build hooks
# --------------------------------------------------------------------------


def test_target_supports_exactly_the_runtime_ops() -> None:
    from byoc.op_registry import ops_with_attr
    from byoc.targets import get_target

    target = get_target("examplejson")
    assert sorted(ops_with_attr("target.examplejson")) == sorted(ej.NAME_OF)
    static = nn.ReluOp.build(Block(arg_types=[nn.tensor((2, 3))]).args[0])
    dynamic = nn.ReluOp.build(
        Block(arg_types=[TensorType(nn.f32, [-9223372036854775808, 3])]).args[0]
    )
    assert target.support["nn.relu"](static) and not target.support["nn.relu"](dynamic)


def test_build_runs_examplejson_partitions_and_exports(tmp_path: Path) -> None:
    import byoc

    module = parse_module(
        """
        func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
          %0 = func.call @examplejson_main_0(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
          %1 = nn.exp %0 : tensor<4xf32>
          func.return %1 : tensor<4xf32>
        }
        func.func private @examplejson_main_0(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32>
            attributes {byoc.compiler = "examplejson"} {
          %0 = nn.subtract %a, %b : tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        """
    )
    a, b = f32(4), f32(4)
    exe = byoc.build(module)
    (got,) = exe.run(a, b)
    np.testing.assert_array_equal(got, np.exp(a - b))
    exe.export_library(tmp_path / "m.byoc")
    (again,) = byoc.load_module(tmp_path / "m.byoc").run(a, b)
    np.testing.assert_array_equal(again, got)


def test_partitioned_model_matches_reference_and_round_trips_text() -> None:
    import byoc
    from byoc.passes.byoc_pipeline import partition_for

    source = """
    func.func @main(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x4x8xf32> {
      %w = nn.constant dense<0.25> : tensor<4x3x3x3xf32>
      %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
      %1 = nn.relu %0 : tensor<1x4x8x8xf32>
      %2:2 = nn.split %1 {indices = array<i64: 4>, axis = 2 : i64} : (tensor<1x4x8x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>)
      %3 = nn.add %2#0, %2#1 : tensor<1x4x4x8xf32>
      func.return %3 : tensor<1x4x4x8xf32>
    }
    """
    x = f32(1, 3, 8, 8)
    (expected,) = byoc.run_reference(parse_module(source), x)
    (got,) = byoc.build(parse_module(source), targets=["examplejson"]).run(x)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)

    module = parse_module(source)
    partition_for(module, ["examplejson"])
    text = to_text(lower(module))
    assert text.count("\n  input ") == 3 and "conv2d" in text and "split" not in text
    # the text alone rebuilds both subgraphs: run them as the host would
    runtime = ExampleJsonModule(text)
    conv = runtime.get_function("examplejson_main_0")(x)
    top, bottom = np.split(conv, [4], axis=2)
    np.testing.assert_allclose(
        runtime.get_function("examplejson_main_1")(top, bottom), expected, rtol=1e-6
    )


@pytest.mark.parametrize(
    "payload",
    [b"\xff\xfe", b"{", b"[" * 100_000, b"%0 = 1", b"@x"],
    ids=["not-utf8", "brace", "deep", "no-subgraph", "at"],
)
def test_intact_checksum_around_a_non_graph_is_a_binary_format_error(payload: bytes) -> None:
    """A blob whose CRC is right but whose text is no ExampleJSON graph (a crafted artifact)
    raises BinaryFormatError, like every other bad blob."""
    import zlib

    from byoc.runtime.examplejson_module import _HEADER, MAGIC, VERSION

    blob = _HEADER.pack(MAGIC, VERSION, 0, zlib.crc32(payload), len(payload)) + payload
    with pytest.raises(BinaryFormatError):
        ExampleJsonModule.load_from_binary(blob)
