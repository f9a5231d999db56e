"""lower-to-c's emission: one partition's steps as C dialect functions (kernels, the
subgraph function, the DLTensor wrapper and the packed entry) and constant globals."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    StringAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from byoc.dialects import c, nn
from byoc.lowering.nn_to_c.buffers import (
    Storage,
    bind_outputs,
    copy_plans,
    place_concat_inputs,
    plan_buffers,
    storage_root,
)
from byoc.lowering.nn_to_c.epilogue import fuse_epilogues
from byoc.lowering.nn_to_c.fusion import KernelPlan, fuse_groups, kernel_plans
from byoc.lowering.nn_to_c.graph import (
    CompositeLowering,
    Computation,
    Gather,
    GraphBuilder,
    Tensor,
    View,
    contiguous_strides,
    i64_attr,
    live_computations,
    read_view,
)
from byoc.lowering.nn_to_c.math_scalar import math_scalar_op
from byoc.runtime.c_module import c_entry_symbol
from byoc.targets.ccompiler import MATH_POINTWISE_OPS, VIEW_OPS

INIT_FUNCTION = "byoc_init"
"""The C function binding large constants at load time."""

index = IndexType()


def _elt(dtype: str) -> Attribute:
    """The element type of short name `dtype` (f32, i64, i32, i8, ui8, i16, i1)."""
    return nn.element_type_named(dtype) or i32


@lru_cache(maxsize=64)
def _ptr(dtype: str, const: bool = False) -> c.PtrType:
    """`!c.ptr<dtype>`, made once per element type (a type is immutable; a partition's
    functions name a few thousand pointers)."""
    return c.PtrType(_elt(dtype), const)


@dataclass
class _Nest:
    """What `_loop_nest` works out for one fused group and `_loop_body` emits."""

    step: KernelPlan
    params: dict[Tensor, SSAValue]
    dims: list[tuple[int, list[int]]]
    """(extent, stride of each access) of every loop, outermost first."""
    leaf_keys: list[tuple[Tensor, View]]
    """The reads from outside the group."""
    access_of: list[int]
    """The access (stride vector) of each leaf read, then of each store."""
    n_accesses: int
    members: set[Computation]


def _gathered(b: CBuilder, value: SSAValue, g: Gather) -> SSAValue:
    """`clamp(i < 0 ? i + dim : i, 0, dim - 1) * stride` of the index `value`, in int64
    (nn.take's reference: numpy.take with mode='clip' after counting negatives from the end)."""
    i = b.add(c.CastOp(value, index))
    zero = b.const(0, index)
    i = b.add(c.SelectOp(b.add(c.CmpOp("lt", i, zero)), b.add(c.AddOp(i, b.const(g.dim, index))), i))
    i = b.add(c.SelectOp(b.add(c.CmpOp("lt", i, zero)), zero, i))
    last = b.const(g.dim - 1, index)
    i = b.add(c.SelectOp(b.add(c.CmpOp("gt", i, last)), last, i))
    return i if g.stride == 1 else b.add(c.MulOp(i, b.const(g.stride, index)))


class CBuilder:
    """Appends C ops to a block the lowering is filling (one op at a time, never moved or
    erased, no rewrite listener to notify): `Block.add_op`, which is what xDSL's `Builder`
    comes down to at the end of a block, without its two `isinstance` checks against the
    abstract `Operation` (0.75 against 1.4 us an op). Each constant is made once per block."""

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

    def __init__(
        self,
        fn: func.FuncOp,
        fuse: bool,
        const_threshold: int,
        init_base: int,
        lower_composite: CompositeLowering | None = None,
        helper_base: str | None = None,
    ):
        self.fn = fn
        self.lower_composite = lower_composite
        self.sym = fn.sym_name.data
        self.c_sym = c_entry_symbol(self.sym)
        """The C name of the partition's entry."""
        self.h = helper_base or self.c_sym
        """What its helpers' names extend (`c_helper_base`)."""
        self.fuse = fuse
        self.const_threshold = const_threshold
        self.init_base = init_base
        self.globals: list[c.GlobalOp] = []
        self.const_names: dict[Tensor, str] = {}
        self.init_arrays: list[np.ndarray[Any, Any]] = []

    # ---- entry ---------------------------------------------------------------------
    def lower(self) -> list[Operation]:
        assert c.is_c_identifier(self.c_sym), self.c_sym  # c_entry_symbol encodes any name
        g = GraphBuilder(self.fn, self.lower_composite)
        g.build()
        nodes = live_computations(g)
        if self.fuse:
            nodes = fuse_epilogues(nodes, g.outputs)
        groups = fuse_groups(nodes, self.fuse)
        storage, copies = bind_outputs(g)
        steps = kernel_plans(groups, g.outputs) + copy_plans(copies, storage)
        steps = place_concat_inputs(steps, storage)
        ws_size = plan_buffers(steps, storage, reuse=self.fuse)
        kernels = [self._kernel_func(k, step, storage) for k, step in enumerate(steps)]
        subgraph = self._subgraph_func(steps, storage, g, ws_size)
        wrapper = self._wrapper_func(g, ws_size)
        packed = self._packed_func(g)
        return [*self.globals, *kernels, subgraph, wrapper, packed]

    def _arg_names(self, g: GraphBuilder) -> tuple[list[str], list[str]]:
        """(labels, C names) of the inputs then the outputs. A label is the name messages
        show (the input's name when it has one, else `arg<i>`; `out<j>`); the C names are
        `in<i>` and `out<j>`: a user's name never becomes a C identifier, so an input
        called `EOF` or `expf` cannot collide with what the C headers define."""
        labels: list[str] = []
        for i, arg in enumerate(self.fn.body.block.args):
            hint = arg.name_hint
            name = hint if hint is not None and c.is_c_identifier(hint) else f"arg{i}"
            while name in labels:
                name += "_"
            labels.append(name)
        outs = [f"out{j}" for j in range(len(g.outputs))]
        for j, o in enumerate(outs):
            while o in labels:
                o += "_"
            outs[j] = o
            labels.append(o)
        c_names = [f"in{i}" for i in range(len(g.inputs))] + [f"out{j}" for j in range(len(g.outputs))]
        return labels, c_names

    # ---- constants -----------------------------------------------------------------------
    def _global_for(self, v: Tensor) -> str:
        name = self.const_names.get(v)
        if name is not None:
            return name
        arr = v.array
        assert arr is not None
        name = f"{self.h}_c{len(self.const_names)}"
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
    def _kernel_func(self, k: int, step: KernelPlan, storage: dict[Tensor, Storage]) -> c.FuncOp:
        ins = step.reads
        outs = step.writes
        tmps = step.scratch
        types = [_ptr(v.dtype, True) for v in ins] + [_ptr(v.dtype) for v in [*outs, *tmps]]
        names = (
            [f"in{i}" for i in range(len(ins))]
            + [f"out{j}" for j in range(len(outs))]
            + [f"tmp{j}" for j in range(len(tmps))]
        )
        f = c.FuncOp(f"{self.h}_{k}", types, (), ("static", "noalias"), arg_names=names)
        block = f.body.block
        b = CBuilder(block)
        params = dict(zip([*ins, *outs, *tmps], block.args, strict=True))
        described = ", ".join(m for n in step.nodes for m in [n.op_name, *n.params.get("epilogue", [])])
        out0 = step.nodes[-1].out
        b.add(c.VerbatimOp(f"/* {described}: {'x'.join(map(str, out0.shape)) or 'scalar'} {out0.dtype} */"))
        first = step.nodes[0]
        if first.kind == "pointwise":
            self._loop_nest(b, step, params)
        elif first.kind == "kernel":
            args = [params[first.inputs[i].root()] for i in range(len(first.inputs))]
            args.append(params[first.out])
            args.extend(params[v] for v in first.more_outs)
            args.extend(params[t] for t in tmps)
            literal: list[Attribute] = [c.int_attr(i, index) for i in range(len(args))] + first.args
            b.add(c.CallOpaqueOp(first.callee, args, (), literal))
        elif first.kind == "concat":
            out = params[first.out]
            axis = first.params["axis"]
            shape = first.out.shape
            outer = math.prod(shape[:axis])
            out_inner = math.prod(shape[axis:])
            offset = 0
            size = first.out.nbytes // max(first.out.numel, 1)  # bytes an element (i8/ui8: 1)
            in_place = first.params.get("in_place", [])
            for k, v in enumerate(first.inputs):
                block_elems = math.prod(v.shape[axis:])
                if k in in_place:  # its producer wrote it into its slice (place_concat_inputs)
                    offset += block_elems
                    continue
                dst = out if offset == 0 else b.add(c.PtrOffsetOp(out, b.const(offset, index)))
                b.add(
                    c.CallOpaqueOp(
                        "byoc_copy_blocks",
                        [params[v.root()], dst],
                        (),
                        [c.int_attr(0, index), c.int_attr(1, index), i64_attr(outer), i64_attr(block_elems * size), i64_attr(out_inner * size)],
                    )
                )
                offset += block_elems
        else:  # copy
            src = params[first.inputs[0].root()]
            b.add(c.CallOpaqueOp("byoc_copy", [src, params[first.out]], (), [c.int_attr(0, index), c.int_attr(1, index), i64_attr(first.out.nbytes)]))
        b.add(c.ReturnOp())
        return f

    def _loop_nest(self, b: CBuilder, step: KernelPlan, params: dict[Tensor, SSAValue]) -> None:
        """One loop nest over the group's shape: load every leaf once, evaluate the nodes, store."""
        shape = step.nodes[0].out.shape
        rank = len(shape)
        members = set(step.nodes)
        # every (root, view) read, and every stored value, with its strides over `shape`
        leaf_keys: list[tuple[Tensor, View]] = []
        for n in step.nodes:
            for v, view in zip(n.inputs, n.views, strict=True):
                r = v.root()
                if r.node in members:
                    continue
                key = (r, read_view(view, shape))
                if key not in leaf_keys:
                    leaf_keys.append(key)
        # accesses with the same strides share their offset computation
        access_of: list[int] = []
        accesses: list[tuple[int, ...]] = []
        for strides in [view.strides for _, view in leaf_keys] + [
            tuple(contiguous_strides(shape)) for _ in step.writes
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
        nest = _Nest(step, params, dims, leaf_keys, access_of, len(accesses), members)
        parallel = parallel_loop_prologue(dims[0][0] if dims else 0, math.prod(shape) * len(step.nodes))
        if parallel is None:
            self._loop_body(b, nest)
            return
        # Two copies of the nest: the split one inside `if (byoc_nt > 1)`, and a plain one that
        # enters no OpenMP region (even an if(0) region sets up a team on every call).
        b.add(c.VerbatimOp(parallel[0]))
        self._loop_body(b, nest, pragma=parallel[1])
        b.add(c.VerbatimOp("} else {"))
        self._loop_body(b, nest)
        b.add(c.VerbatimOp("}"))

    def _loop_body(self, b: CBuilder, nest: _Nest, pragma: str | None = None) -> None:
        """The loop nest of `_loop_nest` over `nest.dims`; `pragma` before its outer loop."""
        step, params, dims = nest.step, nest.params, nest.dims
        offsets: list[SSAValue | None] = [None] * nest.n_accesses  # None: offset 0
        body = b
        # The innermost loop, when every access in it is contiguous or a broadcast, is
        # marked `omp simd` (byoc_runtime.h, BYOC_SIMD) in both copies: the outlined region
        # of the split copy loses the pointers' `restrict`, and gcc -O2's cheap cost model
        # leaves a loop whose trip count is no multiple of the vector width scalar, where a
        # select such as relu's `x < 0 ? 0 : x` becomes a branch that random signs mispredict
        # (a 64x200x17 bias-add + relu: 0.8 ms scalar, 0.04 ms vectorised).
        simd = (
            bool(dims)
            and all(s in (0, 1) for s in dims[-1][1])
            and not any(view.gather for _, view in nest.leaf_keys)
        )
        for level, (extent, strides) in enumerate(dims):
            loop = c.ForOp(0, extent, iv_name=f"i{level}")
            innermost = level == len(dims) - 1
            if level == 0 and pragma is not None:
                if simd and innermost:
                    pragma = pragma.replace("BYOC_PARALLEL_FOR(", "BYOC_PARALLEL_FOR_SIMD(")
                body.add(c.VerbatimOp(pragma))
            elif simd and innermost:
                body.add(c.VerbatimOp("BYOC_SIMD"))
            body.add(loop)
            inner = CBuilder(loop.body.block)
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
        final: list[SSAValue] = []
        for k, a in enumerate(nest.access_of):
            off = offsets[a]
            start = nest.leaf_keys[k][1].offset if k < len(nest.leaf_keys) else 0
            if off is None:
                final.append(body.const(start, index))
            elif start:
                final.append(body.add(c.AddOp(off, body.const(start, index))))
            else:
                final.append(off)
        scalars: dict[tuple[Tensor, View], SSAValue] = {}
        for a, key in enumerate(nest.leaf_keys):
            if key[1].gather is None:
                scalars[key] = body.add(c.LoadOp(params[key[0]], final[a]))
        values: dict[Tensor, SSAValue] = {}
        shape = step.nodes[0].out.shape
        for n in step.nodes:
            args: list[SSAValue] = []
            for v, view in zip(n.inputs, n.views, strict=True):
                r = v.root()
                if r.node in nest.members:
                    args.append(values[r])
                    continue
                key = (r, read_view(view, shape))
                g = key[1].gather
                if g is None:
                    args.append(scalars[key])
                    continue
                # a gather: the offset needs the node's index read first (loaded per node:
                # two gathers of one operand may read different indices)
                term = _gathered(body, self._index_value(n, g, nest, values, scalars, shape), g)
                at = body.add(c.AddOp(final[nest.leaf_keys.index(key)], term))
                args.append(body.add(c.LoadOp(params[r], at)))
            values[n.out] = scalar_op(body, n, args)
        for a, v in enumerate(step.writes):
            body.add(c.StoreOp(values[v], params[v], final[len(nest.leaf_keys) + a]))

    @staticmethod
    def _index_value(
        n: Computation,
        g: Gather,
        nest: _Nest,
        values: dict[Tensor, SSAValue],
        scalars: dict[tuple[Tensor, View], SSAValue],
        shape: tuple[int, ...],
    ) -> SSAValue:
        """The scalar of node `n`'s index input (a gather's operand after the data)."""
        v = n.inputs[g.operand]
        r = v.root()
        if r.node in nest.members:
            return values[r]
        return scalars[(r, read_view(n.views[g.operand], shape))]

    # ---- the subgraph function, the wrapper, the packed entry ---------------------------
    def _subgraph_func(self, steps: list[KernelPlan], storage: dict[Tensor, Storage], g: GraphBuilder, ws_size: int) -> c.FuncOp:
        _, names = self._arg_names(g)
        types: list[Attribute] = [_ptr(v.dtype, True) for v in g.inputs] + [_ptr(v.dtype) for v in g.outputs]
        if ws_size:
            types.append(c.PtrType(nn.IntegerType(8)))
            names = [*names, "ws"]
        f = c.FuncOp(f"{self.h}_", types, (), ("static",), arg_names=names)
        block = f.body.block
        b = CBuilder(block)
        n_in = len(g.inputs)
        ptrs: dict[Tensor, SSAValue] = {}
        const_ptrs: dict[Tensor, SSAValue] = {}
        counter = itertools.count()

        def pointer(v: Tensor, const: bool) -> SSAValue:
            st = storage.get(v)
            if v.kind == "const":
                if v not in ptrs:
                    ptrs[v] = b.add(c.GetGlobalOp(self._global_for(v), _ptr(v.dtype, True)))
                return ptrs[v]
            assert st is not None
            if v not in ptrs:
                if st.kind == "slice":  # inside a concatenation's output (place_concat_inputs)
                    base, offset = storage_root(v, storage)
                    at = pointer(base, False)
                    ptrs[v] = at if offset == 0 else b.add(c.PtrOffsetOp(at, b.const(offset, index)))
                elif st.kind == "input":
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
            b.add(c.CallOp(f"{self.h}_{k}", args))
        b.add(c.ReturnOp())
        return f

    def _wrapper_func(self, g: GraphBuilder, ws_size: int) -> c.FuncOp:
        names, c_names = self._arg_names(g)
        n_in, n_out = len(g.inputs), len(g.outputs)
        f = c.FuncOp(f"{self.h}_wrapper", [c.DLTENSOR_PTR] * (n_in + n_out), [i32], (), arg_names=c_names)
        f.attributes["c.diagnostic_name"] = StringAttr(self.sym)
        block = f.body.block
        b = CBuilder(block)
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
            b.add(c.TensorDataOp(arg, _ptr(v.dtype, i < n_in)), hint=f"{c_names[i]}_data")
            for i, (arg, v) in enumerate(zip(block.args, values, strict=True))
        ]
        if ws_size:
            data.append(b.add(c.WorkspaceOp(ws_size), hint="ws"))
        b.add(c.CallOp(f"{self.h}_", data))
        b.add(c.ReturnOp(b.const(0, i32)))
        return f

    def _packed_func(self, g: GraphBuilder) -> c.FuncOp:
        n_in, n_out = len(g.inputs), len(g.outputs)
        args_t = c.PtrType(c.DLTENSOR_PTR)
        f = c.FuncOp(self.c_sym, [args_t, i32], [i32], (), arg_names=["args", "num_args"])
        f.attributes["c.diagnostic_name"] = StringAttr(self.sym)
        block = f.body.block
        b = CBuilder(block)
        b.add(c.CheckArgCountOp(block.args[1], n_in, n_out))
        tensors = [b.add(c.LoadOp(block.args[0], b.const(i, index))) for i in range(n_in + n_out)]
        result = b.add(c.CallOp(f"{self.h}_wrapper", tensors, [i32]))
        b.add(c.ReturnOp(result))
        return f


# Scalar semantics of the pointwise ops (f32 and wrapping i32)


PARALLEL_MIN_WORK = 1 << 16
"""Loops with less work (elements x fused ops) get no OpenMP pragma at all: at run time
`byoc_threads_for` would keep them on one thread anyway (BYOC_PAR_GRAIN, 32768 a thread)."""
PARALLEL_MIN_EXTENT = 4
"""An outer loop shorter than this is not split (a static schedule of 3 iterations on 2
threads leaves one idle a third of the time)."""


def parallel_loop_prologue(extent: int, work: int) -> tuple[str, str] | None:
    """What splits the next loop (`extent` iterations, `work` elementwise operations in all)
    across the thread setting's OpenMP team (byoc_runtime.h), or None when it is too small to
    gain: the lines that open `if (byoc_nt > 1) {`, and the pragma before the split loop (the
    caller emits the loop a second time, without the pragma, in the `else` branch, so a run on
    one thread enters no OpenMP region). The iterations of an elementwise loop are
    independent, so the result is the same at every thread count."""
    if extent < PARALLEL_MIN_EXTENT or work < PARALLEL_MIN_WORK:
        return None
    return (
        f"const int32_t byoc_nt = byoc_threads_for({work}, BYOC_PAR_GRAIN);\nif (byoc_nt > 1) {{",
        "BYOC_PARALLEL_FOR(byoc_nt)",
    )


COMPARISONS = {
    "nn.equal": "eq",
    "nn.less": "lt",
    "nn.greater": "gt",
    "nn.less_equal": "le",
    "nn.greater_equal": "ge",
}
"""The comparison ops and their c.cmp predicates (NaN compares false, as in numpy)."""

INT_BITS = {"i64": 64, "i32": 32, "i8": 8, "ui8": 8, "i16": 16}


REDUCE_STEPS: dict[str, Any] = {
    "reduce.abs": lambda b, x: b.add(c.CallOpaqueOp("fabsf", [x], [f32])),
    "reduce.square": lambda b, x: b.add(c.MulOp(x, x)),
    "reduce.sqrt": lambda b, x: b.add(c.CallOpaqueOp("sqrtf", [x], [f32])),
    "reduce.log": lambda b, x: b.add(c.CallOpaqueOp("logf", [x], [f32])),
}
"""The f32 elementwise steps around the sum of GraphBuilder._reduce_via_sum."""


def _cast(b: CBuilder, x: SSAValue, src: str, dst: str) -> SSAValue:
    """numpy's astype from `src` to `dst` on x86-64. A float converted to an integer is
    truncated toward zero when in range; NaN and out-of-range values give the minimum of the
    64-bit or 32-bit conversion the CPU does (INT64_MIN for i64, INT32_MIN for the others, of
    which an 8-bit type keeps the low byte), never C's undefined behaviour. Every other cast
    is C's conversion (to i1: non-zero is true; between integers: modulo 2^n)."""
    t = _elt(dst)
    if src == "f32" and dst in INT_BITS:
        wide, bits = (i64, 63) if dst == "i64" else (i32, 31)
        bound = 2.0**bits
        ok = b.add(
            c.LogicalAndOp(
                b.add(c.CmpOp("ge", x, b.const(-bound, f32))), b.add(c.CmpOp("lt", x, b.const(bound, f32)))
            )
        )
        safe = b.add(c.SelectOp(ok, x, b.const(0.0, f32)))
        v = b.add(c.SelectOp(ok, b.add(c.CastOp(safe, wide)), b.const(-(2**bits), wide)))
        return v if wide == t else b.add(c.CastOp(v, t))
    return b.add(c.CastOp(x, t))


def scalar_op(b: CBuilder, n: Computation, args: list[SSAValue]) -> SSAValue:
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
    if name == "nn.sigmoid":  # byoc_math.h: 1 / (1 + exp(-x)) without a libm call, vectorizable
        return call("byoc_sigmoidf", x)
    if name == "nn.tanh":  # byoc_math.h: inline, ~5x faster than libm's tanhf
        return call("byoc_tanhf", x)
    if name in ("nn.exp", "nn.log", "nn.sqrt", "nn.erf"):
        return call(name.removeprefix("nn.") + "f", x)
    if name == "nn.reciprocal":
        return b.add(c.DivOp(k(1), x))
    if name == "nn.hard_swish":  # x >= 3 is x: x * 6 / 6 overflows above FLT_MAX / 6
        ramp = b.add(c.DivOp(mul(x, clamp(add(x, k(3)), 0, 6)), k(6)))
        return sel(cmp("ge", x, k(3)), x, ramp)
    if name == "nn.clip":
        lo, hi = p["a_min"], p["a_max"]
        if is_f and (math.isnan(lo) or math.isnan(hi)):
            # numpy.clip and ONNX Clip (Min(max, Max(x, min))): a NaN bound makes every element
            # NaN; a comparison with NaN is false, so clamp() would skip the bound instead.
            # x + NaN is NaN for every x (and keeps x a used operand)
            return add(x, k(math.nan))
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
        return _cast(b, x, n.inputs[0].dtype, n.out.dtype)
    if name in COMPARISONS:
        return cmp(COMPARISONS[name], x, args[1])
    if name == "nn.logical_and":
        return b.add(c.LogicalAndOp(x, args[1]))
    if name == "nn.logical_or":
        return b.add(c.LogicalOrOp(x, args[1]))
    if name == "nn.logical_xor":
        return cmp("ne", x, args[1])
    if name == "nn.logical_not":
        return cmp("eq", x, b.const(0, t))
    if name == "nn.where":
        return sel(x, args[1], args[2])
    if name in VIEW_OPS or name == "nn.transpose":
        return x  # a read through a view: the element itself
    if name == "nn.is_nan":
        return cmp("ne", x, x)
    if name == "nn.is_inf":
        hits = [cmp("eq", x, b.const(v, f32)) for flag, v in (("detect_positive", math.inf), ("detect_negative", -math.inf)) if p[flag]]
        if not hits:
            return b.const(0, t)
        return hits[0] if len(hits) == 1 else b.add(c.LogicalOrOp(hits[0], hits[1]))
    if name in REDUCE_STEPS:
        return REDUCE_STEPS[name](b, x)
    if name in ("log_sum_exp.exp", "log_sum_exp.log"):
        # nn.reduce_log_sum_exp's loops (GraphBuilder._log_sum_exp): the maximum `top`
        # counts as 0 where it is not finite (top - top is 0 exactly for a finite top)
        top = args[1]
        finite = cmp("eq", b.add(c.SubOp(top, top)), k(0))
        shift = sel(finite, top, k(0))
        if name == "log_sum_exp.exp":
            return call("expf", b.add(c.SubOp(x, shift)))
        return add(call("logf", x), shift)
    if name == "nn.bias_add":
        return add(x, args[1])
    if name == "scale_shift":
        return add(mul(x, args[1]), args[2])
    if name == "nn.batch_norm":
        gamma, beta, mean, var = args[1:]
        scale = b.add(c.DivOp(gamma, call("sqrtf", add(var, k(p["epsilon"])))))
        shift = b.add(c.SubOp(beta, mul(mean, scale)))
        return add(mul(x, scale), shift)
    if name in MATH_POINTWISE_OPS:
        return math_scalar_op(b, name, p, args)
    raise AssertionError(f"no scalar lowering for {name}")  # ccompiler.POINTWISE_OPS lists exactly these

