"""`lower-to-c`: every `ccompiler` partition becomes C dialect IR.

Contract. Expects functions `func.func @<sym>(...) attributes {byoc.compiler =
"ccompiler"}` whose bodies hold `nn` ops (and `byoc.composite "ccompiler.*"`,
which are inlined) that `unsupported_reason` accepts; anything else is a
`PassError` at the op. Guarantees: one `c.module` (created once, appended to)
holds, per partition,

    <sym>_<k>        one static kernel per step (a loop nest or a library call)
    <sym>_           the subgraph function: typed pointers in, calls the kernels
    <sym>_wrapper    the seed-style typed entry `int32_t (DLTensor* a, ..., DLTensor* out0)`:
                     checks every argument, takes the per-thread workspace
    <sym>            the packed entry `int32_t (DLTensor** args, int32_t num_args)`

plus `byoc_init(const void* const* consts, int32_t n)`, which binds the
constants too large to print (more than `const_threshold` elements) at load
time. The partition function itself becomes a body-less declaration: the host
graph keeps calling `@<sym>`, now implemented by the C library.

Two modes:

- `fuse=true` (default): chains of elementwise/broadcast ops with one output
  shape become one loop nest (a value used outside its chain is also stored,
  so diamonds and multi-output chains stay one loop); every other op calls a
  kernel of `byoc_kernels.h`; intermediate buffers are packed into one
  workspace by liveness (a buffer is reused once its last reader has run).
- `fuse=false`: the seed's structure — one kernel per op and one buffer per
  intermediate value.

Before/after (seed subgraph, fused):

    func.func private @ccompiler_main_0(%a, %b, %c, %d) -> tensor<10x10xf32>
        attributes {byoc.compiler = "ccompiler"} {
      %0 = nn.add %a, %b ...   %1 = nn.subtract %0, %c ...   %2 = nn.multiply %1, %d ...
    }
    ==>
    func.func private @ccompiler_main_0(...) -> tensor<10x10xf32> attributes {byoc.compiler = "ccompiler"}
    c.module {
      c.func static noalias @ccompiler_main_0_0(%in0, %in1, %in2, %in3, %out0) {
        c.for %i0 = 0 to 100 { ... c.store ... }
      } ...
    }
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from byoc.diagnostics import PassError
from byoc.dialects import byoc as byoc_d
from byoc.dialects import c, nn

TARGET = "ccompiler"
ALIGN = 64
INIT_FUNCTION = "byoc_init"
index = IndexType()

# ---------------------------------------------------------------------------
# What the C codegen supports (the ccompiler target's predicates call this)
# ---------------------------------------------------------------------------

_F32 = ("f32",)
_F32_I32 = ("f32", "i32")

POINTWISE_OPS: dict[str, tuple[str, ...]] = {
    "nn.add": _F32_I32,
    "nn.subtract": _F32_I32,
    "nn.multiply": _F32_I32,
    "nn.maximum": _F32_I32,
    "nn.minimum": _F32_I32,
    "nn.divide": _F32,
    "nn.power": _F32,
    "nn.prelu": _F32,
    "nn.relu": _F32_I32,
    "nn.negative": _F32_I32,
    "nn.abs": _F32_I32,
    "nn.sigmoid": _F32,
    "nn.tanh": _F32,
    "nn.exp": _F32,
    "nn.log": _F32,
    "nn.sqrt": _F32,
    "nn.erf": _F32,
    "nn.reciprocal": _F32,
    "nn.hard_swish": _F32,
    "nn.clip": _F32_I32,
    "nn.leaky_relu": _F32,
    "nn.hard_sigmoid": _F32,
    "nn.cast": _F32_I32,
    "nn.bias_add": _F32,
    "nn.batch_norm": _F32,
}
"""Elementwise and broadcast ops: generated as (fused) loops."""

KERNEL_OPS: dict[str, tuple[str, ...]] = {
    "nn.conv2d": _F32,
    "nn.dense": _F32,
    "nn.matmul": _F32,
    "nn.max_pool2d": _F32,
    "nn.avg_pool2d": _F32,
    "nn.global_avg_pool2d": _F32,
    "nn.global_max_pool2d": _F32,
    "nn.softmax": _F32,
    "nn.reduce_sum": _F32_I32,
    "nn.reduce_mean": _F32,
    "nn.reduce_max": _F32_I32,
    "nn.transpose": _F32_I32,
    "nn.concatenate": _F32_I32,
    "nn.pad": _F32_I32,
}
"""Ops lowered to a call of a byoc_kernels.h kernel."""

ALIAS_OPS: dict[str, tuple[str, ...]] = {"nn.reshape": _F32_I32, "nn.flatten": _F32_I32}
"""Ops that only reinterpret the shape: the result shares its operand's buffer."""

SUPPORTED_OPS: dict[str, tuple[str, ...]] = {
    **POINTWISE_OPS,
    **KERNEL_OPS,
    **ALIAS_OPS,
    "nn.constant": _F32_I32,
}

MAX_RANK = 16
"""BYOC_MAX_RANK of byoc_kernels.h."""


def dtype_name(t: Attribute) -> str:
    return {f32: "f32", i32: "i32"}.get(t, str(t))  # type: ignore[arg-type]


def unsupported_reason(op: Operation) -> str | None:
    """Why the C codegen cannot lower `op`, or None if it can.

    The single source of truth for the ccompiler target: its support
    predicates are `unsupported_reason(op) is None`, so an op the predicate
    accepts is an op `lower-to-c` emits.
    """
    allowed = SUPPORTED_OPS.get(op.name)
    if allowed is None:
        return f"'{op.name}' has no C lowering"
    for kind, values in (("operand", op.operands), ("result", op.results)):
        for i, v in enumerate(values):
            t = v.type
            if not isinstance(t, TensorType):
                return f"{kind} #{i} of '{op.name}' is not a ranked tensor"
            if dtype_name(t.element_type) not in allowed:
                return (
                    f"'{op.name}' on {t.element_type} is not supported by the C codegen "
                    f"(supported: {', '.join(allowed)})"
                )
            shape = t.get_shape()
            if any(d <= 0 for d in shape):
                return f"{kind} #{i} of '{op.name}' has a dynamic or zero-size shape {list(shape)}"
            if len(shape) > MAX_RANK:
                return f"{kind} #{i} of '{op.name}' has rank {len(shape)} (at most {MAX_RANK})"
    return None


def is_supported(op: Operation) -> bool:
    return unsupported_reason(op) is None


def c_lowering_target(name: str) -> Any | None:
    """The module of target `name` if lower-to-c also lowers its partitions, else None.

    Such a target (cblas) defines `lower_composite_to_c(builder, composite, inputs)`, which
    adds the composite's nodes to the `GraphBuilder` and returns its result values, and
    `C_INCLUDES`, the headers its kernels need. Its partitions are lowered like ccompiler's.
    """
    from byoc.targets import UnknownTargetError, get_target

    try:
        module = get_target(name)
    except UnknownTargetError:
        return None
    return module if hasattr(module, "lower_composite_to_c") else None


def _lowered_here(f: Operation) -> bool:
    compiler = f.attributes.get(byoc_d.COMPILER_ATTR)
    if not isinstance(compiler, StringAttr):
        return False
    return compiler.data == TARGET or c_lowering_target(compiler.data) is not None


# ---------------------------------------------------------------------------
# The tensor graph of one partition
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class TValue:
    """A tensor value of the partition."""

    shape: tuple[int, ...]
    dtype: str
    kind: str
    """'input', 'const' or 'node' (computed by a node, or an alias of another value)."""
    arg: int = -1
    array: np.ndarray[Any, Any] | None = None
    node: Node | None = None
    alias_of: TValue | None = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * 4

    def root(self) -> TValue:
        v = self
        while v.alias_of is not None:
            v = v.alias_of
        return v


@dataclass(eq=False)
class Node:
    """One computation: an elementwise op (`pointwise`), a kernel call, a concatenation or a copy."""

    kind: str
    """'pointwise', 'kernel', 'concat' or 'copy'."""
    op_name: str
    inputs: list[TValue]
    out: TValue
    views: list[tuple[int, ...]] = field(default_factory=list[tuple[int, ...]])
    """pointwise: the shape each input is read as (numpy broadcasting against out)."""
    params: dict[str, Any] = field(default_factory=dict[str, Any])
    callee: str = ""
    args: list[Attribute] = field(default_factory=list[Attribute])
    """kernel: the literal arguments after the pointers."""
    scratch: int = 0
    """kernel: floats of workspace it needs during the call (passed after the output)."""
    source: Operation | None = None
    index: int = 0


def _contiguous_strides(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def _i64(v: int) -> IntegerAttr[Any]:
    return IntegerAttr(v, i64)


def _i32(v: int) -> IntegerAttr[Any]:
    return IntegerAttr(v, i32)


def _arr(values: Sequence[int]) -> DenseArrayBase[Any]:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


class GraphBuilder:
    """Turns the body of a partition function into TValues and Nodes."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.values: dict[SSAValue, TValue] = {}
        self.nodes: list[Node] = []
        self.inputs: list[TValue] = []
        self.outputs: list[TValue] = []

    def build(self) -> None:
        block = self.fn.body.block
        for i, arg in enumerate(block.args):
            t = arg.type
            shape = tuple(t.get_shape()) if isinstance(t, TensorType) else ()
            dtype = dtype_name(t.element_type) if isinstance(t, TensorType) else str(t)
            v = TValue(shape, dtype, "input", arg=i)
            self.values[arg] = v
            self.inputs.append(v)
        self._walk(block)  # an op on an unsupported type is reported at the op
        for i, (arg, v) in enumerate(zip(block.args, self.inputs, strict=True)):
            if v.dtype not in _F32_I32 or any(d <= 0 for d in v.shape):
                raise PassError(
                    self.fn,
                    f"lower-to-c: argument #{i} of '@{self.fn.sym_name.data}' has type {arg.type}; "
                    "the C codegen takes f32 and i32 tensors of static, non-empty shape",
                )

    def _walk(self, block: Block) -> None:
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                self.outputs = [self.values[v] for v in op.arguments]
            elif isinstance(op, byoc_d.YieldOp):
                return
            elif isinstance(op, byoc_d.CompositeOp):
                if op.target_name != TARGET:
                    self._target_composite(op)
                    continue
                body = op.body.block
                for arg, operand in zip(body.args, op.args, strict=True):
                    self.values[arg] = self.values[operand]
                self._walk(body)
                last = body.last_op
                assert isinstance(last, byoc_d.YieldOp)
                for res, val in zip(op.res, last.values, strict=True):
                    self.values[res] = self.values[val]
            elif isinstance(op, nn.NNOp):
                reason = unsupported_reason(op)
                if reason is not None:
                    raise PassError(op, f"lower-to-c: {reason}")
                self._add(op)
            else:
                raise PassError(
                    op, f"lower-to-c: '{op.name}' cannot appear in a {TARGET} partition"
                )

    def _target_composite(self, op: byoc_d.CompositeOp) -> None:
        """A composite of the partition's own target, when that target lowers through C
        (`c_lowering_target`, e.g. cblas): its hook adds the nodes and returns the results."""
        compiler = self.fn.attributes.get(byoc_d.COMPILER_ATTR)
        partition = compiler.data if isinstance(compiler, StringAttr) else TARGET
        hook = c_lowering_target(op.target_name)
        if hook is None or partition != op.target_name:
            raise PassError(
                op,
                f"lower-to-c: composite '{op.composite.data}' belongs to target "
                f"'{op.target_name}', not {partition}",
            )
        results = hook.lower_composite_to_c(self, op, [self.values[v] for v in op.args])
        for res, value in zip(op.res, results, strict=True):
            self.values[res] = value

    # ---- one nn op ---------------------------------------------------------------
    def _result(self, op: nn.NNOp) -> TValue:
        t = op.results[0].type
        assert isinstance(t, TensorType)
        return TValue(tuple(t.get_shape()), dtype_name(t.element_type), "node")

    def _const(self, array: np.ndarray[Any, Any]) -> TValue:
        arr = np.ascontiguousarray(array)
        return TValue(tuple(arr.shape), dtype_name(nn.element_type_of(arr.dtype)), "const", array=arr)

    def _add(self, op: nn.NNOp) -> None:
        name = op.name
        if isinstance(op, nn.ConstantOp):
            self.values[op.result] = self._const(op.ndarray())
            return
        ins = [self.values[v] for v in op.operands]
        attrs = op.attr_values()
        if all(v.kind == "const" for v in ins):
            from byoc.interpreters.kernels import KERNELS

            out = KERNELS[name](*[v.array for v in ins], **attrs)
            self.values[op.results[0]] = self._const(np.asarray(out))
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

    def _node(self, node: Node) -> None:
        node.index = len(self.nodes)
        node.out.node = node
        self.nodes.append(node)

    def _pointwise(self, op: nn.NNOp, ins: list[TValue], out: TValue, attrs: dict[str, Any]) -> None:
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
        self._node(Node("pointwise", name, ins, out, views=views, params=params, source=op))

    def _kernel(self, op: nn.NNOp, ins: list[TValue], out: TValue, a: dict[str, Any]) -> None:
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
            panel = 16 * min(cin // a["groups"] * kh * kw, 1024)  # BYOC_CONV2D_KC rows
            scratch = cin * ((oh - 1) * sh + (kh - 1) * dh + 1) * padded_w + panel  # BYOC_CONV2D_SCRATCH
            node = Node("kernel", name, ins, out, callee="byoc_conv2d_f32", args=[_i64(v) for v in ints],
                        scratch=scratch, source=op)
            self._node(node)
            return
        elif name == "nn.dense":
            k = ins[0].shape[-1]
            callee, args = "byoc_dense_f32", [_i64(math.prod(ins[0].shape[:-1])), _i64(ins[1].shape[0]), _i64(k)]
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
                callee, args = "byoc_max_pool2d_f32", [_i64(v) for v in ints]
            else:
                ints = [n * ch, h, w, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw]
                args = [_i64(v) for v in ints] + [_i32(int(a["count_include_pad"]))]
                callee = "byoc_avg_pool2d_f32"
        elif name in ("nn.global_avg_pool2d", "nn.global_max_pool2d"):
            n, ch, h, w = ins[0].shape
            callee = "byoc_" + name.removeprefix("nn.") + "_f32"
            args = [_i64(n * ch), _i64(h * w)]
        elif name == "nn.softmax":
            s = ins[0].shape
            axis = a["axis"] % len(s)
            args = [_i64(math.prod(s[:axis])), _i64(s[axis]), _i64(math.prod(s[axis + 1 :]))]
            callee = "byoc_softmax_f32"
        elif name in ("nn.reduce_sum", "nn.reduce_mean", "nn.reduce_max"):
            callee = f"byoc_{name.removeprefix('nn.')}_{t}"
            args = self._reduce_args(ins[0].shape, a["axes"])
        elif name == "nn.transpose":
            s = ins[0].shape
            axes = [x % len(s) for x in a["axes"]] or list(reversed(range(len(s))))
            strides = _contiguous_strides(s)
            dims = [(s[x], strides[x]) for x in axes]
            dims = _coalesce(dims)
            if len(dims) <= 1 and all(st == 1 for _, st in dims):
                self._node(Node("copy", "copy", ins, out, source=op))
                return
            callee = f"byoc_transpose_{t}"
            args = [_i32(len(dims)), _arr([e for e, _ in dims]), _arr([st for _, st in dims])]
        elif name == "nn.pad":
            s = ins[0].shape
            pw = a["pad_width"]
            mode = {"constant": 0, "edge": 1, "reflect": 2, "wrap": 3}[a["pad_mode"]]
            value: Attribute
            if t == "f32":
                value = FloatAttr(float(np.float32(a["pad_value"])), f32)
            else:
                value = _i32(int(max(min(a["pad_value"], 2**31 - 1), -(2**31))))
            args = [
                _i32(len(s)),
                _arr(s),
                _arr(out.shape),
                _arr([pw[2 * d] for d in range(len(s))]),
                _i32(mode),
                value,
            ]
            callee = f"byoc_pad_{t}"
        elif name == "nn.concatenate":
            self._node(Node("concat", name, ins, out, params={"axis": a["axis"] % len(out.shape)}, source=op))
            return
        else:  # pragma: no cover - SUPPORTED_OPS and this dispatch are kept in step
            raise PassError(op, f"lower-to-c: no kernel for '{name}'")
        self._node(Node("kernel", name, ins, out, callee=callee, args=args, source=op))

    @staticmethod
    def _matmul_args(sa: tuple[int, ...], sb: tuple[int, ...]) -> list[Attribute]:
        a2 = (1, *sa) if len(sa) == 1 else sa
        b2 = (*sb, 1) if len(sb) == 1 else sb
        m, k, n = a2[-2], a2[-1], b2[-1]
        batch = nn.broadcast_shapes(a2[:-2], b2[:-2])
        nb = len(batch)

        def batch_strides(bs: tuple[int, ...], matrix: int) -> list[int]:
            padded = (1,) * (nb - len(bs)) + bs
            strides = _contiguous_strides(padded)
            return [0 if padded[d] == 1 and batch[d] != 1 else strides[d] * matrix for d in range(nb)]

        return [
            _i64(m),
            _i64(k),
            _i64(n),
            _i32(nb),
            _arr(batch),
            _arr(batch_strides(a2[:-2], m * k)),
            _arr(batch_strides(b2[:-2], k * n)),
        ]

    @staticmethod
    def _reduce_args(s: tuple[int, ...], axes: Sequence[int]) -> list[Attribute]:
        reduced = {x % len(s) for x in axes} if axes else set(range(len(s)))
        strides = _contiguous_strides(s)
        kept = _coalesce([(s[d], strides[d]) for d in range(len(s)) if d not in reduced])
        red = _coalesce([(s[d], strides[d]) for d in range(len(s)) if d in reduced])
        return [
            _i32(len(kept)),
            _arr([e for e, _ in kept]),
            _arr([st for _, st in kept]),
            _i32(len(red)),
            _arr([e for e, _ in red]),
            _arr([st for _, st in red]),
        ]


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


# ---------------------------------------------------------------------------
# Fusion and scheduling
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class KernelGroup:
    """What one kernel function computes: a fused group of nodes, or one node."""

    nodes: list[Node]
    reads: list[TValue] = field(default_factory=list[TValue])
    """Storage roots read, in first-use order."""
    writes: list[TValue] = field(default_factory=list[TValue])
    """Values stored."""
    scratch: list[TValue] = field(default_factory=list[TValue])
    """Workspace the step's kernel uses only while it runs."""


def _consumers(nodes: list[Node]) -> dict[Node, list[Node]]:
    users: dict[Node, list[Node]] = {n: [] for n in nodes}
    for n in nodes:
        for v in n.inputs:
            p = v.root().node
            if p is not None and n not in users[p]:
                users[p].append(n)
    return users


def _producers(n: Node) -> list[Node]:
    out: list[Node] = []
    for v in n.inputs:
        p = v.root().node
        if p is not None and p not in out:
            out.append(p)
    return out


def fuse_groups(nodes: list[Node], fuse: bool) -> list[list[Node]]:
    """Group pointwise nodes with their pointwise producers of the same shape, never making a cycle.

    A producer joins its consumer's group only if the consumer reads it whole
    (not broadcast). Groups are returned in an order that respects every
    dependency between them.
    """
    if not fuse:
        return [[n] for n in nodes]
    users = _consumers(nodes)
    group_of: dict[Node, int] = {}
    groups: dict[int, list[Node]] = {}
    next_id = itertools.count()
    for n in nodes:
        gid = next(next_id)
        members: list[Node] = [n]
        if n.kind == "pointwise":
            candidates: list[int] = []
            for v, view in zip(n.inputs, n.views, strict=True):
                p = v.node  # an alias breaks fusion: its producer is read through a reshape
                if (
                    p is not None
                    and v.alias_of is None
                    and p.kind == "pointwise"
                    and p.out.shape == n.out.shape
                    and tuple(view) == n.out.shape
                    and group_of[p] not in candidates
                ):
                    candidates.append(group_of[p])
            chosen: list[int] = []
            for g in candidates:
                if not _creates_cycle(set(chosen + [g]), n, groups, group_of, users):
                    chosen.append(g)
            for g in chosen:
                members = groups.pop(g) + members
        groups[gid] = sorted(members, key=lambda m: m.index)
        for m in groups[gid]:
            group_of[m] = gid
    return _schedule(list(groups.values()))


def _creates_cycle(
    merged: set[int],
    node: Node,
    groups: dict[int, list[Node]],
    group_of: dict[Node, int],
    users: dict[Node, list[Node]],
) -> bool:
    """Would fusing the groups `merged` and `node` into one make a cycle between groups?

    That is: can a path leave the merged set and come back through other
    groups (each group runs as one step, so a path into any member of a group
    reaches all of it)? Every existing group holds only nodes before `node`.
    """
    members = [m for g in merged for m in groups[g]] + [node]

    def successors(group_members: list[Node]) -> set[int]:
        return {group_of[u] for m in group_members for u in users[m] if u in group_of}

    producers = {
        group_of[p] for m in members for p in _producers(m) if p in group_of and group_of[p] not in merged
    }
    if not producers:
        return False
    frontier = [g for g in successors(members) if g not in merged]
    seen: set[int] = set()
    while frontier:
        g = frontier.pop()
        if g in seen:
            continue
        if g in producers:
            return True
        seen.add(g)
        frontier.extend(h for h in successors(groups[g]) if h not in merged and h not in seen)
    return False


def _schedule(groups: list[list[Node]]) -> list[list[Node]]:
    """A topological order of the groups (ties: the group whose first node came first)."""
    of: dict[Node, int] = {}
    for gi, g in enumerate(groups):
        for m in g:
            of[m] = gi
    deps: list[set[int]] = [set() for _ in groups]
    for gi, g in enumerate(groups):
        for m in g:
            for p in _producers(m):
                if of[p] != gi:
                    deps[gi].add(of[p])
    waiting = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in groups]
    for gi, d in enumerate(deps):
        for p in d:
            users[p].append(gi)
    ready = [(g[0].index, gi) for gi, g in enumerate(groups) if waiting[gi] == 0]
    heapq.heapify(ready)
    order: list[list[Node]] = []
    while ready:
        _, gi = heapq.heappop(ready)
        order.append(groups[gi])
        for u in users[gi]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (groups[u][0].index, u))
    assert len(order) == len(groups), "fusion created a cycle"
    return order


# ---------------------------------------------------------------------------
# Lowering one partition
# ---------------------------------------------------------------------------


@dataclass
class Storage:
    kind: str
    """'input' (arg #), 'output' (result #), 'const' (global name) or 'buffer' (offset, size)."""
    index: int = 0
    name: str = ""
    offset: int = 0
    size: int = 0


def _elt(dtype: str) -> Attribute:
    return f32 if dtype == "f32" else i32


def _ptr(dtype: str, const: bool = False) -> c.PtrType:
    return c.PtrType(_elt(dtype), const)


class _Builder:
    """Appends C ops to a block; constants are cached per block."""

    def __init__(self, block: Block):
        self.block = block
        self.consts: dict[tuple[Any, Attribute], SSAValue] = {}

    def add(self, op: Operation, hint: str | None = None) -> SSAValue:
        self.block.add_op(op)
        if op.results:
            if hint is not None:
                op.results[0].name_hint = hint
            return op.results[0]
        return None  # type: ignore[return-value]

    def const(self, v: float | int, t: Attribute) -> SSAValue:
        key = (float(v) if not isinstance(t, IndexType) and t == f32 else int(v), t)
        if key not in self.consts:
            self.consts[key] = self.add(c.ConstantOp.of(v, t))
        return self.consts[key]


class PartitionLowering:
    """Lowers one partition function into C ops appended to `unit`."""

    def __init__(self, fn: func.FuncOp, fuse: bool, const_threshold: int, init_base: int):
        self.fn = fn
        self.sym = fn.sym_name.data
        self.fuse = fuse
        self.const_threshold = const_threshold
        self.init_base = init_base
        self.globals: list[c.GlobalOp] = []
        self.const_names: dict[TValue, str] = {}
        self.init_arrays: list[np.ndarray[Any, Any]] = []

    # ---- entry ---------------------------------------------------------------------
    def lower(self) -> list[Operation]:
        if not c.is_c_identifier(self.sym) or self.sym == INIT_FUNCTION:
            raise PassError(self.fn, f"lower-to-c: '@{self.sym}' is not usable as a C function name")
        g = GraphBuilder(self.fn)
        g.build()
        nodes = self._live_nodes(g)
        groups = fuse_groups(nodes, self.fuse)
        storage = self._bind_outputs(g, nodes)
        steps = self._steps(groups, g, storage)
        ws_size = self._plan_buffers(steps, storage, g)
        kernels = [self._kernel_func(k, step, storage) for k, step in enumerate(steps)]
        subgraph = self._subgraph_func(steps, storage, g, ws_size)
        wrapper = self._wrapper_func(g, ws_size)
        packed = self._packed_func(g)
        return [*self.globals, *kernels, subgraph, wrapper, packed]

    def _arg_names(self, g: GraphBuilder) -> list[str]:
        names: list[str] = []
        for i, arg in enumerate(self.fn.body.block.args):
            hint = arg.name_hint
            name = hint if hint is not None and c.is_c_identifier(hint) else f"arg{i}"
            while name in names:
                name += "_"
            names.append(name)
        outs = [f"out{j}" for j in range(len(g.outputs))]
        for j, o in enumerate(outs):
            while o in names:
                o += "_"
            outs[j] = o
            names.append(o)
        return names

    # ---- graph cleanup and storage ----------------------------------------------------
    @staticmethod
    def _live_nodes(g: GraphBuilder) -> list[Node]:
        live: set[Node] = set()
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

    def _bind_outputs(self, g: GraphBuilder, nodes: list[Node]) -> dict[TValue, Storage]:
        """Results computed here are written straight into the output tensors; any other
        result (an input, a constant, a value returned twice) is copied there at the end."""
        storage: dict[TValue, Storage] = {}
        for v in g.inputs:
            storage[v] = Storage("input", v.arg)
        self.copies: list[tuple[TValue, int]] = []
        for j, v in enumerate(g.outputs):
            r = v.root()
            if r.kind == "node" and r not in storage:
                storage[r] = Storage("output", j)
            else:
                self.copies.append((r, j))
        return storage

    def _steps(self, groups: list[list[Node]], g: GraphBuilder, storage: dict[TValue, Storage]) -> list[KernelGroup]:
        """One step per group: what it reads (storage roots from outside the group) and
        what it must store (values read outside the group or returned)."""
        group_of: dict[Node, int] = {n: gi for gi, grp in enumerate(groups) for n in grp}
        read_elsewhere: set[TValue] = {v.root() for v in g.outputs}
        for gi, grp in enumerate(groups):
            for n in grp:
                for v in n.inputs:
                    r = v.root()
                    if r.node is not None and group_of.get(r.node) != gi:
                        read_elsewhere.add(r)
        steps: list[KernelGroup] = []
        for gi, grp in enumerate(groups):
            step = KernelGroup(grp)
            for n in grp:
                for v in n.inputs:
                    r = v.root()
                    # a member read inside its own group (even through a reshape, which has
                    # the same element count, hence the same element order) is not a read
                    if r.node is not None and group_of.get(r.node) == gi:
                        continue
                    if r not in step.reads:
                        step.reads.append(r)
            for n in grp:
                if n.kind != "pointwise" or n.out in read_elsewhere:
                    step.writes.append(n.out)
                if n.scratch:
                    step.scratch.append(TValue((n.scratch,), "f32", "node"))
            steps.append(step)
        for r, j in self.copies:
            out = TValue(r.shape, r.dtype, "node")
            storage[out] = Storage("output", j)
            node = Node("copy", "copy", [r], out)
            steps.append(KernelGroup([node], [r], [out]))
        return steps

    def _plan_buffers(self, steps: list[KernelGroup], storage: dict[TValue, Storage], g: GraphBuilder) -> int:
        """Place every intermediate in the workspace. Fused mode reuses a buffer once its
        last reader has run (first fit by address); per-op mode gives each its own."""
        last_read: dict[TValue, int] = {}
        for s, step in enumerate(steps):
            for r in step.reads:
                last_read[r] = s
        live: list[tuple[int, int, int]] = []  # (offset, end, last step)
        top = 0
        for s, step in enumerate(steps):
            if self.fuse:
                live = [blk for blk in live if blk[2] >= s]
            for v in [*step.writes, *step.scratch]:
                if v in storage:
                    continue
                size = -(-v.nbytes // ALIGN) * ALIGN
                offset = 0
                for start, end, _ in sorted(live):
                    if offset + size <= start:
                        break
                    offset = max(offset, end)
                storage[v] = Storage("buffer", offset=offset, size=v.nbytes)
                live.append((offset, offset + size, last_read.get(v, s)))
                top = max(top, offset + size)
        return top

    # ---- constants -----------------------------------------------------------------------
    def _global_for(self, v: TValue) -> str:
        name = self.const_names.get(v)
        if name is not None:
            return name
        arr = v.array
        assert arr is not None
        name = f"{self.sym}_c{len(self.const_names)}"
        ty = nn.tensor(arr.shape, _elt(v.dtype))
        dense = DenseIntOrFPElementsAttr(ty, BytesAttr(np.ascontiguousarray(arr).tobytes()))
        init = None
        if arr.size > self.const_threshold:
            init = self.init_base + len(self.init_arrays)
            self.init_arrays.append(arr)
        self.globals.append(c.GlobalOp(name, dense, init))
        self.const_names[v] = name
        return name

    # ---- kernel functions ------------------------------------------------------------------
    def _kernel_func(self, k: int, step: KernelGroup, storage: dict[TValue, Storage]) -> c.FuncOp:
        ins = step.reads
        outs = step.writes
        tmps = step.scratch
        types = [_ptr(v.dtype, True) for v in ins] + [_ptr(v.dtype) for v in [*outs, *tmps]]
        names = (
            [f"in{i}" for i in range(len(ins))]
            + [f"out{j}" for j in range(len(outs))]
            + [f"tmp{j}" for j in range(len(tmps))]
        )
        f = c.FuncOp(f"{self.sym}_{k}", types, (), ("static", "noalias"), arg_names=names)
        block = f.body.block
        b = _Builder(block)
        params = dict(zip([*ins, *outs, *tmps], block.args, strict=True))
        described = ", ".join(n.op_name for n in step.nodes)
        out0 = step.nodes[-1].out
        b.add(c.VerbatimOp(f"/* {described}: {'x'.join(map(str, out0.shape)) or 'scalar'} {out0.dtype} */"))
        first = step.nodes[0]
        if first.kind == "pointwise":
            self._loop_nest(b, step, params)
        elif first.kind == "kernel":
            args = [params[first.inputs[i].root()] for i in range(len(first.inputs))]
            args.append(params[first.out])
            args.extend(params[t] for t in tmps)
            literal: list[Attribute] = [IntegerAttr(i, index) for i in range(len(args))] + first.args
            b.add(c.CallOpaqueOp(first.callee, args, (), literal))
        elif first.kind == "concat":
            out = params[first.out]
            axis = first.params["axis"]
            shape = first.out.shape
            outer = math.prod(shape[:axis])
            out_inner = math.prod(shape[axis:])
            offset = 0
            for v in first.inputs:
                block_elems = math.prod(v.shape[axis:])
                dst = out if offset == 0 else b.add(c.PtrOffsetOp(out, b.const(offset, index)))
                b.add(
                    c.CallOpaqueOp(
                        "byoc_copy_blocks",
                        [params[v.root()], dst],
                        (),
                        [IntegerAttr(0, index), IntegerAttr(1, index), _i64(outer), _i64(block_elems * 4), _i64(out_inner * 4)],
                    )
                )
                offset += block_elems
        else:  # copy
            src = params[first.inputs[0].root()]
            b.add(c.CallOpaqueOp("byoc_copy", [src, params[first.out]], (), [IntegerAttr(0, index), IntegerAttr(1, index), _i64(first.out.nbytes)]))
        b.add(c.ReturnOp())
        return f

    def _loop_nest(self, b: _Builder, step: KernelGroup, params: dict[TValue, SSAValue]) -> None:
        """One loop nest over the group's shape: load every leaf once, evaluate the nodes, store."""
        shape = step.nodes[0].out.shape
        rank = len(shape)
        members = set(step.nodes)
        # every (root, view) read, and every stored value, with its strides over `shape`
        leaf_keys: list[tuple[TValue, tuple[int, ...]]] = []
        for n in step.nodes:
            for v, view in zip(n.inputs, n.views, strict=True):
                r = v.root()
                if r.node in members:
                    continue
                key = (r, tuple(view))
                if key not in leaf_keys:
                    leaf_keys.append(key)
        # accesses with the same strides share their offset computation
        access_of: list[int] = []
        accesses: list[tuple[int, ...]] = []
        for strides in [self._broadcast_strides(view, shape) for _, view in leaf_keys] + [
            self._broadcast_strides(shape, shape) for _ in step.writes
        ]:
            if strides not in accesses:
                accesses.append(strides)
            access_of.append(accesses.index(strides))
        dims: list[tuple[int, list[int]]] = []
        for d in range(rank):
            if shape[d] == 1:
                continue
            strides = [a[d] for a in accesses]
            if dims and all(prev == s * shape[d] for prev, s in zip(dims[-1][1], strides, strict=True)):
                dims[-1] = (dims[-1][0] * shape[d], strides)
            else:
                dims.append((shape[d], strides))
        offsets: list[SSAValue | None] = [None] * len(accesses)  # None: offset 0
        body = b
        for level, (extent, strides) in enumerate(dims):
            loop = c.ForOp(0, extent, iv_name=f"i{level}")
            body.add(loop)
            inner = _Builder(loop.body.block)
            inner.consts = {}
            iv = loop.induction_variable
            new_offsets: list[SSAValue | None] = []
            for a, off in enumerate(offsets):
                s = strides[a]
                if s == 0:
                    new_offsets.append(off)
                    continue
                term = iv if s == 1 else inner.add(c.MulOp(iv, inner.const(s, index)))
                new_offsets.append(term if off is None else inner.add(c.AddOp(off, term)))
            offsets = new_offsets
            body = inner
        final = [body.const(0, index) if offsets[a] is None else offsets[a] for a in access_of]
        scalars: dict[tuple[TValue, tuple[int, ...]], SSAValue] = {}
        for a, key in enumerate(leaf_keys):
            scalars[key] = body.add(c.LoadOp(params[key[0]], final[a]))
        values: dict[TValue, SSAValue] = {}
        for n in step.nodes:
            args: list[SSAValue] = []
            for v, view in zip(n.inputs, n.views, strict=True):
                r = v.root()
                if r.node in members:
                    args.append(values[r])
                else:
                    args.append(scalars[(r, tuple(view))])
            values[n.out] = scalar_op(body, n, args)
        for a, v in enumerate(step.writes):
            body.add(c.StoreOp(values[v], params[v], final[len(leaf_keys) + a]))

    @staticmethod
    def _broadcast_strides(view: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
        padded = (1,) * (len(shape) - len(view)) + tuple(view)
        strides = _contiguous_strides(padded)
        return tuple(0 if padded[d] == 1 else strides[d] for d in range(len(shape)))

    # ---- the subgraph function, the wrapper, the packed entry ---------------------------
    def _subgraph_func(self, steps: list[KernelGroup], storage: dict[TValue, Storage], g: GraphBuilder, ws_size: int) -> c.FuncOp:
        names = self._arg_names(g)
        types: list[Attribute] = [_ptr(v.dtype, True) for v in g.inputs] + [_ptr(v.dtype) for v in g.outputs]
        if ws_size:
            types.append(c.PtrType(nn.IntegerType(8)))
            names = [*names, "ws"]
        f = c.FuncOp(f"{self.sym}_", types, (), ("static",), arg_names=names)
        block = f.body.block
        b = _Builder(block)
        n_in = len(g.inputs)
        ptrs: dict[TValue, SSAValue] = {}
        const_ptrs: dict[TValue, SSAValue] = {}
        counter = itertools.count()

        def pointer(v: TValue, const: bool) -> SSAValue:
            st = storage.get(v)
            if v.kind == "const":
                if v not in ptrs:
                    ptrs[v] = b.add(c.GetGlobalOp(self._global_for(v), _ptr(v.dtype, True)))
                return ptrs[v]
            assert st is not None
            if v not in ptrs:
                if st.kind == "input":
                    ptrs[v] = block.args[st.index]
                elif st.kind == "output":
                    ptrs[v] = block.args[n_in + st.index]
                else:
                    ptrs[v] = b.add(
                        c.BufferOp(block.args[-1], st.offset, st.size, _ptr(v.dtype)),
                        hint=f"buf{next(counter)}",
                    )
            p = ptrs[v]
            if const and isinstance(p.type, c.PtrType) and not p.type.const:
                if v not in const_ptrs:
                    const_ptrs[v] = b.add(c.CastOp(p, _ptr(v.dtype, True)))
                return const_ptrs[v]
            return p

        for k, step in enumerate(steps):
            args = [pointer(r, True) for r in step.reads] + [
                pointer(w, False) for w in [*step.writes, *step.scratch]
            ]
            b.add(c.CallOp(f"{self.sym}_{k}", args))
        b.add(c.ReturnOp())
        return f

    def _wrapper_func(self, g: GraphBuilder, ws_size: int) -> c.FuncOp:
        names = self._arg_names(g)
        n_in, n_out = len(g.inputs), len(g.outputs)
        f = c.FuncOp(f"{self.sym}_wrapper", [c.DLTENSOR_PTR] * (n_in + n_out), [i32], (), arg_names=names)
        f.attributes["c.diagnostic_name"] = StringAttr(self.sym)
        block = f.body.block
        b = _Builder(block)
        values = [*g.inputs, *g.outputs]
        for i, (arg, v) in enumerate(zip(block.args, values, strict=True)):
            role, pos = ("input", i) if i < n_in else ("output", i - n_in)
            b.add(c.CheckTensorOp(arg, role, pos, names[i], nn.tensor(v.shape, _elt(v.dtype))))
        if n_out:
            b.add(c.CheckDisjointOp(list(block.args), names, [v.nbytes for v in values], n_out))
        for gl in self.globals:
            if gl.init_index is not None:
                b.add(c.CheckBoundOp(gl.sym_name.data))
        data = [
            b.add(c.TensorDataOp(arg, _ptr(v.dtype, i < n_in)), hint=f"{names[i]}_data")
            for i, (arg, v) in enumerate(zip(block.args, values, strict=True))
        ]
        if ws_size:
            data.append(b.add(c.WorkspaceOp(ws_size), hint="ws"))
        b.add(c.CallOp(f"{self.sym}_", data))
        b.add(c.ReturnOp(b.const(0, i32)))
        return f

    def _packed_func(self, g: GraphBuilder) -> c.FuncOp:
        n_in, n_out = len(g.inputs), len(g.outputs)
        args_t = c.PtrType(c.DLTENSOR_PTR)
        f = c.FuncOp(self.sym, [args_t, i32], [i32], (), arg_names=["args", "num_args"])
        f.attributes["c.diagnostic_name"] = StringAttr(self.sym)
        block = f.body.block
        b = _Builder(block)
        b.add(c.CheckArgCountOp(block.args[1], n_in, n_out))
        tensors = [b.add(c.LoadOp(block.args[0], b.const(i, index))) for i in range(n_in + n_out)]
        result = b.add(c.CallOp(f"{self.sym}_wrapper", tensors, [i32]))
        b.add(c.ReturnOp(result))
        return f


# ---------------------------------------------------------------------------
# Scalar semantics of the pointwise ops (f32 and wrapping i32)
# ---------------------------------------------------------------------------


def scalar_op(b: _Builder, n: Node, args: list[SSAValue]) -> SSAValue:
    """Emit the C expression of pointwise node `n` on scalar operands; matches byoc.interpreters.kernels."""
    name = n.op_name
    t = _elt(n.out.dtype)
    is_f = n.out.dtype == "f32"
    p = n.params

    def k(v: float | int) -> SSAValue:
        return b.const(float(np.float32(v)) if is_f else int(v), t)

    def call(fn: str, *xs: SSAValue) -> SSAValue:
        return b.add(c.CallOpaqueOp(fn, list(xs), [t]))

    def cmp(pred: str, x: SSAValue, y: SSAValue) -> SSAValue:
        return b.add(c.CmpOp(pred, x, y))

    def sel(cond: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
        return b.add(c.SelectOp(cond, x, y))

    def add(x: SSAValue, y: SSAValue) -> SSAValue:
        return b.add(c.AddOp(x, y))

    def mul(x: SSAValue, y: SSAValue) -> SSAValue:
        return b.add(c.MulOp(x, y))

    def clamp(x: SSAValue, lo: float | None, hi: float | None) -> SSAValue:
        """numpy.clip: NaN passes through; an absent bound is not applied."""
        if lo is not None:
            x = sel(cmp("lt", x, k(lo)), k(lo), x)
        if hi is not None:
            x = sel(cmp("gt", x, k(hi)), k(hi), x)
        return x

    def nan_max(x: SSAValue, y: SSAValue, pred: str) -> SSAValue:
        if not is_f:
            return sel(cmp(pred, x, y), x, y)
        cond = b.add(c.LogicalOrOp(cmp(pred, x, y), cmp("ne", x, x)))
        return sel(cond, x, y)

    if name == "nn.add":
        return add(*args)
    if name == "nn.subtract":
        return b.add(c.SubOp(*args))
    if name == "nn.multiply":
        return mul(*args)
    if name == "nn.divide":
        return b.add(c.DivOp(*args))
    if name == "nn.maximum":
        return nan_max(args[0], args[1], "ge")
    if name == "nn.minimum":
        return nan_max(args[0], args[1], "le")
    if name == "nn.power":
        return call("powf", *args)
    if name == "nn.prelu":
        x, slope = args
        return sel(cmp("ge", x, k(0)), x, mul(x, slope))
    x = args[0]
    if name == "nn.relu":
        return sel(cmp("lt", x, k(0)), k(0), x)
    if name == "nn.negative":
        return b.add(c.NegOp(x))
    if name == "nn.abs":
        return call("fabsf", x) if is_f else sel(cmp("lt", x, k(0)), b.add(c.NegOp(x)), x)
    if name == "nn.sigmoid":
        return b.add(c.DivOp(k(1), add(k(1), call("expf", b.add(c.NegOp(x))))))
    if name in ("nn.tanh", "nn.exp", "nn.log", "nn.sqrt", "nn.erf"):
        return call(name.removeprefix("nn.") + "f", x)
    if name == "nn.reciprocal":
        return b.add(c.DivOp(k(1), x))
    if name == "nn.hard_swish":
        return b.add(c.DivOp(mul(x, clamp(add(x, k(3)), 0, 6)), k(6)))
    if name == "nn.clip":
        lo, hi = p["a_min"], p["a_max"]
        if is_f:
            return clamp(x, None if math.isinf(lo) else lo, None if math.isinf(hi) else hi)
        lo_i = None if math.isinf(lo) or math.ceil(lo) <= -(2**31) else min(math.ceil(lo), 2**31 - 1)
        hi_i = None if math.isinf(hi) or math.floor(hi) >= 2**31 - 1 else max(math.floor(hi), -(2**31))
        return clamp(x, lo_i, hi_i)
    if name == "nn.leaky_relu":
        return sel(cmp("ge", x, k(0)), x, mul(x, k(p["alpha"])))
    if name == "nn.hard_sigmoid":
        return clamp(add(mul(x, k(p["alpha"])), k(p["beta"])), 0, 1)
    if name == "nn.cast":
        src = n.inputs[0].dtype
        if src == "f32" and n.out.dtype == "i32":
            # in range: truncate toward zero; NaN and out of range give INT32_MIN, as numpy on x86
            ok = b.add(
                c.LogicalAndOp(
                    cmp("ge", x, b.const(-2147483648.0, f32)), cmp("lt", x, b.const(2147483648.0, f32))
                )
            )
            safe = sel(ok, x, b.const(0.0, f32))
            return sel(ok, b.add(c.CastOp(safe, i32)), b.const(-(2**31), i32))
        return b.add(c.CastOp(x, t))
    if name == "nn.bias_add":
        return add(x, args[1])
    if name == "scale_shift":
        return add(mul(x, args[1]), args[2])
    if name == "nn.batch_norm":
        gamma, beta, mean, var = args[1:]
        scale = b.add(c.DivOp(gamma, call("sqrtf", add(var, k(p["epsilon"])))))
        shift = b.add(c.SubOp(beta, mul(mean, scale)))
        return add(mul(x, scale), shift)
    raise AssertionError(f"no scalar lowering for {name}")  # POINTWISE_OPS lists exactly these


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


def _unit(module: ModuleOp) -> c.ModuleOp:
    for op in module.ops:
        if isinstance(op, c.ModuleOp):
            return op
    unit = c.ModuleOp(
        [
            c.IncludeOp("byoc_runtime.h"),
            c.IncludeOp("byoc_kernels.h"),
        ]
    )
    module.body.block.add_op(unit)
    return unit


def _add_include(unit: c.ModuleOp, header: str) -> None:
    includes = [op for op in unit.ops if isinstance(op, c.IncludeOp)]
    if any(op.include.data == header for op in includes):
        return
    new = c.IncludeOp(header)
    block = unit.body.block
    if includes:
        block.insert_op_after(new, includes[-1])
    elif block.first_op is not None:
        block.insert_op_before(new, block.first_op)
    else:
        block.add_op(new)


def _init_func(unit: c.ModuleOp) -> c.FuncOp:
    """`int32_t byoc_init(const void* const* consts, int32_t n)`: bind every `init` global."""
    for op in list(unit.ops):
        if isinstance(op, c.FuncOp) and op.sym_name.data == INIT_FUNCTION:
            op.detach()
            op.erase()
    bound = sorted(
        (op for op in unit.ops if isinstance(op, c.GlobalOp) and op.init_index is not None),
        key=lambda g: g.init_index.value.data,  # type: ignore[union-attr]
    )
    void_ptr = c.PtrType(c.VOID, True)
    f = c.FuncOp(INIT_FUNCTION, [c.PtrType(void_ptr, True), i32], [i32], (), arg_names=["consts", "num_consts"])
    block = f.body.block
    b = _Builder(block)
    b.add(c.CheckArgCountOp(block.args[1], len(bound), 0))
    for g in bound:
        raw = b.add(c.LoadOp(block.args[0], b.const(g.init_index.value.data, index)))  # type: ignore[union-attr]
        typed = b.add(c.CastOp(raw, c.PtrType(g.element_type, True)))
        b.add(c.BindGlobalOp(g.sym_name.data, typed))
    b.add(c.ReturnOp(b.const(0, i32)))
    return f


@dataclass(frozen=True)
class LowerToCPass(ModulePass):
    """Lower every `byoc.compiler = "ccompiler"` function to the `c` dialect (see the module doc)."""

    name = "lower-to-c"

    fuse: bool = True
    """Fuse elementwise/broadcast chains into one loop and reuse buffers by liveness;
    false reproduces the seed: one kernel per op, one buffer per intermediate."""

    const_threshold: int = 1024
    """Constants with more elements are bound at load time by byoc_init instead of being
    printed into the C source."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        partitions = [
            f
            for f in op.ops
            if isinstance(f, func.FuncOp)
            and f.body.blocks
            and _lowered_here(f)
        ]
        if not partitions and not any(isinstance(x, c.ModuleOp) for x in op.ops):
            return
        unit = _unit(op)
        init_base = sum(1 for g in unit.ops if isinstance(g, c.GlobalOp) and g.init_index is not None)
        defined = {
            x.sym_name.data for x in unit.ops if isinstance(x, c.FuncOp | c.GlobalOp)
        }
        for fn in partitions:
            hook = c_lowering_target(fn.attributes[byoc_d.COMPILER_ATTR].data)  # type: ignore[union-attr]
            for header in getattr(hook, "C_INCLUDES", ()):
                _add_include(unit, header)
            lowering = PartitionLowering(fn, self.fuse, self.const_threshold, init_base)
            new_ops = lowering.lower()
            init_base += len(lowering.init_arrays)
            for new in new_ops:
                assert isinstance(new, c.FuncOp | c.GlobalOp)
                name = new.sym_name.data
                if name in defined:
                    raise PassError(fn, f"lower-to-c: symbol '@{name}' is already defined in the c.module")
                defined.add(name)
                unit.body.block.add_op(new)
            fn.body.detach_block(fn.body.block).erase()
            fn.properties["sym_visibility"] = StringAttr("private")
        unit.body.block.add_op(_init_func(unit))


def constants_of(unit: c.ModuleOp) -> list[np.ndarray[Any, Any]]:
    """The arrays `byoc_init` expects, in order (views of the IR payloads, no copy)."""
    bound = sorted(
        (g for g in unit.ops if isinstance(g, c.GlobalOp) and g.init_index is not None),
        key=lambda g: g.init_index.value.data,  # type: ignore[union-attr]
    )
    return [g.array() for g in bound]


__all__ = [
    "LowerToCPass",
    "unsupported_reason",
    "is_supported",
    "SUPPORTED_OPS",
    "constants_of",
]
