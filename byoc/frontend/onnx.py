"""The ONNX frontend: an ONNX model becomes `nn` IR in `func.func @main`.

    module = import_model("resnet50.onnx")                        # a path
    module = import_model(model_proto, input_shapes={"x": (1, 3, 224, 224)})
    module = import_model_from_bytes(data)                        # serialized bytes

Contract:
- Every tensor type is static. Graph inputs whose shape has symbolic or
  unknown dimensions take their shape from `input_shapes`, or the import fails
  asking for it.
- Initializers and `Constant`s become `nn.constant`s whose payload stays a
  numpy array (never printed and parsed back).
- Values known at import time are folded: `Constant`, `ConstantOfShape`,
  `Shape`, `Size`, `Range`, and every other op whose inputs are all known (with the same numpy kernels the reference uses), so a `Reshape` fed by
  a computed shape gets a static `newshape`. `Identity` and inference-mode
  `Dropout` disappear.
- Result types come from each nn op's `infer`, never from ONNX's declared
  value infos.
- The `nn` dialect is f32-first (i32/i64 where an op allows them). A model
  that would need anything else (f64, f16, bool, uint8, ...) is rejected with
  `UnsupportedOnnxError`; nothing is silently converted.

Opsets 7 to 21 are covered for the ops in `SUPPORTED_OPS` (later opsets
where the op is unchanged); models below opset 7 are first brought to opset 13
with `onnx.version_converter`. Semantics that changed between opsets (Softmax
before 13, attributes that became inputs, Resize before 11) are dispatched on
the version of the op's schema in effect.

Errors: `OnnxImportError` (a malformed model, or an op that fails its type
relation) and its subclass `UnsupportedOnnxError` (a valid model using
something outside the supported subset: op type, attribute value, element
type). Both name the node (`node 'conv1' (Conv-11)`), and an unsupported op
type lists the supported ones. `StaticValueRequired` says which graph input
must be known at import time (pass it in `bind_inputs`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import nn
from byoc.interpreters.kernels import KERNELS

Array = np.ndarray[Any, Any]
Value = Array | SSAValue
"""An ONNX value during import: a numpy array when known at import time, else an SSA value."""

MIN_OPSET = 7
"""Models below this opset are converted with onnx.version_converter first."""
CONVERT_OLD_OPSETS_TO = 13

_NN_DTYPES = (np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int64))


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


class OnnxImportError(Exception):
    """The model cannot be imported: it is malformed, or an op fails its type relation."""

    def __init__(self, message: str, *, node: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node
        """Where it happened: `node 'conv1' (Conv-11)`; set by the importer."""

    def __str__(self) -> str:
        return f"{self.node}: {self.message}" if self.node else self.message


class UnsupportedOnnxError(OnnxImportError):
    """A valid model uses an op type, attribute value or element type outside the supported subset."""


class StaticValueRequired(UnsupportedOnnxError):
    """An input the importer must know (a shape, pads, axes, ...) is only known at run time."""

    def __init__(self, message: str, *, input_name: str | None = None, node: str | None = None):
        super().__init__(message, node=node)
        self.input_name = input_name
        """The graph input the value is, when it is one (bind it with `bind_inputs`)."""


# --------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------


def import_model(
    model: str | os.PathLike[str] | bytes | IO[bytes] | Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    bind_inputs: Mapping[str, Any] | None = None,
) -> ModuleOp:
    """Import an ONNX model (a path, serialized bytes, a binary stream or a ModelProto).

    `input_shapes` gives the static shape of graph inputs whose declared shape is
    symbolic. `bind_inputs` binds graph inputs to constant arrays (TVM's
    `bind_params_by_name`): they become constants, and the function no longer
    takes them. Returns a verified `builtin.module` holding `func.func @main`.
    """
    import onnx

    if isinstance(model, bytes | bytearray):
        proto = onnx.load_model_from_string(bytes(model))
    elif isinstance(model, str | os.PathLike):
        proto = onnx.load(os.fspath(model))
    elif isinstance(model, onnx.ModelProto):
        proto = model
    elif hasattr(model, "read"):
        proto = onnx.load_model_from_string(model.read())
    else:
        raise TypeError(f"import_model takes a path, bytes, a stream or a ModelProto, got {type(model)}")
    return _Importer(proto, input_shapes or {}, bind_inputs or {}).run()


def import_model_from_bytes(
    data: bytes,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    bind_inputs: Mapping[str, Any] | None = None,
) -> ModuleOp:
    """`import_model` on a serialized ModelProto (what `byoc-opt` reads from its input stream)."""
    return import_model(bytes(data), input_shapes, bind_inputs)


# --------------------------------------------------------------------------
# The importer
# --------------------------------------------------------------------------


@dataclass
class Node:
    """One ONNX node while it is converted: its inputs resolved, its attributes decoded."""

    proto: Any
    version: int
    """The since_version of the op's schema in effect at the model's opset."""
    inputs: list[Value | None]
    attrs: dict[str, Any]
    input_names: list[str] = field(default_factory=list)

    @property
    def op_type(self) -> str:
        return str(self.proto.op_type)

    @property
    def num_outputs(self) -> int:
        return len(self.proto.output)

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def required(self, i: int) -> Value:
        v = self.input(i)
        if v is None:
            raise OnnxImportError(f"{self.op_type} needs input #{i}")
        return v


Converter = Callable[["_Importer", Node], Sequence[Value | None]]
CONVERTERS: dict[str, Converter] = {}


def converts(*op_types: str) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            CONVERTERS[op_type] = fn
        return fn

    return register


def _label(node: Any, index: int, version: int) -> str:
    """`node 'conv1' (Conv-11)`, or `node #3 (Conv-11)` for an unnamed node."""
    name = f"'{node.name}'" if node.name else f"#{index}"
    return f"node {name} ({node.op_type}-{version})" if version else f"node {name} ({node.op_type})"


class _Importer:
    def __init__(
        self, model: Any, input_shapes: Mapping[str, Sequence[int]], bind_inputs: Mapping[str, Any]
    ) -> None:
        import onnx

        self.model = model
        self.opset = self._default_opset(model)
        if self.opset < MIN_OPSET:
            from onnx import version_converter

            try:
                self.model = version_converter.convert_version(model, CONVERT_OLD_OPSETS_TO)
            except Exception as e:  # the converter raises bare RuntimeErrors
                raise UnsupportedOnnxError(
                    f"the model's opset {self.opset} is below {MIN_OPSET} and "
                    f"onnx.version_converter could not convert it: {e}"
                ) from e
            self.opset = CONVERT_OLD_OPSETS_TO
        self.onnx = onnx
        self.input_shapes = dict(input_shapes)
        self.bind_inputs = dict(bind_inputs)
        self.env: dict[str, Value] = {}
        self.ops: list[Operation] = []
        self._constants: dict[int, tuple[Array, SSAValue]] = {}
        self._graph_input_of: dict[SSAValue, str] = {}
        self._used: set[str] = set()

    @staticmethod
    def _default_opset(model: Any) -> int:
        for imp in model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                return int(imp.version)
        return 1 if not model.opset_import else MIN_OPSET

    # ---- values ---------------------------------------------------------------
    def constant(self, array: Any) -> SSAValue:
        """An nn.constant for a known value (one per array)."""
        arr = np.asarray(array)
        cached = self._constants.get(id(arr))
        if cached is not None and cached[0] is arr:
            return cached[1]
        if arr.dtype not in _NN_DTYPES:
            raise UnsupportedOnnxError(
                f"a constant of element type {arr.dtype} is needed at run time; "
                "nn supports float32, int32 and int64"
            )
        op = nn.ConstantOp.from_array(arr)
        self.ops.append(op)
        self._constants[id(arr)] = (arr, op.result)
        return op.result

    def ssa(self, v: Value) -> SSAValue:
        return v if isinstance(v, SSAValue) else self.constant(v)

    def static(self, node: Node, i: int, what: str) -> Array | None:
        """Input #i as a numpy array (None when absent); it must be known at import time."""
        v = node.input(i)
        if v is None:
            return None
        if isinstance(v, SSAValue):
            name = self._graph_input_of.get(v)
            hint = (
                f"; it is the graph input '{name}': bind it with bind_inputs={{'{name}': ...}}"
                if name
                else ""
            )
            raise StaticValueRequired(
                f"the {what} (input #{i}) must be known at import time, but is computed at run time{hint}",
                input_name=name,
            )
        return v

    @staticmethod
    def shape(v: Value) -> tuple[int, ...]:
        if isinstance(v, SSAValue):
            return nn.shape_of(v.type)
        return tuple(v.shape)

    @staticmethod
    def dtype(v: Value) -> np.dtype[Any]:
        if isinstance(v, SSAValue):
            assert isinstance(v.type, TensorType)
            return nn.numpy_dtype(v.type.element_type)
        return v.dtype

    # ---- emitting nn ops -----------------------------------------------------------
    def emit_all(self, cls: type[nn.NNOp], *operands: Value, **attrs: Any) -> list[Value]:
        """Apply an nn op: folded with its kernel when every operand is known, else emitted."""
        defaults = cls.prop_defaults()
        props = {k: nn.from_python(v, defaults[k]) for k, v in attrs.items() if v is not None}
        if all(not isinstance(o, SSAValue) for o in operands):
            out = KERNELS[cls.name](*[np.asarray(o) for o in operands], **cls.python_attrs(props))
            return [np.asarray(r) for r in out] if isinstance(out, tuple) else [np.asarray(out)]
        values = [self.ssa(o) for o in operands]
        op = cls.build(*values, **attrs)
        try:
            op.check_dtypes([v.type for v in values])  # type: ignore[misc]
        except VerifyException as e:
            raise UnsupportedOnnxError(f"'{cls.name}': {e}") from None
        self.ops.append(op)
        return list(op.results)

    def emit(self, cls: type[nn.NNOp], *operands: Value, **attrs: Any) -> Value:
        (out,) = self.emit_all(cls, *operands, **attrs)
        return out

    def reshape(self, v: Value, shape: Sequence[int]) -> Value:
        if tuple(shape) == self.shape(v):
            return v
        return self.emit(nn.ReshapeOp, v, newshape=tuple(int(d) for d in shape))

    def scalar_like(self, value: float, like: Value) -> Array:
        return np.asarray(value, dtype=self.dtype(like))

    # ---- the graph ----------------------------------------------------------------
    def _input_type(self, vi: Any) -> tuple[tuple[int, ...], np.dtype[Any]]:
        from onnx import helper

        name = vi.name
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise UnsupportedOnnxError(f"graph input '{name}' is not a tensor")
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        except Exception:
            dtype = None
        if dtype not in _NN_DTYPES:
            tname = self.onnx.TensorProto.DataType.Name(tt.elem_type)
            raise UnsupportedOnnxError(
                f"graph input '{name}' has element type {tname}; nn supports FLOAT, INT32 and INT64"
            )
        if name in self.input_shapes:
            shape = tuple(int(d) for d in self.input_shapes[name])
            if tt.HasField("shape"):
                declared = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
                if len(declared) != len(shape) or any(
                    d is not None and d != s for d, s in zip(declared, shape, strict=False)
                ):
                    raise OnnxImportError(
                        f"input_shapes gives '{name}' the shape {list(shape)}, but the model "
                        f"declares {['?' if d is None else d for d in declared]}"
                    )
            return shape, dtype
        if not tt.HasField("shape"):
            raise OnnxImportError(
                f"graph input '{name}' has no declared shape; pass input_shapes={{'{name}': (...)}}"
            )
        dims = list(tt.shape.dim)
        unknown = [d.dim_param or "?" for d in dims if not d.HasField("dim_value")]
        if unknown:
            shown = ["x".join(d.dim_param or "?" if not d.HasField("dim_value") else str(d.dim_value) for d in dims)]
            raise OnnxImportError(
                f"graph input '{name}' has symbolic dimension(s) {unknown} (shape {shown[0]}); "
                f"byoc needs static shapes: pass input_shapes={{'{name}': (...)}}"
            )
        return tuple(int(d.dim_value) for d in dims), dtype

    def run(self) -> ModuleOp:
        from onnx import numpy_helper

        graph = self.model.graph
        if len(graph.sparse_initializer):
            raise UnsupportedOnnxError("sparse initializers are not supported")
        for init in graph.initializer:
            self.env[init.name] = numpy_helper.to_array(init)
        unknown = set(self.bind_inputs) - {vi.name for vi in graph.input}
        if unknown:
            raise OnnxImportError(f"bind_inputs names unknown graph input(s) {sorted(unknown)}")

        arg_types: list[TensorType[Any]] = []
        arg_names: list[str] = []
        for vi in graph.input:
            if vi.name in self.env and vi.name not in self.bind_inputs:
                continue  # an initializer listed as an input (IR version < 4): a constant
            if vi.name in self.bind_inputs:
                self.env[vi.name] = np.asarray(self.bind_inputs[vi.name])
                continue
            shape, dtype = self._input_type(vi)
            arg_types.append(nn.tensor(shape, nn.element_type_of(dtype)))
            arg_names.append(vi.name)
        block = Block(arg_types=arg_types)
        for arg, name in zip(block.args, arg_names, strict=True):
            arg.name_hint = _ssa_name(name)
            self.env[name] = arg
            self._graph_input_of[arg] = name

        self._used = {name for n in graph.node for name in n.input} | {
            vi.name for vi in graph.output
        }
        for index, proto in enumerate(graph.node):
            self._convert(proto, index)

        results: list[SSAValue] = []
        for vi in graph.output:
            if vi.name not in self.env:
                raise OnnxImportError(f"graph output '{vi.name}' is not produced by any node")
            v = self.env[vi.name]
            results.append(self.ssa(v))
            self._check_output_dtype(vi, results[-1])

        block.add_ops([*self.ops, func.ReturnOp(*results)])
        arg_attrs = ArrayAttr(
            [DictionaryAttr({"onnx.name": StringAttr(n)}) for n in arg_names]
        )
        main = func.FuncOp(
            "main",
            (arg_types, [r.type for r in results]),
            Region(block),
            # the ONNX names, when the printed SSA names differ (xDSL drops a `_<digits>` suffix)
            arg_attrs=arg_attrs
            if any(a.name_hint != n for a, n in zip(block.args, arg_names, strict=True))
            else None,
        )
        module = ModuleOp([main])
        try:
            module.verify()
        except VerifyException as e:
            raise OnnxImportError(f"the imported module does not verify: {e}") from e
        return module

    def _check_output_dtype(self, vi: Any, value: SSAValue) -> None:
        from onnx import helper

        elem = vi.type.tensor_type.elem_type
        if not elem:
            return
        want = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
        got = self.dtype(value)
        if want != got:
            raise OnnxImportError(
                f"graph output '{vi.name}' is declared {want} but computes {got}"
            )

    def _convert(self, proto: Any, index: int) -> None:
        from onnx import defs, helper

        domain = proto.domain or ""
        version = 0
        if domain in ("", "ai.onnx"):
            try:
                version = defs.get_schema(proto.op_type, self.opset, "").since_version
            except Exception:
                version = 0
        label = _label(proto, index, version)
        converter = CONVERTERS.get(proto.op_type) if domain in ("", "ai.onnx") else None
        if converter is not None and not version:
            raise OnnxImportError(
                f"'{proto.op_type}' does not exist in opset {self.opset} (the model's opset)",
                node=label,
            )
        if converter is None:
            op = proto.op_type if not domain else f"{domain}.{proto.op_type}"
            raise UnsupportedOnnxError(
                f"unsupported ONNX op type '{op}' (node '{proto.name or index}'); "
                f"supported: {', '.join(sorted(SUPPORTED_OPS))}",
                node=label,
            )
        inputs: list[Value | None] = []
        for name in proto.input:
            if not name:
                inputs.append(None)
            elif name in self.env:
                inputs.append(self.env[name])
            else:
                raise OnnxImportError(f"input '{name}' is not defined before its use", node=label)
        node = Node(
            proto,
            version,
            inputs,
            {a.name: helper.get_attribute_value(a) for a in proto.attribute},
            list(proto.input),
        )
        try:
            outputs = list(converter(self, node))
        except OnnxImportError as e:
            e.node = e.node or label
            raise
        except VerifyException as e:
            raise OnnxImportError(str(e), node=label) from e
        for i, name in enumerate(proto.output):
            if not name or name not in self._used:
                continue  # an optional output nobody reads (Dropout's mask, MaxPool's indices)
            if i >= len(outputs) or outputs[i] is None:
                raise UnsupportedOnnxError(
                    f"output #{i} ('{name}') of {proto.op_type} is not supported", node=label
                )
            self.env[name] = outputs[i]  # type: ignore[assignment]


def _ssa_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_$.-" else "_" for c in name)
    if not cleaned or cleaned[0].isdigit():
        cleaned = "v" + cleaned
    return cleaned


# --------------------------------------------------------------------------
# Helpers for converters
# --------------------------------------------------------------------------


def _ints(v: Any) -> list[int]:
    return [int(x) for x in np.asarray(v).reshape(-1)]


def _string(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _auto_pads(
    auto_pad: str, sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
) -> list[int] | None:
    """ONNX SAME_UPPER / SAME_LOWER / VALID padding as [begin..., end...]; None for NOTSET."""
    if auto_pad in ("", "NOTSET"):
        return None
    n = len(sizes)
    if auto_pad == "VALID":
        return [0] * (2 * n)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise OnnxImportError(f"unknown auto_pad '{auto_pad}'")
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else big)
        end.append(big if auto_pad == "SAME_UPPER" else small)
    return begin + end


def _spatial(imp: _Importer, node: Node, x: Value) -> int:
    """Number of spatial dims (1 or 2 are supported: 1-D is run as 2-D with H = 1)."""
    rank = len(imp.shape(x))
    if rank not in (3, 4):
        raise UnsupportedOnnxError(
            f"{node.op_type} on a rank-{rank} input ({rank - 2}-D) is not supported; 1-D and 2-D are"
        )
    return rank - 2


def _as_2d(values: Sequence[int], n: int, fill: int) -> list[int]:
    """Per-spatial-dim values for 1-D ops, with a leading H entry of `fill`."""
    return list(values) if n == 2 else [fill, *values]


def _pads_2d(pads: Sequence[int], n: int) -> tuple[int, int, int, int]:
    if n == 2:
        top, left, bottom, right = pads
        return top, left, bottom, right
    lo, hi = pads
    return 0, lo, 0, hi


def _to_2d(imp: _Importer, x: Value, n: int) -> Value:
    if n == 2:
        return x
    s = imp.shape(x)
    return imp.reshape(x, (s[0], s[1], 1, s[2]))


def _from_2d(imp: _Importer, y: Value, n: int) -> Value:
    if n == 2:
        return y
    s = imp.shape(y)
    return imp.reshape(y, (s[0], s[1], s[3]))


def _normalize_axes(axes: Sequence[int], rank: int, what: str = "axis") -> list[int]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise OnnxImportError(f"{what} {a} is out of range for rank {rank}")
        out.append(a % rank)
    return out


# --------------------------------------------------------------------------
# Converters: elementwise
# --------------------------------------------------------------------------

_UNARY: dict[str, type[nn.NNOp]] = {
    "Relu": nn.ReluOp,
    "Sigmoid": nn.SigmoidOp,
    "Tanh": nn.TanhOp,
    "Exp": nn.ExpOp,
    "Log": nn.LogOp,
    "Sqrt": nn.SqrtOp,
    "Neg": nn.NegativeOp,
    "Abs": nn.AbsOp,
    "Erf": nn.ErfOp,
    "Reciprocal": nn.ReciprocalOp,
    "HardSwish": nn.HardSwishOp,
}


@converts(*_UNARY)
def _unary(imp: _Importer, node: Node) -> list[Value]:
    return [imp.emit(_UNARY[node.op_type], node.required(0))]


@converts("LeakyRelu")
def _leaky_relu(imp: _Importer, node: Node) -> list[Value]:
    return [imp.emit(nn.LeakyReluOp, node.required(0), alpha=float(node.attr("alpha", 0.01)))]


@converts("HardSigmoid")
def _hard_sigmoid(imp: _Importer, node: Node) -> list[Value]:
    return [
        imp.emit(
            nn.HardSigmoidOp,
            node.required(0),
            alpha=float(node.attr("alpha", 0.2)),
            beta=float(node.attr("beta", 0.5)),
        )
    ]


@converts("PRelu")
def _prelu(imp: _Importer, node: Node) -> list[Value]:
    return [imp.emit(nn.PReluOp, node.required(0), node.required(1))]


_BINARY: dict[str, type[nn.NNOp]] = {
    "Add": nn.AddOp,
    "Sub": nn.SubtractOp,
    "Mul": nn.MultiplyOp,
    "Div": nn.DivideOp,
}


def _check_legacy_broadcast(node: Node) -> None:
    if node.attr("broadcast") and node.attr("axis") is not None:
        raise UnsupportedOnnxError("legacy broadcasting with an explicit 'axis' is not supported")


@converts(*_BINARY)
def _binary(imp: _Importer, node: Node) -> list[Value]:
    _check_legacy_broadcast(node)
    a, b = node.required(0), node.required(1)
    if imp.dtype(a) != imp.dtype(b):
        raise OnnxImportError(f"operand element types differ: {imp.dtype(a)} and {imp.dtype(b)}")
    if node.op_type == "Div" and imp.dtype(a).kind in "iu":
        if isinstance(a, SSAValue) or isinstance(b, SSAValue):
            raise UnsupportedOnnxError("integer Div at run time is not supported (nn.divide is f32)")
        q = np.abs(a) // np.abs(b)
        return [np.asarray(q * np.sign(a) * np.sign(b), dtype=a.dtype)]
    return [imp.emit(_BINARY[node.op_type], a, b)]


@converts("Pow")
def _pow(imp: _Importer, node: Node) -> list[Value]:
    a, b = node.required(0), node.required(1)
    if not isinstance(a, SSAValue) and not isinstance(b, SSAValue):
        return [np.asarray(np.power(a, b), dtype=a.dtype)]
    if imp.dtype(a) != np.float32:
        raise UnsupportedOnnxError(f"Pow with a {imp.dtype(a)} base is not supported (nn.power is f32)")
    if imp.dtype(b) != imp.dtype(a):
        b = np.asarray(b).astype(np.float32) if not isinstance(b, SSAValue) else imp.emit(nn.CastOp, b, dtype="f32")
    return [imp.emit(nn.PowerOp, a, b)]


_VARIADIC: dict[str, type[nn.NNOp]] = {
    "Max": nn.MaximumOp,
    "Min": nn.MinimumOp,
    "Sum": nn.AddOp,
    "Mean": nn.AddOp,
}


@converts(*_VARIADIC)
def _variadic(imp: _Importer, node: Node) -> list[Value]:
    values = [v for v in node.inputs if v is not None]
    if not values:
        raise OnnxImportError(f"{node.op_type} needs at least one input")
    acc = values[0]
    for v in values[1:]:
        acc = imp.emit(_VARIADIC[node.op_type], acc, v)
    if node.op_type == "Mean" and len(values) > 1:
        acc = imp.emit(nn.DivideOp, acc, imp.scalar_like(len(values), acc))
    return [acc]


@converts("Clip")
def _clip(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    if node.version < 11:
        lo: Value | None = np.asarray(node.attr("min", -3.4028234663852886e38), dtype=imp.dtype(x))
        hi: Value | None = np.asarray(node.attr("max", 3.4028234663852886e38), dtype=imp.dtype(x))
    else:
        lo, hi = node.input(1), node.input(2)
    static = all(v is None or not isinstance(v, SSAValue) for v in (lo, hi))
    if static and imp.dtype(x) == np.float32:
        a_min = -math.inf if lo is None else float(np.asarray(lo))
        a_max = math.inf if hi is None else float(np.asarray(hi))
        if a_min <= a_max:
            return [imp.emit(nn.ClipOp, x, a_min=a_min, a_max=a_max)]
    # dynamic bounds (or min > max, which ONNX defines as all max): max then min
    y = x
    if lo is not None:
        y = imp.emit(nn.MaximumOp, y, lo)
    if hi is not None:
        y = imp.emit(nn.MinimumOp, y, hi)
    return [y]


@converts("Identity")
def _identity(imp: _Importer, node: Node) -> list[Value]:
    return [node.required(0)]


@converts("Dropout")
def _dropout(imp: _Importer, node: Node) -> list[Value | None]:
    if node.version >= 12 and node.input(2) is not None:
        training = imp.static(node, 2, "training_mode")
        if training is not None and bool(np.asarray(training)):
            raise UnsupportedOnnxError("Dropout in training mode is not supported")
    if node.version < 7 and not node.attr("is_test", 0):
        raise UnsupportedOnnxError("Dropout in training mode (is_test = 0) is not supported")
    # the mask output (bool, all true at inference) has no nn type
    return [node.required(0), None]


@converts("Cast")
def _cast(imp: _Importer, node: Node) -> list[Value]:
    from onnx import helper

    x = node.required(0)
    to = int(node.attr("to"))
    try:
        target = np.dtype(helper.tensor_dtype_to_np_dtype(to))
    except Exception:
        target = None
    if not isinstance(x, SSAValue):
        if target is None or target.kind not in "biuf":
            raise UnsupportedOnnxError(f"Cast to {imp.onnx.TensorProto.DataType.Name(to)} is not supported")
        return [np.asarray(x).astype(target)]
    if target == imp.dtype(x):
        return [x]
    if target not in _NN_DTYPES:
        raise UnsupportedOnnxError(
            f"Cast to {imp.onnx.TensorProto.DataType.Name(to)} is not supported; nn.cast targets f32, i32, i64"
        )
    name = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}[target]
    return [imp.emit(nn.CastOp, x, dtype=name)]


# --------------------------------------------------------------------------
# Converters: neural-network ops
# --------------------------------------------------------------------------


@converts("Conv")
def _conv(imp: _Importer, node: Node) -> list[Value]:
    x, w, b = node.required(0), node.required(1), node.input(2)
    n = _spatial(imp, node, x)
    kernel = list(imp.shape(w)[2:])
    if node.attr("kernel_shape") is not None and list(node.attr("kernel_shape")) != kernel:
        raise OnnxImportError(f"kernel_shape {node.attr('kernel_shape')} differs from the weight's {kernel}")
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    pads = _auto_pads(_string(node.attr("auto_pad", "NOTSET")), imp.shape(x)[2:], kernel, strides, dilations)
    if pads is None:
        pads = list(node.attr("pads", [0] * (2 * n)))
    y = imp.emit(
        nn.Conv2DOp,
        _to_2d(imp, x, n),
        _to_2d(imp, w, n),
        strides=_as_2d(strides, n, 1),
        padding=_pads_2d(pads, n),
        dilation=_as_2d(dilations, n, 1),
        groups=int(node.attr("group", 1)),
    )
    if b is not None:
        y = imp.emit(nn.BiasAddOp, y, b, axis=1)
    return [_from_2d(imp, y, n)]


@converts("ConvTranspose")
def _conv_transpose(imp: _Importer, node: Node) -> list[Value]:
    x, w, b = node.required(0), node.required(1), node.input(2)
    n = _spatial(imp, node, x)
    sizes = imp.shape(x)[2:]
    kernel = list(imp.shape(w)[2:])
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    out_pad = list(node.attr("output_padding", [0] * n))
    auto_pad = _string(node.attr("auto_pad", "NOTSET"))
    output_shape = node.attr("output_shape")
    if output_shape is not None and len(output_shape) == n + 2:
        output_shape = list(output_shape)[2:]
    pads = node.attr("pads")
    if output_shape is not None or (pads is None and auto_pad in ("SAME_UPPER", "SAME_LOWER")):
        # ONNX: the pads are derived from the requested output shape (in * stride for SAME)
        target = list(output_shape) if output_shape is not None else [s * st for s, st in zip(sizes, strides, strict=True)]
        begin, end = [], []
        for i in range(n):
            total = strides[i] * (sizes[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - target[i]
            small, big = total // 2, total - total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else big)
            end.append(big if auto_pad == "SAME_UPPER" else small)
        pads = begin + end
    elif pads is None:
        pads = [0] * (2 * n)
    pads = list(pads)
    if any(p < 0 for p in pads[:n]):
        raise UnsupportedOnnxError(f"ConvTranspose with negative leading pads {pads} is not supported")
    for i in range(n):  # a negative trailing pad extends the output: output_padding
        if pads[n + i] < 0:
            out_pad[i] += -pads[n + i]
            pads[n + i] = 0
    y = imp.emit(
        nn.Conv2DTransposeOp,
        _to_2d(imp, x, n),
        _to_2d(imp, w, n),
        strides=_as_2d(strides, n, 1),
        padding=_pads_2d(pads, n),
        output_padding=_as_2d(out_pad, n, 0),
        dilation=_as_2d(dilations, n, 1),
        groups=int(node.attr("group", 1)),
    )
    if b is not None:
        y = imp.emit(nn.BiasAddOp, y, b, axis=1)
    return [_from_2d(imp, y, n)]


@converts("MaxPool", "AveragePool")
def _pool(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    n = _spatial(imp, node, x)
    kernel = list(node.attr("kernel_shape"))
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    pads = _auto_pads(_string(node.attr("auto_pad", "NOTSET")), imp.shape(x)[2:], kernel, strides, dilations)
    if pads is None:
        pads = list(node.attr("pads", [0] * (2 * n)))
    common = dict(
        pool_size=_as_2d(kernel, n, 1),
        strides=_as_2d(strides, n, 1),
        padding=_pads_2d(pads, n),
        dilation=_as_2d(dilations, n, 1),
        ceil_mode=bool(node.attr("ceil_mode", 0)),
    )
    if node.op_type == "MaxPool":
        y = imp.emit(nn.MaxPool2DOp, _to_2d(imp, x, n), **common)
    else:
        y = imp.emit(
            nn.AvgPool2DOp,
            _to_2d(imp, x, n),
            count_include_pad=bool(node.attr("count_include_pad", 0)),
            **common,
        )
    return [_from_2d(imp, y, n)]


@converts("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    rank = len(imp.shape(x))
    avg = node.op_type == "GlobalAveragePool"
    if rank == 4:
        return [imp.emit(nn.GlobalAvgPool2DOp if avg else nn.GlobalMaxPool2DOp, x)]
    if rank < 3:
        raise OnnxImportError(f"{node.op_type} needs rank >= 3, got {rank}")
    cls = nn.ReduceMeanOp if avg else nn.ReduceMaxOp
    return [imp.emit(cls, x, axes=tuple(range(2, rank)), keepdims=True)]


@converts("BatchNormalization")
def _batch_norm(imp: _Importer, node: Node) -> list[Value | None]:
    if node.attr("training_mode", 0):
        raise UnsupportedOnnxError("BatchNormalization in training mode is not supported")
    if node.version < 9 and not node.attr("spatial", 1):
        raise UnsupportedOnnxError("BatchNormalization with spatial = 0 is not supported")
    if node.version < 7 and not node.attr("is_test", 0):
        raise UnsupportedOnnxError("BatchNormalization in training mode (is_test = 0) is not supported")
    x = node.required(0)
    y = imp.emit(
        nn.BatchNormOp,
        x,
        *[node.required(i) for i in range(1, 5)],
        axis=1,
        epsilon=float(node.attr("epsilon", 1e-5)),
    )
    return [y]


@converts("LRN")
def _lrn(imp: _Importer, node: Node) -> list[Value]:
    return [
        imp.emit(
            nn.LRNOp,
            node.required(0),
            size=int(node.attr("size")),
            axis=1,
            alpha=float(node.attr("alpha", 1e-4)),
            beta=float(node.attr("beta", 0.75)),
            bias=float(node.attr("bias", 1.0)),
        )
    ]


@converts("Gemm")
def _gemm(imp: _Importer, node: Node) -> list[Value]:
    a, b, c = node.required(0), node.required(1), node.input(2)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if node.attr("transA", 0):
        a = imp.emit(nn.TransposeOp, a, axes=(1, 0))
    # nn.dense computes a · wᵀ: w is B when transB, else Bᵀ (folded when B is a constant)
    w = b if node.attr("transB", 0) else imp.emit(nn.TransposeOp, b, axes=(1, 0))
    if alpha != 1.0 and not isinstance(w, SSAValue):
        w = np.asarray(w * w.dtype.type(alpha))
        alpha = 1.0
    y = imp.emit(nn.DenseOp, a, w)
    if alpha != 1.0:
        y = imp.emit(nn.MultiplyOp, y, imp.scalar_like(alpha, y))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = imp.emit(nn.MultiplyOp, c, imp.scalar_like(beta, c))
        n_out = imp.shape(y)[1]
        if imp.shape(c) == (n_out,):
            y = imp.emit(nn.BiasAddOp, y, c, axis=1)
        else:
            y = imp.emit(nn.AddOp, y, c)
    return [y]


@converts("MatMul")
def _matmul(imp: _Importer, node: Node) -> list[Value]:
    a, b = node.required(0), node.required(1)
    if not isinstance(b, SSAValue) and b.ndim == 2 and len(imp.shape(a)) >= 2:
        # a constant 2-D right operand is a dense layer (its weight stored transposed)
        return [imp.emit(nn.DenseOp, a, np.ascontiguousarray(b.T))]
    return [imp.emit(nn.MatmulOp, a, b)]


@converts("Softmax")
def _softmax(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    rank = len(shape)
    if node.version >= 13:
        return [imp.emit(nn.SoftmaxOp, x, axis=int(node.attr("axis", -1)))]
    # before opset 13 the input is coerced to 2-D at `axis` and normalized over the trailing block
    (axis,) = _normalize_axes([int(node.attr("axis", 1))], max(rank, 1))
    if axis == rank - 1:
        return [imp.emit(nn.SoftmaxOp, x, axis=-1)]
    flat = imp.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
    y = imp.emit(nn.SoftmaxOp, flat, axis=1)
    return [imp.reshape(y, shape)]


# --------------------------------------------------------------------------
# Converters: layout
# --------------------------------------------------------------------------


@converts("Reshape")
def _reshape(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    if node.version < 5:
        target = list(node.attr("shape"))
    else:
        static = imp.static(node, 1, "shape")
        if static is None:
            raise OnnxImportError("Reshape needs a shape")
        target = _ints(static)
    src = imp.shape(x)
    allowzero = bool(node.attr("allowzero", 0))
    out = [src[i] if d == 0 and not allowzero else d for i, d in enumerate(target)]
    if out.count(-1) > 1:
        raise OnnxImportError(f"shape {target} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        total = math.prod(src)
        if known == 0 or total % known:
            raise OnnxImportError(f"cannot reshape {list(src)} into {target}")
        out[out.index(-1)] = total // known
    return [imp.reshape(x, out)]


@converts("Flatten")
def _flatten(imp: _Importer, node: Node) -> list[Value]:
    return [imp.emit(nn.FlattenOp, node.required(0), axis=int(node.attr("axis", 1)))]


@converts("Transpose")
def _transpose(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    rank = len(imp.shape(x))
    perm = node.attr("perm")
    perm = tuple(int(p) for p in perm) if perm is not None else tuple(reversed(range(rank)))
    if perm == tuple(range(rank)):
        return [x]
    return [imp.emit(nn.TransposeOp, x, axes=perm)]


@converts("Concat")
def _concat(imp: _Importer, node: Node) -> list[Value]:
    values = [v for v in node.inputs if v is not None]
    if len(values) == 1:
        return [values[0]]
    return [imp.emit(nn.ConcatenateOp, *values, axis=int(node.attr("axis")))]


@converts("Split")
def _split(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    (axis,) = _normalize_axes([int(node.attr("axis", 0))], len(shape))
    dim = shape[axis]
    parts = node.num_outputs
    if node.version < 13:
        sizes = node.attr("split")
    else:
        s = imp.static(node, 1, "split sizes")
        sizes = None if s is None else _ints(s)
    if sizes is None or len(sizes) == 0:
        if node.version >= 18 and node.attr("num_outputs") is not None:
            parts = int(node.attr("num_outputs"))
            chunk = -(-dim // parts)
            sizes = [chunk] * (parts - 1) + [dim - chunk * (parts - 1)]
        else:
            if dim % parts:
                raise OnnxImportError(f"cannot split size {dim} into {parts} equal parts")
            sizes = [dim // parts] * parts
    sizes = [int(v) for v in sizes]
    if sum(sizes) != dim or any(v < 0 for v in sizes):
        raise OnnxImportError(f"split sizes {sizes} do not add up to {dim}")
    if len(sizes) != node.num_outputs:
        raise OnnxImportError(f"{len(sizes)} split sizes for {node.num_outputs} outputs")
    indices = list(np.cumsum(sizes[:-1]))
    if not indices:
        return [x]
    return imp.emit_all(nn.SplitOp, x, indices=tuple(int(i) for i in indices), axis=axis)


def _slice_bounds(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice's clamping of one axis, resolved against its static size."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim)
    return min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)


def _strided_slice(
    imp: _Importer, x: Value, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]
) -> Value:
    shape = imp.shape(x)
    begin, end, strides = [0] * len(shape), list(shape), [1] * len(shape)
    for a, s, e, st in zip(_normalize_axes(axes, len(shape)), starts, ends, steps, strict=True):
        if st == 0:
            raise OnnxImportError("Slice steps must be non-zero")
        begin[a], end[a] = _slice_bounds(shape[a], s, e, st)
        strides[a] = st
    if begin == [0] * len(shape) and end == list(shape) and strides == [1] * len(shape):
        return x
    return imp.emit(nn.StridedSliceOp, x, begin=tuple(begin), end=tuple(end), strides=tuple(strides))


@converts("Slice")
def _slice(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    rank = len(imp.shape(x))
    if node.version < 10:
        starts, ends = list(node.attr("starts")), list(node.attr("ends"))
        axes = list(node.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = _ints(imp.static(node, 1, "starts"))
        ends = _ints(imp.static(node, 2, "ends"))
        ax = imp.static(node, 3, "axes")
        axes = _ints(ax) if ax is not None else list(range(len(starts)))
        st = imp.static(node, 4, "steps")
        steps = _ints(st) if st is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps) or len(axes) > rank:
        raise OnnxImportError("starts, ends, axes and steps must have the same length")
    return [_strided_slice(imp, x, axes, starts, ends, steps)]


def _axes_input(imp: _Importer, node: Node, attr_before: int) -> list[int] | None:
    """`axes` as an attribute (before opset `attr_before`) or as input #1."""
    if node.version < attr_before:
        axes = node.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    static = imp.static(node, 1, "axes")
    return None if static is None else _ints(static)


@converts("Squeeze")
def _squeeze(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    axes = _axes_input(imp, node, 13)
    if axes is None:
        drop = {i for i, d in enumerate(shape) if d == 1}
    else:
        drop = set(_normalize_axes(axes, len(shape)))
        if any(shape[a] != 1 for a in drop):
            raise OnnxImportError(f"cannot squeeze axes {sorted(drop)} of shape {list(shape)}")
    return [imp.reshape(x, [d for i, d in enumerate(shape) if i not in drop])]


@converts("Unsqueeze")
def _unsqueeze(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = list(imp.shape(x))
    axes = _axes_input(imp, node, 13)
    if not axes:
        raise OnnxImportError("Unsqueeze needs axes")
    rank = len(shape) + len(axes)
    new = sorted(_normalize_axes(axes, rank))
    if len(set(new)) != len(new):
        raise OnnxImportError(f"Unsqueeze axes {axes} repeat an axis")
    it = iter(shape)
    out = [1 if i in new else next(it) for i in range(rank)]
    return [imp.reshape(x, out)]


@converts("Pad")
def _pad(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    rank = len(shape)
    mode = _string(node.attr("mode", "constant"))
    if node.version < 11:
        pads = list(node.attr("pads", node.attr("paddings", [])))
        value = float(node.attr("value", 0.0))
    else:
        pads = _ints(imp.static(node, 1, "pads"))
        cv = imp.static(node, 2, "constant_value")
        value = 0.0 if cv is None or np.asarray(cv).size == 0 else float(np.asarray(cv).reshape(-1)[0])
        ax = imp.static(node, 3, "axes")
        if ax is not None:
            axes = _normalize_axes(_ints(ax), rank)
            full = [0] * (2 * rank)
            for k, a in enumerate(axes):
                full[a], full[rank + a] = pads[k], pads[len(axes) + k]
            pads = full
    if len(pads) != 2 * rank:
        raise OnnxImportError(f"pads {pads} must have {2 * rank} values for rank {rank}")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise UnsupportedOnnxError(f"Pad mode '{mode}' is not supported")
    begin, end = pads[:rank], pads[rank:]
    if any(p < 0 for p in pads):  # negative pads crop
        x = _strided_slice(
            imp,
            x,
            list(range(rank)),
            [max(0, -b) for b in begin],
            [d - max(0, -e) for d, e in zip(shape, end, strict=True)],
            [1] * rank,
        )
        begin, end = [max(0, b) for b in begin], [max(0, e) for e in end]
    if not any(begin) and not any(end):
        return [x]
    width = tuple(v for pair in zip(begin, end, strict=True) for v in pair)
    return [imp.emit(nn.PadOp, x, pad_width=width, pad_value=value, pad_mode=mode)]


_REDUCE: dict[str, tuple[type[nn.NNOp], int]] = {
    # op -> (nn op, first opset where axes is an input)
    "ReduceMean": (nn.ReduceMeanOp, 18),
    "ReduceSum": (nn.ReduceSumOp, 13),
    "ReduceMax": (nn.ReduceMaxOp, 18),
}


@converts(*_REDUCE)
def _reduce(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    cls, axes_input_since = _REDUCE[node.op_type]
    shape = imp.shape(x)
    axes = _axes_input(imp, node, axes_input_since)
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(len(shape)))
    axes = _normalize_axes(axes, len(shape))
    if node.op_type != "ReduceSum" and any(shape[a] == 0 for a in axes):
        raise UnsupportedOnnxError(f"{node.op_type} over an empty axis is not supported")
    keepdims = bool(node.attr("keepdims", 1))
    return [imp.emit(cls, x, axes=tuple(axes), keepdims=keepdims)]


@converts("Resize", "Upsample")
def _resize(imp: _Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    rank = len(shape)
    mode = _string(node.attr("mode", "nearest"))
    if node.op_type == "Upsample" or node.version < 11:
        # Upsample / Resize-10: asymmetric coordinates, nearest rounds down
        if node.version < 9 and node.op_type == "Upsample":
            scales = list(node.attr("scales"))
        else:
            scales = [float(s) for s in np.asarray(imp.static(node, 1, "scales")).reshape(-1)]
        coord, rounding, sizes = "asymmetric", "floor", None
    else:
        if node.attr("antialias", 0):
            raise UnsupportedOnnxError("Resize with antialias is not supported")
        if node.attr("exclude_outside", 0):
            raise UnsupportedOnnxError("Resize with exclude_outside is not supported")
        coord = _string(node.attr("coordinate_transformation_mode", "half_pixel"))
        rounding = _string(node.attr("nearest_mode", "round_prefer_floor"))
        s = imp.static(node, 2, "scales")
        z = imp.static(node, 3, "sizes")
        scales = None if s is None or s.size == 0 else [float(v) for v in s.reshape(-1)]
        sizes = None if z is None or z.size == 0 else _ints(z)
        axes = node.attr("axes")
        if axes is not None:
            axes = _normalize_axes(list(axes), rank)
            if scales is not None:
                full = [1.0] * rank
                for a, v in zip(axes, scales, strict=True):
                    full[a] = v
                scales = full
            if sizes is not None:
                full_sizes = list(shape)
                for a, v in zip(axes, sizes, strict=True):
                    full_sizes[a] = v
                sizes = full_sizes
        policy = _string(node.attr("keep_aspect_ratio_policy", "stretch"))
        if sizes is not None and policy != "stretch":
            resized = axes if axes is not None else list(range(rank))
            ratios = [sizes[a] / shape[a] for a in resized]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            scales = [scale if a in resized else 1.0 for a in range(rank)]
            sizes = None
        if coord == "tf_crop_and_resize":
            raise UnsupportedOnnxError("Resize with coordinate_transformation_mode tf_crop_and_resize is not supported")
    if mode not in ("nearest", "linear"):
        raise UnsupportedOnnxError(f"Resize mode '{mode}' is not supported (nearest, linear)")
    if rank != 4:
        raise UnsupportedOnnxError(f"Resize of a rank-{rank} tensor is not supported (NCHW only)")
    if sizes is not None:
        out = [int(v) for v in sizes]
        if len(out) != rank:
            raise OnnxImportError(f"sizes {out} must have {rank} values")
        scale_h = scale_w = 0.0
    elif scales is not None:
        if len(scales) != rank:
            raise OnnxImportError(f"scales {scales} must have {rank} values")
        out = [int(math.floor(d * s)) for d, s in zip(shape, scales, strict=True)]
        scale_h, scale_w = scales[2], scales[3]
        if node.op_type == "Resize" and _string(node.attr("keep_aspect_ratio_policy", "stretch")) != "stretch":
            out = [int(d * s + 0.5) for d, s in zip(shape, scales, strict=True)]
    else:
        raise OnnxImportError("Resize needs scales or sizes")
    if out[:2] != list(shape[:2]):
        raise UnsupportedOnnxError("Resize of the batch or channel dimension is not supported")
    if out == list(shape) and scale_h in (0.0, 1.0) and scale_w in (0.0, 1.0):
        return [x]
    return [
        imp.emit(
            nn.Resize2DOp,
            x,
            size=(out[2], out[3]),
            method="nearest_neighbor" if mode == "nearest" else "linear",
            coordinate_transformation_mode=coord,
            rounding_method=rounding,
            scale_h=float(scale_h),
            scale_w=float(scale_w),
        )
    ]


# --------------------------------------------------------------------------
# Converters: values known at import time
# --------------------------------------------------------------------------


@converts("Constant")
def _constant(imp: _Importer, node: Node) -> list[Value]:
    from onnx import numpy_helper

    a = node.attrs
    if "value" in a:
        return [numpy_helper.to_array(a["value"])]
    if "value_float" in a:
        return [np.asarray(a["value_float"], dtype=np.float32)]
    if "value_floats" in a:
        return [np.asarray(a["value_floats"], dtype=np.float32)]
    if "value_int" in a:
        return [np.asarray(a["value_int"], dtype=np.int64)]
    if "value_ints" in a:
        return [np.asarray(a["value_ints"], dtype=np.int64)]
    raise UnsupportedOnnxError(f"Constant with attribute(s) {sorted(a)} is not supported")


@converts("ConstantOfShape")
def _constant_of_shape(imp: _Importer, node: Node) -> list[Value]:
    from onnx import numpy_helper

    shape = _ints(imp.static(node, 0, "shape"))
    value = node.attr("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return [np.full(shape, fill[0], dtype=fill.dtype)]


@converts("Shape")
def _shape(imp: _Importer, node: Node) -> list[Value]:
    shape = imp.shape(node.required(0))
    start, end = node.attr("start", 0), node.attr("end")
    return [np.asarray(shape[slice(start, end)], dtype=np.int64)]


@converts("Size")
def _size(imp: _Importer, node: Node) -> list[Value]:
    return [np.asarray(math.prod(imp.shape(node.required(0))), dtype=np.int64)]


@converts("Gather")
def _gather(imp: _Importer, node: Node) -> list[Value]:
    data, indices = node.required(0), node.required(1)
    return [imp.emit(nn.TakeOp, data, indices, axis=int(node.attr("axis", 0)))]


@converts("Range")
def _range(imp: _Importer, node: Node) -> list[Value]:
    start = imp.static(node, 0, "start")
    limit = imp.static(node, 1, "limit")
    delta = imp.static(node, 2, "delta")
    assert start is not None and limit is not None and delta is not None
    count = max(int(math.ceil((limit.item() - start.item()) / delta.item())), 0)
    return [(start + np.arange(count, dtype=start.dtype) * delta).astype(start.dtype)]


SUPPORTED_OPS: frozenset[str] = frozenset(CONVERTERS)
"""The ONNX op types (default domain) the importer converts."""

__all__ = [
    "SUPPORTED_OPS",
    "OnnxImportError",
    "StaticValueRequired",
    "UnsupportedOnnxError",
    "import_model",
    "import_model_from_bytes",
]
