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
from byoc.dialects import nn
from byoc.dialects.byoc import CompositeOp, YieldOp, partition_target
from byoc.targets.ccompiler import (
    ALIAS_OPS,
    F32_I32,
    POINTWISE_OPS,
    dtype_name,
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
        if self.dtype in ("f32", "i32"):
            return self.numel * 4
        t = nn.element_type_named(self.dtype)  # the quantized kernels' i8 / ui8 / i16
        return self.numel * (nn.numpy_dtype(t).itemsize if t is not None else 4)

    def root(self) -> Tensor:
        v = self
        while v.alias_of is not None:
            v = v.alias_of
        return v


@dataclass(eq=False)
class Computation:
    """One computation: an elementwise op (`pointwise`), a kernel call, a concatenation or a copy."""

    kind: str
    """'pointwise', 'kernel', 'concat' or 'copy'."""
    op_name: str
    inputs: list[Tensor]
    out: Tensor
    views: list[tuple[int, ...]] = field(default_factory=list[tuple[int, ...]])
    """pointwise: the shape each input is read as (numpy broadcasting against out)."""
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
    return IntegerAttr(v, i64)


def i32_attr(v: int) -> IntegerAttr[Any]:
    return IntegerAttr(v, i32)


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


def i64_array(values: Sequence[int]) -> DenseArrayBase[Any]:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


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
            if v.dtype not in (*F32_I32, "i8", "ui8") or any(d <= 0 for d in v.shape):
                raise PassError(
                    self.fn,
                    f"lower-to-c: argument #{i} of '@{self.fn.sym_name.data}' has type {arg.type}; "
                    "the C codegen takes f32, i32, i8 and ui8 tensors of static, non-empty shape",
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
    def _result(self, op: nn.NNOp) -> Tensor:
        t = op.results[0].type
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
            outs = out if isinstance(out, tuple) else (out,)
            for res, value in zip(op.results, outs, strict=True):
                self.values[res] = self._const(np.asarray(value))
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

    def _kernel(self, op: nn.NNOp, ins: list[Tensor], out: Tensor, a: dict[str, Any]) -> None:
        name = op.name
        t = out.dtype
        args: list[Attribute]
        if name == "nn.conv2d":
            n, cin, h, w = ins[0].shape
            o, _, kh, kw = ins[1].shape
            _, _, oh, ow = out.shape
            sh, sw = a["strides"]
            pt, pl, _, _ = a["padding"]
            dh, dw = a["dilation"]
            ints = [n, cin, h, w, o, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, a["groups"]]
            padded_w = (-(-ow // 8) * 8 - 1) * sw + (kw - 1) * dw + 1
            scratch = cin * ((oh - 1) * sh + (kh - 1) * dh + 1) * padded_w  # BYOC_CONV2D_SCRATCH
            node = Computation("kernel", name, ins, out, callee="byoc_conv2d_f32", args=[i64_attr(v) for v in ints],
                        scratch=scratch, source=op)
            self._node(node)
            return
        elif name == "nn.conv2d_transpose":
            n, cin, h, w = ins[0].shape
            _, og, kh, kw = ins[1].shape
            _, o, oh, ow = out.shape
            sh, sw = a["strides"]
            pt, pl, _, _ = a["padding"]
            dh, dw = a["dilation"]
            ints = [n, cin, h, w, o, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, a["groups"]]
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
        elif name in ("nn.reduce_sum", "nn.reduce_mean", "nn.reduce_max"):
            callee = f"byoc_{name.removeprefix('nn.')}_{t}"
            args = self._reduce_args(ins[0].shape, a["axes"])
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
            else:
                value = i32_attr(int(max(min(a["pad_value"], 2**31 - 1), -(2**31))))
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
            from byoc.lowering.nn_to_c.recurrent import recurrent_computation

            node = recurrent_computation(op, ins, out, self._const)
            self._node(node)
            for res, value in zip(op.results[1:], node.more_outs, strict=True):
                self.values[res] = value
            return
        else:  # pragma: no cover - SUPPORTED_OPS and this dispatch are kept in step
            raise PassError(op, f"lower-to-c: no kernel for '{name}'")
        self._node(Computation("kernel", name, ins, out, callee=callee, args=args, source=op))

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
