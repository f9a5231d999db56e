"""The first tier: C partitions run at once, with no compiler run for the model.

    program = compile_program(unit, "ccompiler_main_0")    # a Program, or a str: why not
    module = FirstTierModule(programs, signatures)          # a RuntimeComponent of kind "c"

`byoc_first_tier.c` is generic C compiled once per machine against the kernel library
(with one trampoline per kernel, generated here from the library's kernel list), cached
beside the kernel library and loaded as a private copy per module (its thread setting is
the module's own, as a model library's is). A partition is a `Program`: the partition's
`c` dialect (after lower-to-c) read once into words that `byoc_ft_run` interprets — the
same kernel calls with the same arguments as the generated C, the workspace offsets, and
each fused elementwise loop as a list of operations run over blocks of its innermost
loop (docs/c-codegen.md, "The first tier").

What a program cannot hold — a `c.verbatim` that is not a comment or the thread split of
a fused loop, a call of a C function that is not a library kernel or a scalar math function,
an element type outside f32, f64 and the integers up to 64 bits — makes
`compile_program` return why, and that partition waits for the compiled library.
"""

from __future__ import annotations

import re
import struct
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue

from byoc.dialects import c
from byoc.runtime import kernel_library as kl
from byoc.runtime.c_module import (
    _CDEF,
    _LIBRARY_CDEF,
    CSignature,
    PackedLibrary,
    _unload,
    check_shared_object,
    pin_openmp_runtime,
)
from byoc.runtime.cpu import native_load
from byoc.runtime.interface import CEntry
from byoc.runtime.static_ffi import static_ffi
from byoc.runtime.toolchain import (
    DEFAULT_FLAGS,
    INCLUDE_DIR,
    _effective_flags,
    cache_dir,
    compile_source,
    compiler,
    kernel_cache_dir,
    kernel_library,
    private_copy,
)
from byoc.utils.aligned import aligned_array

Array = np.ndarray[Any, Any]

SOURCE = INCLUDE_DIR / "byoc_first_tier.c"

# The instruction set of byoc_first_tier.c, in its enum's order.
_OPS = """END BUF CPTR PADD KERNEL LOOP FOR FILL BCAST MOV
ADD_I SUB_I MUL_I DIV_I REM_I NEG_I ADD_F SUB_F MUL_F DIV_F NEG_F ROUND_F32
WRAP_I32 WRAP_I16 WRAP_I8 WRAP_U8 WRAP_U16 WRAP_U32 WRAP_BOOL
EQ_I NE_I LT_I LE_I GT_I GE_I EQ_F NE_F LT_F LE_F GT_F GE_F
SELECT AND OR I2F F2I
LD_F32 LD_F64 LD_I64 LD_I32 LD_I16 LD_I8 LD_U8 LD_U16 LD_U32 LD_BOOL
ST_F32 ST_F64 ST_I64 ST_I32 ST_I16 ST_I8 ST_U8 ST_U16 ST_U32 ST_BOOL
CALL1F CALL1D CALL2F CALL2D
LDC_F32 LDC_F64 LDC_I64 LDC_I32 LDC_I16 LDC_I8 LDC_U8 LDC_U16 LDC_U32 LDC_BOOL
STC_F32 STC_F64 STC_I64 STC_I32 STC_I16 STC_I8 STC_U8 STC_U16 STC_U32 STC_BOOL
LD1_F32 LD1_F64 LD1_I64 LD1_I32 LD1_I16 LD1_I8 LD1_U8 LD1_U16 LD1_U32 LD1_BOOL""".split()
OP = {name: i for i, name in enumerate(_OPS)}
ABI = 5000 + len(_OPS)
"""`byoc_ft_abi()` of a library whose program layout and instruction set this module writes."""

_CDEF_FT = (
    kl_text := SOURCE.read_text()
)[kl_text.index("/* BEGIN byoc_first_tier cdef */") : kl_text.index("/* END byoc_first_tier cdef */")] + (
    "int32_t byoc_ft_run(void* program, int32_t unused, DLTensor** args, int32_t num_args);\n"
    "uint32_t byoc_ft_abi(void);\n"
)

# Element types a register holds: name -> (float?, wrap op after an integer result, load/store suffix)
_TYPES: dict[str, tuple[bool, str | None, str]] = {
    "f32": (True, None, "F32"),
    "f64": (True, None, "F64"),
    "index": (False, None, "I64"),
    "i64": (False, None, "I64"),
    "i32": (False, "WRAP_I32", "I32"),
    "i16": (False, "WRAP_I16", "I16"),
    "i8": (False, "WRAP_I8", "I8"),
    "ui8": (False, "WRAP_U8", "U8"),
    "ui16": (False, "WRAP_U16", "U16"),
    "ui32": (False, "WRAP_U32", "U32"),
    "i1": (False, "WRAP_BOOL", "BOOL"),
}
MATH_1F = (
    "expf logf sqrtf tanhf erff fabsf byoc_tanhf sinf cosf tanf asinf acosf atanf sinhf coshf "
    "asinhf acoshf atanhf floorf ceilf rintf expm1f log1pf byoc_expf byoc_gelu_erff byoc_sigmoidf"
).split()
MATH_1D = "exp log sqrt tanh erf fabs".split()
MATH_2F = "powf fminf fmaxf fmodf".split()
MATH_2D = "pow fmod".split()
"""The scalar functions a fused loop may call (byoc_first_tier.c's tables, in order)."""
_MATH = {
    **{(n, 1): ("CALL1F", i) for i, n in enumerate(MATH_1F)},
    **{(n, 1): ("CALL1D", i) for i, n in enumerate(MATH_1D)},
    **{(n, 2): ("CALL2F", i) for i, n in enumerate(MATH_2F)},
    **{(n, 2): ("CALL2D", i) for i, n in enumerate(MATH_2D)},
}
_CMP = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}
_SPLIT = re.compile(
    r"^const int32_t byoc_nt = byoc_threads_for\((\d+), BYOC_PAR_GRAIN\);\nif \(byoc_nt > 1\) \{$"
)
_SKIPPED_VERBATIM = re.compile(r"^(/\*.*\*/|BYOC_PARALLEL_FOR(_SIMD)?\(byoc_nt\)|BYOC_SIMD)$", re.DOTALL)


class Unsupported(Exception):
    """What a program cannot hold (the partition waits for the compiled library)."""


@lru_cache(maxsize=256)
def _type_name(t: Attribute) -> str:
    if isinstance(t, IndexType):
        return "index"
    return str(t)


def _reg_type(t: Attribute) -> tuple[bool, str | None, str]:
    name = _type_name(t)
    if name not in _TYPES:
        raise Unsupported(f"element type {name}")
    return _TYPES[name]


# ---------------------------------------------------------------------------
# The library
# ---------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _param_type(param: str) -> str:
    """`const float *x` -> `const float *` (the declaration without its name)."""
    m = re.match(r"^(.*?)([A-Za-z_]\w*)\s*$", param.strip())
    if m is None:
        raise ValueError(f"cannot read the parameter {param!r}")
    return m.group(1).strip()


def trampolines(entries: Sequence[kl.KernelEntry]) -> str:
    """One trampoline per kernel, `int64_t t(void* const* p, const int64_t* i, const double* f)`,
    and their table: the kernel's pointers, integers and floats in order."""
    out: list[str] = []
    for k, e in enumerate(entries):
        args: list[str] = []
        np_ = ni = nf = 0
        params = [] if e.params.strip() == "void" else e.params.split(",")
        for p in params:
            t = _param_type(p)
            if "*" in t:
                args.append(f"({t})p[{np_}]")
                np_ += 1
            elif t in ("float", "double"):
                args.append(f"({t})f[{nf}]")
                nf += 1
            else:
                args.append(f"({t})i[{ni}]")
                ni += 1
        call = f"{e.name}({', '.join(args)})"
        body = f"{call}; return 0;" if e.result.strip() == "void" else f"return (int64_t){call};"
        out.append(
            f"static int64_t byoc_ft_t{k}_(void* const* p, const int64_t* i, const double* f) {{\n"
            f"  (void)p; (void)i; (void)f;\n  {body}\n}}"
        )
    table = ", ".join(f"byoc_ft_t{k}_" for k in range(len(entries))) or "0"
    out.append(f"const byoc_ft_tramp_fn byoc_ft_trampolines_[] = {{{table}}};")
    out.append(f"const int32_t byoc_ft_num_trampolines_ = {len(entries)};")
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Library:
    """The first tier's shared library (its bytes, loaded per module) and its kernels."""

    library: bytes
    kernels: dict[str, int]
    """Kernel name (`byoc_conv2d_f32`) -> its trampoline."""
    signatures: dict[str, kl.KernelEntry]


_LIBRARIES: dict[tuple[str, ...], Library] = {}
_LIBRARY_LOCK = threading.Lock()


def first_tier_library() -> Library:
    """The first tier's library for the flags models are built with now (the dispatch level,
    sanitizers and `BYOC_CFLAGS` of the environment): found in the kernel cache or built
    there (once per machine: it depends on the kernel library, not on a model), kept for
    the life of the process."""
    cc = compiler()
    key = (cc, *_effective_flags(DEFAULT_FLAGS, cc))
    found = _LIBRARIES.get(key)
    if found is not None:
        return found
    with _LIBRARY_LOCK:
        if key not in _LIBRARIES:
            entries = sorted(kernel_library().entries, key=lambda e: e.name)
            source = SOURCE.read_text() + "\n" + trampolines(entries)
            directory = kernel_cache_dir(cache_dir())
            built = compile_source(source, DEFAULT_FLAGS, directory=directory)
            kernels = {e.name: k for k, e in enumerate(entries)}
            _LIBRARIES[key] = Library(built.library, kernels, {e.name: e for e in entries})
    return _LIBRARIES[key]


# ---------------------------------------------------------------------------
# Programs
# ---------------------------------------------------------------------------


@dataclass
class Program:
    """One partition as words for `byoc_ft_run` (module doc)."""

    num_args: int
    code: list[int] = field(default_factory=list[int])
    ws_size: int = 0
    num_ptrs: int = 0
    flits: list[float] = field(default_factory=list[float])
    ilits: list[int] = field(default_factory=list[int])
    consts: list[Array] = field(default_factory=list[Array])


_WS = object()
"""The workspace pointer of the wrapper (a `c.buffer` takes a range of it)."""


class _Compiler:
    def __init__(self, unit: c.ModuleOp, library: Library):
        self.funcs = {f.sym_name.data: f for f in unit.ops if isinstance(f, c.FuncOp)}
        self.globals = {g.sym_name.data: g for g in unit.ops if isinstance(g, c.GlobalOp)}
        self.library = library
        self.const_index: dict[str, int] = {}

    def program(self, entry: c.FuncOp) -> Program:
        calls = [op for op in entry.body.block.ops if isinstance(op, c.CallOp)]
        names = [op.callee.root_reference.data for op in calls]
        wrapper = next((self.funcs[n] for n in names if n.endswith("_wrapper") and n in self.funcs), None)
        if wrapper is None:
            raise Unsupported("a packed entry without its typed wrapper")
        args = wrapper.body.block.args
        prog = Program(num_args=len(args))
        prog.num_ptrs = len(args)
        ptrs: dict[SSAValue, Any] = {}
        for op in wrapper.body.block.ops:
            if isinstance(op, c.TensorDataOp):
                ptrs[op.result] = list(args).index(op.tensor)  # type: ignore[arg-type]
            elif isinstance(op, c.WorkspaceOp):
                prog.ws_size = op.size.value.data
                ptrs[op.result] = _WS
            elif isinstance(op, c.CallOp):
                if op.res:
                    raise Unsupported("a call with a result in the wrapper")
                self.inline(prog, op, ptrs)
            elif isinstance(op, c.CheckTensorOp | c.CheckDisjointOp | c.CheckBoundOp | c.ConstantOp | c.ReturnOp):
                continue
            else:
                raise Unsupported(f"'{op.name}' in a partition's wrapper")
        prog.code.append(OP["END"])
        return prog

    def new_ptr(self, prog: Program) -> int:
        prog.num_ptrs += 1
        return prog.num_ptrs - 1

    def inline(self, prog: Program, call: c.CallOp, ptrs: dict[SSAValue, Any]) -> None:
        callee = self.funcs.get(call.callee.root_reference.data)
        if callee is None:
            raise Unsupported(f"a call of @{call.callee.root_reference.data}")
        local: dict[SSAValue, Any] = {}
        for arg, value in zip(callee.body.block.args, call.args, strict=True):
            if value not in ptrs:
                raise Unsupported("a call passing a value that is not a pointer")
            local[arg] = ptrs[value]
        ints: dict[SSAValue, int] = {}
        split: str = ""  # "" | "then" | "else": inside the thread split of a fused loop
        work = 0
        block: _Block | None = None  # the loops and scalar code being gathered into one LOOP
        for op in callee.body.block.ops:
            cls = type(op)  # exact types: no class derives from a c op (faster than isinstance)
            if cls is c.VerbatimOp:
                text = op.value.data
                m = _SPLIT.match(text)
                if m is not None and not split:
                    split, work = "then", int(m.group(1))
                elif text == "} else {" and split == "then":
                    split = "else"
                elif text == "}" and split == "else":
                    split = ""
                elif not _SKIPPED_VERBATIM.match(text):
                    raise Unsupported(f"C text in a partition ({text[:40]!r})")
                continue
            if cls is c.ConstantOp and isinstance(op.value, IntegerAttr):
                ints[op.result] = int(op.value.value.data)
            if cls is c.CastOp and op.operand in local:
                local[op.result] = local[op.operand]  # a pointer cast: the same pointer
                continue
            if cls is c.ForOp or (cls in _SCALAR_OPS and not _is_kernel_call(op)):
                if split == "else":
                    continue  # the one-thread copy of the loop just gathered
                if block is None:
                    block = _Block(_LoopCompiler(local))
                if cls is c.ForOp:
                    block.words += block.loops.for_(op)
                    block.fors += 1
                    block.parallel = split == "then"
                    block.work = work
                else:
                    block.words += block.loops.op(op, inner=False)
                    block.scalars = True
                continue
            if block is not None:
                block.emit(prog)
                block = None
            if cls is c.BufferOp:
                if local.get(op.workspace) is not _WS:
                    raise Unsupported("a buffer of something other than the workspace")
                reg = self.new_ptr(prog)
                prog.code += [OP["BUF"], reg, op.offset.value.data]
                local[op.result] = reg
            elif cls is c.GetGlobalOp:
                name = op.global_name.root_reference.data
                if name not in self.const_index:
                    self.const_index[name] = len(prog.consts)
                    prog.consts.append(aligned_array(self.globals[name].array()))
                reg = self.new_ptr(prog)
                prog.code += [OP["CPTR"], reg, self.const_index[name]]
                local[op.result] = reg
            elif cls is c.PtrOffsetOp:
                if op.offset not in ints or local.get(op.ptr) in (None, _WS):
                    raise Unsupported("a pointer offset not known before the run")
                t = op.result.type
                assert isinstance(t, c.PtrType)
                size = np.dtype(_np_dtype(t.pointee)).itemsize
                reg = self.new_ptr(prog)
                prog.code += [OP["PADD"], reg, local[op.ptr], ints[op.offset] * size]
                local[op.result] = reg
            elif cls is c.CallOp:
                if op.res:
                    raise Unsupported("a call with a result")
                self.inline(prog, op, local)
            elif cls is c.CallOpaqueOp:
                self.kernel(prog, op, local)
            elif cls is c.ReturnOp:
                break
            else:
                raise Unsupported(f"'{op.name}' in a partition step")
        if block is not None:
            block.emit(prog)

    def kernel(self, prog: Program, op: c.CallOpaqueOp, local: dict[SSAValue, Any]) -> None:
        name = op.callee.data
        k = self.library.kernels.get(name)
        if k is None or op.res:
            raise Unsupported(f"a call of '{name}', not a kernel of the library")
        entry = self.library.signatures[name]
        params = [] if entry.params.strip() == "void" else [_param_type(p) for p in entry.params.split(",")]
        items = op.args.data if op.args is not None else [IntegerAttr(i, IndexType()) for i in range(len(op.call_args))]
        if len(items) != len(params):
            raise Unsupported(f"'{name}' called with {len(items)} arguments, the library's has {len(params)}")
        p: list[int] = []
        i: list[int] = []
        f: list[int] = []
        for item, t in zip(items, params, strict=True):
            if "*" in t:
                if isinstance(item, IntegerAttr) and isinstance(item.type, IndexType):
                    value = op.call_args[item.value.data]
                    if local.get(value) in (None, _WS):
                        raise Unsupported(f"'{name}' takes a pointer not known before the run")
                    p.append(local[value])
                elif isinstance(item, DenseArrayBase):
                    p.append(-1 - len(prog.ilits))
                    prog.ilits.extend(int(v) for v in item.get_values())
                else:
                    raise Unsupported(f"'{name}' takes {item} for a pointer")
            elif isinstance(item, IntegerAttr) and not isinstance(item.type, IndexType):
                (f if t in ("float", "double") else i).append(int(item.value.data))
                if t in ("float", "double"):
                    f[-1] = len(prog.flits)
                    prog.flits.append(float(item.value.data))
            elif isinstance(item, FloatAttr):
                if t not in ("float", "double"):
                    raise Unsupported(f"'{name}' takes a float for {t}")
                f.append(len(prog.flits))
                prog.flits.append(float(item.value.data))
            elif isinstance(item, StringAttr):
                raise Unsupported(f"'{name}' takes a string")
            else:
                raise Unsupported(f"'{name}' takes a run-time scalar")
        if len(p) > 64 or len(f) > 64:
            raise Unsupported(f"'{name}' takes more than 64 pointers or floats")
        prog.code += [OP["KERNEL"], k, len(p), *p, len(i), *i, len(f), *f]



_SCALAR_OPS: frozenset[type[Operation]] = frozenset((
    c.ConstantOp, c.LoadOp, c.StoreOp, c.AddOp, c.SubOp, c.MulOp, c.DivOp, c.RemOp, c.NegOp,
    c.LogicalAndOp, c.LogicalOrOp, c.CmpOp, c.SelectOp, c.CastOp, c.CallOpaqueOp,
))  # fmt: skip
"""Operations a loop body holds, also met outside loops (a fused chain over one element)."""


_ARITH: dict[type[Operation], str] = {
    c.AddOp: "ADD", c.SubOp: "SUB", c.MulOp: "MUL", c.DivOp: "DIV", c.RemOp: "REM",
}  # fmt: skip


def _is_kernel_call(op: Operation) -> bool:
    return type(op) is c.CallOpaqueOp and (op.args is not None or not op.res)


@dataclass
class _Block:
    """Fused loops and scalar code of one step, gathered into one LOOP instruction (so that
    values flow between them); split across threads when it is one loop the generated C
    splits."""

    loops: _LoopCompiler
    words: list[int] = field(default_factory=list[int])
    fors: int = 0
    scalars: bool = False
    parallel: bool = False
    work: int = 0

    def emit(self, prog: Program) -> None:
        par = self.parallel and self.fors == 1 and not self.scalars
        consts = [w for reg_bits in self.loops.consts.items() for w in reg_bits]
        prog.code += [OP["LOOP"], int(par), self.work, self.loops.num_regs, len(self.loops.consts), *consts]
        prog.code += [len(self.words), *self.words]


def _np_dtype(t: Attribute) -> str:
    names = {"f32": "float32", "f64": "float64", "i64": "int64", "index": "int64", "i32": "int32",
             "i16": "int16", "i8": "int8", "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "i1": "bool"}  # fmt: skip
    name = _type_name(t)
    if name not in names:
        raise Unsupported(f"element type {name}")
    return names[name]


class _LoopCompiler:
    """A fused loop nest as loop words: each SSA value a register, its level's vector or a
    scalar of an outer level (broadcast into a register of the innermost loop where used)."""

    def __init__(self, ptrs: Mapping[SSAValue, Any]):
        self.ptrs = ptrs
        self.num_regs = 0
        self.reg: dict[SSAValue, int] = {}
        self.level: dict[SSAValue, int] = {}
        self.depth = 0
        self.bcast: dict[int, int] = {}
        self.prelude: list[int] = []
        self.consts: dict[int, int] = {}
        """Register -> the 64 bits of its constant: filled in every lane once per run."""
        self.inner_iv: SSAValue | None = None
        self.uniform: set[SSAValue] = set()
        """Values of the innermost loop equal in every lane (constants, and what only they make)."""
        self.unit: set[SSAValue] = set()
        """Values of the innermost loop that are its variable plus a uniform value."""

    def new(self) -> int:
        self.num_regs += 1
        return self.num_regs - 1

    def for_(self, op: c.ForOp) -> list[int]:
        ops = list(op.body.block.ops)
        inner = not any(type(o) is c.ForOp for o in ops)
        self.depth += 1
        var = self.new()
        iv = op.body.block.args[0]
        self.reg[iv] = var
        self.level[iv] = self.depth
        if inner and op.step.value.data == 1:
            self.inner_iv = iv
            self.unit.add(iv)
        saved_bcast, saved_prelude = self.bcast, self.prelude
        self.bcast, self.prelude = {}, []
        words: list[int] = []
        for o in ops:
            cls = type(o)
            if cls is c.ForOp:
                words += self.for_(o)
            elif cls is c.VerbatimOp and _SKIPPED_VERBATIM.match(o.value.data):
                continue
            else:
                words += self.op(o, inner)
        words = self.prelude + words
        self.bcast, self.prelude = saved_bcast, saved_prelude
        self.depth -= 1
        lower, upper, step = (int(a.value.data) for a in (op.lower, op.upper, op.step))
        if step <= 0:
            raise Unsupported("a loop with a step below 1")
        return [OP["FOR"], var, lower, upper, step, int(inner), len(words), *words]

    def use(self, v: SSAValue, inner: bool) -> int:
        """The register of `v` as the current level reads it."""
        if v not in self.reg:
            raise Unsupported("a loop reading a value of outside that is not a pointer")
        r = self.reg[v]
        if r in self.consts:
            return r
        if inner and self.level[v] < self.depth:
            if r not in self.bcast:
                b = self.new()
                self.bcast[r] = b
                self.prelude += [OP["BCAST"], b, r, 0, 0]
            return self.bcast[r]
        return r

    def is_uniform(self, v: SSAValue) -> bool:
        return v in self.uniform or (v in self.level and self.level[v] < self.depth)

    def access(self, index: SSAValue, inner: bool) -> str:
        """How a load or store of the innermost loop reads its index: "C" at consecutive
        indices from the first lane's, "1" at one index (a load), "" at any (a gather)."""
        if not inner:
            return ""
        if index in self.unit:
            return "C"
        if self.is_uniform(index):
            return "1"
        return ""

    def define(self, v: SSAValue) -> int:
        r = self.new()
        self.reg[v] = r
        self.level[v] = self.depth
        return r

    def ptr(self, v: SSAValue) -> int:
        p = self.ptrs.get(v)
        if not isinstance(p, int):
            raise Unsupported("a loop reading a pointer not known before the run")
        return p

    def op(self, o: Operation, inner: bool) -> list[int]:
        u = partial(self.use, inner=inner)
        cls = type(o)  # exact types: no class derives from a c op (faster than isinstance)
        # operands and result read once: each named accessor rebuilds the operand list
        ins = tuple(o.operands)
        res = o.results[0] if o.results else None
        if cls is c.ConstantOp:
            assert res is not None
            v = o.value
            if isinstance(v, FloatAttr):
                bits = struct.unpack("<q", struct.pack("<d", float(v.value.data)))[0]
            elif isinstance(v, IntegerAttr):
                bits = int(v.value.data)
                if not -(2**63) <= bits < 2**64:
                    raise Unsupported(f"a constant {bits} wider than 64 bits")
                bits = bits - 2**64 if bits >= 2**63 else bits
            else:
                raise Unsupported(f"a constant {v}")
            r = self.new()
            self.reg[res] = r
            self.level[res] = 0  # every lane holds it from the start of the run
            self.consts[r] = bits
            self.uniform.add(res)
            return []
        if cls is c.LoadOp:
            assert res is not None
            ptr, index = ins
            _, _, suffix = _reg_type(res.type)
            kind = "LD" + self.access(index, inner)
            r = self.define(res)
            if kind == "LD1":
                self.uniform.add(res)
            return [OP[f"{kind}_{suffix}"], r, self.ptr(ptr), u(index), 0]
        if cls is c.StoreOp:
            value, ptr, index = ins
            _, _, suffix = _reg_type(value.type)
            kind = "STC" if self.access(index, inner) == "C" else "ST"
            return [OP[f"{kind}_{suffix}"], 0, self.ptr(ptr), u(index), u(value)]
        base = _ARITH.get(cls)
        if base is not None:
            assert res is not None
            lhs, rhs = ins
            is_float, wrap, _ = _reg_type(res.type)
            if inner and not is_float:
                lhs_u, rhs_u = self.is_uniform(lhs), self.is_uniform(rhs)
                if lhs_u and rhs_u:
                    self.uniform.add(res)
                elif base == "ADD" and ((lhs in self.unit and rhs_u) or (rhs in self.unit and lhs_u)):
                    self.unit.add(res)
            if is_float and base == "REM":
                raise Unsupported("a float remainder")
            a, b = u(lhs), u(rhs)
            r = self.define(res)
            return self.finish([OP[f"{base}_{'F' if is_float else 'I'}"], r, a, b, 0], r, res.type)
        if cls is c.NegOp:
            assert res is not None
            is_float, _, _ = _reg_type(res.type)
            a = u(ins[0])
            r = self.define(res)
            return self.finish([OP["NEG_F" if is_float else "NEG_I"], r, a, 0, 0], r, res.type)
        if cls is c.LogicalAndOp or cls is c.LogicalOrOp:
            assert res is not None
            a, b = u(ins[0]), u(ins[1])
            r = self.define(res)
            return [OP["AND" if cls is c.LogicalAndOp else "OR"], r, a, b, 0]
        if cls is c.CmpOp:
            assert res is not None
            lhs, rhs = ins
            is_float, _, _ = _reg_type(lhs.type)
            predicate = o.predicate.data
            pred = _CMP.get(predicate)
            if pred is None:
                raise Unsupported(f"a comparison '{predicate}'")
            a, b = u(lhs), u(rhs)
            r = self.define(res)
            return [OP[f"{pred}_{'F' if is_float else 'I'}"], r, a, b, 0]
        if cls is c.SelectOp:
            assert res is not None
            _reg_type(res.type)
            cnd, a, b = (u(v) for v in ins)
            r = self.define(res)
            return [OP["SELECT"], r, cnd, a, b]
        if cls is c.CastOp:
            return self.cast(o, u)
        if cls is c.CallOpaqueOp:
            name = o.callee.data
            if o.args is not None or len(o.res) != 1:
                raise Unsupported(f"a call of '{name}' in a loop")
            found = _MATH.get((name, len(o.call_args)))
            if found is not None:
                kind, fn = found
                a = u(o.call_args[0])
                b = u(o.call_args[1]) if len(o.call_args) == 2 else 0
                r = self.define(o.res[0])
                return [OP[kind], r, a, b, fn]
            raise Unsupported(f"a call of '{name}' in a loop")
        raise Unsupported(f"'{o.name}' in a loop")

    def finish(self, words: list[int], r: int, t: Attribute) -> list[int]:
        """`words`, then what makes register `r` hold a value of type `t` (module doc of the C)."""
        is_float, wrap, _ = _reg_type(t)
        fix = "ROUND_F32" if is_float and _type_name(t) == "f32" else wrap
        if fix is None:
            return words
        words[1] = self.new()  # the raw result, then `r` (a destination is never an operand)
        return words + [OP[fix], r, words[1], 0, 0]

    def cast(self, o: c.CastOp, u: Any) -> list[int]:
        src, dst = o.operand.type, o.result.type
        if isinstance(src, c.PtrType) or isinstance(dst, c.PtrType):
            raise Unsupported("a pointer cast in a loop")
        sf, _, _ = _reg_type(src)
        df, wrap, _ = _reg_type(dst)
        a = u(o.operand)
        r = self.define(o.result)
        if sf and df:
            return self.finish([OP["MOV"], r, a, 0, 0], r, dst)
        if not sf and df:
            return self.finish([OP["I2F"], r, a, 0, 0], r, dst)
        if sf and not df:
            if _type_name(dst) == "i1":  # C: (bool)x is x != 0
                z = self.new()
                self.consts[z] = 0
                return [OP["NE_F"], r, a, z, 0]
            return self.finish([OP["F2I"], r, a, 0, 0], r, dst)
        return self.finish([OP["MOV"], r, a, 0, 0], r, dst)


def compile_program(unit: c.ModuleOp, symbol: str, library: Library | None = None) -> Program | str:
    """Partition `symbol` of `unit` (a `c.module` after lower-to-c) as a first-tier program,
    or why it cannot be one."""
    library = library or first_tier_library()
    compiler = _Compiler(unit, library)
    entry = next(
        (
            f
            for f in compiler.funcs.values()
            if not f.is_static
            and isinstance(label := f.attributes.get("c.diagnostic_name"), StringAttr)
            and label.data == symbol
            and not f.sym_name.data.endswith("_wrapper")
        ),
        None,
    )
    if entry is None:
        return f"no packed entry for partition '{symbol}'"
    try:
        return compiler.program(entry)
    except Unsupported as e:
        return str(e)


# ---------------------------------------------------------------------------
# The component
# ---------------------------------------------------------------------------


class FirstTierModule(PackedLibrary):
    """C partitions run by the first tier's library (module doc): a runtime component of
    kind "c" whose partitions are programs. It is never exported: an artifact holds the
    compiled library (`byoc.runtime.tiered`)."""

    kind = "c"
    holds_threads = True

    def __init__(self, programs: Mapping[str, Program], functions: Mapping[str, CSignature]):
        library = first_tier_library()
        if check_shared_object(library.library) is not None:
            raise OSError("the first tier's library is not a loadable shared object")
        self.functions = {sym: functions[sym] for sym in programs}
        self.ffi = static_ffi(_CDEF + _LIBRARY_CDEF + _CDEF_FT)  # parsed once per machine
        pin_openmp_runtime()
        with native_load(), private_copy(library.library) as copy:
            self.lib: Any = self.ffi.dlopen(str(copy))
        if int(self.lib.byoc_ft_abi()) != ABI:
            self.ffi.dlclose(self.lib)
            raise OSError("the first tier's library reports another instruction set")
        self.lib.byoc_retain()
        # as a CModule is unloaded: its thread team stopped and joined and every thread's
        # workspace freed (byoc_release) before the library goes; never while a call is in
        # flight (every CFunction and native plan entry of it holds this module)
        unload = weakref.finalize(self, _unload, self.ffi, self.lib, [])
        unload.atexit = False  # at exit, daemon threads may still be in a call
        ffi = self.ffi
        self._keep: list[Any] = []
        self._programs: dict[str, Any] = {}
        for sym, prog in programs.items():
            code = np.asarray(prog.code, np.int64)
            flits = np.asarray(prog.flits or [0.0], np.float64)
            ilits = np.asarray(prog.ilits or [0], np.int64)
            consts = ffi.new("void*[]", max(len(prog.consts), 1))
            for k, arr in enumerate(prog.consts):
                consts[k] = ffi.cast("void*", ffi.from_buffer(arr, require_writable=False))
            p = ffi.new("byoc_ft_program*")
            p.num_args = prog.num_args
            p.num_ptrs = prog.num_ptrs
            p.code_len = len(code)
            p.ws_size = prog.ws_size
            p.code = ffi.cast("const int64_t*", ffi.from_buffer(code))
            p.flits = ffi.cast("const double*", ffi.from_buffer(flits))
            p.ilits = ffi.cast("const int64_t*", ffi.from_buffer(ilits))
            p.consts = consts
            self._keep += [code, flits, ilits, consts, prog.consts]
            self._programs[sym] = p
        self._run = self.lib.byoc_ft_run
        self._run_address = int(ffi.cast("intptr_t", ffi.addressof(self.lib, "byoc_ft_run")))
        try:
            self._team_hold: Any = self.lib.byoc_team_hold
        except AttributeError:
            self._team_hold = None
        super().__init__()

    def _entry(self, sym: str) -> Any:
        return partial(self._run, self._programs[sym], 0)

    def c_entry(self, symbol: str) -> CEntry:
        program = int(self.ffi.cast("intptr_t", self._programs[symbol]))
        return CEntry(self._run_address, self.last_error, module=program, graph=0)

    def export(self) -> dict[str, bytes]:
        raise TypeError("the first tier is never exported: export the compiled library")

    def set_num_threads(self, n: int) -> None:
        self.lib.byoc_set_num_threads(int(n))

    def set_call_threads(self, n: int) -> None:
        self.lib.byoc_set_call_threads(int(n))

    def hold_threads(self, on: bool) -> None:
        if self._team_hold is not None:
            self._team_hold(1 if on else 0)

    def thread_release(self) -> None:
        self.lib.byoc_thread_release()

    def __repr__(self) -> str:
        return f"FirstTierModule(functions={sorted(self.functions)})"


__all__ = [
    "FirstTierModule",
    "Library",
    "Program",
    "compile_program",
    "first_tier_library",
    "trampolines",
]
