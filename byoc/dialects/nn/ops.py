"""The ops of the `nn` dialect: a tensor graph with the op set of TVM Relay.

Every op is an IRDL operation over builtin `tensor<...>` types. Its type
relation lives in one static method, `infer(operand_types, attrs)`, which the
verifier re-runs and compares with the declared result types, and which
builders and importers call so that nobody computes result types by hand:

    y = nn.Conv2DOp.build(x, w, padding=(1, 1, 1, 1))

The text format is in `format.py`, element types and property values in `types.py`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
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

from byoc.dialects.nn.format import parse_constant, parse_nn_op, print_constant, print_nn_op
from byoc.dialects.nn.types import (
    ANY,
    DYNAMIC,
    ELEMENT_TYPES,
    FLOAT,
    FLOATS,
    NUMBERS,
    check_shape,
    check_static_shape,
    element_type_named,
    element_type_of,
    float_attr,
    from_python,
    int_attr,
    ints,
    numpy_dtype,
    shape_of,
    tensor,
    to_python,
)


def _fail(msg: str) -> VerifyException:
    return VerifyException(msg)


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


def _compatible(expected: Sequence[Attribute], actual: Sequence[Attribute]) -> bool:
    """Same count, element types and ranks; dims equal wherever both are static."""
    if len(expected) != len(actual):
        return False
    for e, a in zip(expected, actual, strict=True):
        if not (isinstance(e, TensorType) and isinstance(a, TensorType)):
            return False
        if e.element_type != a.element_type or e.get_num_dims() != a.get_num_dims():
            return False
        if any(x != y and DYNAMIC not in (x, y) for x, y in zip(e.get_shape(), a.get_shape(), strict=True)):
            return False
    return True


def _norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise _fail(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


# --------------------------------------------------------------------------
# The shared base: verification through `infer`, builders
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

    PROBES: ClassVar[tuple[int, int]] = (1031, 2053)
    """The sizes `infer_types` gives `?` dims: a result dim equal under both is static."""

    @classmethod
    def infer_types(
        cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]
    ) -> list[TensorType[Any]]:
        """`infer`, also for operands with `?` dims (every op's `infer` assumes static shapes).

        With `?` dims, the relation runs twice, the `?` dims taken as two different sizes
        (`PROBES`); a result dim that comes out the same both times is static, one that
        differs is `?`. A relation that fails on the probe sizes (a reshape to a static
        shape, a broadcast of `?` against 5) is an error naming the dynamic dims.
        """
        if not any(DYNAMIC in t.get_shape() for t in types):
            return cls.infer(types, attrs)
        runs: list[list[TensorType[Any]]] = []
        for probe in cls.PROBES:
            probed = [
                tensor([probe if d == DYNAMIC else d for d in t.get_shape()], t.element_type)
                for t in types
            ]
            try:
                runs.append(cls.infer(probed, attrs))
            except VerifyException as e:
                shown = ", ".join(str(t) for t in types)
                raise _fail(
                    f"'{cls.name}' cannot type operands with dynamic dims ({shown}): {e} "
                    f"(with each ? taken as {probe}); give the dims static sizes"
                ) from None
        out: list[TensorType[Any]] = []
        for a, b in zip(*runs, strict=True):
            dims = [da if da == db else DYNAMIC for da, db in zip(a.get_shape(), b.get_shape(), strict=True)]
            out.append(tensor(dims, a.element_type))
        return out

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
        result_types = cls.infer_types(types, cls.python_attrs(props))  # type: ignore[arg-type]
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
            check_shape(t)
            types.append(t)
        for t in self.result_types:
            if not isinstance(t, TensorType):
                raise _fail(f"results must be ranked tensors, got {t}")
            check_shape(t)
        self.check_dtypes(types)
        actual = list(self.result_types)
        if any(DYNAMIC in t.get_shape() for t in types):
            # `?` operands: only compatibility (rank, element type, the dims both know)
            # is checked; build() re-infers every type strictly once the shapes are known.
            try:
                expected = self.infer_types(types, self.attr_values())
            except VerifyException:
                return
            if not _compatible(expected, actual):
                exp = ", ".join(str(t) for t in expected)
                got = ", ".join(str(t) for t in actual)
                raise _fail(f"result type {got} is not compatible with the inferred type {exp}")
            return
        expected = self.infer(types, self.attr_values())
        if expected != actual:
            exp = ", ".join(str(t) for t in expected)
            got = ", ".join(str(t) for t in actual)
            raise _fail(f"result type {got} does not match the inferred type {exp}")

    @classmethod
    def check_dtypes(cls, types: Sequence[TensorType[Any]]) -> None:
        if not types:
            return
        first = types[0].element_type
        if first not in cls.DTYPES:
            allowed = ", ".join(str(d) for d in cls.DTYPES)
            raise _fail(f"element type {first} is not supported (expected one of {allowed})")
        if cls.SAME_DTYPE:
            for t in types[1:]:
                if t.element_type != first:
                    raise _fail(
                        f"all operands must have the same element type, got {first} and {t.element_type}"
                    )

    @classmethod
    def check_call(
        cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]
    ) -> list[TensorType[Any]]:
        """What `verify_` checks, for operands of `types` and Python attribute values
        `attrs` (a host-plan step read from an artifact): each value has its property's
        kind, the element types are accepted and the type relation holds. Returns the
        result types; raises VerifyException otherwise."""
        defaults = cls.prop_defaults()
        props: dict[str, Attribute] = {}
        for key, value in attrs.items():
            if key not in defaults:
                raise _fail(f"'{cls.name}' has no property '{key}'")
            like = defaults[key]
            try:
                attr = from_python(value, like)
            except (TypeError, ValueError, OverflowError):
                raise _fail(f"'{cls.name}': property '{key}' cannot be {value!r}") from None
            if like is not None and (
                type(attr) is not type(like)
                or (isinstance(like, IntegerAttr) and isinstance(attr, IntegerAttr) and attr.type != like.type)
            ):
                raise _fail(f"'{cls.name}': property '{key}' must be like {like}, got {value!r}")
            props[key] = attr
        cls.check_dtypes(types)
        return cls.infer(types, cls.python_attrs(props))

    # ---- custom format (format.py) ----------------------------------------------
    def print(self, printer: Printer) -> None:
        print_nn_op(self, self.prop_defaults(), printer)

    @classmethod
    def parse(cls, parser: Parser) -> NNOp:
        return parse_nn_op(cls, cls.prop_defaults(), parser)


# --------------------------------------------------------------------------
# Elementwise and broadcasting ops
# --------------------------------------------------------------------------


class BinaryOp(NNOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "broadcast"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS

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
    """Integers divide truncating toward zero (ONNX Div)."""

    name = "nn.divide"


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "nn.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "nn.minimum"


@irdl_op_definition
class PowerOp(BinaryOp):
    name = "nn.power"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOATS


@irdl_op_definition
class PReluOp(BinaryOp):
    """x if x >= 0 else slope * x; slope broadcasts against x (ONNX PRelu)."""

    name = "nn.prelu"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOATS


class UnaryOp(NNOp):
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "elementwise"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOATS

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        return [types[0]]


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "nn.relu"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS


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
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "nn.abs"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS


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
    a_min = prop_def(FloatAttr, default_value=float_attr(-math.inf))
    a_max = prop_def(FloatAttr, default_value=float_attr(math.inf))

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if attrs["a_min"] > attrs["a_max"]:
            raise _fail(f"a_min {attrs['a_min']} is greater than a_max {attrs['a_max']}")
        return [types[0]]


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    name = "nn.leaky_relu"
    alpha = prop_def(FloatAttr, default_value=float_attr(0.01))


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "nn.hard_sigmoid"
    alpha = prop_def(FloatAttr, default_value=float_attr(0.2))
    beta = prop_def(FloatAttr, default_value=float_attr(0.5))


@irdl_op_definition
class CastOp(UnaryOp):
    """Convert the element type: `dtype` is the short name of an element type (f32, i64, i1...)."""

    name = "nn.cast"
    dtype = prop_def(StringAttr)
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY
    SAME_DTYPE: ClassVar[bool] = False
    TARGETS: ClassVar[tuple[str, ...]] = tuple(d.name for d in ELEMENT_TYPES)
    """The element types `dtype` may name (short names of types.ELEMENT_TYPES)."""

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        target = element_type_named(attrs["dtype"])
        if attrs["dtype"] not in cls.TARGETS or target is None:
            raise _fail(f"cast to '{attrs['dtype']}' is not supported ({', '.join(cls.TARGETS)})")
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


DATA_LAYOUTS: tuple[str, ...] = ("NCHW", "NHWC")
"""The 4-D data layouts of conv2d, the pools and batch_norm (`data_layout`)."""
KERNEL_LAYOUTS: tuple[str, ...] = ("OIHW", "HWIO")
"""The conv2d weight layouts (`kernel_layout`)."""
DEFAULT_LAYOUTS: dict[str, str] = {"data_layout": "NCHW", "kernel_layout": "OIHW"}
"""The layout every executor implements; anything else must be declared by a target."""


def _layout(attrs: Mapping[str, Any], key: str = "data_layout") -> str:
    value = attrs[key]
    allowed = DATA_LAYOUTS if key == "data_layout" else KERNEL_LAYOUTS
    if value not in allowed:
        raise _fail(f"{key} '{value}' is not one of {', '.join(allowed)}")
    return value


def _nchw(shape: Sequence[int], layout: str) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a 4-D shape in `layout`."""
    n, a, b, c = shape
    return (n, a, b, c) if layout == "NCHW" else (n, c, a, b)


def _from_nchw(n: int, c: int, h: int, w: int, layout: str) -> tuple[int, int, int, int]:
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def layout_of(op: Operation) -> dict[str, str]:
    """The layout properties of `op` (data_layout, kernel_layout) that it has; {} for most ops."""
    out: dict[str, str] = {}
    for key in DEFAULT_LAYOUTS:
        attr = op.properties.get(key)
        if isinstance(attr, StringAttr):
            out[key] = attr.data
        elif isinstance(op, NNOp) and key in op.prop_defaults():
            out[key] = DEFAULT_LAYOUTS[key]
    return out


@irdl_op_definition
class Conv2DOp(NNOp):
    """2-D convolution, data NCHW (or NHWC), weight OIHW (or HWIO) (I = C / groups).

    padding is (top, left, bottom, right). `data_layout` (NCHW, NHWC) is the layout
    of the data and the result, `kernel_layout` (OIHW, HWIO) that of the weight.
    """

    name = "nn.conv2d"
    data = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase, default_value=ints(1, 1))
    padding = prop_def(DenseArrayBase, default_value=ints(0, 0, 0, 0))
    dilation = prop_def(DenseArrayBase, default_value=ints(1, 1))
    groups = prop_def(IntegerAttr, default_value=int_attr(1))
    data_layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    kernel_layout = prop_def(StringAttr, default_value=StringAttr("OIHW"))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "out-elementwise-fusable"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        layout, klayout = _layout(attrs), _layout(attrs, "kernel_layout")
        n, c, h, w = _nchw(_check_rank(types[0], 4, "data"), layout)
        ws = _check_rank(types[1], 4, "weight")
        o, i, kh, kw = ws if klayout == "OIHW" else (ws[3], ws[2], ws[0], ws[1])
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
        return [tensor(_from_nchw(n, o, oh, ow, layout), types[0].element_type)]


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
    groups = prop_def(IntegerAttr, default_value=int_attr(1))
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
    axis = prop_def(IntegerAttr, default_value=int_attr(1))
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
    axis = prop_def(IntegerAttr, default_value=int_attr(1))
    epsilon = prop_def(FloatAttr, default_value=float_attr(1e-5))
    data_layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "broadcast"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        d = shape_of(types[0])
        axis = _norm_axis(attrs["axis"], len(d))
        if _layout(attrs) == "NHWC" and (len(d) != 4 or axis != 3):
            raise _fail(f"data_layout NHWC needs 4-D data and the channel axis 3, got axis {axis}")
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
    data_layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "opaque"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        layout = _layout(attrs)
        n, c, h, w = _nchw(_check_rank(types[0], 4, "data"), layout)
        kh, kw = _check_len(attrs, "pool_size", 2)
        sh, sw = _check_len(attrs, "strides", 2)
        pt, pl, pb, pr = _check_len(attrs, "padding", 4)
        dh, dw = _check_len(attrs, "dilation", 2)
        if kh < 1 or kw < 1:
            raise _fail("pool_size must be positive")
        if min(dh, dw) < 1:
            raise _fail("strides and dilation must be positive")
        span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
        if pt >= span_h or pb >= span_h or pl >= span_w or pr >= span_w:
            raise _fail(
                "padding must be smaller than the pooling window "
                f"(dilated extent {span_h}x{span_w}), got {[pt, pl, pb, pr]}"
            )
        cm = attrs["ceil_mode"]
        oh = _window_out(h, kh, sh, pt, pb, dh, cm)
        ow = _window_out(w, kw, sw, pl, pr, dw, cm)
        return [tensor(_from_nchw(n, c, oh, ow, layout), types[0].element_type)]


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
    data_layout = prop_def(StringAttr, default_value=StringAttr("NCHW"))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "reduce"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        layout = _layout(attrs)
        n, c, _, _ = _nchw(_check_rank(types[0], 4, "data"), layout)
        return [tensor(_from_nchw(n, c, 1, 1, layout), types[0].element_type)]


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
    axis = prop_def(IntegerAttr, default_value=int_attr(-1))
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
    axis = prop_def(IntegerAttr, default_value=int_attr(1))
    alpha = prop_def(FloatAttr, default_value=float_attr(1e-4))
    beta = prop_def(FloatAttr, default_value=float_attr(0.75))
    bias = prop_def(FloatAttr, default_value=float_attr(1.0))
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
    """Reshape to `newshape` (the element count is kept); one -1 entry is the dim that holds
    the remaining elements (numpy's -1), which is how a `?` dim passes through a reshape."""

    name = "nn.reshape"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    newshape = prop_def(DenseArrayBase)
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        src = shape_of(types[0])
        new = list(attrs["newshape"])
        if any(d < -1 for d in new) or new.count(-1) > 1:
            raise _fail(
                f"newshape {list(new)} must be non-negative, with at most one -1 (the rest)"
            )
        if -1 in new:  # numpy's -1: the one dim that holds the remaining elements
            rest = math.prod(d for d in new if d != -1)
            if rest == 0 or math.prod(src) % rest:
                raise _fail(f"cannot reshape {math.prod(src)} elements {list(src)} into {new}")
            new[new.index(-1)] = math.prod(src) // rest
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
    axis = prop_def(IntegerAttr, default_value=int_attr(1))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

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
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

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
    axis = prop_def(IntegerAttr, default_value=int_attr(0))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

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
    axis = prop_def(IntegerAttr, default_value=int_attr(0))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY
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


def _check_fits(value: float, element_type: Attribute, what: str) -> None:
    """Raise unless the f64 property `value` is exactly a value of `element_type`.

    Integers take finite integral values in their range (no inf, nan, 0.5 or
    2**31 for i32); f32 takes inf and nan but no finite value beyond its range.
    """
    dt = numpy_dtype(element_type)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if not (math.isfinite(value) and value == int(value) and info.min <= int(value) <= info.max):
            raise _fail(f"{what} {value} is not a value of the element type {element_type}")
    elif dt.kind == "f" and math.isfinite(value) and abs(value) > float(np.finfo(dt).max):
        raise _fail(f"{what} {value} is out of the range of the element type {element_type}")


@irdl_op_definition
class PadOp(NNOp):
    """Pad with `pad_width` = (before_0, after_0, before_1, after_1, ...).

    `pad_mode` is constant (with `pad_value`), edge, reflect or wrap (numpy's modes).
    """

    name = "nn.pad"
    data = operand_def(TensorType)
    result = result_def(TensorType)
    pad_width = prop_def(DenseArrayBase)
    pad_value = prop_def(FloatAttr, default_value=float_attr(0.0))
    pad_mode = prop_def(StringAttr, default_value=StringAttr("constant"))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

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
        _check_fits(attrs["pad_value"], types[0].element_type, "pad_value")
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
    axis = prop_def(IntegerAttr, default_value=int_attr(0))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

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
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

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
    scale_h = prop_def(FloatAttr, default_value=float_attr(0.0))
    scale_w = prop_def(FloatAttr, default_value=float_attr(0.0))
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
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOATS


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "nn.reduce_sum"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "nn.reduce_max"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY


# --------------------------------------------------------------------------
# Constants: payload kept as bytes (numpy views it without copying)
# --------------------------------------------------------------------------


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
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

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
        check_static_shape(ty)
        if self.value.type != ty:
            raise _fail(f"value type {self.value.type} does not match result type {ty}")
        n = math.prod(shape_of(ty))
        if len(self.value.data.data) != n * numpy_dtype(ty.element_type).itemsize:
            raise _fail(f"payload holds {len(self.value.data.data)} bytes, expected {n} elements")

    def print(self, printer: Printer) -> None:
        print_constant(self, self.ndarray(), self.value.data.data, printer)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        array, attributes = parse_constant(parser)
        return cls.from_array(array, attributes)



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
"""op name -> op class, for every op of this module (`byoc.dialects.nn.NN_OPS` has them all)."""
