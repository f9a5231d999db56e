"""lower-to-c's side graph: a partition function as tensor values (`Tensor`) and the
computations on them (`Computation`): loops for elementwise ops, kernel calls, copies."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from byoc.diagnostics import PassError
from byoc.dialects import c, nn
from byoc.dialects.byoc import CompositeOp, YieldOp, partition_target
from byoc.targets.ccompiler import (
    ALIAS_OPS,
    ALL,
    POINTWISE_OPS,
    VIEW_OPS,
    dtype_name,
    einsum_as_matmul,
    unsupported_reason,
)
from byoc.targets.ccompiler import NAME as CCOMPILER
from byoc.targets.qdq import COMPOSITES as QDQ_COMPOSITES

CompositeLowering = Callable[["GraphBuilder", CompositeOp, Sequence["Tensor"]], list["Tensor"]]
"""A target's lower-to-c hook: adds a composite's nodes to the graph, returns its results."""


@dataclass(eq=False)
class Tensor:
    """A tensor value of the partition."""

    shape: tuple[int, ...]
    dtype: str
    kind: str
    """'input', 'const' or 'node' (computed by a node, or an alias of another value)."""
    arg: int = -1
    array: np.ndarray[Any, Any] | None = None
    node: Computation | None = None
    alias_of: Tensor | None = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize

    @property
    def itemsize(self) -> int:
        t = nn.element_type_named(self.dtype)
        return nn.numpy_dtype(t).itemsize if t is not None else 4

    def root(self) -> Tensor:
        v = self
        while v.alias_of is not None:
            v = v.alias_of
        return v


@dataclass(frozen=True)
class Gather:
    """The data-dependent part of a `View`: the value the node reads from its input
    #`operand` (an i32/i64 index), a negative one counted from the end and then clamped into
    [0, dim) as nn.take does, times `stride`. Clamping keeps every read inside the operand."""

    operand: int
    dim: int
    stride: int


@dataclass(frozen=True)
class View:
    """How a pointwise node reads an input over its output's index space: the element at
    `offset` + sum(index[d] * strides[d]) (+ the `gather` term) of the input's storage.
    A stride may be 0 (a broadcast) or negative (a reversed slice); offsets are int64."""

    offset: int
    strides: tuple[int, ...]
    gather: Gather | None = None


def read_view(view: tuple[int, ...] | View, shape: tuple[int, ...]) -> View:
    """`view` as a `View` over `shape`: a shape is read by numpy broadcasting against it."""
    if isinstance(view, View):
        return view
    padded = (1,) * (len(shape) - len(view)) + tuple(view)
    strides = contiguous_strides(padded)
    return View(0, tuple(0 if padded[d] == 1 else strides[d] for d in range(len(shape))))


def reads_whole(view: tuple[int, ...] | View, shape: tuple[int, ...]) -> bool:
    """Whether `view` reads a value of `shape` element for element (a fused producer can
    hand the consumer its scalar)."""
    return not isinstance(view, View) and tuple(view) == tuple(shape)


@dataclass(eq=False)
class Computation:
    """One computation: an elementwise op (`pointwise`), a kernel call, a concatenation or a copy."""

    kind: str
    """'pointwise', 'kernel', 'concat' or 'copy'."""
    op_name: str
    inputs: list[Tensor]
    out: Tensor
    views: list[tuple[int, ...] | View] = field(default_factory=list[tuple[int, ...] | View])
    """pointwise: how each input is read: a shape (numpy broadcasting against out) or a
    strided `View` (slices, splits, gathers, tiles)."""
    params: dict[str, Any] = field(default_factory=dict[str, Any])
    callee: str = ""
    args: list[Attribute] = field(default_factory=list[Attribute])
    """kernel: the literal arguments after the pointers."""
    scratch: int = 0
    """kernel: floats of workspace it needs during the call (passed after the outputs)."""
    more_outs: list[Tensor] = field(default_factory=list[Tensor])
    """kernel: the results after `out` it also writes (passed after `out`)."""
    source: Operation | None = None
    index: int = 0


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def i64_attr(v: int) -> IntegerAttr[Any]:
    return c.int_attr(v, i64)


def i32_attr(v: int) -> IntegerAttr[Any]:
    return c.int_attr(v, i32)


def pool_window(pool: Operation, shape: Sequence[int]) -> list[int]:
    """The 14 ints a 2-D pooling kernel takes for `pool` on an NCHW input of `shape`:
    n, c, h, w, kernel h/w, output h/w, strides, top/left padding, dilations. A global pool
    is one window over the whole plane."""
    n, c, h, w = shape
    if pool.name.startswith("nn.global_"):
        return [n, c, h, w, h, w, 1, 1, 1, 1, 0, 0, 1, 1]
    a = pool.attr_values()  # type: ignore[attr-defined]
    _, _, oh, ow = nn.shape_of(pool.results[0].type)  # type: ignore[arg-type]
    kh, kw = a["pool_size"]
    sh, sw = a["strides"]
    pt, pl, _, _ = a["padding"]
    dh, dw = a["dilation"]
    return [n, c, h, w, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw]


def composite_members(
    g: GraphBuilder, composite: CompositeOp, inputs: Sequence[Tensor]
) -> tuple[dict[SSAValue, Tensor], list[Operation], YieldOp]:
    """A composite's body, for a target's lowering hook: its block arguments bound to
    `inputs` and its constants to graph constants (the values), the other ops in order, and
    its terminator."""
    body = composite.body.block
    values: dict[SSAValue, Tensor] = dict(zip(body.args, inputs, strict=True))
    members: list[Operation] = []
    for op in body.ops:
        if isinstance(op, YieldOp):
            break
        if isinstance(op, nn.ConstantOp):
            values[op.result] = g._const(op.ndarray())  # pyright: ignore[reportPrivateUsage]
        else:
            members.append(op)
    last = body.last_op
    assert isinstance(last, YieldOp)
    return values, members, last


def i64_array(values: Sequence[int] | np.ndarray[Any, Any]) -> DenseArrayBase[Any]:
    """`DenseArrayBase.from_list(i64, values)`, packed by numpy: the same little-endian
    int64 bytes without a range check per value in Python (a resize table holds thousands);
    a value outside int64 raises OverflowError here."""
    data = np.asarray(values, dtype=np.int64).astype("<i8", copy=False)
    return DenseArrayBase(i64, BytesAttr(data.tobytes()))


class GraphBuilder:
    """Turns the body of a partition function into Tensors and Computations.

    Composites of ccompiler, and of the partition's own target when it has no
    `lower_composite` hook, are inlined (and fused like any op); with a hook,
    each composite of the partition's target is handed to it (cblas); any other
    composite is an error.
    """

    def __init__(self, fn: func.FuncOp, lower_composite: CompositeLowering | None = None):
        self.fn = fn
        self.target = partition_target(fn) or CCOMPILER
        self.lower_composite = lower_composite
        self.values: dict[SSAValue, Tensor] = {}
        self.nodes: list[Computation] = []
        self.inputs: list[Tensor] = []
        self.outputs: list[Tensor] = []

    def build(self) -> None:
        block = self.fn.body.block
        for i, arg in enumerate(block.args):
            t = arg.type
            shape = tuple(t.get_shape()) if isinstance(t, TensorType) else ()
            dtype = dtype_name(t.element_type) if isinstance(t, TensorType) else str(t)
            v = Tensor(shape, dtype, "input", arg=i)
            self.values[arg] = v
            self.inputs.append(v)
        self._walk(block)  # an op on an unsupported type is reported at the op
        for i, (arg, v) in enumerate(zip(block.args, self.inputs, strict=True)):
            if v.dtype not in ALL or any(d <= 0 for d in v.shape):
                raise PassError(
                    self.fn,
                    f"lower-to-c: argument #{i} of '@{self.fn.sym_name.data}' has type {arg.type}; "
                    f"the C codegen takes {', '.join(ALL)} tensors of static, non-empty shape",
                )

    def _walk(self, block: Block) -> None:
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                self.outputs = [self.values[v] for v in op.arguments]
            elif isinstance(op, YieldOp):
                return
            elif isinstance(op, CompositeOp):
                if not self._inlined(op):
                    self._target_composite(op)
                    continue
                body = op.body.block
                for arg, operand in zip(body.args, op.args, strict=True):
                    self.values[arg] = self.values[operand]
                self._walk(body)
                last = body.last_op
                assert isinstance(last, YieldOp)
                for res, val in zip(op.res, last.values, strict=True):
                    self.values[res] = self.values[val]
            elif isinstance(op, nn.NNOp):
                reason = unsupported_reason(op)
                if reason is not None:
                    raise PassError(op, f"lower-to-c: {reason}")
                self._add(op)
            else:
                raise PassError(
                    op, f"lower-to-c: '{op.name}' cannot appear in a {self.target} partition"
                )

    def _inlined(self, op: CompositeOp) -> bool:
        """Whether the composite's body is lowered op by op: a ccompiler composite, or one of
        the partition's own target when that target has no composite hook."""
        own = op.target_name == self.target and self.lower_composite is None
        if (
            op.target_name == CCOMPILER == self.target
            and self.lower_composite is not None
            and op.composite.data.rpartition(".")[2] in QDQ_COMPOSITES
        ):
            return False  # ccompiler's quantized composites go to its hook
        return op.target_name == CCOMPILER or own

    def _target_composite(self, op: CompositeOp) -> None:
        """A composite of the partition's own target, lowered by the target's hook: it adds
        the nodes and returns the results."""
        if self.lower_composite is None or op.target_name != self.target:
            raise PassError(
                op,
                f"lower-to-c: composite '{op.composite.data}' belongs to target "
                f"'{op.target_name}', not {self.target}",
            )
        results = self.lower_composite(self, op, [self.values[v] for v in op.args])
        for res, value in zip(op.res, results, strict=True):
            self.values[res] = value

    # ---- one nn op ---------------------------------------------------------------
    def _result(self, op: nn.NNOp, i: int = 0) -> Tensor:
        t = op.results[i].type
        assert isinstance(t, TensorType)
        return Tensor(tuple(t.get_shape()), dtype_name(t.element_type), "node")

    def _const(self, array: np.ndarray[Any, Any]) -> Tensor:
        arr = np.ascontiguousarray(array)
        return Tensor(tuple(arr.shape), dtype_name(nn.element_type_of(arr.dtype)), "const", array=arr)

    def _add(self, op: nn.NNOp) -> None:
        name = op.name
        if isinstance(op, nn.ConstantOp):
            self.values[op.result] = self._const(op.ndarray())
            return
        ins = [self.values[v] for v in op.operands]
        attrs = op.attr_values()
        if all(v.kind == "const" for v in ins) and all(
            nn.nbytes_of(t) <= nn.FOLD_LIMIT_BYTES for t in op.result_types  # type: ignore[arg-type]
        ):
            from byoc.interpreters.kernels import KERNELS

            out = KERNELS[name](*[v.array for v in ins], **attrs)
            folded = out if isinstance(out, tuple) else (out,)
            for res, arr in zip(op.results, folded, strict=True):
                self.values[res] = self._const(np.asarray(arr))
            return
        if name in VIEW_OPS:
            self._view(op, ins, attrs)
            return
        out = self._result(op)
        self.values[op.results[0]] = out
        if name in ALIAS_OPS or (name == "nn.cast" and ins[0].dtype == out.dtype):
            out.alias_of = ins[0]
            return
        if name in POINTWISE_OPS:
            self._pointwise(op, ins, out, attrs)
        else:
            self._kernel(op, ins, out, attrs)

    def _node(self, node: Computation) -> None:
        node.index = len(self.nodes)
        node.out.node = node
        for v in node.more_outs:
            v.node = node
        self.nodes.append(node)

    def _pointwise(self, op: nn.NNOp, ins: list[Tensor], out: Tensor, attrs: dict[str, Any]) -> None:
        name = op.name
        rank = len(out.shape)
        views = [v.shape for v in ins]
        params = dict(attrs)
        if name in ("nn.bias_add", "nn.batch_norm"):
            axis = attrs["axis"] % rank
            channel = lambda v: (v.shape[0],) + (1,) * (rank - axis - 1)  # noqa: E731
            views = [ins[0].shape] + [channel(v) for v in ins[1:]]
            if name == "nn.batch_norm" and all(v.kind == "const" for v in ins[1:]):
                # Inference batch norm with constant statistics: fold into x * scale + shift,
                # computed exactly as the reference kernel does.
                gamma, beta, mean, var = (v.array for v in ins[1:])
                assert gamma is not None and beta is not None and mean is not None and var is not None
                eps = np.float32(attrs["epsilon"])
                scale = (gamma / np.sqrt(var + eps)).astype(np.float32)
                shift = (beta - mean * scale).astype(np.float32)
                ins = [ins[0], self._const(scale), self._const(shift)]
                views = [views[0], views[1], views[1]]
                name = "scale_shift"
        self._node(Computation("pointwise", name, ins, out, views=views, params=params, source=op))

    def _view(self, op: nn.NNOp, ins: list[Tensor], a: dict[str, Any]) -> None:
        """A data-movement op as element-for-element reads through strided views: one
        pointwise node per result, which the fusion treats as any elementwise op (its
        consumers read it in their own loop; no copy is made when one of them does)."""
        name = op.name
        outs = [self._result(op, i) for i in range(len(op.results))]
        for res, o in zip(op.results, outs, strict=True):
            self.values[res] = o
        x = ins[0]
        rank = len(x.shape)
        src, base, st = self._source(x)

        def copy(out: Tensor, inputs: list[Tensor], views: list[tuple[int, ...] | View]) -> None:
            self._node(Computation("pointwise", name, inputs, out, views=views, source=op))

        if name == "nn.broadcast_to":
            if src is x:
                copy(outs[0], [x], [x.shape])
            else:
                pad = len(outs[0].shape) - rank
                strides = [0] * pad + [0 if x.shape[e] == 1 else st[e] for e in range(rank)]
                copy(outs[0], [src], [View(base, tuple(strides))])
        elif name == "nn.strided_slice":
            steps = a["strides"] or (1,) * rank
            offset = base + sum(b * s for b, s in zip(a["begin"], st, strict=True))
            copy(outs[0], [src], [View(offset, tuple(k * s for k, s in zip(steps, st, strict=True)))])
        elif name == "nn.split":
            axis = a["axis"] % rank
            lo = 0
            for o in outs:
                copy(o, [src], [View(base + lo * st[axis], tuple(st))])
                lo += o.shape[axis]
        elif name == "nn.take":
            idx = ins[1]
            t = op.operands[1].type
            assert isinstance(t, TensorType)
            idx_shape = tuple(t.get_shape())  # a folded scalar constant may hold shape (1,)
            axis = a["axis"] % rank
            dim = x.shape[axis]
            around = (*st[:axis], *(0,) * len(idx_shape), *st[axis + 1 :])
            if idx.kind == "const" and idx.numel == 1:  # one known index: a plain slice
                assert idx.array is not None
                i = int(idx.array.reshape(-1)[0])
                i = min(max(i + dim if i < 0 else i, 0), dim - 1)
                copy(outs[0], [src], [View(base + i * st[axis], around)])
            else:
                idx_view = View(0, (*(0,) * axis, *contiguous_strides(idx_shape), *(0,) * (rank - axis - 1)))
                copy(outs[0], [src, idx], [View(base, around, Gather(1, dim, st[axis])), idx_view])
        elif name == "nn.tile":
            # out viewed as (reps[0], d0, reps[1], d1, ...): the input broadcast along the reps
            expanded = tuple(e for r, d in zip(a["reps"], x.shape, strict=True) for e in (r, d))
            strides = tuple(e for s in st for e in (0, s))
            wide = Tensor(expanded, x.dtype, "node")
            copy(wide, [src], [View(base, strides)])
            outs[0].alias_of = wide
        else:  # pragma: no cover - VIEW_OPS and this dispatch are kept in step
            raise PassError(op, f"lower-to-c: no view lowering for '{name}'")

    @staticmethod
    def _source(x: Tensor) -> tuple[Tensor, int, list[int]]:
        """Where the elements of `x` are read from: (tensor, element offset, stride of each
        dim of x). When x is itself a view of one operand (a slice, split piece, broadcast,
        transpose, one-index take), that operand through x's view, so a view of a view reads
        the storage directly and x is never copied; otherwise x, 0, its contiguous strides.
        Index arithmetic stays int64 however large the logical shape of x is."""
        p = x.node
        if (
            x.alias_of is None
            and p is not None
            and p.kind == "pointwise"
            and len(p.inputs) == 1
            and (p.op_name in VIEW_OPS or p.op_name == "nn.transpose")
        ):
            v = read_view(p.views[0], p.out.shape)
            if v.gather is None:
                return p.inputs[0], v.offset, list(v.strides)
        return x, 0, contiguous_strides(x.shape)

    def _kernel(self, op: nn.NNOp, ins: list[Tensor], out: Tensor, a: dict[str, Any]) -> None:
        name = op.name
        t = out.dtype
        args: list[Attribute]
        if name == "nn.conv2d":
            ints = _conv_ints(ins, out, a)
            _, cin, _, _, _, kh, kw, oh, ow, sh, sw, _, _, dh, dw, _ = ints
            padded_w = (-(-ow // 8) * 8 - 1) * sw + (kw - 1) * dw + 1
            scratch = cin * ((oh - 1) * sh + (kh - 1) * dh + 1) * padded_w  # BYOC_CONV2D_SCRATCH
            # BYOC_CONV2D_WIDE_SCRATCH: the phase planes of the AVX-512 path
            phases = cin * sh * sw * (oh + (kh - 1) * dh // sh) * (ow + (kw - 1) * dw // sw)
            scratch = max(scratch, phases)
            node = Computation("kernel", name, ins, out, callee="byoc_conv2d_f32", args=[i64_attr(v) for v in ints],
                        scratch=scratch, source=op)
            self._node(node)
            return
        elif name == "nn.conv2d_transpose":
            ints = _conv_ints(ins, out, a)
            _, _, h, w = ins[0].shape
            _, og, kh, kw = ins[1].shape
            node = Computation("kernel", name, ins, out, callee="byoc_conv2d_transpose_f32",
                               args=[i64_attr(v) for v in ints], scratch=og * kh * kw * h * w, source=op)
            self._node(node)
            return
        elif name == "nn.resize2d":
            n, ch, h, w = ins[0].shape
            _, _, oh, ow = out.shape
            args = [i64_attr(n * ch), i64_attr(h), i64_attr(w), i64_attr(oh), i64_attr(ow)]
            for in_size, out_size, scale in ((h, oh, a["scale_h"]), (w, ow, a["scale_w"])):
                args.extend(_resize_table(in_size, out_size, scale, a))
            callee = "byoc_resize2d_f32"
        elif name == "nn.lrn":
            s = ins[0].shape
            axis = a["axis"] % len(s)
            size = a["size"]
            args = [
                i64_attr(math.prod(s[:axis])),
                i64_attr(s[axis]),
                i64_attr(math.prod(s[axis + 1 :])),
                i64_attr(size),
                FloatAttr(float(np.float32(a["alpha"] / size)), f32),
                FloatAttr(float(np.float32(a["bias"])), f32),
                FloatAttr(float(np.float32(a["beta"])), f32),
            ]
            callee = "byoc_lrn_f32"
        elif name == "nn.dense":
            k = ins[0].shape[-1]
            callee, args = "byoc_dense_f32", [i64_attr(math.prod(ins[0].shape[:-1])), i64_attr(ins[1].shape[0]), i64_attr(k)]
        elif name == "nn.matmul":
            callee, args = "byoc_matmul_f32", self._matmul_args(ins[0].shape, ins[1].shape)
        elif name in ("nn.max_pool2d", "nn.avg_pool2d"):
            n, ch, h, w = ins[0].shape
            _, _, oh, ow = out.shape
            kh, kw = a["pool_size"]
            sh, sw = a["strides"]
            pt, pl, pb, pr = a["padding"]
            dh, dw = a["dilation"]
            if name == "nn.max_pool2d":
                ints = [n * ch, h, w, oh, ow, kh, kw, sh, sw, pt, pl, dh, dw]
                callee, args = "byoc_max_pool2d_f32", [i64_attr(v) for v in ints]
            else:
                ints = [n * ch, h, w, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw]
                args = [i64_attr(v) for v in ints] + [i32_attr(int(a["count_include_pad"]))]
                callee = "byoc_avg_pool2d_f32"
        elif name in ("nn.global_avg_pool2d", "nn.global_max_pool2d"):
            n, ch, h, w = ins[0].shape
            callee = "byoc_" + name.removeprefix("nn.") + "_f32"
            args = [i64_attr(n * ch), i64_attr(h * w)]
        elif name == "nn.softmax":
            s = ins[0].shape
            axis = a["axis"] % len(s)
            args = [i64_attr(math.prod(s[:axis])), i64_attr(s[axis]), i64_attr(math.prod(s[axis + 1 :]))]
            callee = "byoc_softmax_f32"
        elif name in ("nn.reduce_sum", "nn.reduce_mean", "nn.reduce_max", "nn.reduce_min", "nn.reduce_prod"):
            callee = f"byoc_{name.removeprefix('nn.')}_{t}"
            args = self._reduce_args(ins[0].shape, a["axes"])
        elif name == "nn.reduce_log_sum_exp":
            self._log_sum_exp(op, ins[0], out, a["axes"])
            return
        elif name in REDUCE_VIA_SUM:
            self._reduce_via_sum(op, ins[0], out, a["axes"], *REDUCE_VIA_SUM[name])
            return
        elif name in ("nn.argmax", "nn.argmin", "nn.cumsum", "nn.cumprod", "nn.log_softmax"):
            s = ins[0].shape
            axis = a["axis"] % len(s)
            args = [i64_attr(math.prod(s[:axis])), i64_attr(s[axis]), i64_attr(math.prod(s[axis + 1 :]))]
            if name == "nn.log_softmax":
                callee = "byoc_log_softmax_f32"
            elif name in ("nn.cumsum", "nn.cumprod"):
                args += [i32_attr(int(a["exclusive"])), i32_attr(int(a["reverse"]))]
                callee = f"byoc_{name.removeprefix('nn.')}_{t}"
            else:
                args.append(i32_attr(int(a["select_last_index"])))
                callee = f"byoc_{name.removeprefix('nn.')}_{ins[0].dtype}"
        elif name == "nn.one_hot":
            idx = ins[0]
            if idx.dtype != "i64":
                wide = Tensor(idx.shape, "i64", "node")
                self._node(Computation("pointwise", "nn.cast", [idx], wide, views=[idx.shape], source=op))
                ins = [wide, ins[1]]
            s = idx.shape
            axis = a["axis"] % (len(s) + 1)
            args = [i64_attr(math.prod(s[:axis])), i64_attr(a["depth"]), i64_attr(math.prod(s[axis:]))]
            callee = f"byoc_one_hot_{t}"
        elif name in ("nn.layer_norm", "nn.rms_norm"):
            s = ins[0].shape
            axis = a["axis"] % len(s)
            inner = s[axis:]
            ins = [ins[0], *(self._broadcast(v, inner, op) for v in ins[1:])]
            args = [i64_attr(math.prod(s[:axis])), i64_attr(math.prod(inner)), FloatAttr(float(np.float32(a["epsilon"])), f32)]
            callee = f"byoc_{name.removeprefix('nn.')}_f32"
        elif name == "nn.einsum":
            self._einsum(op, ins, out, a["equation"])
            return
        elif name == "nn.transpose":
            s = ins[0].shape
            axes = [x % len(s) for x in a["axes"]] or list(reversed(range(len(s))))
            strides = contiguous_strides(s)
            dims = [(s[x], strides[x]) for x in axes]
            dims = _coalesce(dims)
            if len(dims) <= 1 and all(st == 1 for _, st in dims):
                self._node(Computation("copy", "copy", ins, out, source=op))
                return
            callee = f"byoc_transpose_{t}"
            args = [i32_attr(len(dims)), i64_array([e for e, _ in dims]), i64_array([st for _, st in dims])]
        elif name == "nn.pad":
            s = ins[0].shape
            pw = a["pad_width"]
            mode = {"constant": 0, "edge": 1, "reflect": 2, "wrap": 3}[a["pad_mode"]]
            value: Attribute
            if t == "f32":
                value = FloatAttr(float(np.float32(a["pad_value"])), f32)
            else:  # the verifier checked that pad_value is a value of the element type
                value = IntegerAttr(int(a["pad_value"]), nn.element_type_named(t) or i32)
            args = [
                i32_attr(len(s)),
                i64_array(s),
                i64_array(out.shape),
                i64_array([pw[2 * d] for d in range(len(s))]),
                i32_attr(mode),
                value,
            ]
            callee = f"byoc_pad_{t}"
        elif name == "nn.concatenate":
            self._node(Computation("concat", name, ins, out, params={"axis": a["axis"] % len(out.shape)}, source=op))
            return
        elif isinstance(op, nn.RecurrentOp):
            from byoc.lowering.nn_to_c.recurrent import recurrent_call

            call = recurrent_call(op)
            pointers = [ins[v] if isinstance(v, int) else self._const(v) for v in call.inputs]
            more = [self._result(op, k) for k in range(1, len(op.results))]
            self._node(Computation("kernel", name, pointers, out, callee=call.callee, args=call.args,
                                   scratch=call.scratch, more_outs=more, source=op))
            for res, value in zip(op.results[1:], more, strict=True):
                self.values[res] = value
            return
        else:  # pragma: no cover - SUPPORTED_OPS and this dispatch are kept in step
            raise PassError(op, f"lower-to-c: no kernel for '{name}'")
        self._node(Computation("kernel", name, ins, out, callee=callee, args=args, source=op))

    def _broadcast(self, v: Tensor, shape: tuple[int, ...], op: nn.NNOp) -> Tensor:
        """`v` broadcast to `shape` (numpy rules): itself when it has that many elements, a
        folded constant, or a loop that writes the broadcast."""
        if v.numel == math.prod(shape):
            return v
        if v.kind == "const":
            assert v.array is not None
            return self._const(np.broadcast_to(v.array.reshape(v.shape), shape))
        wide = Tensor(shape, v.dtype, "node")
        self._node(Computation("pointwise", "nn.broadcast_to", [v], wide, views=[v.shape], source=op))
        return wide

    def _permuted(self, v: Tensor, perm: Sequence[int], op: nn.NNOp) -> Tensor:
        """`v` with its dims in the order `perm`: itself when the order is unchanged, else a
        copy read through the permuted strides."""
        if list(perm) == list(range(len(v.shape))):
            return v
        st = contiguous_strides(v.shape)
        out = Tensor(tuple(v.shape[p] for p in perm), v.dtype, "node")
        view = View(0, tuple(st[p] for p in perm))
        self._node(Computation("pointwise", "nn.transpose", [v], out, views=[view], source=op))
        return out

    def _einsum(self, op: nn.NNOp, ins: list[Tensor], out: Tensor, equation: str) -> None:
        """A matmul-shaped einsum (`einsum_as_matmul`): each operand permuted to (batch, m, k)
        and (batch, k, n) (no copy when already in that order), one batched matmul, and the
        (batch, m, n) product read into the output's order."""
        plan = einsum_as_matmul(equation, [v.shape for v in ins])
        assert plan is not None  # unsupported_reason rejected the others
        lhs = self._permuted(ins[0], plan.perm_a, op)
        rhs = self._permuted(ins[1], plan.perm_b, op)
        a3 = Tensor((plan.batch, plan.m, plan.k), "f32", "node", alias_of=lhs)
        b3 = Tensor((plan.batch, plan.k, plan.n), "f32", "node", alias_of=rhs)
        product = Tensor((plan.batch, plan.m, plan.n), "f32", "node")
        self._node(
            Computation(
                "kernel", "nn.einsum", [a3, b3], product, callee="byoc_matmul_f32",
                args=self._matmul_args(a3.shape, b3.shape), source=op,
            )
        )
        if list(plan.perm_out) == list(range(len(out.shape))):
            out.alias_of = product
            return
        labelled = Tensor(plan.product_shape, "f32", "node", alias_of=product)
        st = contiguous_strides(plan.product_shape)
        view = View(0, tuple(st[p] for p in plan.perm_out))
        self._node(Computation("pointwise", "nn.transpose", [labelled], out, views=[view], source=op))

    def _reduce_via_sum(
        self, op: nn.NNOp, x: Tensor, out: Tensor, axes: Sequence[int], before: str | None, after: str | None
    ) -> None:
        """A reduction that is a sum between two elementwise steps (reduce_l1: |x| then the
        sum; reduce_l2: x * x, the sum, sqrt): a fused loop, the sum kernel, a fused loop."""
        s = x.shape
        reduced = {d % len(s) for d in axes} if axes else set(range(len(s)))
        kept = tuple(1 if d in reduced else s[d] for d in range(len(s)))
        terms = x
        if before is not None:
            terms = Tensor(s, "f32", "node")
            self._node(Computation("pointwise", before, [x], terms, views=[s], source=op))
        total = Tensor(kept, "f32", "node")
        args = self._reduce_args(s, axes)
        self._node(Computation("kernel", op.name, [terms], total, callee="byoc_reduce_sum_f32", args=args, source=op))
        if after is None:
            out.alias_of = total
            return
        res = Tensor(kept, "f32", "node")
        self._node(Computation("pointwise", after, [total], res, views=[kept], source=op))
        out.alias_of = res

    def _log_sum_exp(self, op: nn.NNOp, x: Tensor, out: Tensor, axes: Sequence[int]) -> None:
        """log(sum(exp(x - top))) + top, top the maximum (0 where it is not finite), as the
        reference computes it: a max reduction, a loop of exp, a sum reduction, a loop of log."""
        s = x.shape
        reduced = {d % len(s) for d in axes} if axes else set(range(len(s)))
        kept = tuple(1 if d in reduced else s[d] for d in range(len(s)))
        args = self._reduce_args(s, axes)
        top = Tensor(kept, "f32", "node")
        self._node(Computation("kernel", op.name, [x], top, callee="byoc_reduce_max_f32", args=args, source=op))
        e = Tensor(s, "f32", "node")
        self._node(Computation("pointwise", "log_sum_exp.exp", [x, top], e, views=[s, kept], source=op))
        total = Tensor(kept, "f32", "node")
        self._node(Computation("kernel", op.name, [e], total, callee="byoc_reduce_sum_f32", args=list(args), source=op))
        res = Tensor(kept, "f32", "node")
        self._node(Computation("pointwise", "log_sum_exp.log", [total, top], res, views=[kept, kept], source=op))
        out.alias_of = res

    @staticmethod
    def _matmul_args(sa: tuple[int, ...], sb: tuple[int, ...]) -> list[Attribute]:
        a2 = (1, *sa) if len(sa) == 1 else sa
        b2 = (*sb, 1) if len(sb) == 1 else sb
        m, k, n = a2[-2], a2[-1], b2[-1]
        batch = nn.broadcast_shapes(a2[:-2], b2[:-2])
        nb = len(batch)

        def batch_strides(bs: tuple[int, ...], matrix: int) -> list[int]:
            padded = (1,) * (nb - len(bs)) + bs
            strides = contiguous_strides(padded)
            return [0 if padded[d] == 1 and batch[d] != 1 else strides[d] * matrix for d in range(nb)]

        return [
            i64_attr(m),
            i64_attr(k),
            i64_attr(n),
            i32_attr(nb),
            i64_array(batch),
            i64_array(batch_strides(a2[:-2], m * k)),
            i64_array(batch_strides(b2[:-2], k * n)),
        ]

    @staticmethod
    def _reduce_args(s: tuple[int, ...], axes: Sequence[int]) -> list[Attribute]:
        reduced = {x % len(s) for x in axes} if axes else set(range(len(s)))
        strides = contiguous_strides(s)
        kept = _coalesce([(s[d], strides[d]) for d in range(len(s)) if d not in reduced])
        red = _coalesce([(s[d], strides[d]) for d in range(len(s)) if d in reduced])
        return [
            i32_attr(len(kept)),
            i64_array([e for e, _ in kept]),
            i64_array([st for _, st in kept]),
            i32_attr(len(red)),
            i64_array([e for e, _ in red]),
            i64_array([st for _, st in red]),
        ]


REDUCE_VIA_SUM: dict[str, tuple[str | None, str | None]] = {
    "nn.reduce_l1": ("reduce.abs", None),
    "nn.reduce_sum_square": ("reduce.square", None),
    "nn.reduce_l2": ("reduce.square", "reduce.sqrt"),
    "nn.reduce_log_sum": (None, "reduce.log"),
}
"""The f32 reductions lowered as (elementwise step before, after) the sum kernel."""


def _conv_ints(ins: list[Tensor], out: Tensor, a: dict[str, Any]) -> list[int]:
    """The geometry arguments of byoc_conv2d_f32 and byoc_conv2d_transpose_f32: N, C_in, H,
    W, C_out, KH, KW, OH, OW, the strides, the top and left padding, the dilation, groups."""
    n, cin, h, w = ins[0].shape
    _, _, kh, kw = ins[1].shape
    _, o, oh, ow = out.shape
    pt, pl, _, _ = a["padding"]
    return [n, cin, h, w, o, kh, kw, oh, ow, *a["strides"], pt, pl, *a["dilation"], a["groups"]]


def _resize_table(in_size: int, out_size: int, scale: float, a: dict[str, Any]) -> list[Attribute]:
    """One axis of byoc_resize2d_f32: (linear, lo, hi, weight bits), computed by the reference's
    own coordinate code (`_resize_axis` of byoc/interpreters/kernels.py), so the C kernel reads
    the same source elements with the same float64 weights."""
    from byoc.interpreters.kernels import _resize_coords

    if out_size == in_size and scale in (0.0, 1.0):  # the reference leaves this axis as it is
        idx = np.arange(out_size, dtype=np.int64)
        return [i32_attr(0), i64_array(idx), i64_array(idx), i64_array(np.zeros(out_size, np.int64))]
    coords = _resize_coords(out_size, in_size, scale, a["coordinate_transformation_mode"])
    lo = np.floor(coords)
    frac = coords - lo
    lo_i = lo.astype(np.int64)
    if a["method"] == "nearest_neighbor":
        up = {
            "round_prefer_floor": frac > 0.5,
            "round_prefer_ceil": frac >= 0.5,
            "floor": np.zeros_like(frac, dtype=bool),
            "ceil": frac > 0,
        }[a["rounding_method"]]
        idx = np.clip(lo_i + up, 0, in_size - 1)
        return [i32_attr(0), i64_array(idx), i64_array(idx), i64_array(np.zeros(out_size, np.int64))]
    first = np.clip(lo_i, 0, in_size - 1)
    second = np.clip(lo_i + 1, 0, in_size - 1)
    bits = np.ascontiguousarray(frac, dtype=np.float64).view(np.int64)
    return [i32_attr(1), i64_array(first), i64_array(second), i64_array(bits)]


def _coalesce(dims: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Drop extent-1 dims and merge neighbours that step contiguously: (extent, stride) pairs."""
    out: list[tuple[int, int]] = []
    for extent, stride in dims:
        if extent == 1:
            continue
        if out and out[-1][1] == stride * extent:
            out[-1] = (out[-1][0] * extent, stride)
        else:
            out.append((extent, stride))
    return out


def live_computations(g: GraphBuilder) -> list[Computation]:
    """The nodes an output depends on, renumbered in program order."""
    live: set[Computation] = set()
    stack = [v.root().node for v in g.outputs]
    while stack:
        n = stack.pop()
        if n is None or n in live:
            continue
        live.add(n)
        stack.extend(v.root().node for v in n.inputs)
    nodes = [n for n in g.nodes if n in live]
    for i, n in enumerate(nodes):
        n.index = i
    return nodes
