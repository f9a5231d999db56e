"""The `c` dialect: a C translation unit as IR, what `lower-to-c` produces and `-t c` prints.

Modelled on MLIR's EmitC (`emitc.include`, `emitc.func`, `emitc.global`,
`emitc.call`/`call_opaque`, `emitc.for`, the arithmetic and comparison ops,
`emitc.verbatim`), plus the few ops byoc's ABI needs (DLTensor checks, the
per-thread workspace). One `c.module` holds the whole translation unit:

    c.module {
      c.include "byoc_runtime.h"
      c.global @w = dense<[1.0, 2.0]> : tensor<2xf32>
      c.func static noalias @k(%in0: !c.ptr<f32, const>, %out0: !c.ptr<f32>) {
        c.for %i = 0 to 100 {
          %a = c.load %in0[%i] : !c.ptr<f32, const>
          %b = c.add %a, %a : f32
          c.store %b, %out0[%i] : !c.ptr<f32>
        }
        c.return
      }
    }

Types are builtin scalars (f32, f64, i1, i8, i32, i64, index = int64_t),
`!c.ptr<T>` / `!c.ptr<T, const>` and `!c.opaque<"DLTensor">`. As in EmitC,
the dialect accepts any builtin type; the emitter rejects the ones C cannot
spell (f16, ...) with the op's location. Signed integer `c.add`/`sub`/`mul`/
`neg` wrap modulo 2^N (the emitter computes them in unsigned arithmetic), so
the generated C has no signed-overflow UB. Ops that can fail at run time
(trait `CanFail`) return -1 from their function, which must return i32.

Files: `types` (types, identifiers, property helpers), `format` (literals),
`unit` (module, includes, globals, functions, calls), `expr` (scalar
expressions), `memory`, `control` (`c.for`, `c.verbatim`), `abi` (DLTensor checks).
"""

from __future__ import annotations

from xdsl.ir import Dialect

from byoc.dialects.c.abi import (
    ARG_ROLES,
    CheckArgCountOp,
    CheckBoundOp,
    CheckDisjointOp,
    CheckTensorOp,
    TensorDataOp,
)
from byoc.dialects.c.control import (
    ForOp,
    VerbatimOp,
)
from byoc.dialects.c.expr import (
    CMP_PREDICATES,
    AddOp,
    BinaryOp,
    CastOp,
    CmpOp,
    ConstantOp,
    DivOp,
    LogicalAndOp,
    LogicalOrOp,
    MulOp,
    NegOp,
    RemOp,
    SelectOp,
    SubOp,
)
from byoc.dialects.c.format import (
    print_dense,
    print_scalar,
)
from byoc.dialects.c.memory import (
    BindGlobalOp,
    BufferOp,
    GetGlobalOp,
    LoadOp,
    PtrOffsetOp,
    StoreOp,
    WorkspaceOp,
)
from byoc.dialects.c.types import (
    C_KEYWORDS,
    DLTENSOR,
    DLTENSOR_PTR,
    VOID,
    OpaqueType,
    PtrType,
    check_symbol,
    float32_repr,
    global_array,
    i64_attr,
    index,
    init_op,
    int_attr,
    int_prop,
    is_c_identifier,
    ptr,
)
from byoc.dialects.c.unit import (
    SPECIFIERS,
    CallOp,
    CallOpaqueOp,
    CanFail,
    FuncOp,
    GlobalOp,
    IncludeOp,
    ModuleOp,
    ReturnOp,
    lookup_global,
)

C = Dialect(
    "c",
    [
        ModuleOp,
        IncludeOp,
        GlobalOp,
        FuncOp,
        ReturnOp,
        CallOp,
        CallOpaqueOp,
        ConstantOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        RemOp,
        LogicalAndOp,
        LogicalOrOp,
        NegOp,
        CmpOp,
        SelectOp,
        CastOp,
        LoadOp,
        StoreOp,
        PtrOffsetOp,
        GetGlobalOp,
        BindGlobalOp,
        WorkspaceOp,
        BufferOp,
        ForOp,
        VerbatimOp,
        CheckArgCountOp,
        CheckTensorOp,
        CheckDisjointOp,
        CheckBoundOp,
        TensorDataOp,
    ],
    [PtrType, OpaqueType],
)

__all__ = [
    "ARG_ROLES",
    "AddOp",
    "BinaryOp",
    "BindGlobalOp",
    "BufferOp",
    "C",
    "CMP_PREDICATES",
    "C_KEYWORDS",
    "CallOp",
    "CallOpaqueOp",
    "CanFail",
    "CastOp",
    "CheckArgCountOp",
    "CheckBoundOp",
    "CheckDisjointOp",
    "CheckTensorOp",
    "CmpOp",
    "ConstantOp",
    "DLTENSOR",
    "DLTENSOR_PTR",
    "DivOp",
    "ForOp",
    "FuncOp",
    "GetGlobalOp",
    "GlobalOp",
    "IncludeOp",
    "LoadOp",
    "LogicalAndOp",
    "LogicalOrOp",
    "ModuleOp",
    "MulOp",
    "NegOp",
    "OpaqueType",
    "PtrOffsetOp",
    "PtrType",
    "RemOp",
    "ReturnOp",
    "SPECIFIERS",
    "SelectOp",
    "StoreOp",
    "SubOp",
    "TensorDataOp",
    "VOID",
    "VerbatimOp",
    "WorkspaceOp",
    "check_symbol",
    "float32_repr",
    "global_array",
    "i64_attr",
    "init_op",
    "int_attr",
    "index",
    "int_prop",
    "is_c_identifier",
    "lookup_global",
    "print_dense",
    "print_scalar",
    "ptr",
]
