"""Verifying a module once per `nn` op signature, and after a pass only what it may have changed.

    verifier = ChangeVerifier()
    verifier.verify(module)          # the first time: every op, as `module.verify()`
    SomePass().apply(ctx, module)
    verifier.verify(module)          # again: only the ops the pass may have changed

`module.verify()` re-runs every op's verifier; after a pass that retags or
moves ten thousand `nn` ops, that costs as much as verifying the parsed file.
An `nn` op's verifier reads nothing but the types of its operands and results,
its attributes and its properties (`NNOp.verify_`: the element types and the
type relation `infer`), so an `nn` op whose fingerprint (those, by identity,
and that no operand is an erased value) is what it was at the last run verifies
as it did then, and is skipped; only the structural check is repeated for it
(it sits in the block that lists it). Everything else is verified in full
every time: ops of other dialects (their verifiers may read the parent op, a
symbol table or another op), ops with regions (a function checks its body
against its type), the last op of each block (the terminator rules), and every
op new since the last run.

What this gives up: a change that the fingerprint cannot see, i.e. an attribute
object mutated in place (xDSL attributes are frozen; it takes
`object.__setattr__`), and a future `nn` op whose verifier reads more than its
own types and attributes (a test checks that no `nn` op overrides `verify_`
beyond `NNOp`'s and `nn.constant`'s). `byoc-opt --verify-full` (on under
`--verify-diagnostics`) runs xDSL's full `verify()` instead.

A caller that built `nn` ops with their class's `infer_types` (the ONNX importer)
may name them `inferred` for one run (`ChangeVerifier.verify`): their type relation
holds by construction and is checked once per class and properties, not per shape.
An `nn.constant` among them is verified in full once; each other has its value's
type (the result type, the very object) and payload length checked, and its type's
shape, which is all its verifier reads.
"""

from __future__ import annotations

from collections.abc import Collection

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute, Block, ErasedSSAValue, Operation, SSAValue
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.nn.base import ConstantOp, NNOp
from byoc.dialects.nn.types import DYNAMIC, check_shape, nbytes_of

Fingerprint = tuple[
    tuple[SSAValue, ...],
    tuple[Attribute, ...],
    tuple[Attribute, ...],
    tuple[tuple[str, Attribute], ...],
    tuple[tuple[str, Attribute], ...],
]
"""What an `nn` op's verification reads: operand values and types, result types,
attributes, properties."""


def fingerprint(op: Operation) -> Fingerprint:
    # `_operands` is the tuple behind `op.operands`, whose iteration costs ten times more
    operands = op._operands  # pyright: ignore[reportPrivateUsage]
    return (
        operands,
        tuple([v.type for v in operands]),
        tuple([r.type for r in op.results]),
        tuple(op.attributes.items()),
        tuple(op.properties.items()),
    )


def _unchanged(before: Fingerprint | None, now: Fingerprint) -> bool:
    """Whether an op verified with fingerprint `before` verifies as it did.

    Its operands may be other values of the same types (a pass that moves ops
    into a new function replaces the old arguments by the new ones), but not
    erased ones.
    """
    if before is None or before[1:] != now[1:]:
        return False
    return before[0] == now[0] or not any(isinstance(v, ErasedSSAValue) for v in now[0])


def _constant_key(properties: tuple[tuple[str, Attribute], ...]) -> list[object]:
    """What of an `nn.constant`'s properties its verifier reads: of its `value`, the type
    (by identity) and the payload's length, not the bytes. Constants of one type and size
    then share a signature, as ops of one class, types and attributes do."""
    key: list[object] = []
    for k, a in properties:
        if k == "value" and isinstance(a, DenseIntOrFPElementsAttr):
            key.append((k, id(a.type), len(a.data.data)))
        else:
            key.append((k, id(a)))
    return key


class ChangeVerifier:
    """Verifies a module, and after a pass again only where the pass may have changed it.

    The checks of xDSL's `Operation.verify`, nested ops before the op that holds
    them; ops the previous run verified and whose fingerprint is unchanged are
    skipped, and of the `nn` ops with the same signature (class, and the very
    same type and attribute objects: interned types, as `nn.tensor` makes, share
    them) only the first is verified. An `nn.constant`'s signature holds its value's
    type and payload length instead of the value (`_constant_key`), so the weights
    of one shape verify once. One instance per module.
    """

    def __init__(self) -> None:
        self._verified: dict[Operation, Fingerprint] = {}
        """Each local op verified by the last run, with its fingerprint then."""
        self._signatures: dict[tuple[object, ...], Fingerprint] = {}
        """Every `nn` op signature that verified: class, then the ids of the operand types,
        result types, attributes and properties, with the fingerprint holding them."""
        self._inferred: Collection[Operation] = ()
        """The ops of the current run whose types `infer_types` computed (`verify`)."""
        self._inferred_signatures: dict[tuple[object, ...], Fingerprint] = {}
        """Class, operand and result counts, attribute and property ids of every op of
        `inferred` verified in full, with the fingerprint holding them."""
        self._shaped: dict[int, Attribute] = {}
        """The types whose shape `check_shape` accepted, by id."""
        self._sizes: dict[int, tuple[Attribute, int]] = {}
        """The byte size of each static tensor type an inferred `nn.constant` has, by id."""
        self.checked = 0
        """Ops the last run verified (for tests and timing)."""

    def verify(self, op: Operation, *, inferred: Collection[Operation] = ()) -> None:
        """Verify `op` and everything nested in it; raise as `op.verify()` does.

        `inferred` are `nn` ops whose result types their class's `infer_types` computed
        from their operands' types and whose element types passed `check_dtypes` (the
        ONNX importer's: `NNOp.build` does the same), or `nn.constant`s: for them the type
        relation holds by construction, so their signature leaves the types out. One op per class, operand
        and result count, attributes and properties is verified in full (the declared
        operands, results and property kinds), and each type of the others is checked
        only for what the relation does not check: its shape (`check_shape`). This
        applies to this run only; a later run verifies any op that changed in full."""
        seen: dict[Operation, Fingerprint] = {}
        self.checked = 0
        self._inferred = inferred
        try:
            self._verify_op(op, seen)
        except BaseException:
            self._verified = {}  # what failed is verified in full next time
            raise
        finally:
            self._inferred = ()
        self._verified = seen

    def _verify_op(self, op: Operation, seen: dict[Operation, Fingerprint]) -> None:
        for region in op.regions:  # nested ops first, as xDSL's verify() and the diagnostics do
            for block in region.blocks:
                self._verify_block(block, seen)
                if block.parent is not region:
                    raise ValueError("Parent pointer of block does not refer to containing region")
        op.verify(verify_nested_ops=False)
        self.checked += 1

    def _verify_nn_op(self, op: Operation, mark: Fingerprint) -> None:
        """Verify an `nn` op, unless one of its class with the same types, attributes and
        properties (the same objects) verified before and no operand is erased."""
        if any(isinstance(v, ErasedSSAValue) for v in mark[0]):
            op.verify(verify_nested_ops=False)  # raises
        if op in self._inferred:
            self._verify_inferred_op(op, mark)
            return
        props = (
            _constant_key(mark[4]) if type(op) is ConstantOp else [(k, id(a)) for k, a in mark[4]]
        )
        key = (
            type(op),
            *[id(t) for t in mark[1]],
            None,
            *[id(t) for t in mark[2]],
            None,
            *[(k, id(a)) for k, a in mark[3]],
            None,
            *props,
        )
        if key in self._signatures:
            return
        op.verify(verify_nested_ops=False)
        self.checked += 1
        self._signatures[key] = mark  # keeps the objects alive, so that no other takes their id

    def _verify_inferred_op(self, op: Operation, mark: Fingerprint) -> None:
        """An op of `inferred`: verified in full once per class, operand and result count,
        attributes and properties (an `nn.constant`: its value checked on its own,
        `_constant_fits`); otherwise each of its types has its shape checked (once per
        type object), and a bad one is reported as `op.verify()` reports it."""
        if type(op) is ConstantOp:
            if not self._constant_fits(mark):
                op.verify(verify_nested_ops=False)  # raises, or holds: verified in full
            props: list[object] = [k for k, _ in mark[4]]
        else:
            props = [(k, id(a)) for k, a in mark[4]]
        key = (type(op), len(mark[1]), len(mark[2]), *[(k, id(a)) for k, a in mark[3]], None, *props)
        if key not in self._inferred_signatures:
            op.verify(verify_nested_ops=False)
            self.checked += 1
            self._inferred_signatures[key] = mark
        for t in (*mark[1], *mark[2]):
            if id(t) in self._shaped:
                continue
            if not isinstance(t, TensorType):
                op.verify(verify_nested_ops=False)  # raises: the declared types are tensors
            try:
                check_shape(t)
            except VerifyException:
                op.verify(verify_nested_ops=False)  # raises, naming the op
                raise
            self._shaped[id(t)] = t  # keeps the type alive, so that no other takes its id

    def _constant_fits(self, mark: Fingerprint) -> bool:
        """Whether an `nn.constant` of fingerprint `mark` holds a dense value whose type is
        its result type (the same object) and whose payload fills that type: what its
        verifier checks besides the type's shape and element type, which the result type's
        own checks cover."""
        (result,) = mark[2]
        value = dict(mark[4]).get("value")
        if not isinstance(value, DenseIntOrFPElementsAttr) or value.type is not result:
            return False
        size = self._sizes.get(id(result))
        if size is None:
            if not isinstance(result, TensorType) or DYNAMIC in result.get_shape():
                return False
            try:
                n = nbytes_of(result)
            except VerifyException:
                return False
            size = self._sizes[id(result)] = (result, n)  # keeps the type alive
        return len(value.data.data) == size[1]

    def _verify_block(self, block: Block, seen: dict[Operation, Fingerprint]) -> None:
        previous = self._verified
        last = block.last_op
        for op in block.ops:
            if op.parent is not block:
                raise ValueError("Parent pointer of operation does not refer to containing region")
            if op is last or op.regions or not isinstance(op, NNOp):
                self._verify_op(op, seen)
                continue
            mark = fingerprint(op)
            if not _unchanged(previous.get(op), mark):
                self._verify_nn_op(op, mark)
            seen[op] = mark
        if last is None and (region := block.parent) is not None:
            parent = region.parent
            if (
                parent is not None
                and len(region.blocks) == 1
                and not parent.has_trait(NoTerminator)
            ):
                raise VerifyException(
                    f"Operation {parent.name} contains empty block in "
                    "single-block region that expects at least a terminator"
                )
