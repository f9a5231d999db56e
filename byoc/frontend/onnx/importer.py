"""The ONNX importer: walks the graph, types every value, folds what is known at import time.

    module = import_model("resnet50.onnx")                        # a path
    module = import_model(model_proto, input_shapes={"x": (1, 3, 224, 224)})
    module = import_model_from_bytes(data)                        # serialized bytes

Contract:
- Graph inputs whose shape has symbolic, `?` or `-1` dimensions take their
  shape from `input_shapes`; without it those dims stay dynamic (`?`, nn.DYNAMIC)
  and propagate through each op's type relation (`NNOp.infer_types`). A
  converter that needs the size of a dynamic dim (a Shape, a Reshape to a
  computed shape) fails naming the dim as dynamic and asking for input_shapes.
- Initializers and `Constant`s become `nn.constant`s whose payload stays a
  numpy array (never printed and parsed back).
- Values known at import time are folded: `Constant`, `ConstantOfShape`,
  `Shape`, `Size`, `Range`, and every other op whose inputs are all known (with the same numpy kernels the reference uses), so a `Reshape` fed by
  a computed shape gets a static `newshape`. `Identity` and inference-mode
  `Dropout` disappear. A folded value larger than `fold_limit_bytes`
  (`base.FOLD_LIMIT_BYTES`, 1 GiB) is not computed: the op stays in the graph
  (`ConstantOfShape` as an `nn.pad` of its one value, `Range` as a broadcast
  add of two short aranges) and computes it at run time.
- Dims are non-negative and every tensor's byte size fits int64 (the nn
  verifier's rule); a graph input or `input_shapes` entry that breaks it is an
  `OnnxImportError`.
- Result types come from each nn op's `infer`, never from ONNX's declared
  value infos.
- Values may have any element type of `nn.ELEMENT_TYPES` (f32, f64, f16, the
  signed and unsigned integers, bool); each nn op accepts the types its `DTYPES`
  lists. A model that needs a type nn lacks (bfloat16, float8, int4, string...)
  or an op on a type its nn op does not take is rejected with
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

import os
import stat
from collections.abc import Hashable, Iterator, Mapping, Sequence
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
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

import byoc.frontend.onnx.proto as proto_module
from byoc.dialects import nn
from byoc.dialects.verify import ChangeVerifier
from byoc.frontend.onnx.base import (
    DYNAMIC_DIM,
    FOLD_LIMIT_BYTES,
    VALUE_DTYPES,
    Array,
    DynamicDim,
    Node,
    Value,
    has_dynamic,
    nbytes,
)
from byoc.frontend.onnx.converters import CONVERTERS, SUPPORTED_OPS
from byoc.frontend.onnx.errors import (
    STATIC_SHAPE_HINT,
    OnnxImportError,
    StaticValueRequired,
    UnknownInputError,
    UnsupportedOnnxError,
)
from byoc.interpreters.kernels import KERNELS
from byoc.utils.gc import paused_gc

MIN_OPSET = 7
"""Models below this opset are converted with onnx.version_converter first."""
CONVERT_OLD_OPSETS_TO = 13


def import_model(
    model: str | os.PathLike[str] | bytes | IO[bytes] | Any,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    bind_inputs: Mapping[str, Any] | None = None,
    *,
    fold_limit_bytes: int = FOLD_LIMIT_BYTES,
) -> ModuleOp:
    """Import an ONNX model (a path, serialized bytes, a binary stream or a ModelProto).

    `input_shapes` gives the static shape of graph inputs whose declared shape is
    symbolic. `bind_inputs` binds graph inputs to constant arrays (TVM's
    `bind_params_by_name`): they become constants, and the function no longer
    takes them. Values known at import time are computed only up to
    `fold_limit_bytes` each; larger ones stay ops of the graph. Returns a
    verified `builtin.module` holding `func.func @main`. Without the `onnx` package
    (the `onnx` extra) it raises `OnnxMissing`; data that is not a serialized ModelProto
    is an `OnnxImportError`.
    """
    # the import makes long-lived objects only (protobuf's modules, the message, the IR), so
    # collections would rescan them: loading onnx's message classes costs 2.5x with them
    with paused_gc():
        return _import_model(model, input_shapes or {}, bind_inputs or {}, fold_limit_bytes)


def _import_model(
    model: Any,
    input_shapes: Mapping[str, Sequence[int]],
    bind_inputs: Mapping[str, Any],
    fold_limit_bytes: int,
) -> ModuleOp:
    messages = proto_module.pb2()
    from google.protobuf.message import DecodeError  # onnx's dependency: models are protobufs

    try:
        if isinstance(model, bytes | bytearray):
            proto = _parse(messages, bytes(model))
        elif isinstance(model, str | os.PathLike):
            proto = _load_path(messages, os.fspath(model))
        elif proto_module.is_model_proto(model):
            proto = model
        elif hasattr(model, "read"):
            proto = _parse(messages, model.read())
        else:
            raise TypeError(
                f"import_model takes a path, bytes, a stream or a ModelProto, got {type(model)}"
            )
    except DecodeError as e:
        raise OnnxImportError(f"not an ONNX model: {e}") from None
    if not isinstance(model, str | os.PathLike):
        check_no_external_data(proto)
    return Importer(proto, input_shapes, bind_inputs, fold_limit_bytes).run()


def _parse(messages: Any, data: bytes) -> Any:
    proto = messages.ModelProto()
    proto.ParseFromString(data)
    return proto


_TEXT_SUFFIXES = (".txtpb", ".textproto", ".prototxt", ".pbtxt", ".json", ".onnxjson", ".onnxtxt", ".onnxtext")
"""The file suffixes `onnx.load` reads as a text format (onnx/serialization.py)."""


def _load_path(messages: Any, path: str) -> Any:
    """The model in a file. A protobuf file is parsed directly, with its external data when
    that lies in plain files of the model's folder (`_read_plain_external_data`); a text
    format or other external data (read from the model's folder, and only from there) goes
    through `onnx.load`."""
    if not path.lower().endswith(_TEXT_SUFFIXES):
        with open(path, "rb") as f:
            proto = _parse(messages, f.read())
        external = [t for t in _tensors(proto.graph) if t.data_location == _EXTERNAL]
        if not external or _read_plain_external_data(external, os.path.dirname(path)):
            return proto
    onnx = proto_module.require_onnx()
    try:
        return onnx.load(path)
    except onnx.checker.ValidationError as e:
        raise OnnxImportError(f"the model's external data: {e}") from None


_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL
_PLAIN_EXTERNAL_KEYS = frozenset({"location", "offset", "length", "checksum"})


def _read_plain_external_data(tensors: list[Any], folder: str) -> bool:
    """Read the external data of `tensors` into them (as onnx's `load_external_data_for_model`
    does: `raw_data` filled, the location reset) when every one lies in a regular file, not a
    symlink, named by a plain file name in `folder`, within that file's size; False, reading
    nothing, for anything else (a path, a link, a bad range), which `onnx.load` then reads or
    refuses with its own error."""
    reads: list[tuple[Any, str, int, int | None]] = []
    sizes: dict[str, int] = {}
    for tensor in tensors:
        info = {e.key: e.value for e in tensor.external_data}
        name = info.get("location", "")
        if set(info) - _PLAIN_EXTERNAL_KEYS or not _plain_file_name(name):
            return False
        try:
            offset = int(info.get("offset", "0"))
            length = int(info["length"]) if "length" in info else None
        except ValueError:
            return False
        if name not in sizes:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                return False
            if not stat.S_ISREG(st.st_mode):
                return False
            sizes[name] = st.st_size
        end = sizes[name] if length is None else offset + length
        if offset < 0 or offset > sizes[name] or (length is not None and length < 0) or end > sizes[name]:
            return False
        reads.append((tensor, name, offset, length))
    fds: dict[str, int] = {}
    try:
        for name in sizes:
            fds[name] = os.open(os.path.join(folder, name), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            if os.fstat(fds[name]).st_size != sizes[name]:
                return False  # changed since it was looked at
        chunks = []
        for _, name, offset, length in reads:
            size = sizes[name] - offset if length is None else length
            chunk = os.pread(fds[name], size, offset)
            if len(chunk) != size:
                return False
            chunks.append(chunk)
    except OSError:
        return False
    finally:
        for fd in fds.values():
            os.close(fd)
    for (tensor, _, _, _), chunk in zip(reads, chunks, strict=True):
        tensor.raw_data = chunk
        tensor.data_location = 0  # DEFAULT
        del tensor.external_data[:]
    return True


def _plain_file_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0:")


def _tensors(graph: Any) -> Iterator[Any]:
    """Every TensorProto of a graph: initializers, sparse values, node attributes, subgraphs."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _tensors(attr.g)
            for sub in attr.graphs:
                yield from _tensors(sub)


def check_no_external_data(model: Any) -> None:
    """An `OnnxImportError` naming the first tensor whose data lives in a file beside the
    model: a model given as bytes, a stream or a ModelProto has no folder to read it from
    (onnx would read it relative to the process's current directory)."""
    for tensor in _tensors(model.graph):
        if tensor.data_location == _EXTERNAL:
            where = next((e.value for e in tensor.external_data if e.key == "location"), "?")
            raise OnnxImportError(
                f"tensor '{tensor.name}' keeps its data in an external file ('{where}'), and a "
                "model given as bytes, a stream or a ModelProto has no folder to find it in: "
                "give the model as a file path (or onnx.load(path) it first)"
            )


def import_model_from_bytes(
    data: bytes,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    bind_inputs: Mapping[str, Any] | None = None,
) -> ModuleOp:
    """`import_model` on a serialized ModelProto (what `byoc-opt` reads from its input stream)."""
    return import_model(bytes(data), input_shapes, bind_inputs)


def node_label(node: Any, index: int, version: int) -> str:
    """`node 'conv1' (Conv-11)`, or `node #3 (Conv-11)` for an unnamed node."""
    name = f"'{node.name}'" if node.name else f"#{index}"
    return f"node {name} ({node.op_type}-{version})" if version else f"node {name} ({node.op_type})"


class Importer:
    """One import: the ONNX value environment, the nn ops emitted so far, and the helpers
    converters call (`emit`, `static`, `shape`, `dtype`, `reshape`: the `base.Importer`
    protocol, so that the converters need not import this module)."""

    def __init__(
        self,
        model: Any,
        input_shapes: Mapping[str, Sequence[int]],
        bind_inputs: Mapping[str, Any],
        fold_limit_bytes: int = FOLD_LIMIT_BYTES,
    ) -> None:
        self.model = model
        self.fold_limit_bytes = int(fold_limit_bytes)
        self.opset = self._default_opset(model)
        if self.opset < MIN_OPSET:
            version_converter = proto_module.require_onnx().version_converter

            try:
                self.model = version_converter.convert_version(model, CONVERT_OLD_OPSETS_TO)
            except Exception as e:  # the converter raises bare RuntimeErrors
                raise UnsupportedOnnxError(
                    f"the model's opset {self.opset} is below {MIN_OPSET} and "
                    f"onnx.version_converter could not convert it: {e}"
                ) from e
            self.opset = CONVERT_OLD_OPSETS_TO
        self.input_shapes = dict(input_shapes)
        self.bind_inputs = dict(bind_inputs)
        self.env: dict[str, Value] = {}
        self.ops: list[Operation] = []
        self._constants: dict[int, tuple[Array, SSAValue]] = {}
        self._graph_input_of: dict[SSAValue, str] = {}
        self._used: set[str] = set()
        self._versions: dict[tuple[str, str], int] = {}
        self._props_cache: dict[Hashable, tuple[dict[str, Attribute], dict[str, Any]]] = {}
        self._relations: dict[tuple[object, ...], tuple[list[Attribute], dict[str, Any], list[TensorType[Any]]]] = {}

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
        if arr.dtype not in VALUE_DTYPES:
            raise UnsupportedOnnxError(
                f"a constant of element type {arr.dtype} is needed at run time; "
                "nn has no such element type"
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

    def required_static(self, node: Node, i: int, what: str, needs: str) -> Array:
        value = self.static(node, i, what)
        if value is None:
            raise OnnxImportError(f"{node.op_type} needs {needs}")
        return value

    @staticmethod
    def shape(v: Value) -> tuple[int, ...]:
        """The shape of a value; a `?` dim is a `DynamicDim`, which a converter may pass
        on (into a type, an op) but not compute with: arithmetic or a comparison on it
        is an UnsupportedOnnxError naming the dim as dynamic."""
        if isinstance(v, SSAValue):
            shape = nn.shape_of(v.type)
            if nn.DYNAMIC in shape:
                return tuple(DYNAMIC_DIM if d == nn.DYNAMIC else d for d in shape)
            return shape
        return tuple(v.shape)

    @staticmethod
    def dtype(v: Value) -> np.dtype[Any]:
        if isinstance(v, SSAValue):
            assert isinstance(v.type, TensorType)
            return nn.numpy_dtype(v.type.element_type)
        return v.dtype

    # ---- emitting nn ops -----------------------------------------------------------
    def emit_all(self, cls: type[nn.NNOp], *operands: Value, **attrs: Any) -> list[Value]:
        """Apply an nn op: folded with its kernel when every operand is known, else emitted.

        Emitting is `cls.build` (result types from `infer_types`) with the properties
        converted once per distinct set of attribute values (`_properties`)."""
        props, python = self._properties(cls, attrs)
        if all(not isinstance(o, SSAValue) for o in operands) and self._may_fold(
            cls, operands, props
        ):
            out = KERNELS[cls.name](*[np.asarray(o) for o in operands], **python)
            return [np.asarray(r) for r in out] if isinstance(out, tuple) else [np.asarray(out)]
        values = [self.ssa(o) for o in operands]
        types = [v.type for v in values]
        for t in types:
            if not isinstance(t, TensorType):
                raise TypeError(f"'{cls.name}' operands must be tensors, got {t}")
        result_types = self._infer_types(cls, types, python)
        op = cls.create(operands=values, result_types=result_types, properties=dict(props))
        try:
            op.check_dtypes(types)  # type: ignore[arg-type]
        except VerifyException as e:
            raise UnsupportedOnnxError(f"'{cls.name}': {e}") from None
        self.ops.append(op)
        return list(op.results)

    def _infer_types(
        self, cls: type[nn.NNOp], types: list[Attribute], python: dict[str, Any]
    ) -> list[TensorType[Any]]:
        """`cls.infer_types`, computed once per class, operand types and attribute values:
        the types are interned (`nn.tensor`) and the values shared (`_properties`), so a
        graph's repeated blocks look the same relation up instead of running it again."""
        key = (cls, id(python), *[id(t) for t in types])
        known = self._relations.get(key)
        if known is None:
            known = (types, python, cls.infer_types(types, python))  # type: ignore[arg-type]
            self._relations[key] = known  # keeps the keyed objects alive, so ids stay theirs
        return known[2]

    def _properties(
        self, cls: type[nn.NNOp], attrs: Mapping[str, Any]
    ) -> tuple[dict[str, Attribute], dict[str, Any]]:
        """The property attributes of `attrs` and their Python values (defaults filled in).

        Both are shared by every op of `cls` with the same attribute values (neither is
        mutated): converting costs more than the rest of emitting an op, and a graph
        repeats a handful of attribute sets."""
        key: tuple[Hashable, ...] | None = (cls,)
        for k, v in attrs.items():
            frozen = _freeze(v)
            if frozen is None:
                key = None
                break
            key += (k, frozen)
        cached = self._props_cache.get(key) if key is not None else None
        if cached is not None:
            return cached
        props = cls.properties_of(attrs)
        converted = (props, cls.python_attrs(props))
        if key is not None:
            self._props_cache[key] = converted
        return converted

    def _may_fold(
        self, cls: type[nn.NNOp], operands: Sequence[Value], props: Mapping[str, Any]
    ) -> bool:
        """Whether every result of `cls` on these known operands is at most fold_limit_bytes.

        The type relation runs first (on stand-in types for element types nn lacks),
        so the kernel never sees attributes the verifier would reject.
        """
        types = [
            nn.tensor(
                np.shape(o),
                nn.element_type_of(np.asarray(o).dtype)
                if np.asarray(o).dtype in VALUE_DTYPES
                else nn.element_type_of(np.float32),
            )
            for o in operands
        ]
        results = cls.infer(types, cls.python_attrs(props))
        widest = max([1, *(np.asarray(o).dtype.itemsize for o in operands)])
        return all(
            nbytes(nn.shape_of(t), np.uint8) * max(widest, nn.numpy_dtype(t.element_type).itemsize)
            <= self.fold_limit_bytes
            for t in results
        )

    def emit(self, cls: type[nn.NNOp], *operands: Value, **attrs: Any) -> Value:
        (out,) = self.emit_all(cls, *operands, **attrs)
        return out

    def reshape(self, v: Value, shape: Sequence[int]) -> Value:
        if has_dynamic(shape) or has_dynamic(self.shape(v)):
            # one ? dim can pass through as numpy's -1; more cannot be told apart
            target = tuple(-1 if type(d) is DynamicDim else int(d) for d in shape)
            if target.count(-1) > 1:
                raise UnsupportedOnnxError(
                    f"a reshape of {list(self.shape(v))} into {list(shape)} keeps more than one "
                    f"dynamic (?) dim; {STATIC_SHAPE_HINT}"
                )
            return self.emit(nn.ReshapeOp, v, newshape=target)
        if tuple(shape) == self.shape(v):
            return v
        return self.emit(nn.ReshapeOp, v, newshape=tuple(int(d) for d in shape))

    def scalar_like(self, value: float, like: Value) -> Array:
        return np.asarray(value, dtype=self.dtype(like))

    # ---- the graph ----------------------------------------------------------------
    def _input_type(self, vi: Any) -> tuple[tuple[int, ...], np.dtype[Any]]:
        name = vi.name
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise UnsupportedOnnxError(f"graph input '{name}' is not a tensor")
        try:
            dtype = proto_module.np_dtype(tt.elem_type)
        except Exception:
            dtype = None
        if dtype not in VALUE_DTYPES:
            tname = proto_module.dtype_name(tt.elem_type)
            raise UnsupportedOnnxError(
                f"graph input '{name}' has element type {tname}, which nn has no element type for"
            )
        shape, dtype = self._input_shape(vi, name, tt, dtype)
        try:
            nn.check_shape(nn.tensor(shape, nn.element_type_of(dtype)))
        except (VerifyException, ValueError) as e:
            raise OnnxImportError(f"graph input '{name}': {e}") from None
        return shape, dtype

    def _input_shape(
        self, vi: Any, name: str, tt: Any, dtype: Any
    ) -> tuple[tuple[int, ...], np.dtype[Any]]:
        """The declared shape; a symbolic, `?` or negative (-1) dim is dynamic: `input_shapes`
        gives it a size, else it stays `?` (nn.DYNAMIC)."""
        declared: list[int | None] | None = None
        if tt.HasField("shape"):
            declared = [
                int(d.dim_value) if d.HasField("dim_value") and d.dim_value != -1 else None
                for d in tt.shape.dim
            ]
            bad = [d for d in declared if d is not None and d < 0]
            if bad:
                raise OnnxImportError(
                    f"graph input '{name}' declares the dim {bad[0]} ({_declared_text(tt)}): "
                    "a dim is non-negative, or -1, '?' or a name for a dynamic one"
                )
        if name in self.input_shapes:
            shape = tuple(int(d) for d in self.input_shapes[name])
            if declared is not None and (
                len(declared) != len(shape)
                or any(d is not None and d != s for d, s in zip(declared, shape, strict=False))
            ):
                raise OnnxImportError(
                    f"input_shapes gives '{name}' the shape {list(shape)}, but the model "
                    f"declares {_declared_text(tt)}"
                )
            if any(d < 0 for d in shape):
                raise OnnxImportError(
                    f"input_shapes gives '{name}' the shape {list(shape)}: it must be a static, "
                    "non-negative shape"
                )
            return shape, dtype
        if declared is None:
            raise OnnxImportError(
                f"graph input '{name}' has no declared shape; give it one with --input-shape "
                f"{name}=DxDx... (byoc-opt, byoc-run) or input_shapes={{'{name}': (...)}} "
                "(import_model, byoc.import_onnx)"
            )
        return tuple(nn.DYNAMIC if d is None else d for d in declared), dtype

    def run(self) -> ModuleOp:
        graph = self.model.graph
        if len(graph.sparse_initializer):
            raise UnsupportedOnnxError("sparse initializers are not supported")
        for init in graph.initializer:
            try:
                self.env[init.name] = proto_module.to_array(init)
            except (ValueError, TypeError) as e:  # data that does not fill its dims
                raise OnnxImportError(f"initializer '{init.name}' is malformed: {e}") from None
        unknown = set(self.bind_inputs) - {vi.name for vi in graph.input}
        if unknown:
            raise OnnxImportError(f"bind_inputs names unknown graph input(s) {sorted(unknown)}")
        inputs = [vi.name for vi in graph.input if vi.name not in self.env]
        unshaped = [n for n in self.input_shapes if n not in inputs]
        if unshaped:
            raise UnknownInputError(unshaped, inputs)

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

        self._used = _names_read(graph)
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
        arg_attrs = ArrayAttr([DictionaryAttr({"onnx.name": StringAttr(n)}) for n in arg_names])
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
        # nn ops of one signature (interned types, shared properties) verify once; the
        # emitted ones have the types `infer_types` gave them (`emit_all`), the constants
        # are `from_array`'s
        try:
            ChangeVerifier().verify(module, inferred=set(self.ops))
        except VerifyException as e:
            raise OnnxImportError(f"the imported module does not verify: {e}") from e
        return module

    def _check_output_dtype(self, vi: Any, value: SSAValue) -> None:
        elem = vi.type.tensor_type.elem_type
        if not elem:
            return
        want = proto_module.np_dtype(elem)
        got = self.dtype(value)
        if want != got:
            raise OnnxImportError(f"graph output '{vi.name}' is declared {want} but computes {got}")

    def _schema_version(self, op_type: str, domain: str) -> int:
        """The since_version of `op_type`'s schema at the model's opset, 0 if none (cached:
        looking a schema up costs more than converting most nodes)."""
        key = (op_type, domain)
        version = self._versions.get(key)
        if version is None:
            version = 0
            if domain in ("", "ai.onnx"):
                version = proto_module.schema_version(op_type, self.opset)
            self._versions[key] = version
        return version

    def _convert(self, proto: Any, index: int) -> None:
        domain = proto.domain or ""
        op_type = proto.op_type
        version = self._schema_version(op_type, domain)
        converter = CONVERTERS.get(op_type) if domain in ("", "ai.onnx") else None
        if converter is None or not version:
            label = node_label(proto, index, version)
            if converter is not None:
                raise OnnxImportError(
                    f"'{op_type}' does not exist in opset {self.opset} (the model's opset)",
                    node=label,
                )
            op = op_type if not domain else f"{domain}.{op_type}"
            raise UnsupportedOnnxError(
                f"unsupported ONNX op type '{op}' (node '{proto.name or index}'); "
                f"supported: {', '.join(sorted(SUPPORTED_OPS))}",
                node=label,
            )
        env = self.env
        input_names = list(proto.input)
        inputs: list[Value | None] = []
        for name in input_names:
            if not name:
                inputs.append(None)
            elif name in env:
                inputs.append(env[name])
            else:
                raise OnnxImportError(
                    f"input '{name}' is not defined before its use",
                    node=node_label(proto, index, version),
                )
        attributes = proto.attribute
        node = Node(
            proto,
            version,
            inputs,
            {a.name: proto_module.attribute_value(a) for a in attributes} if attributes else {},
            input_names,
        )
        try:
            outputs = list(converter(self, node))
        except OnnxImportError as e:
            e.node = e.node or node_label(proto, index, version)
            raise
        except VerifyException as e:
            raise OnnxImportError(str(e), node=node_label(proto, index, version)) from e
        for i, name in enumerate(proto.output):
            if not name or name not in self._used:
                continue  # an optional output nobody reads (Dropout's mask, MaxPool's indices)
            if i >= len(outputs) or outputs[i] is None:
                raise UnsupportedOnnxError(
                    f"output #{i} ('{name}') of {op_type} is not supported",
                    node=node_label(proto, index, version),
                )
            env[name] = outputs[i]  # type: ignore[assignment]


def _freeze(value: Any) -> Hashable | None:
    """A hashable key equal only for equal values of the same types (so 1, 1.0 and True,
    or 0.0 and -0.0, differ), or None for a value with no such key (an array)."""
    kind = type(value)
    if kind is int or kind is str or kind is bool or value is None:
        return (kind, value)
    if kind is float or isinstance(value, np.generic):
        return (kind, repr(value))
    if kind is tuple or kind is list:
        if all(type(v) is int for v in value):
            return (kind, tuple(value))
        items = tuple(_freeze(v) for v in value)
        return None if None in items else (kind, items)
    return None


def _declared_text(tt: Any) -> str:
    dims = [
        str(d.dim_value) if d.HasField("dim_value") else repr(d.dim_param or "?")
        for d in tt.shape.dim
    ]
    return "[" + ", ".join(dims) + "]"


def _ssa_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_$.-" else "_" for c in name)
    if not cleaned or cleaned[0].isdigit():
        cleaned = "v" + cleaned
    return cleaned


def _names_read(graph: Any) -> set[str]:
    """Every value name a node of `graph` or of its subgraphs (If/Loop/Scan bodies, which
    may read the outer scope) reads, and the graph's outputs."""
    names = {vi.name for vi in graph.output}
    for node in graph.node:
        names.update(node.input)
        for attr in node.attribute:
            kind = attr.type  # as `proto.attribute_value` reads it: an untyped graph is none
            if kind == _GRAPH:
                names |= _names_read(attr.g)
            elif kind == _GRAPHS:
                for sub in attr.graphs:
                    names |= _names_read(sub)
    return names


_GRAPH, _GRAPHS = 5, 10  # AttributeProto.AttributeType
