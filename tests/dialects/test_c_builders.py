"""The `c` ops' constructors (`c.init_op`) build what IRDL's generic builder builds.

The constructors skip IRDL's argument normalisation (lower-to-c makes thousands of ops a
partition), so each is checked here against `IRDLOperation.build` given the same fields:
same operands, result types, properties and regions, and both verify alike. What neither
builder checks (operand types, arity of a variadic) is left to `verify`, which rejects it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Block, Operation
from xdsl.irdl import IRDLOperation
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import c, nn

index = c.index
F32_PTR = c.PtrType(f32)


def _ops(block: Block) -> list[Operation]:
    """One op of each kind lower-to-c builds, over the arguments of `block`
    (f32, f32, i1, !c.ptr<f32>, index, !c.ptr<i8>)."""
    x, y, cond, p, i, ws = block.args
    return [
        c.ConstantOp(IntegerAttr(3, index)),
        c.ConstantOp.of(2.5, f32),
        c.ConstantOp.of(-7, i32),
        c.AddOp(x, y),
        c.SubOp(x, y),
        c.MulOp(x, y),
        c.DivOp(x, y),
        c.NegOp(x),
        c.CmpOp("lt", x, y),
        c.SelectOp(cond, x, y),
        c.CastOp(x, i32),
        c.LoadOp(p, i),
        c.StoreOp(x, p, i),
        c.PtrOffsetOp(p, i),
        c.BufferOp(ws, 64, 128, F32_PTR),
        c.GetGlobalOp("g", c.PtrType(f32, True)),
        c.BindGlobalOp("g", p),
        c.CheckBoundOp("g"),
        c.ForOp(0, 10, 2, iv_name="i0"),
        c.VerbatimOp("/* a comment */"),
        c.CallOp("k", [x, y], [f32]),
        c.CallOp("k", [x]),
        c.CallOpaqueOp("expf", [x], [f32]),
        c.CallOpaqueOp("byoc_copy", [p, p], (), [c.int_attr(0, index), c.int_attr(1, index), c.i64_attr(16)]),
        c.ReturnOp(),
        c.ReturnOp(x),
    ]


def _generic(op: Operation) -> Operation:
    """`op` made again by IRDL's generic builder, from the same fields."""
    assert isinstance(op, IRDLOperation)
    defs = type(op).get_irdl_definition()
    operands: list[object] = []
    start = 0
    for _, d in defs.operands:  # one variadic at most among the c ops
        variadic = type(d).__name__ == "VarOperandDef"
        n = len(op.operands) - (len(defs.operands) - 1) if variadic else 1
        chunk = list(op.operands[start : start + n])
        operands.append(chunk if variadic else chunk[0])
        start += n
    results: list[object] = []
    start = 0
    for _, d in defs.results:
        variadic = type(d).__name__ == "VarResultDef"
        n = len(op.results) - (len(defs.results) - 1) if variadic else 1
        types = [r.type for r in op.results[start : start + n]]
        results.append(types if variadic else types[0])
        start += n
    regions = [r.clone() for r in op.regions]
    return type(op).build(operands=operands, result_types=results, properties=dict(op.properties), regions=regions)


def _block() -> Block:
    return Block(arg_types=[f32, f32, i1, F32_PTR, index, c.PtrType(nn.IntegerType(8))])


@pytest.mark.parametrize("k", range(len(_ops(_block()))))
def test_each_constructor_builds_what_the_generic_builder_builds(k: int) -> None:
    op = _ops(_block())[k]
    ref = _generic(op)
    assert type(ref) is type(op)
    assert list(ref.operands) == list(op.operands)
    assert [r.type for r in ref.results] == [r.type for r in op.results]
    assert ref.properties == op.properties
    assert ref.attributes == op.attributes == {}
    assert len(ref.regions) == len(op.regions)
    for a, b in zip(ref.regions, op.regions, strict=True):
        assert [x.type for blk in a.blocks for x in blk.args] == [x.type for blk in b.blocks for x in blk.args]


def _state(op: Operation) -> dict[str, object]:
    """What `Operation.__init__` sets on `op`, with the IR objects it links named by identity."""
    return {
        "fields": sorted(vars(op)),
        "operands": [id(v) for v in op.operands],
        "uses": [
            (u.operation is op, u.index, any(x is u for x in v.uses))
            for v, u in zip(op.operands, op._operand_uses, strict=True)  # pyright: ignore[reportPrivateUsage]
        ],
        "results": [(r.type, r.index, r.op is op, r.name_hint, r.first_use) for r in op.results],
        "properties": dict(op.properties),
        "attributes": dict(op.attributes),
        "location": op.location,
        "successors": (tuple(op.successors), tuple(op._successor_uses)),  # pyright: ignore[reportPrivateUsage]
        "regions": [(r.parent is op, len(r.blocks)) for r in op.regions],
        "links": (op.parent, op.next_op, op.prev_op),
    }


@pytest.mark.parametrize("k", range(len(_ops(_block()))))
def test_init_op_sets_what_operation_init_sets(k: int) -> None:
    """`c.init_op` sets the fields itself (no setter re-checks them): the op is in the state
    `Operation.__init__` leaves it in, given the same operands, types, properties, regions."""
    op = _ops(_block())[k]
    ref = type(op).__new__(type(op))
    Operation.__init__(
        ref,
        operands=list(op.operands),
        result_types=[r.type for r in op.results],
        properties=dict(op.properties),
        regions=[r.clone() for r in op.regions],
    )
    assert _state(ref) == _state(op)


def test_optional_properties_are_left_out_not_none() -> None:
    """IRDL's builder drops a `None` property; the constructors never set one."""
    f = c.FuncOp("k", [f32], [], ())
    call = c.CallOpaqueOp("expf", [], [f32])
    g = c.GlobalOp("g", DenseIntOrFPElementsAttr(nn.tensor((1,), f32), BytesAttr(b"\0\0\0\0")))
    assert "specifiers" not in f.properties
    assert "args" not in call.properties
    assert "init_index" not in g.properties
    assert f.specifiers is None and call.args is None and g.init_index is None


def test_int_attr_is_made_once_and_equals_a_fresh_one() -> None:
    a = c.int_attr(12345, index)
    assert a is c.int_attr(12345, index)
    assert a == IntegerAttr(12345, index)
    assert c.int_attr(1, i1) == IntegerAttr(1, i1)
    assert c.i64_attr(-4) == IntegerAttr(-4, i64)
    with pytest.raises(VerifyException):
        c.int_attr(300, nn.IntegerType(8))  # out of range: raised, and never cached


def test_float_constants_keep_their_sign_of_zero() -> None:
    """Float literals are not shared through a cache keyed by value (0.0 == -0.0)."""
    neg, pos = c.ConstantOp.of(-0.0, f32), c.ConstantOp.of(0.0, f32)
    assert isinstance(neg.value, FloatAttr) and isinstance(pos.value, FloatAttr)
    assert str(neg.value.value.data) == "-0.0" and str(pos.value.value.data) == "0.0"


BAD: dict[str, Callable[[Block], Operation]] = {
    "operands of two types": lambda b: c.AddOp(b.args[0], b.args[4]),
    "a store through a const pointer": lambda b: c.StoreOp(b.args[0], c.CastOp(b.args[3], c.PtrType(f32, True)).result, b.args[4]),
    "an unknown predicate": lambda b: c.CmpOp("lx", b.args[0], b.args[1]),
    "a bad callee name": lambda b: c.CallOpaqueOp("not a name", [b.args[0]], [f32]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_what_the_constructors_do_not_check_verify_rejects(case: str) -> None:
    block = _block()
    op = BAD[case](block)
    for operand in op.operands:  # a cast made for the case goes in the block first
        owner = getattr(operand, "op", None)
        if isinstance(owner, Operation) and owner.parent is None:
            block.add_op(owner)
    block.add_op(op)
    with pytest.raises(VerifyException):
        op.verify()


def test_string_properties_of_predicates_equal_fresh_ones() -> None:
    block = _block()
    op = c.CmpOp("ge", block.args[0], block.args[1])
    assert op.predicate == StringAttr("ge")
