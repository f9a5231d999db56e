"""Layout, indexing, reduction and tensor-creating ATen ops."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

import byoc.frontend.torch.views as views
from byoc.dialects import nn
from byoc.dialects.nn import indexing, logic_ops, math_ops
from byoc.frontend.torch.base import (
    Call,
    Importer,
    Tensor,
    converts,
    int_list,
    is_sym,
    norm_dim,
    static,
)
from byoc.frontend.torch.errors import UnsupportedTorchError

# ---- shapes ------------------------------------------------------------------------------------


@converts("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.view_copy.default")
def _view(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    if isinstance(x, SSAValue) and (nn.DYNAMIC in imp.shape(x) or any(is_sym(d) for d in call.out_shape)):
        y = views.view(imp, x, call.out_shape)
        if y is not None:
            return y
    source = imp.unflattened.get(x) if isinstance(x, SSAValue) else None
    try:
        return imp.reshape(x, call.out_shape)
    except (UnsupportedTorchError, VerifyException):
        if source is None:
            raise
        return imp.reshape(source, call.out_shape)  # from the value with the dims apart


@converts("aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default", "aten.unsqueeze.default")
def _squeeze(imp: Importer, call: Call) -> Tensor:
    return imp.reshape(call["self"], call.out_shape)


@converts("aten.permute.default")
def _permute(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    rank = imp.rank(x)
    axes = [norm_dim(d, rank) for d in int_list(call["dims"])]
    if axes == list(range(rank)):
        return x
    return _transposed(imp, x, axes)


def _transposed(imp: Importer, x: Tensor, axes: list[int]) -> Tensor:
    """`x` with its dims permuted (and its factored value too, `views.permute`)."""
    y = imp.emit(nn.TransposeOp, x, axes=axes)
    if isinstance(x, SSAValue) and isinstance(y, SSAValue):
        views.permute(imp, x, y, axes)
    return y


@converts("aten.t.default", "aten.transpose.int", "aten.numpy_T.default")
def _transpose(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    rank = imp.rank(x)
    if rank < 2:
        return x
    a, b = (rank - 2, rank - 1) if call.op != "aten.transpose.int" else (norm_dim(call["dim0"], rank), norm_dim(call["dim1"], rank))
    axes = list(range(rank))
    axes[a], axes[b] = axes[b], axes[a]
    return _transposed(imp, x, axes)


@converts("aten.expand.default", "aten.expand_copy.default")
def _expand(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    out = call.out_shape
    src = imp.shape(x)
    if tuple(nn.DYNAMIC if is_sym(d) else d for d in out) == src:
        return x  # `?` dims stay where they are
    lead = len(out) - len(src)
    target: list[int] = []
    grow: list[int] = []  # axes that take a dynamic size the input does not have
    for i, d in enumerate(out):
        if is_sym(d) and (i < lead or src[i - lead] != nn.DYNAMIC):
            grow.append(i)
        target.append(1 if is_sym(d) else int(d))
    y = x if tuple(target) == src else imp.emit(math_ops.BroadcastToOp, x, shape=target)
    for i in grow:  # where(all-true mask of that size, y, y) broadcasts y to it
        mask = imp.carrier(out[i], len(out), i)
        if mask is None:
            raise UnsupportedTorchError(
                f"expanding to the dynamic size {out[i]!r}, which no input has as a dim, is not supported"
            )
        y = imp.emit(logic_ops.WhereOp, mask, y, y)
    return y


@converts("aten.repeat.default")
def _repeat(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    reps = int_list(call["repeats"])
    shape = imp.shape(x)
    if len(reps) > len(shape):
        x = imp.reshape(x, (1,) * (len(reps) - len(shape)) + shape)
    return imp.emit(math_ops.TileOp, x, reps=reps)


@converts("aten.cat.default", "aten.concat.default")
def _cat(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    parts = [imp.cast(t, dt) for t in call["tensors"]]
    rank = max(imp.rank(t) for t in parts)
    # PyTorch skips 1-D empty tensors in a cat of higher-rank ones
    parts = [t for t in parts if not (imp.rank(t) == 1 and imp.shape(t)[0] == 0 and rank > 1)]
    if len(parts) == 1:
        return parts[0]
    return imp.emit(nn.ConcatenateOp, *parts, axis=norm_dim(int(call.get("dim", 0)), rank))


@converts("aten.split_with_sizes.default", "aten.split.Tensor", "aten.split_with_sizes_copy.default", "aten.unbind.int")
def _split(imp: Importer, call: Call) -> list[Tensor]:
    x = call["self"]
    rank = imp.rank(x)
    axis = norm_dim(int(call.get("dim", 0)), rank)
    size = static(imp.shape(x)[axis], "split dim")
    if call.op == "aten.unbind.int":
        return [imp.emit(nn.TakeOp, x, np.asarray(i, np.int64), axis=axis) for i in range(size)]
    if call.op == "aten.split.Tensor":
        step = int(call["split_size"])
        sizes = [min(step, size - s) for s in range(0, size, step)] or [0]
    else:
        sizes = int_list(call["split_sizes"])
    bounds = np.cumsum(sizes)[:-1].tolist()
    if not bounds:
        return [x]
    return imp.emit_all(nn.SplitOp, x, indices=bounds, axis=axis)


# ---- slicing and indexing ----------------------------------------------------------------------


def _resolve(v: Any, size: int, default: int) -> int:
    if v is None:
        return default
    v = int(v)
    if v < 0:
        v += size
    return min(max(v, 0), size)


@converts("aten.slice.Tensor", "aten.slice_copy.Tensor", "aten.narrow.default")
def _slice(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    shape = imp.shape(x)
    axis = norm_dim(int(call.get("dim", 0)), len(shape))
    if call.op == "aten.narrow.default":
        start, end, step = int(call["start"]), int(call["start"]) + int(call["length"]), 1
    else:
        start, end, step = call.get("start"), call.get("end"), int(call.get("step", 1))
    if is_sym(start) or is_sym(end):
        raise UnsupportedTorchError("a slice with a dynamic bound is not supported")
    if shape[axis] == nn.DYNAMIC:
        if start in (None, 0) and (end is None or int(end) >= 2**62) and step == 1:
            return x
        raise UnsupportedTorchError("slicing a dynamic dim is not supported")
    size = shape[axis]
    lo, hi = _resolve(start, size, 0), _resolve(end, size, size)
    hi = max(hi, lo)
    if (lo, hi, step) == (0, size, 1):
        return x
    begin = [0] * len(shape)
    stop = [size if i == axis else (d if d != nn.DYNAMIC else 0) for i, d in enumerate(shape)]
    strides = [1] * len(shape)
    if any(d == nn.DYNAMIC for d in shape):
        raise UnsupportedTorchError("slicing a tensor with dynamic dims is not supported")
    begin[axis], stop[axis], strides[axis] = lo, hi, step
    return imp.emit(nn.StridedSliceOp, x, begin=begin, end=stop, strides=strides)


@converts("aten.select.int", "aten.select_copy.int")
def _select(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    shape = imp.shape(x)
    axis = norm_dim(int(call["dim"]), len(shape))
    index = int(call["index"])
    if index < 0:
        index += static(shape[axis], "selected dim")
    return imp.emit(nn.TakeOp, x, np.asarray(index, np.int64), axis=axis)


@converts("aten.flip.default")
def _flip(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    shape = [static(d, "flipped tensor's size") for d in imp.shape(x)]
    dims = {norm_dim(d, len(shape)) for d in int_list(call["dims"])}
    begin = [d - 1 if i in dims else 0 for i, d in enumerate(shape)]
    end = [-1 if i in dims else d for i, d in enumerate(shape)]
    strides = [-1 if i in dims else 1 for i in range(len(shape))]
    return imp.emit(nn.StridedSliceOp, x, begin=begin, end=end, strides=strides)


@converts("aten.roll.default")
def _roll(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    shifts, dims = int_list(call["shifts"]), int_list(call.get("dims"))
    shape = [static(d, "rolled tensor's size") for d in imp.shape(x)]
    if not dims:
        flat = imp.reshape(x, (int(np.prod(shape)),))
        return imp.reshape(_roll_axis(imp, flat, shifts[0], 0, [int(np.prod(shape))]), shape)
    for shift, d in zip(shifts, dims, strict=True):
        x = _roll_axis(imp, x, shift, norm_dim(d, len(shape)), shape)
    return x


def _roll_axis(imp: Importer, x: Tensor, shift: int, axis: int, shape: list[int]) -> Tensor:
    size = shape[axis]
    shift %= size
    if shift == 0:
        return x
    head, tail = imp.emit_all(nn.SplitOp, x, indices=[size - shift], axis=axis)
    return imp.emit(nn.ConcatenateOp, tail, head, axis=axis)


def _index_values(imp: Importer, idx: Tensor, size: int) -> Tensor:
    """Indices as i64 with negative ones counted from the end (where they may be negative)."""
    if imp.dtype(idx) == np.bool_:
        raise UnsupportedTorchError("indexing with a boolean mask (a data-dependent shape) is not supported")
    idx = imp.cast(idx, np.int64)
    if not isinstance(idx, SSAValue):
        return np.where(idx < 0, idx + size, idx)
    negative = imp.emit(logic_ops.LessOp, idx, np.asarray(0, np.int64))
    return imp.emit(logic_ops.WhereOp, negative, imp.emit(nn.AddOp, idx, np.asarray(size, np.int64)), idx)


@converts("aten.index.Tensor", "aten._unsafe_index.Tensor")
def _index(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    indices = list(call["indices"])
    shape = imp.shape(x)
    used = [i for i, v in enumerate(indices) if v is not None]
    if not used:
        return x
    first, last = used[0], used[-1]
    if used != list(range(first, last + 1)):
        raise UnsupportedTorchError("advanced indexing with non-adjacent index tensors is not supported")
    if len(used) == 1:
        return imp.emit(nn.TakeOp, x, indices[first], axis=first)
    sizes = [static(shape[i], "indexed dim") for i in used]
    flat: Tensor | None = None
    for i, size in zip(used, sizes, strict=True):
        idx = _index_values(imp, indices[i], size)
        flat = idx if flat is None else imp.emit(nn.AddOp, imp.emit(nn.MultiplyOp, flat, np.asarray(size, np.int64)), idx)
    assert flat is not None
    merged = imp.reshape(x, (*shape[:first], int(np.prod(sizes)), *shape[last + 1 :]))
    return imp.emit(nn.TakeOp, merged, flat, axis=first)


@converts("aten.index_select.default")
def _index_select(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    return imp.emit(nn.TakeOp, x, call["index"], axis=norm_dim(int(call["dim"]), imp.rank(x)))


@converts("aten.gather.default")
def _gather(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    return imp.emit(indexing.GatherElementsOp, x, call["index"], axis=norm_dim(int(call["dim"]), imp.rank(x)))


@converts("aten.tril.default", "aten.triu.default")
def _tril(imp: Importer, call: Call) -> Tensor:
    return imp.emit(indexing.TriluOp, call["self"], k=int(call.get("diagonal", 0)), upper=call.op == "aten.triu.default")


# ---- reductions ----------------------------------------------------------------------------


def _axes(imp: Importer, x: Tensor, dim: Any) -> tuple[int, ...]:
    rank = imp.rank(x)
    return tuple(sorted(norm_dim(d, rank) for d in int_list(dim)))


def _reduce(imp: Importer, call: Call, cls: type[nn.NNOp], x: Tensor, dim: Any) -> Tensor:
    axes = _axes(imp, x, dim)
    keep = bool(call.get("keepdim", False))
    if imp.rank(x) == 0:
        return x
    return imp.emit(cls, x, axes=axes, keepdims=keep)


_IN_RESULT_TYPE: dict[str, type[nn.NNOp]] = {
    "aten.mean.dim": nn.ReduceMeanOp,
    "aten.mean.default": nn.ReduceMeanOp,
    "aten.sum.dim_IntList": nn.ReduceSumOp,
    "aten.sum.default": nn.ReduceSumOp,
    "aten.prod.dim_int": math_ops.ReduceProdOp,
    "aten.prod.default": math_ops.ReduceProdOp,
}
"""The reductions computed in their result's element type (`dtype=`, or the promoted one)."""


@converts(*_IN_RESULT_TYPE)
def _reduce_in_result_type(imp: Importer, call: Call) -> Tensor:
    x = imp.cast(call["self"], call.out_dtype)
    return _reduce(imp, call, _IN_RESULT_TYPE[call.op], x, call.get("dim"))


@converts("aten.amax.default", "aten.max.default")
def _amax(imp: Importer, call: Call) -> Tensor:
    return _reduce(imp, call, nn.ReduceMaxOp, call["self"], call.get("dim"))


@converts("aten.amin.default", "aten.min.default")
def _amin(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    if imp.dtype(x) == np.bool_:
        y = _reduce(imp, call, math_ops.ReduceMinOp, imp.cast(x, np.int32), call.get("dim"))
        return imp.cast(y, np.bool_)
    return _reduce(imp, call, math_ops.ReduceMinOp, x, call.get("dim"))


def _truth(imp: Importer, x: Tensor) -> Tensor:
    """`x != 0` as a bool tensor (`x` itself when it is one)."""
    if imp.dtype(x) == np.bool_:
        return x
    return imp.emit(logic_ops.LogicalNotOp, imp.emit(logic_ops.EqualOp, x, np.zeros((), imp.dtype(x))))


@converts("aten.any.dim", "aten.any.dims", "aten.any.default")
def _any(imp: Importer, call: Call) -> Tensor:
    return _reduce(imp, call, nn.ReduceMaxOp, _truth(imp, call["self"]), call.get("dim"))


@converts("aten.all.dim", "aten.all.dims", "aten.all.default")
def _all(imp: Importer, call: Call) -> Tensor:
    x = imp.cast(_truth(imp, call["self"]), np.int32)
    return imp.cast(_reduce(imp, call, math_ops.ReduceMinOp, x, call.get("dim")), np.bool_)


def _arg(imp: Importer, call: Call, cls: type[nn.NNOp]) -> Tensor:
    x = call["self"]
    dim = call.get("dim")
    keep = bool(call.get("keepdim", False))
    if dim is None:
        x = imp.reshape(x, (-1,))
        dim, keep = 0, False
    return imp.emit(cls, x, axis=norm_dim(int(dim), imp.rank(x)), keepdims=keep)


@converts("aten.argmax.default")
def _argmax(imp: Importer, call: Call) -> Tensor:
    return _arg(imp, call, math_ops.ArgMaxOp)


@converts("aten.argmin.default")
def _argmin(imp: Importer, call: Call) -> Tensor:
    return _arg(imp, call, math_ops.ArgMinOp)


@converts("aten.max.dim", "aten.min.dim")
def _max_dim(imp: Importer, call: Call) -> tuple[Tensor, Tensor]:
    is_max = call.op == "aten.max.dim"
    values = _reduce(imp, call, nn.ReduceMaxOp if is_max else math_ops.ReduceMinOp, call["self"], call["dim"])
    return values, _arg(imp, call, math_ops.ArgMaxOp if is_max else math_ops.ArgMinOp)


@converts("aten.var.correction", "aten.std.correction", "aten.var_mean.correction", "aten.var.dim", "aten.std.dim")
def _var(imp: Importer, call: Call) -> Any:
    x = call["self"]
    axes = _axes(imp, x, call.get("dim")) or tuple(range(imp.rank(x)))
    n = int(np.prod([static(imp.shape(x)[a], "reduced size") for a in axes]))
    correction = call.get("correction")
    if correction is None:
        correction = 1 if call.get("unbiased", True) else 0
    keep = bool(call.get("keepdim", False))
    dt = imp.dtype(x)
    mean = imp.emit(nn.ReduceMeanOp, x, axes=axes, keepdims=True)
    diff = imp.emit(nn.SubtractOp, x, mean)
    var = imp.emit(nn.ReduceSumOp, imp.emit(nn.MultiplyOp, diff, diff), axes=axes, keepdims=keep)
    var = imp.emit(nn.DivideOp, var, np.asarray(max(n - float(correction), 0.0), dt))
    if call.op.startswith("aten.std"):
        return imp.emit(nn.SqrtOp, var)
    if call.op == "aten.var_mean.correction":
        return (var, mean if keep else imp.emit(nn.ReduceMeanOp, x, axes=axes, keepdims=False))
    return var


@converts("aten.logsumexp.default")
def _logsumexp(imp: Importer, call: Call) -> Tensor:
    return _reduce(imp, call, math_ops.ReduceLogSumExpOp, call["self"], call["dim"])


@converts("aten.linalg_vector_norm.default")
def _vector_norm(imp: Importer, call: Call) -> Tensor:
    order = float(call.get("ord", 2))
    classes = {1.0: math_ops.ReduceL1Op, 2.0: math_ops.ReduceL2Op}
    if order not in classes:
        raise UnsupportedTorchError(f"a vector norm of order {order} is not supported (1 and 2 are)")
    return _reduce(imp, call, classes[order], call["self"], call.get("dim"))


@converts("aten.cumsum.default", "aten.cumprod.default")
def _cumsum(imp: Importer, call: Call) -> Tensor:
    x = imp.cast(call["self"], call.out_dtype)
    cls = math_ops.CumSumOp if call.op == "aten.cumsum.default" else math_ops.CumProdOp
    return imp.emit(cls, x, axis=norm_dim(int(call["dim"]), imp.rank(x)))


@converts("aten.topk.default")
def _topk(imp: Importer, call: Call) -> tuple[Tensor, ...]:
    x = call["self"]
    values, indices = imp.emit_all(
        math_ops.TopKOp, x, k=int(call["k"]), axis=norm_dim(int(call.get("dim", -1)), imp.rank(x)),
        largest=bool(call.get("largest", True)),
    )
    return values, indices


# ---- tensors made from sizes and values ----------------------------------------------------


def _static_shape(call: Call) -> tuple[int, ...]:
    return tuple(static(d, "size of a created tensor") for d in call.out_shape)


@converts("aten.arange.start_step", "aten.arange.default", "aten.arange.start")
def _arange(imp: Importer, call: Call) -> Tensor:
    start, end, step = call.get("start", 0), call["end"], call.get("step", 1)
    if any(is_sym(v) for v in (start, end, step)):
        raise UnsupportedTorchError("an arange with a dynamic bound is not supported")
    out = np.arange(start, end, step, dtype=np.float64 if call.out_dtype.kind == "f" else np.int64)
    return out.astype(call.out_dtype)


@converts("aten.full.default", "aten.zeros.default", "aten.ones.default", "aten.empty.memory_format", "aten.empty_strided.default", "aten.new_full.default", "aten.new_zeros.default", "aten.new_ones.default", "aten.new_empty.default", "aten.new_empty_strided.default")
def _full(imp: Importer, call: Call) -> Tensor:
    fill = call.get("fill_value", 1 if "ones" in call.op else 0)
    return np.full(_static_shape(call), fill, dtype=call.out_dtype)


@converts("aten.full_like.default", "aten.zeros_like.default", "aten.ones_like.default", "aten.empty_like.default", "aten.fill.Scalar")
def _full_like(imp: Importer, call: Call) -> Tensor:
    fill = call.get("fill_value", call.get("value", 1 if "ones" in call.op else 0))
    x = call["self"]
    dt = call.out_dtype
    if any(is_sym(d) for d in call.out_shape):
        # a dynamic shape: a `where` on a mask of x's shape broadcasts the value to it
        true = np.ones((), np.bool_)
        same = imp.emit(logic_ops.LogicalOrOp, imp.emit(logic_ops.EqualOp, x, x), true)
        v = np.asarray(fill, dt)
        return imp.emit(logic_ops.WhereOp, same, v, v)
    return np.full(_static_shape(call), fill, dtype=dt)


@converts("aten.scalar_tensor.default")
def _scalar_tensor(imp: Importer, call: Call) -> Tensor:
    return np.asarray(call["s"], dtype=call.out_dtype)


@converts("aten.copy.default")
def _copy(imp: Importer, call: Call) -> Tensor:
    src = imp.cast(call["src"], call.out_dtype)
    target = _static_shape(call)
    if imp.shape(src) == target:
        return src
    return imp.emit(math_ops.BroadcastToOp, src, shape=target)
