"""The `nn` dialect: a tensor graph with the op set of TVM Relay.

Every op is an IRDL operation over builtin `tensor<...>` types. Its type
relation lives in one static method, `infer(operand_types, attrs)`, which the
verifier re-runs and compares with the declared result types, and which
builders and importers call so that nobody computes result types by hand:

    y = nn.Conv2DOp.build(x, w, padding=(1, 1, 1, 1))

Custom assembly, shared by all ops (except `nn.constant`):

    %2 = nn.add %0, %1 : tensor<10x10xf32>                      // all types agree
    %3 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>}
           : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>

Only properties that differ from their default are printed; any other
(discardable) attribute, such as `byoc.target`, is printed in the same
dictionary and kept as an attribute when parsed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from io import StringIO
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    TensorType,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from byoc.printer import elides_constant

# --------------------------------------------------------------------------
# Element types and helpers
# --------------------------------------------------------------------------

FLOAT: tuple[Attribute, ...] = (f32,)
NUMERIC: tuple[Attribute, ...] = (f32, i32, i64)

_NP_DTYPES: dict[Attribute, np.dtype[Any]] = {
    f32: np.dtype(np.float32),
    f64: np.dtype(np.float64),
    i32: np.dtype(np.int32),
    i64: np.dtype(np.int64),
    IntegerType(1): np.dtype(np.bool_),
}


def numpy_dtype(element_type: Attribute) -> np.dtype[Any]:
    """The numpy dtype of a builtin element type (f32, f64, i32, i64, i1)."""
    try:
        return _NP_DTYPES[element_type]
    except KeyError:
        raise VerifyException(f"unsupported element type {element_type}") from None


def element_type_of(dtype: Any) -> Attribute:
    """The builtin element type of a numpy dtype."""
    dt = np.dtype(dtype)
    for attr, npdt in _NP_DTYPES.items():
        if npdt == dt:
            return attr
    raise ValueError(f"unsupported numpy dtype {dt}")


def tensor(shape: Sequence[int], element_type: Attribute = f32) -> TensorType[Any]:
    return TensorType(element_type, list(shape))


def shape_of(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def ints(*values: int) -> DenseArrayBase[Any]:
    return DenseArrayBase.from_list(i64, list(values))


def _int(v: int) -> IntegerAttr[Any]:
    return IntegerAttr(v, i64)


def _float(v: float) -> FloatAttr[Any]:
    return FloatAttr(v, f64)


def _fail(msg: str) -> VerifyException:
    return VerifyException(msg)


def to_python(attr: Attribute) -> Any:
    """Convert a property value to the Python value kernels receive."""
    if isinstance(attr, DenseArrayBase):
        return tuple(int(v) for v in attr.get_values())
    if isinstance(attr, IntegerAttr):
        if attr.type == IntegerType(1):
            return bool(attr.value.data)
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    return attr


def from_python(value: Any, like: Attribute | None) -> Attribute:
    """Convert a Python value to a property value shaped like `like` (its default)."""
    if isinstance(value, Attribute):
        return value
    if isinstance(like, DenseArrayBase) or isinstance(value, tuple | list):
        return ints(*[int(v) for v in value])
    if isinstance(value, bool) or (isinstance(like, IntegerAttr) and like.type == IntegerType(1)):
        return BoolAttr.from_bool(bool(value))
    if isinstance(like, FloatAttr) or isinstance(value, float):
        return _float(float(value))
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, str):
        return StringAttr(value)
    raise TypeError(f"cannot convert {value!r} to an attribute")


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting of static shapes; raises VerifyException if incompatible."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise _fail(
                "operand shapes "
                + ", ".join("x".join(map(str, s)) or "scalar" for s in shapes)
                + " are not broadcast-compatible"
            )
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise _fail(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


# --------------------------------------------------------------------------
# Type text caches: a model repeats a few tensor types thousands of times, and
# xDSL parses and prints each one token by token (most of an op's parse time).
# --------------------------------------------------------------------------

_PLAIN_TENSOR_TYPE = re.compile(r"tensor<(?:[0-9]+x)*(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64)>")
_PARSED_TYPES: dict[str, Attribute] = {}
_PRINTED_TYPES: dict[Attribute, str] = {}
_TYPE_CACHE_LIMIT = 4096


def _parse_optional_type(parser: Parser) -> Attribute | None:
    """`parser.parse_optional_type()`, served from a cache for static tensor types."""
    start = parser.pos
    match = _PLAIN_TENSOR_TYPE.match(parser.lexer.input.content, start)  # type: ignore[arg-type]
    if match is None:
        return parser.parse_optional_type()
    cached = _PARSED_TYPES.get(match.group())
    if cached is None:
        cached = parser.parse_optional_type()
        if cached is not None and len(_PARSED_TYPES) < _TYPE_CACHE_LIMIT:
            _PARSED_TYPES[match.group()] = cached
        return cached
    parser._resume_from(match.end())  # pyright: ignore[reportPrivateUsage]
    return cached


def _parse_type(parser: Parser) -> Attribute:
    found = _parse_optional_type(parser)
    if found is None:
        parser.raise_error("Expected type")
    return found


_PRINTED_TYPES_BY_ID: dict[int, tuple[Attribute, str]] = {}
_PRINTED_ATTR_DICTS: dict[tuple[tuple[str, Attribute], ...], str] = {}
_STATELESS_ATTRS = (IntegerAttr, FloatAttr, StringAttr, DenseArrayBase)
"""Attributes whose text does not depend on the printer's state (aliases, resources)."""


def _type_text(t: Attribute) -> str | None:
    """The text of a tensor type without encoding, from a cache; None for other types."""
    entry = _PRINTED_TYPES_BY_ID.get(id(t))
    if entry is not None and entry[0] is t:
        return entry[1]
    if not isinstance(t, TensorType) or not isinstance(t.encoding, NoneAttr):
        return None
    text = _PRINTED_TYPES.get(t)
    if text is None:
        text = str(t)
        if len(_PRINTED_TYPES) < _TYPE_CACHE_LIMIT:
            _PRINTED_TYPES[t] = text
    if len(_PRINTED_TYPES_BY_ID) < _TYPE_CACHE_LIMIT:
        _PRINTED_TYPES_BY_ID[id(t)] = (t, text)  # holds t, so its id stays unique
    return text


def _attr_dict_text(attrs: dict[str, Attribute]) -> str | None:
    """The text of an attribute dictionary of plain builtin values, from a cache."""
    if not all(isinstance(v, _STATELESS_ATTRS) for v in attrs.values()):
        return None
    key = tuple(attrs.items())
    text = _PRINTED_ATTR_DICTS.get(key)
    if text is None:
        stream = StringIO()
        Printer(stream=stream).print_attr_dict(attrs)
        text = stream.getvalue()
        if len(_PRINTED_ATTR_DICTS) < _TYPE_CACHE_LIMIT:
            _PRINTED_ATTR_DICTS[key] = text
    return text


def _signature_text(in_types: Sequence[Attribute], out_types: Sequence[Attribute]) -> str | None:
    """`T` when all types agree, else `(Ts) -> T` or `(Ts) -> (Ts)`; None if a type is not cached."""
    texts = [_type_text(t) for t in (*in_types, *out_types)]
    if any(t is None for t in texts):
        return None
    ins, outs = texts[: len(in_types)], texts[len(in_types) :]
    if len(outs) == 1 and all(t == outs[0] for t in ins):
        return outs[0]
    result = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"  # type: ignore[arg-type]
    return "(" + ", ".join(ins) + ") -> " + result  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# The shared base: custom format, verification through `infer`, builders
# --------------------------------------------------------------------------


class NNOp(IRDLOperation):
    """Base of every nn op. Subclasses set `DTYPES`, `KIND` and `infer`."""

    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOAT
    """Element types the op accepts on its data operands."""
    KIND: ClassVar[str] = "opaque"
    """Pattern kind: elementwise, broadcast, injective, reduce, out-elementwise-fusable, opaque."""
    SAME_DTYPE: ClassVar[bool] = True
    """All operands and results share one element type."""

    # ---- type relation ---------------------------------------------------
    @classmethod
    def infer(
        cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]
    ) -> list[TensorType[Any]]:
        raise NotImplementedError(f"{cls.__name__} must define infer")

    # ---- attributes -----------------------------------------------------------
    @classmethod
    def prop_defaults(cls) -> dict[str, Attribute | None]:
        cached = cls.__dict__.get("_prop_defaults_cache")
        if cached is None:
            cached = {
                name: pdef.default_value
                for name, pdef in cls.get_irdl_definition().properties.items()
            }
            cls._prop_defaults_cache = cached  # type: ignore[attr-defined]
        return cached

    @classmethod
    def python_attrs(cls, props: Mapping[str, Attribute]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, default in cls.prop_defaults().items():
            attr = props.get(name, default)
            if attr is None:
                raise _fail(f"'{cls.name}' requires the property '{name}'")
            out[name] = to_python(attr)
        return out

    def attr_values(self) -> dict[str, Any]:
        """The op's properties (defaults filled in) as Python values: the kernel's kwargs."""
        return self.python_attrs(self.properties)

    # ---- building ---------------------------------------------------------------
    @classmethod
    def build(
        cls,
        *operands: SSAValue | Operation,
        attributes: Mapping[str, Attribute] | None = None,
        **attrs: Any,
    ) -> NNOp:
        """Create the op, computing its result types with `infer`."""
        values = [SSAValue.get(o) for o in operands]
        defaults = cls.prop_defaults()
        props: dict[str, Attribute] = {}
        for key, value in attrs.items():
            if key not in defaults:
                raise TypeError(f"'{cls.name}' has no property '{key}'")
            if value is not None:
                props[key] = from_python(value, defaults[key])
        types = [v.type for v in values]
        for t in types:
            if not isinstance(t, TensorType):
                raise TypeError(f"'{cls.name}' operands must be tensors, got {t}")
        result_types = cls.infer(types, cls.python_attrs(props))  # type: ignore[arg-type]
        return cls.create(
            operands=values,
            result_types=result_types,
            properties=props,
            attributes=dict(attributes or {}),
        )

    # ---- verification -----------------------------------------------------------
    def verify_(self) -> None:
        types: list[TensorType[Any]] = []
        for i, operand in enumerate(self.operands):
            t = operand.type
            if not isinstance(t, TensorType):
                raise _fail(f"operand #{i} must be a ranked tensor, got {t}")
            types.append(t)
        for t in self.result_types:
            if not isinstance(t, TensorType):
                raise _fail(f"results must be ranked tensors, got {t}")
        self.check_dtypes(types)
        expected = self.infer(types, self.attr_values())
        actual = list(self.result_types)
        if expected != actual:
            exp = ", ".join(str(t) for t in expected)
            got = ", ".join(str(t) for t in actual)
            raise _fail(f"result type {got} does not match the inferred type {exp}")

    def check_dtypes(self, types: Sequence[TensorType[Any]]) -> None:
        if not types:
            return
        first = types[0].element_type
        if first not in self.DTYPES:
            allowed = ", ".join(str(d) for d in self.DTYPES)
            raise _fail(f"element type {first} is not supported (expected one of {allowed})")
        if self.SAME_DTYPE:
            for t in types[1:]:
                if t.element_type != first:
                    raise _fail(
                        f"all operands must have the same element type, got {first} and {t.element_type}"
                    )

    # ---- custom format ----------------------------------------------------------
    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        defaults = self.prop_defaults()
        shown: dict[str, Attribute] = {
            k: v for k, v in self.properties.items() if defaults.get(k, None) != v
        }
        shown.update(self.attributes)
        in_types = [o.type for o in self.operands]
        out_types = list(self.result_types)
        if type(printer) is Printer:  # not a subclass (e.g. syntax highlighting): use the caches
            attr_text = _attr_dict_text(shown) if shown else ""
            signature = _signature_text(in_types, out_types)
            if attr_text is not None and signature is not None:
                printer.print_string((" " + attr_text if attr_text else "") + " : " + signature)
                return
        if shown:
            printer.print_string(" ")
            printer.print_attr_dict(shown)
        printer.print_string(" : ")
        if len(out_types) == 1 and all(t == out_types[0] for t in in_types):
            printer.print_attribute(out_types[0])
        else:
            printer.print_string("(")
            printer.print_list(in_types, printer.print_attribute)
            printer.print_string(") -> ")
            if len(out_types) == 1:
                printer.print_attribute(out_types[0])
            else:
                printer.print_string("(")
                printer.print_list(out_types, printer.print_attribute)
                printer.print_string(")")

    @classmethod
    def parse(cls, parser: Parser) -> NNOp:
        pos = parser.pos
        unresolved = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
        ) or []
        attr_dict = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        def parse_type() -> Attribute:
            return _parse_type(parser)

        if parser.parse_optional_punctuation("(") is not None:
            in_types = parser.parse_optional_undelimited_comma_separated_list(
                lambda: _parse_optional_type(parser), parse_type
            ) or []
            parser.parse_punctuation(")")
            parser.parse_punctuation("->")
            if parser.parse_optional_punctuation("(") is not None:
                out_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parse_type)
                parser.parse_punctuation(")")
            else:
                out_types = [parse_type()]
        else:
            single = parse_type()
            in_types = [single] * len(unresolved)
            out_types = [single]
        if len(in_types) != len(unresolved):
            parser.raise_error(
                f"'{cls.name}' has {len(unresolved)} operands but {len(in_types)} operand types",
                pos,
                parser.pos,
            )
        operands = parser.resolve_operands(unresolved, in_types, pos)
        defaults = cls.prop_defaults()
        props = {k: v for k, v in attr_dict.items() if k in defaults}
        attributes = {k: v for k, v in attr_dict.items() if k not in defaults}
        return cls.create(
            operands=operands,
            result_types=out_types,
            properties=props,
            attributes=attributes,
        )


# --------------------------------------------------------------------------
# Elementwise and broadcasting ops
# --------------------------------------------------------------------------


class BinaryOp(NNOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "broadcast"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        a, b = types
        return [tensor(broadcast_shapes(shape_of(a), shape_of(b)), a.element_type)]


@irdl_op_definition
class AddOp(BinaryOp):
    name = "nn.add"


@irdl_op_definition
class SubtractOp(BinaryOp):
    name = "nn.subtract"


@irdl_op_definition
class MultiplyOp(BinaryOp):
    name = "nn.multiply"


@irdl_op_definition
class DivideOp(BinaryOp):
    name = "nn.divide"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOAT


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "nn.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "nn.minimum"


@irdl_op_definition
class PowerOp(BinaryOp):
    name = "nn.power"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOAT


@irdl_op_definition
class PReluOp(BinaryOp):
    """x if x >= 0 else slope * x; slope broadcasts against x (ONNX PRelu)."""

    name = "nn.prelu"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOAT


class UnaryOp(NNOp):
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "elementwise"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        return [types[0]]


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "nn.relu"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "nn.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "nn.tanh"


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "nn.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    name = "nn.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "nn.sqrt"


@irdl_op_definition
class NegativeOp(UnaryOp):
    name = "nn.negative"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "nn.abs"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC


@irdl_op_definition
class ErfOp(UnaryOp):
    name = "nn.erf"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    name = "nn.reciprocal"


@irdl_op_definition
class HardSwishOp(UnaryOp):
    """x * relu6(x + 3) / 6."""

    name = "nn.hard_swish"


@irdl_op_definition
class ClipOp(UnaryOp):
    name = "nn.clip"
    a_min = prop_def(FloatAttr, default_value=_float(-math.inf))
    a_max = prop_def(FloatAttr, default_value=_float(math.inf))

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if attrs["a_min"] > attrs["a_max"]:
            raise _fail(f"a_min {attrs['a_min']} is greater than a_max {attrs['a_max']}")
        return [types[0]]


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    name = "nn.leaky_relu"
    alpha = prop_def(FloatAttr, default_value=_float(0.01))


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "nn.hard_sigmoid"
    alpha = prop_def(FloatAttr, default_value=_float(0.2))
    beta = prop_def(FloatAttr, default_value=_float(0.5))


@irdl_op_definition
class CastOp(UnaryOp):
    """Convert the element type: `dtype` is one of f32, i32, i64."""

    name = "nn.cast"
    dtype = prop_def(StringAttr)
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC
    SAME_DTYPE: ClassVar[bool] = False
    _TARGETS: ClassVar[dict[str, Attribute]] = {"f32": f32, "i32": i32, "i64": i64}

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        target = cls._TARGETS.get(attrs["dtype"])
        if target is None:
            raise _fail(f"cast to '{attrs['dtype']}' is not supported (f32, i32, i64)")
        return [tensor(shape_of(types[0]), target)]


# --------------------------------------------------------------------------
# Neural-network ops
# --------------------------------------------------------------------------


def _check_rank(t: TensorType[Any], rank: int, what: str) -> tuple[int, ...]:
    s = shape_of(t)
    if len(s) != rank:
        raise _fail(f"{what} must have rank {rank}, got {len(s)}")
    return s


def _check_len(attrs: Mapping[str, Any], name: str, n: int) -> tuple[int, ...]:
    v = attrs[name]
    if len(v) != n:
        raise _fail(f"'{name}' must have {n} values, got {len(v)}")
    return v


def _window_out(
    size: int, k: int, stride: int, pad_lo: int, pad_hi: int, dilation: int, ceil_mode: bool = False
) -> int:
    if stride < 1 or dilation < 1:
        raise _fail("strides and dilation must be positive")
    if pad_lo < 0 or pad_hi < 0:
        raise _fail("padding must be non-negative")
    span = dilation * (k - 1) + 1
    avail = size + pad_lo + pad_hi - span
    if avail < 0:
        raise _fail(
            f"window of extent {span} does not fit input size {size} with padding ({pad_lo}, {pad_hi})"
        )
    if ceil_mode:
        out = -(-avail // stride) + 1
        if (out - 1) * stride >= size + pad_lo:
            out -= 1
        return out
    return avail // stride + 1


@irdl_op_definition
class Conv2DOp(NNOp):
    """2-D convolution, data NCHW, weight OIHW (I = C / groups).

    padding is (top, left, bottom, right).
    """

    name = "nn.conv2d"
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase, default_value=ints(1, 1))
    padding = prop_def(DenseArrayBase, default_value=ints(0, 0, 0, 0))
    dilation = prop_def(DenseArrayBase, default_value=ints(1, 1))
    groups = prop_def(IntegerAttr, default_value=_int(1))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "out-elementwise-fusable"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        n, c, h, w = _check_rank(types[0], 4, "data")
        o, i, kh, kw = _check_rank(types[1], 4, "weight")
        sh, sw = _check_len(attrs, "strides", 2)
        pt, pl, pb, pr = _check_len(attrs, "padding", 4)
        dh, dw = _check_len(attrs, "dilation", 2)
        g = attrs["groups"]
        if g < 1 or c % g or o % g:
            raise _fail(f"groups {g} must divide the input channels {c} and output channels {o}")
        if i * g != c:
            raise _fail(f"weight has {i} input channels per group, expected {c // g} ({c} / groups {g})")
        oh = _window_out(h, kh, sh, pt, pb, dh)
        ow = _window_out(w, kw, sw, pl, pr, dw)
        return [tensor((n, o, oh, ow), types[0].element_type)]


@irdl_op_definition
class Conv2DTransposeOp(NNOp):
    """Transposed 2-D convolution (the gradient of conv2d), data NCHW, weight IOHW.

    The weight is (C, O / groups, KH, KW), as in ONNX ConvTranspose. The full
    output is (H - 1) * stride + dilation * (KH - 1) + 1 + output_padding rows;
    `padding` (top, left, bottom, right) then crops it.
    """

    name = "nn.conv2d_transpose"
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase, default_value=ints(1, 1))
    padding = prop_def(DenseArrayBase, default_value=ints(0, 0, 0, 0))
    output_padding = prop_def(DenseArrayBase, default_value=ints(0, 0))
    dilation = prop_def(DenseArrayBase, default_value=ints(1, 1))
    groups = prop_def(IntegerAttr, default_value=_int(1))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "out-elementwise-fusable"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        n, c, h, w = _check_rank(types[0], 4, "data")
        i, og, kh, kw = _check_rank(types[1], 4, "weight")
        strides = _check_len(attrs, "strides", 2)
        padding = _check_len(attrs, "padding", 4)
        out_pad = _check_len(attrs, "output_padding", 2)
        dilation = _check_len(attrs, "dilation", 2)
        g = attrs["groups"]
        if g < 1 or c % g:
            raise _fail(f"groups {g} must divide the input channels {c}")
        if i != c:
            raise _fail(f"weight has {i} input channels, data has {c}")
        if min(strides) < 1 or min(dilation) < 1:
            raise _fail("strides and dilation must be positive")
        if min(padding) < 0 or min(out_pad) < 0:
            raise _fail("padding and output_padding must be non-negative")
        out = [
            (size - 1) * s + d * (k - 1) + 1 + op - lo - hi
            for size, k, s, d, op, lo, hi in (
                (h, kh, strides[0], dilation[0], out_pad[0], padding[0], padding[2]),
                (w, kw, strides[1], dilation[1], out_pad[1], padding[1], padding[3]),
            )
        ]
        if min(out) < 1:
            raise _fail(f"padding {list(padding)} leaves an empty output")
        return [tensor((n, og * g, *out), types[0].element_type)]


@irdl_op_definition
class DenseOp(NNOp):
    """x · Wᵀ: data (..., K), weight (N, K) -> (..., N)."""

    name = "nn.dense"
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "out-elementwise-fusable"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        d = shape_of(types[0])
        wt = _check_rank(types[1], 2, "weight")
        if len(d) < 1:
            raise _fail("data must have rank at least 1")
        if d[-1] != wt[1]:
            raise _fail(f"contraction sizes differ: data has {d[-1]}, weight has {wt[1]}")
        return [tensor((*d[:-1], wt[0]), types[0].element_type)]


@irdl_op_definition
class MatmulOp(NNOp):
    """numpy.matmul semantics (batched, broadcasting leading dims)."""

    name = "nn.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "out-elementwise-fusable"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        a, b = shape_of(types[0]), shape_of(types[1])
        if not a or not b:
            raise _fail("matmul operands must have rank at least 1")
        a2 = (1, *a) if len(a) == 1 else a
        b2 = (*b, 1) if len(b) == 1 else b
        if a2[-1] != b2[-2]:
            raise _fail(f"contraction sizes differ: {a2[-1]} and {b2[-2]}")
        batch = broadcast_shapes(a2[:-2], b2[:-2])
        out = [*batch, a2[-2], b2[-1]]
        if len(a) == 1:
            out.pop(-2)
        if len(b) == 1:
            out.pop(-1)
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class BiasAddOp(NNOp):
    name = "nn.bias_add"
    data = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=_int(1))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "broadcast"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        d = shape_of(types[0])
        (b,) = _check_rank(types[1], 1, "bias")
        axis = _norm_axis(attrs["axis"], len(d))
        if d[axis] != b:
            raise _fail(f"bias has {b} elements, data has {d[axis]} along axis {axis}")
        return [types[0]]


@irdl_op_definition
class BatchNormOp(NNOp):
    """Inference batch norm: (x - mean) / sqrt(var + epsilon) * gamma + beta; one result."""

    name = "nn.batch_norm"
    data = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    moving_mean = operand_def(TensorType)
    moving_var = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=_int(1))
    epsilon = prop_def(FloatAttr, default_value=_float(1e-5))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "broadcast"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        d = shape_of(types[0])
        axis = _norm_axis(attrs["axis"], len(d))
        for name, t in zip(("gamma", "beta", "moving_mean", "moving_var"), types[1:], strict=True):
            (n,) = _check_rank(t, 1, name)
            if n != d[axis]:
                raise _fail(f"{name} has {n} elements, data has {d[axis]} along axis {axis}")
        return [types[0]]


class Pool2DOp(NNOp):
    data = operand_def(TensorType)
    result = result_def(TensorType)
    pool_size = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase, default_value=ints(1, 1))
    padding = prop_def(DenseArrayBase, default_value=ints(0, 0, 0, 0))
    dilation = prop_def(DenseArrayBase, default_value=ints(1, 1))
    ceil_mode = prop_def(IntegerAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "opaque"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        n, c, h, w = _check_rank(types[0], 4, "data")
        kh, kw = _check_len(attrs, "pool_size", 2)
        sh, sw = _check_len(attrs, "strides", 2)
        pt, pl, pb, pr = _check_len(attrs, "padding", 4)
        dh, dw = _check_len(attrs, "dilation", 2)
        if kh < 1 or kw < 1:
            raise _fail("pool_size must be positive")
        if pt >= kh * dh or pb >= kh * dh or pl >= kw * dw or pr >= kw * dw:
            raise _fail("padding must be smaller than the pooling window")
        cm = attrs["ceil_mode"]
        oh = _window_out(h, kh, sh, pt, pb, dh, cm)
        ow = _window_out(w, kw, sw, pl, pr, dw, cm)
        return [tensor((n, c, oh, ow), types[0].element_type)]


@irdl_op_definition
class MaxPool2DOp(Pool2DOp):
    name = "nn.max_pool2d"


@irdl_op_definition
class AvgPool2DOp(Pool2DOp):
    name = "nn.avg_pool2d"
    count_include_pad = prop_def(IntegerAttr, default_value=BoolAttr.from_bool(False))


class GlobalPool2DOp(NNOp):
    data = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "reduce"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        n, c, _, _ = _check_rank(types[0], 4, "data")
        return [tensor((n, c, 1, 1), types[0].element_type)]


@irdl_op_definition
class GlobalAvgPool2DOp(GlobalPool2DOp):
    name = "nn.global_avg_pool2d"


@irdl_op_definition
class GlobalMaxPool2DOp(GlobalPool2DOp):
    name = "nn.global_max_pool2d"


@irdl_op_definition
class SoftmaxOp(NNOp):
    name = "nn.softmax"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=_int(-1))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "opaque"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        _norm_axis(attrs["axis"], len(shape_of(types[0])))
        return [types[0]]


@irdl_op_definition
class LRNOp(NNOp):
    """Local response normalisation across `axis` (ONNX LRN, Relay nn.lrn).

    x / (bias + alpha / size * sum of x^2 over a window of `size` channels)^beta;
    the window spans floor((size - 1) / 2) channels before, ceil((size - 1) / 2) after.
    """

    name = "nn.lrn"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    size = prop_def(IntegerAttr)
    axis = prop_def(IntegerAttr, default_value=_int(1))
    alpha = prop_def(FloatAttr, default_value=_float(1e-4))
    beta = prop_def(FloatAttr, default_value=_float(0.75))
    bias = prop_def(FloatAttr, default_value=_float(1.0))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "opaque"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        _norm_axis(attrs["axis"], len(shape_of(types[0])))
        if attrs["size"] < 1:
            raise _fail(f"size {attrs['size']} must be positive")
        return [types[0]]


# --------------------------------------------------------------------------
# Layout ops
# --------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(NNOp):
    """Reshape to `newshape` (static, fully known; the element count is kept)."""

    name = "nn.reshape"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    newshape = prop_def(DenseArrayBase)
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        src = shape_of(types[0])
        new = attrs["newshape"]
        if any(d < 0 for d in new):
            raise _fail(f"newshape {list(new)} must be static and non-negative")
        if math.prod(new) != math.prod(src):
            raise _fail(
                f"cannot reshape {math.prod(src)} elements {list(src)} into {list(new)}"
            )
        return [tensor(new, types[0].element_type)]


@irdl_op_definition
class FlattenOp(NNOp):
    """Collapse to 2-D: (prod(shape[:axis]), prod(shape[axis:])); axis in [-rank, rank], negative adds rank."""

    name = "nn.flatten"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=_int(1))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axis = attrs["axis"]
        if not -len(s) <= axis <= len(s):
            raise _fail(f"axis {axis} is out of range for rank {len(s)}")
        axis += len(s) if axis < 0 else 0  # ONNX: a negative axis counts from the end
        return [tensor((math.prod(s[:axis]), math.prod(s[axis:])), types[0].element_type)]


@irdl_op_definition
class TransposeOp(NNOp):
    """Permute dimensions; empty `axes` reverses them (numpy)."""

    name = "nn.transpose"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    axes = prop_def(DenseArrayBase, default_value=ints())
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axes = attrs["axes"] or tuple(reversed(range(len(s))))
        if sorted(a % len(s) if len(s) else a for a in axes) != list(range(len(s))) or len(axes) != len(s):
            raise _fail(f"axes {list(axes)} is not a permutation of rank {len(s)}")
        return [tensor([s[a] for a in axes], types[0].element_type)]


@irdl_op_definition
class ConcatenateOp(NNOp):
    name = "nn.concatenate"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=_int(0))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if not types:
            raise _fail("concatenate needs at least one input")
        first = shape_of(types[0])
        axis = _norm_axis(attrs["axis"], len(first))
        total = 0
        for i, t in enumerate(types):
            s = shape_of(t)
            if len(s) != len(first) or any(
                a != b for k, (a, b) in enumerate(zip(s, first, strict=True)) if k != axis
            ):
                raise _fail(
                    f"input #{i} has shape {list(s)}, incompatible with {list(first)} along axis {axis}"
                )
            total += s[axis]
        out = list(first)
        out[axis] = total
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class TakeOp(NNOp):
    """Gather slices of `data` along `axis` at `indices` (i32/i64; ONNX Gather, Relay take).

    Result shape: data.shape[:axis] + indices.shape + data.shape[axis + 1:]. A
    negative index counts from the end; indices outside [-dim, dim) are clamped.
    """

    name = "nn.take"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=_int(0))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axis = _norm_axis(attrs["axis"], len(s))
        if types[1].element_type not in (i32, i64):
            raise _fail(f"indices must be i32 or i64, got {types[1].element_type}")
        if s[axis] == 0:
            raise _fail(f"cannot take from the empty axis {axis}")
        out = [*s[:axis], *shape_of(types[1]), *s[axis + 1 :]]
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class PadOp(NNOp):
    """Pad with `pad_width` = (before_0, after_0, before_1, after_1, ...).

    `pad_mode` is constant (with `pad_value`), edge, reflect or wrap (numpy's modes).
    """

    name = "nn.pad"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    pad_width = prop_def(DenseArrayBase)
    pad_value = prop_def(FloatAttr, default_value=_float(0.0))
    pad_mode = prop_def(StringAttr, default_value=StringAttr("constant"))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        pw = _check_len(attrs, "pad_width", 2 * len(s))
        if attrs["pad_mode"] not in ("constant", "edge", "reflect", "wrap"):
            raise _fail(f"pad_mode '{attrs['pad_mode']}' is not one of constant, edge, reflect, wrap")
        out = [d + pw[2 * i] + pw[2 * i + 1] for i, d in enumerate(s)]
        if any(p < 0 for p in pw):
            raise _fail("pad_width must be non-negative")
        if attrs["pad_mode"] == "reflect" and any(
            pw[2 * i] >= d or pw[2 * i + 1] >= d for i, d in enumerate(s) if pw[2 * i] or pw[2 * i + 1]
        ):
            raise _fail("reflect padding must be smaller than the dimension")
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class SplitOp(NNOp):
    """Split along `axis` at the (non-decreasing) `indices`: len(indices) + 1 results.

    numpy.split with a list of indices; a repeated index gives an empty piece.
    """

    name = "nn.split"
    data = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    indices = prop_def(DenseArrayBase)
    axis = prop_def(IntegerAttr, default_value=_int(0))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axis = _norm_axis(attrs["axis"], len(s))
        bounds = [0, *attrs["indices"], s[axis]]
        if any(a > b for a, b in zip(bounds, bounds[1:], strict=False)):
            raise _fail(
                f"indices {list(attrs['indices'])} must be non-decreasing within [0, {s[axis]}]"
            )
        out: list[TensorType[Any]] = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            piece = list(s)
            piece[axis] = hi - lo
            out.append(tensor(piece, types[0].element_type))
        return out


@irdl_op_definition
class StridedSliceOp(NNOp):
    """Take elements begin, begin + stride, ... up to (excluding) end, along every axis.

    One (begin, end, stride) per dimension, already resolved against the static
    shape (no wrap-around of negative indices). Positive stride:
    0 <= begin, end <= dim. Negative stride: -1 <= begin, end <= dim - 1, and
    end = -1 runs through index 0. Empty `strides` means all 1.
    """

    name = "nn.strided_slice"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    begin = prop_def(DenseArrayBase)
    end = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase, default_value=ints())
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC

    @staticmethod
    def extent(dim: int, begin: int, end: int, stride: int) -> int:
        """Number of elements one axis keeps; raises VerifyException when out of range."""
        if stride == 0:
            raise _fail("strides must be non-zero")
        lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)
        if not (lo <= begin <= hi and lo <= end <= hi):
            raise _fail(
                f"begin {begin} / end {end} out of range [{lo}, {hi}] for size {dim} "
                f"and stride {stride}"
            )
        return len(range(begin, end, stride))

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        begin = _check_len(attrs, "begin", len(s))
        end = _check_len(attrs, "end", len(s))
        strides = attrs["strides"] or (1,) * len(s)
        if len(strides) != len(s):
            raise _fail(f"'strides' must have {len(s)} values, got {len(strides)}")
        out = [cls.extent(*args) for args in zip(s, begin, end, strides, strict=True)]
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class Resize2DOp(NNOp):
    """Resize the H and W dimensions of an NCHW tensor to `size` (ONNX Resize).

    `method`: nearest_neighbor or linear. `coordinate_transformation_mode` maps an
    output index to an input coordinate: half_pixel, align_corners, asymmetric,
    pytorch_half_pixel, half_pixel_symmetric or tf_half_pixel_for_nn.
    `rounding_method` (nearest only): round_prefer_floor, round_prefer_ceil, floor,
    ceil. `scale_h`/`scale_w` are the scales the mapping uses (ONNX `scales`);
    0 means output size / input size.
    """

    name = "nn.resize2d"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    size = prop_def(DenseArrayBase)
    method = prop_def(StringAttr, default_value=StringAttr("nearest_neighbor"))
    coordinate_transformation_mode = prop_def(StringAttr, default_value=StringAttr("half_pixel"))
    rounding_method = prop_def(StringAttr, default_value=StringAttr("round_prefer_floor"))
    scale_h = prop_def(FloatAttr, default_value=_float(0.0))
    scale_w = prop_def(FloatAttr, default_value=_float(0.0))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"

    METHODS: ClassVar[tuple[str, ...]] = ("nearest_neighbor", "linear")
    COORDINATE_MODES: ClassVar[tuple[str, ...]] = (
        "half_pixel",
        "align_corners",
        "asymmetric",
        "pytorch_half_pixel",
        "half_pixel_symmetric",
        "tf_half_pixel_for_nn",
    )
    ROUNDING_METHODS: ClassVar[tuple[str, ...]] = (
        "round_prefer_floor",
        "round_prefer_ceil",
        "floor",
        "ceil",
    )

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        n, c, _, _ = _check_rank(types[0], 4, "data")
        oh, ow = _check_len(attrs, "size", 2)
        for key, allowed in (
            ("method", cls.METHODS),
            ("coordinate_transformation_mode", cls.COORDINATE_MODES),
            ("rounding_method", cls.ROUNDING_METHODS),
        ):
            if attrs[key] not in allowed:
                raise _fail(f"{key} '{attrs[key]}' is not one of {', '.join(allowed)}")
        if oh < 1 or ow < 1:
            raise _fail("size must be positive")
        if attrs["scale_h"] < 0 or attrs["scale_w"] < 0:
            raise _fail("scales must be non-negative")
        return [tensor((n, c, oh, ow), types[0].element_type)]


class ReduceOp(NNOp):
    """Reduce over `axes` (empty: all axes); `keepdims` keeps them as size 1."""

    data = operand_def(TensorType)
    result = result_def(TensorType)
    axes = prop_def(DenseArrayBase, default_value=ints())
    keepdims = prop_def(IntegerAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "reduce"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axes = {_norm_axis(a, len(s)) for a in attrs["axes"]} or set(range(len(s)))
        if len(axes) != len(attrs["axes"]) and attrs["axes"]:
            raise _fail(f"axes {list(attrs['axes'])} repeat an axis")
        if attrs["keepdims"]:
            out = [1 if i in axes else d for i, d in enumerate(s)]
        else:
            out = [d for i, d in enumerate(s) if i not in axes]
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    name = "nn.reduce_mean"


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "nn.reduce_sum"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "nn.reduce_max"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC


# --------------------------------------------------------------------------
# Constants: payload kept as bytes (numpy views it without copying)
# --------------------------------------------------------------------------

HEX_CONSTANTS_LARGER_THAN = 16
"""Constants with more elements print as a compact little-endian hex string."""


@irdl_op_definition
class ConstantOp(NNOp):
    """A dense tensor constant.

        %w = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
        %w = nn.constant dense<"0x0000803F..."> : tensor<64x3x3x3xf32>

    The payload is held as raw bytes; `ndarray()` views it with numpy (no copy,
    no re-parsing of text). More than HEX_CONSTANTS_LARGER_THAN elements print as hex.
    """

    name = "nn.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(ConstantLike(), Pure())
    KIND: ClassVar[str] = "opaque"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMERIC

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        raise AssertionError("nn.constant has no operands; use from_array")

    @staticmethod
    def from_array(array: Any, attributes: Mapping[str, Attribute] | None = None) -> ConstantOp:
        arr = np.asarray(array, order="C")  # ascontiguousarray would make 0-d arrays 1-d
        elt = element_type_of(arr.dtype)
        ty = tensor(arr.shape, elt)
        dense = DenseIntOrFPElementsAttr(ty, BytesAttr(arr.tobytes()))
        return ConstantOp.create(
            properties={"value": dense}, result_types=[ty], attributes=dict(attributes or {})
        )

    def ndarray(self) -> np.ndarray[Any, Any]:
        """The payload as a read-only numpy array (a view of the stored bytes)."""
        ty = self.result.type
        assert isinstance(ty, TensorType)
        dt = numpy_dtype(ty.element_type)
        return np.frombuffer(self.value.data.data, dtype=dt).reshape(shape_of(ty))

    def attr_values(self) -> dict[str, Any]:
        return {"value": self.ndarray()}

    def verify_(self) -> None:
        ty = self.result.type
        if not isinstance(ty, TensorType):
            raise _fail("result must be a ranked tensor")
        if ty.element_type not in self.DTYPES:
            raise _fail(f"element type {ty.element_type} is not supported")
        if self.value.type != ty:
            raise _fail(f"value type {self.value.type} does not match result type {ty}")
        n = math.prod(shape_of(ty))
        if len(self.value.data.data) != n * numpy_dtype(ty.element_type).itemsize:
            raise _fail(f"payload holds {len(self.value.data.data)} bytes, expected {n} elements")

    def print(self, printer: Printer) -> None:
        ty = self.result.type
        assert isinstance(ty, TensorType)
        n = math.prod(shape_of(ty))
        if elides_constant(printer, n):  # byoc-opt --elide-constants
            printer.print_string(" dense_resource<__elided__>")
        elif n > HEX_CONSTANTS_LARGER_THAN or not np.isfinite(self.ndarray()).all():
            # hex also for inf/nan, which have no number literal
            printer.print_string(' dense<"0x' + self.value.data.data.hex().upper() + '">')
        else:
            printer.print_string(" dense<")
            arr = self.ndarray()
            vals = arr.reshape(-1).tolist()
            if arr.dtype.kind == "f":
                printer.print_string("[" + ", ".join(repr(float(v)) for v in vals) + "]")
            else:
                printer.print_string("[" + ", ".join(str(int(v)) for v in vals) + "]")
            printer.print_string(">")
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(ty)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        start = parser.pos
        if parser.parse_optional_keyword("dense_resource") is not None:
            parser.raise_error(
                "an elided constant (dense_resource<__elided__>) cannot be read back; "
                "print the IR without --elide-constants",
                start,
                parser.pos,
            )
        parser.parse_keyword("dense")
        parser.parse_punctuation("<")
        hex_text = parser.parse_optional_str_literal()
        values: list[float] = []
        if hex_text is None:
            values = _parse_dense_values(parser)
        parser.parse_punctuation(">")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty_pos = parser.pos
        ty = parser.parse_type()
        if not isinstance(ty, TensorType) or ty.element_type not in _NP_DTYPES:
            parser.raise_error(f"nn.constant needs a tensor of f32/i32/i64, got {ty}", ty_pos, parser.pos)
        shape = shape_of(ty)
        dt = numpy_dtype(ty.element_type)
        n = math.prod(shape)
        if hex_text is not None:
            if not hex_text.startswith("0x"):
                parser.raise_error("hex payload must start with 0x", start, parser.pos)
            try:
                raw = bytes.fromhex(hex_text[2:])
            except ValueError:
                parser.raise_error("malformed hex payload", start, parser.pos)
            if len(raw) != n * dt.itemsize:
                parser.raise_error(
                    f"hex payload holds {len(raw)} bytes, {ty} needs {n * dt.itemsize}",
                    start,
                    parser.pos,
                )
            arr = np.frombuffer(raw, dtype=dt)
        else:
            if len(values) == 1 and n != 1:
                values = values * n  # splat
            if len(values) != n:
                parser.raise_error(
                    f"constant has {len(values)} values, {ty} needs {n}", start, parser.pos
                )
            arr = np.asarray(values, dtype=dt)
        op = ConstantOp.from_array(arr.reshape(shape), attributes)
        return op


def _parse_dense_values(parser: Parser) -> list[float]:
    """The values of `dense<...>`: a scalar (a splat) or a list, nested lists flattened."""
    values: list[float] = []

    def element() -> None:
        if parser.parse_optional_punctuation("[") is None:
            values.append(parser.parse_number())
        elif parser.parse_optional_punctuation("]") is None:
            parser.parse_comma_separated_list(parser.Delimiter.NONE, element)
            parser.parse_punctuation("]")

    element()
    return values


Nn = Dialect(
    "nn",
    [
        AddOp,
        SubtractOp,
        MultiplyOp,
        DivideOp,
        MaximumOp,
        MinimumOp,
        PowerOp,
        PReluOp,
        ReluOp,
        SigmoidOp,
        TanhOp,
        ExpOp,
        LogOp,
        SqrtOp,
        NegativeOp,
        AbsOp,
        ErfOp,
        ReciprocalOp,
        HardSwishOp,
        ClipOp,
        LeakyReluOp,
        HardSigmoidOp,
        CastOp,
        Conv2DOp,
        Conv2DTransposeOp,
        DenseOp,
        MatmulOp,
        BiasAddOp,
        BatchNormOp,
        MaxPool2DOp,
        AvgPool2DOp,
        GlobalAvgPool2DOp,
        GlobalMaxPool2DOp,
        SoftmaxOp,
        LRNOp,
        ReshapeOp,
        FlattenOp,
        TransposeOp,
        ConcatenateOp,
        TakeOp,
        PadOp,
        SplitOp,
        StridedSliceOp,
        Resize2DOp,
        ReduceMeanOp,
        ReduceSumOp,
        ReduceMaxOp,
        ConstantOp,
    ],
    [],
)

NN_OPS: dict[str, type[NNOp]] = {op.name: op for op in Nn.operations}  # type: ignore[misc]
"""op name -> op class, for every nn op."""

__all__ = ["Nn", "NN_OPS", "NNOp", "var_result_def"]
