"""ChangeVerifier: verifies every op the first time, afterwards only the ops a change may
have broken, and fails exactly where xDSL's full `verify()` fails."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, ModuleOp, StringAttr, f64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

import byoc
from byoc import parse_module
from byoc.dialects import nn
from byoc.dialects.verify import ChangeVerifier

PROGRAM = """func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %a : tensor<4xf32>
  %1 = nn.add %0, %b : tensor<4xf32>
  %2 = nn.clip %1 {a_min = 0.000000e+00 : f64, a_max = 6.000000e+00 : f64} : tensor<4xf32>
  %3 = nn.multiply %2, %0 : tensor<4xf32>
  func.return %3 : tensor<4xf32>
}
"""


def parsed() -> tuple[ModuleOp, dict[str, Operation]]:
    module = parse_module(PROGRAM)
    ops = {op.name: op for op in module.walk() if isinstance(op, nn.NNOp)}
    return module, ops


def test_first_run_verifies_every_op_then_only_the_block_ends() -> None:
    module, _ = parsed()
    verifier = ChangeVerifier()
    verifier.verify(module)
    assert verifier.checked == 7  # module, func, four nn ops, func.return
    verifier.verify(module)
    assert verifier.checked == 3  # module, func and the block's last op


def retype_result(ops: dict[str, Operation]) -> None:
    ops["nn.relu"].results[0]._type = nn.tensor((7,))  # pyright: ignore[reportPrivateUsage]


def bad_property(ops: dict[str, Operation]) -> None:
    ops["nn.clip"].properties["a_min"] = f64  # a type, not a float attribute


def operand_of_another_type(ops: dict[str, Operation]) -> None:
    other = nn.ConstantOp.from_array([1.0, 2.0])
    Rewriter.insert_op(other, InsertPoint.before(ops["nn.add"]))
    ops["nn.add"].operands[1] = other.results[0]


def new_op_with_a_wrong_type(ops: dict[str, Operation]) -> None:
    add = ops["nn.add"]
    bad = nn.AddOp.create(operands=list(add.operands), result_types=[nn.tensor((5,))])
    Rewriter.insert_op(bad, InsertPoint.before(add))


def erased_operand(ops: dict[str, Operation]) -> None:
    Rewriter.erase_op(ops["nn.relu"], safe_erase=False)


def cloned_function(ops: dict[str, Operation]) -> None:
    """Valid: a copy of the function, under another name."""
    func = ops["nn.relu"].parent_op()
    assert isinstance(func, FuncOp)
    copy = func.clone()
    copy.sym_name = StringAttr("copy")
    Rewriter.insert_op(copy, InsertPoint.after(func))


CHANGES: dict[str, tuple[Callable[[dict[str, Operation]], None], bool]] = {
    "a result type assigned behind the API": (retype_result, False),
    "a property replaced by an invalid one": (bad_property, False),
    "an operand replaced by a value of another type": (operand_of_another_type, False),
    "a new op with a wrong result type": (new_op_with_a_wrong_type, False),
    "an operand whose definition was erased": (erased_operand, False),
    "a function cloned next to the original": (cloned_function, True),
}


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_a_change_fails_as_full_verification_fails(case: str) -> None:
    change, valid = CHANGES[case]
    module, ops = parsed()
    verifier = ChangeVerifier()
    verifier.verify(module)
    change(ops)
    full_error: Exception | None = None
    try:
        module.verify()
    except Exception as e:
        full_error = e
    assert (full_error is None) == valid
    if valid:
        verifier.verify(module)
        return
    with pytest.raises(type(full_error)) as raised:  # type: ignore[arg-type]
        verifier.verify(module)
    assert str(raised.value) == str(full_error)


def test_after_a_failure_the_failed_op_is_verified_again() -> None:
    module, ops = parsed()
    verifier = ChangeVerifier()
    verifier.verify(module)
    retype_result(ops)
    with pytest.raises(VerifyException):
        verifier.verify(module)
    ops["nn.relu"].results[0]._type = nn.tensor((4,))  # pyright: ignore[reportPrivateUsage]
    verifier.verify(module)
    # module, func, func.return, the relu, and the add and multiply that read its result
    # (a new type object); the clip's signature verified before the failure
    assert verifier.checked == 6


def test_nn_ops_of_one_signature_are_verified_once() -> None:
    """Ops built with interned types (`nn.tensor`) and the same properties share a signature."""
    t = nn.tensor((4,))
    block = Block(arg_types=[t])
    x: SSAValue = block.args[0]
    for _ in range(10):
        relu = nn.ReluOp.build(x)
        clip = nn.ClipOp.build(relu.results[0], a_min=0.0, a_max=6.0)
        block.add_ops([relu, clip])
        x = clip.results[0]
    block.add_op(ReturnOp(x))
    module = ModuleOp([FuncOp("main", ([t], [t]), Region(block))])
    verifier = ChangeVerifier()
    verifier.verify(module)
    # module, func, func.return, one relu and the clips (each has its own property objects)
    assert verifier.checked == 3 + 1 + 10


def test_constants_of_one_type_and_size_are_verified_once() -> None:
    """An nn.constant's verifier reads its value's type and payload length, not the bytes:
    weights of one shape share a signature; a payload of another length does not."""
    t = nn.tensor((4,))
    block = Block(arg_types=[t])
    x: SSAValue = block.args[0]
    for i in range(5):
        w = nn.ConstantOp.from_array(np.full(4, i, np.float32))
        add = nn.AddOp.build(x, w.results[0])
        block.add_ops([w, add])
        x = add.results[0]
    block.add_op(ReturnOp(x))
    module = ModuleOp([FuncOp("main", ([t], [t]), Region(block))])
    verifier = ChangeVerifier()
    verifier.verify(module)
    # module, func, func.return, one constant and one add
    assert verifier.checked == 5
    short = nn.ConstantOp.create(
        properties={"value": DenseIntOrFPElementsAttr(t, BytesAttr(b"\x00" * 8))}, result_types=[t]
    )
    Rewriter.insert_op(short, InsertPoint.at_start(block))
    with pytest.raises(VerifyException, match="payload holds 8 bytes") as full:
        module.verify()
    with pytest.raises(VerifyException) as raised:
        ChangeVerifier().verify(module)
    assert str(raised.value) == str(full.value)


def inferred_chain(shapes: list[tuple[int, ...]]) -> tuple[ModuleOp, list[Operation]]:
    """relu then clip on block arguments of `shapes`, built with `NNOp.build` (types from
    `infer_types`), one pair per shape, returning the last clip."""
    types = [nn.tensor(s) for s in shapes]
    block = Block(arg_types=types)
    ops: list[Operation] = []
    for arg in block.args:
        relu = nn.ReluOp.build(arg)
        clip = nn.ClipOp.build(relu.results[0], a_min=0.0, a_max=6.0)
        ops += [relu, clip]
    block.add_ops([*ops, ReturnOp(ops[-1].results[0])])
    return ModuleOp([FuncOp("main", (types, [types[-1]]), Region(block))]), ops


def test_inferred_ops_verify_once_per_class_and_properties() -> None:
    """Ops whose types `infer_types` gave: one per class, operand and result count and
    properties is verified in full, whatever the shapes; a later run drops the shortcut."""
    module, ops = inferred_chain([(2,), (3,), (4, 5), (6, 7, 8)])
    verifier = ChangeVerifier()
    verifier.verify(module, inferred=set(ops))
    # module, func, func.return, one relu; each clip has its own property objects
    assert verifier.checked == 3 + 1 + 4
    relu = ops[2]
    relu.operands[0] = ops[0].results[0]  # a (2,) value into the relu typed for (3,)
    with pytest.raises(VerifyException) as full:
        module.verify()
    with pytest.raises(VerifyException) as raised:
        verifier.verify(module)
    assert str(raised.value) == str(full.value)


def test_an_inferred_op_with_an_unrepresentable_type_fails_as_full_verification_does() -> None:
    """The relation holds for inferred ops, but their types' shapes are still checked."""
    module, ops = inferred_chain([(2,), (2**61, 8)])  # 2**64 f32 bytes: no int64 size
    with pytest.raises(VerifyException) as full:
        module.verify()
    with pytest.raises(VerifyException) as raised:
        ChangeVerifier().verify(module, inferred=set(ops))
    assert str(raised.value) == str(full.value)


def constants_module(arrays: list[np.ndarray]) -> tuple[ModuleOp, list[Operation]]:
    """`from_array` constants of `arrays`, the last one returned."""
    ops: list[Operation] = [nn.ConstantOp.from_array(a) for a in arrays]
    block = Block()
    block.add_ops([*ops, ReturnOp(ops[-1].results[0])])
    types = [ops[-1].results[0].type]
    return ModuleOp([FuncOp("main", ([], types), Region(block))]), ops


def test_inferred_constants_verify_in_full_once() -> None:
    """`from_array` constants named `inferred`: one is verified in full, the others have
    their value checked against their type (`_constant_fits`)."""
    arrays = [np.zeros(s, np.float32) for s in [(2,), (3, 4), (5,), ()]] + [np.arange(3)]
    module, ops = constants_module(arrays)
    verifier = ChangeVerifier()
    verifier.verify(module, inferred=set(ops))
    assert verifier.checked == 3 + 1  # module, func, func.return, one constant
    module.verify()


@pytest.mark.parametrize(
    "value",
    [
        DenseIntOrFPElementsAttr(nn.tensor((3,)), BytesAttr(b"\x00" * 8)),  # short payload
        DenseIntOrFPElementsAttr(nn.tensor((2,)), BytesAttr(b"\x00" * 8)),  # another type
        DenseIntOrFPElementsAttr(nn.tensor((3,), f64), BytesAttr(b"\x00" * 24)),
    ],
    ids=["short payload", "other shape", "other element type"],
)
def test_an_inferred_constant_that_does_not_fit_fails_as_full_verification_does(
    value: DenseIntOrFPElementsAttr,
) -> None:
    """What `_constant_fits` checks for a constant after the first is what its verifier
    would reject: such a constant is verified in full and fails with the same message."""
    module, ops = constants_module([np.zeros((4,), np.float32), np.zeros((3,), np.float32)])
    bad = nn.ConstantOp.create(properties={"value": value}, result_types=[nn.tensor((3,))])
    Rewriter.insert_op(bad, InsertPoint.after(ops[0]))
    with pytest.raises(VerifyException) as full:
        module.verify()
    with pytest.raises(VerifyException) as raised:
        ChangeVerifier().verify(module, inferred={*ops, bad})
    assert str(raised.value) == str(full.value)


def test_partitioned_ops_are_not_verified_again() -> None:
    """The byoc pipeline moves every op into a new function; each keeps its fingerprint
    (its operands are the new function's arguments, of the same types)."""
    module, _ = parsed()
    verifier = ChangeVerifier()
    verifier.verify(module)
    byoc.partition_for(module, ["ccompiler"])
    verifier.verify(module)
    # module, two functions, the call, the two returns
    assert verifier.checked == 6


def test_an_empty_block_that_needs_a_terminator_is_reported() -> None:
    module, _ = parsed()
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    verifier = ChangeVerifier()
    verifier.verify(module)
    for op in reversed(list(func.body.block.ops)):
        Rewriter.erase_op(op, safe_erase=False)
    with pytest.raises(VerifyException, match="contains empty block"):
        module.verify()
    with pytest.raises(VerifyException, match="contains empty block"):
        verifier.verify(module)


def _custom_verifiers(cls: type[IRDLOperation]) -> list[str]:
    """The classes between `cls` and `NNOp` that define their own verify_ (IRDL's generated
    wrappers, which check the declared operands and properties, do not count)."""
    own: list[str] = []
    for klass in cls.__mro__:
        if klass is nn.NNOp:
            break
        fn = klass.__dict__.get("verify_")
        if fn is not None and not fn.__qualname__.startswith("get_accessors_from_op_def."):
            own.append(klass.__name__)
    return own


def test_nn_verifiers_read_only_their_own_op() -> None:
    """What lets ChangeVerifier skip an unchanged nn op: its verification is NNOp.verify_
    (types and properties through `infer`) or nn.constant's, and its traits check nothing."""
    for cls in nn.Nn.operations:
        assert issubclass(cls, nn.NNOp), cls
        assert _custom_verifiers(cls) in ([], ["ConstantOp"]), cls.name
        assert cls.get_irdl_definition().regions == [], cls.name
        for trait in cls.traits:
            assert type(trait).verify is OpTrait.verify, (cls.name, trait)
