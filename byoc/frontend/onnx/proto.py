"""The ONNX protobuf layer the importer reads models through, without importing `onnx` itself.

Importing the `onnx` package costs about a second in a fresh process (its type table
imports ml_dtypes, whose extension registers hundreds of numpy ufunc loops, each a
linear search under numpy 2), while a tiny model imports in tens of milliseconds. So
the importer reads models with the generated protobuf module that ships inside the
`onnx` distribution (`onnx/onnx_ml_pb2.py`, loaded from its file: the same message
classes `onnx.ModelProto` and friends are, since protobuf interns them per descriptor),
converts tensors of numpy's own element types itself, and looks schema versions up
in `SINCE_VERSIONS`. It falls back to the `onnx` package, imported on demand, for what
is rare: external data, text formats, element types numpy lacks (bfloat16, float8,
int4, strings), models above the opset the table was made at, version conversion.
When `onnx` is already imported (the caller passed a ModelProto), it is used as is.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

import numpy as np

from byoc.frontend.onnx.errors import INSTALL_HINT, OnnxImportError, OnnxMissing

Array = np.ndarray[Any, Any]

_pb2: ModuleType | None = None
_NOT_IMPORTED: Any = object()


def require_onnx() -> Any:
    """The `onnx` package; `OnnxMissing`, saying how to install it, when it cannot be imported."""
    try:
        import onnx
    except ImportError as e:
        if e.name == "onnx":
            raise OnnxMissing(
                f"reading ONNX models needs the 'onnx' package ({INSTALL_HINT})"
            ) from None
        raise OnnxMissing(
            f"the 'onnx' package fails to load ({e}); reinstall it ({INSTALL_HINT})"
        ) from e
    return onnx


def pb2() -> ModuleType:
    """The ONNX message classes (`ModelProto`, `TensorProto`, ...): `onnx.onnx_ml_pb2`, loaded
    from the installed `onnx` distribution's file when the package is not imported yet."""
    global _pb2
    imported = sys.modules.get("onnx", _NOT_IMPORTED)
    if imported is None:  # `import onnx` is made to fail (sys.modules["onnx"] = None)
        require_onnx()
    if _pb2 is not None:
        return _pb2
    if imported is not _NOT_IMPORTED:
        _pb2 = imported.onnx_ml_pb2
        return _pb2
    spec = importlib.util.find_spec("onnx")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    if not folders:
        return require_onnx().onnx_ml_pb2  # not installed (OnnxMissing), or not a folder
    file_spec = importlib.util.spec_from_file_location(
        "byoc.frontend.onnx._onnx_ml_pb2", f"{folders[0]}/onnx_ml_pb2.py"
    )
    if file_spec is None or file_spec.loader is None:
        return require_onnx().onnx_ml_pb2
    module = importlib.util.module_from_spec(file_spec)
    try:
        file_spec.loader.exec_module(module)
    except Exception:  # a layout this loader does not know: the package's own import
        return require_onnx().onnx_ml_pb2
    _pb2 = module
    return module


def is_model_proto(value: Any) -> bool:
    """Whether `value` is an `onnx.ModelProto` (checked without importing `onnx`)."""
    onnx = sys.modules.get("onnx")
    return onnx is not None and isinstance(value, onnx.ModelProto)


# ---- element types ------------------------------------------------------------------

# TensorProto.DataType -> (numpy dtype, numpy dtype of the typed storage field, that field),
# for the element types numpy has natively. 16-bit and bool types travel in int32_data as
# bit patterns (see `to_array`); complex ones as pairs of reals.
_NATIVE: dict[int, tuple[np.dtype[Any], np.dtype[Any], str]] = {
    1: (np.dtype(np.float32), np.dtype(np.float32), "float_data"),
    2: (np.dtype(np.uint8), np.dtype(np.int32), "int32_data"),
    3: (np.dtype(np.int8), np.dtype(np.int32), "int32_data"),
    4: (np.dtype(np.uint16), np.dtype(np.int32), "int32_data"),
    5: (np.dtype(np.int16), np.dtype(np.int32), "int32_data"),
    6: (np.dtype(np.int32), np.dtype(np.int32), "int32_data"),
    7: (np.dtype(np.int64), np.dtype(np.int64), "int64_data"),
    9: (np.dtype(np.bool_), np.dtype(np.int32), "int32_data"),
    10: (np.dtype(np.float16), np.dtype(np.int32), "int32_data"),
    11: (np.dtype(np.float64), np.dtype(np.float64), "double_data"),
    12: (np.dtype(np.uint32), np.dtype(np.uint64), "uint64_data"),
    13: (np.dtype(np.uint64), np.dtype(np.uint64), "uint64_data"),
    14: (np.dtype(np.complex64), np.dtype(np.float32), "float_data"),
    15: (np.dtype(np.complex128), np.dtype(np.float64), "double_data"),
}
_BITS_16 = (4, 5, 10)  # UINT16, INT16, FLOAT16: the low 16 bits of each int32_data entry
_BOOL = 9
_COMPLEX = (14, 15)
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL


def np_dtype(elem_type: int) -> np.dtype[Any]:
    """The numpy dtype of a TensorProto.DataType (as `onnx.helper.tensor_dtype_to_np_dtype`);
    a KeyError for an unknown code."""
    native = _NATIVE.get(elem_type)
    if native is not None:
        return native[0]
    from onnx import helper

    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def dtype_name(elem_type: int) -> str:
    """`FLOAT`, `BFLOAT16`, ...: the TensorProto.DataType's name."""
    return str(pb2().TensorProto.DataType.Name(elem_type))


def to_array(tensor: Any) -> Array:
    """A TensorProto's value as a numpy array (as `onnx.numpy_helper.to_array`).

    `raw_data` becomes an array over the bytes (`np.frombuffer`: one copy-free view, no
    per-element work); the typed fields are converted in bulk."""
    code = tensor.data_type
    native = _NATIVE.get(code)
    if native is None or tensor.data_location == _EXTERNAL or tensor.HasField("segment"):
        from onnx import numpy_helper

        return np.asarray(numpy_helper.to_array(tensor))
    dtype, storage, field = native
    dims = tuple(tensor.dims)
    if tensor.HasField("raw_data"):
        return np.frombuffer(tensor.raw_data, dtype=dtype.newbyteorder("<")).reshape(dims)
    data = getattr(tensor, field)
    if code in _BITS_16:
        bits = np.array(data, dtype=np.int32).view(np.uint32).astype(np.uint16)
        return bits.reshape(dims).view(dtype)
    if code == _BOOL:
        return (
            np.array(data, dtype=np.int32)
            .view(np.uint32)
            .astype(np.uint8)
            .view(dtype)
            .reshape(dims)
        )
    if code in _COMPLEX:
        return np.array(data, dtype=storage).view(dtype).reshape(dims)
    return np.asarray(data, dtype=storage).astype(dtype).reshape(dims)


def checked_array(tensor: Any, what: str) -> Array:
    """`to_array`, with data that does not fill the tensor's dims (or another malformed
    payload) an `OnnxImportError` naming `what` (`Constant's value`), not a ValueError."""
    try:
        return to_array(tensor)
    except (ValueError, TypeError) as e:
        raise OnnxImportError(f"{what} is malformed: {e}") from None


# ---- attributes -----------------------------------------------------------------------

_SCALAR_FIELDS = {1: "f", 2: "i", 3: "s", 4: "t", 5: "g", 11: "sparse_tensor", 13: "tp"}
_LIST_FIELDS = {
    6: "floats", 7: "ints", 8: "strings", 9: "tensors", 10: "graphs",
    12: "sparse_tensors", 14: "type_protos",
}  # fmt: skip


def attribute_value(attr: Any) -> Any:
    """An AttributeProto's value (as `onnx.helper.get_attribute_value`)."""
    if attr.ref_attr_name:
        raise ValueError(f"Cannot get value of reference attribute: {attr}")
    kind = attr.type
    scalar = _SCALAR_FIELDS.get(kind)
    if scalar is not None:
        return getattr(attr, scalar)
    many = _LIST_FIELDS.get(kind)
    if many is not None:
        return list(getattr(attr, many))
    if kind == 0:
        return None
    raise ValueError(f"Unsupported ONNX attribute: {attr}")


# ---- schema versions -----------------------------------------------------------------


def schema_version(op_type: str, opset: int) -> int:
    """The since_version of the default-domain schema of `op_type` in effect at `opset`, 0 when
    the op does not exist there (as `onnx.defs.get_schema(op_type, opset, "").since_version`)."""
    if opset > SINCE_VERSIONS_OPSET:
        from onnx import defs

        try:
            return int(defs.get_schema(op_type, opset, "").since_version)
        except Exception:
            return 0
    return max((v for v in SINCE_VERSIONS.get(op_type, ()) if v <= opset), default=0)


SINCE_VERSIONS_OPSET = 28
"""The highest opset `SINCE_VERSIONS` knows (onnx.defs.onnx_opset_version() when it was made);
tests/frontend/test_onnx_proto.py checks it against the installed onnx."""

# fmt: off
SINCE_VERSIONS: dict[str, tuple[int, ...]] = {
    "Abs": (1, 6, 13), "Acos": (7, 22), "Acosh": (9, 22), "Add": (1, 6, 7, 13, 14),
    "AffineGrid": (20,), "And": (1, 7), "ArgMax": (1, 11, 12, 13), "ArgMin": (1, 11, 12, 13),
    "Asin": (7, 22), "Asinh": (9, 22), "Atan": (7, 22), "Atanh": (9, 22),
    "Attention": (23, 24, 25), "AveragePool": (1, 7, 10, 11, 19, 22),
    "BatchNormalization": (1, 6, 7, 9, 14, 15), "Bernoulli": (15, 22), "BitCast": (26,),
    "BitShift": (11, 28), "BitwiseAnd": (18,), "BitwiseNot": (18,), "BitwiseOr": (18,),
    "BitwiseXor": (18,), "BlackmanWindow": (17,), "Cast": (1, 6, 9, 13, 19, 21, 23, 24, 25, 28),
    "CastLike": (15, 19, 21, 23, 24, 25), "CausalConvWithState": (27,), "Ceil": (1, 6, 13),
    "Celu": (12, 28), "CenterCropPad": (18,), "Clip": (1, 6, 11, 12, 13), "Col2Im": (18,),
    "Compress": (9, 11, 28), "Concat": (1, 4, 11, 13), "ConcatFromSequence": (11,),
    "Constant": (1, 9, 11, 12, 13, 19, 21, 23, 24, 25), "ConstantOfShape": (9, 20, 21, 23, 24, 25),
    "Conv": (1, 11, 22), "ConvInteger": (10,), "ConvTranspose": (1, 11, 22), "Cos": (7, 22),
    "Cosh": (9, 22), "CumProd": (26,), "CumSum": (11, 14), "DFT": (17, 20), "DeformConv": (19, 22),
    "DepthToSpace": (1, 11, 13, 28), "DequantizeLinear": (10, 13, 19, 21, 23, 24, 25, 28),
    "Det": (11, 22), "Div": (1, 6, 7, 13, 14), "Dropout": (1, 6, 7, 10, 12, 13, 22),
    "DynamicQuantizeLinear": (11,), "Einsum": (12, 28), "Elu": (1, 6, 22),
    "Equal": (1, 7, 11, 13, 19), "Erf": (9, 13), "Exp": (1, 6, 13), "Expand": (8, 13),
    "EyeLike": (9, 22), "Flatten": (1, 9, 11, 13, 21, 23, 24, 25), "Floor": (1, 6, 13),
    "GRU": (1, 3, 7, 14, 22), "Gather": (1, 11, 13), "GatherElements": (11, 13),
    "GatherND": (11, 12, 13), "Gelu": (20,), "Gemm": (1, 6, 7, 9, 11, 13),
    "GlobalAveragePool": (1, 22), "GlobalLpPool": (1, 2, 22), "GlobalMaxPool": (1, 22),
    "Greater": (1, 7, 9, 13), "GreaterOrEqual": (12, 16), "GridSample": (16, 20, 22),
    "GroupNormalization": (18, 21), "HammingWindow": (17,), "HannWindow": (17,),
    "HardSigmoid": (1, 6, 22), "HardSwish": (14, 22), "Hardmax": (1, 11, 13),
    "Identity": (1, 13, 14, 16, 19, 21, 23, 24, 25), "If": (1, 11, 13, 16, 19, 21, 23, 24, 25),
    "ImageDecoder": (20,), "InstanceNormalization": (1, 6, 22), "IsInf": (10, 20),
    "IsNaN": (9, 13, 20), "LRN": (1, 13), "LSTM": (1, 7, 14, 22), "LayerNormalization": (17,),
    "LeakyRelu": (1, 6, 16), "Less": (1, 7, 9, 13), "LessOrEqual": (12, 16),
    "LinearAttention": (27,), "Log": (1, 6, 13), "LogSoftmax": (1, 11, 13),
    "Loop": (1, 11, 13, 16, 19, 21, 23, 24, 25), "LpNormalization": (1, 22),
    "LpPool": (1, 2, 11, 18, 22), "MatMul": (1, 9, 13), "MatMulInteger": (10,),
    "Max": (1, 6, 8, 12, 13), "MaxPool": (1, 8, 10, 11, 12, 22), "MaxRoiPool": (1, 22),
    "MaxUnpool": (9, 11, 22), "Mean": (1, 6, 8, 13), "MeanVarianceNormalization": (9, 13),
    "MelWeightMatrix": (17,), "Min": (1, 6, 8, 12, 13), "Mish": (18, 22), "Mod": (10, 13, 28),
    "Mul": (1, 6, 7, 13, 14), "Multinomial": (7, 22), "Neg": (1, 6, 13),
    "NegativeLogLikelihoodLoss": (12, 13, 22), "NonMaxSuppression": (10, 11), "NonZero": (9, 13),
    "Not": (1,), "OneHot": (9, 11, 28), "Optional": (15, 28), "OptionalGetElement": (15, 18, 28),
    "OptionalHasElement": (15, 18, 28), "Or": (1, 7), "PRelu": (1, 6, 7, 9, 16),
    "Pad": (1, 2, 11, 13, 18, 19, 21, 23, 24, 25), "Pow": (1, 7, 12, 13, 15), "QLinearConv": (10,),
    "QLinearMatMul": (10, 21), "QuantizeLinear": (10, 13, 19, 21, 23, 24, 25, 28),
    "RMSNormalization": (23,), "RNN": (1, 7, 14, 22), "RandomNormal": (1, 22),
    "RandomNormalLike": (1, 22), "RandomUniform": (1, 22), "RandomUniformLike": (1, 22),
    "Range": (11, 27), "Reciprocal": (1, 6, 13), "ReduceL1": (1, 11, 13, 18),
    "ReduceL2": (1, 11, 13, 18), "ReduceLogSum": (1, 11, 13, 18, 28),
    "ReduceLogSumExp": (1, 11, 13, 18, 28), "ReduceMax": (1, 11, 12, 13, 18, 20),
    "ReduceMean": (1, 11, 13, 18), "ReduceMin": (1, 11, 12, 13, 18, 20),
    "ReduceProd": (1, 11, 13, 18), "ReduceSum": (1, 11, 13), "ReduceSumSquare": (1, 11, 13, 18),
    "RegexFullMatch": (20,), "Relu": (1, 6, 13, 14), "Reshape": (1, 5, 13, 14, 19, 21, 23, 24, 25),
    "Resize": (10, 11, 13, 18, 19), "ReverseSequence": (10, 28), "RoiAlign": (10, 16, 22),
    "RotaryEmbedding": (23,), "Round": (11, 22), "STFT": (17,),
    "Scan": (8, 9, 11, 16, 19, 21, 23, 24, 25), "Scatter": (9, 11),
    "ScatterElements": (11, 13, 16, 18), "ScatterND": (11, 13, 16, 18), "Selu": (1, 6, 22),
    "SequenceAt": (11,), "SequenceConstruct": (11,), "SequenceEmpty": (11,),
    "SequenceErase": (11,), "SequenceInsert": (11,), "SequenceLength": (11,), "SequenceMap": (17,),
    "Shape": (1, 13, 15, 19, 21, 23, 24, 25), "Shrink": (9,), "Sigmoid": (1, 6, 13),
    "Sign": (9, 13), "Sin": (7, 22), "Sinh": (9, 22), "Size": (1, 13, 19, 21, 23, 24, 25),
    "Slice": (1, 10, 11, 13), "Softmax": (1, 11, 13), "SoftmaxCrossEntropyLoss": (12, 13),
    "Softplus": (1, 22), "Softsign": (1, 22), "SpaceToDepth": (1, 13, 28),
    "Split": (1, 2, 11, 13, 18), "SplitToSequence": (11, 24), "Sqrt": (1, 6, 13),
    "Squeeze": (1, 11, 13, 21, 23, 24, 25), "StringConcat": (20,), "StringNormalizer": (10,),
    "StringSplit": (20,), "Sub": (1, 6, 7, 13, 14), "Sum": (1, 6, 8, 13), "SwiGLU": (28,),
    "Swish": (24,), "Tan": (7, 22), "Tanh": (1, 6, 13), "TensorScatter": (24,),
    "TfIdfVectorizer": (9,), "ThresholdedRelu": (10, 22), "Tile": (1, 6, 13),
    "TopK": (1, 10, 11, 24), "Transpose": (1, 13, 21, 23, 24, 25), "Trilu": (14,),
    "Unique": (11, 28), "Unsqueeze": (1, 11, 13, 21, 23, 24, 25), "Upsample": (1, 7, 9, 10),
    "Where": (9, 16), "Xor": (1, 7),
}
# fmt: on
"""Every default-domain op of ONNX and the opsets at which its schema changed."""
