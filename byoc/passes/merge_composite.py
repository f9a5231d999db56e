"""merge-composite: wrap each match of the targets' pattern tables in a `byoc.composite`.

Contract:
- Expects `nn` IR; may already hold composites or regions.
- Applies the table entries target by target, in table order (or those named by
  `patterns`, in that order). An entry sees only the ops no earlier entry took,
  so earlier entries win, as in TVM's MergeComposite; it scans its block from
  the last op back, so a chain is matched from its end.
- A match becomes `byoc.composite "<target>.<name>"` at the root's place. Its
  operands are the values matched by `wildcard()`/`is_var()` (and the operands
  of an `is_op(...)` given no operand patterns), each once; constants matched
  by `is_constant()` are copied inside. A composite's body is never matched.
- A match is rejected when a value inside it other than the root's is used
  outside it, unless `extra-results` is set and that value can become an extra
  result without a cycle; or when its check returns false (the pattern's next
  alternative is tried).
- Guarantees: the module verifies, computes the same numbers, and a second run
  changes nothing.

    // merge-composite{targets=test patterns=conv2d_relu}
    %c = nn.conv2d %x, %w : (...) -> tensor<1x4x8x8xf32>
    %r = nn.relu %c : tensor<1x4x8x8xf32>
    // becomes
    %r = byoc.composite "test.conv2d_relu"(%x, %w) : (...) -> tensor<1x4x8x8xf32> {
    ^bb0(%a: ..., %b: ...):
      %0 = nn.conv2d %a, %b : (...) -> tensor<1x4x8x8xf32>
      %1 = nn.relu %0 : tensor<1x4x8x8xf32>
      byoc.yield %1 : tensor<1x4x8x8xf32>
    }

The priority scan is not a greedy pattern walk (an op one entry takes is never
offered to a later one), so it is a loop: deciding on a match reads the IR only,
and an accepted match is rewritten through `Rewriter` and `Builder`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from byoc.dialects.byoc import CompositeOp, YieldOp
from byoc.passes.options import as_names, check_targets
from byoc.passes.scope import graph_blocks, host_functions
from byoc.targets import get_target
from byoc.targets.patterns import Match, TableEntry
from byoc.utils.gc import paused_gc


@dataclass(frozen=True)
class MergeCompositePass(ModulePass):
    """Wrap matches of the targets' pattern tables in `byoc.composite` ops."""

    name: ClassVar[str] = "merge-composite"

    targets: tuple[str, ...]
    """Targets whose pattern tables apply, in priority order."""

    patterns: tuple[str, ...] = ()
    """Table entries to apply, in this order: `<name>` (every listed target that has it) or
    `<target>.<name>`. Default: each target's whole table, in table order."""

    extra_results: bool = False
    """Accept a match whose interior value is used outside it by making that value an extra
    result of the composite, when that creates no cycle. Default: reject such a match (TVM)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", as_names(self.targets))
        object.__setattr__(self, "patterns", as_names(self.patterns))
        check_targets(self.targets)
        self.schedule()  # unknown pattern names fail here, before any IR is touched

    def schedule(self) -> list[tuple[str, TableEntry]]:
        """(target, entry) pairs in the order they apply."""
        tables = {t: list(get_target(t).patterns) for t in self.targets}
        if not self.patterns:
            return [(t, e) for t in self.targets for e in tables[t]]
        known = [f"{t}.{e.name}" for t in self.targets for e in tables[t]]
        out: list[tuple[str, TableEntry]] = []
        for spec in self.patterns:
            target, dot, name = spec.partition(".")
            if not dot:
                target, name = "", spec
            elif target not in tables:
                raise ValueError(
                    f"pattern '{spec}' names target '{target}', which is not among the targets "
                    f"({', '.join(self.targets) or 'none'})"
                )
            found = [
                (t, e)
                for t in ([target] if target else self.targets)
                for e in tables[t]
                if e.name == name
            ]
            if not found:
                raise ValueError(
                    f"unknown pattern '{spec}'; known patterns: {', '.join(known) or 'none'}"
                )
            out.extend(found)
        return out

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        schedule = self.schedule()
        if not schedule:
            return
        with paused_gc():
            for func in host_functions(op):
                for block in list(graph_blocks(func)):
                    # an entry none of whose root ops is in the block cannot match there; the
                    # names change only when an entry wraps ops in a composite
                    names = {o.name for o in block.ops}
                    for target, entry in schedule:
                        roots = entry.pattern.root_ops()
                        if roots is not None and roots.isdisjoint(names):
                            continue
                        if merge_matches(block, f"{target}.{entry.name}", entry, self.extra_results):
                            names = {o.name for o in block.ops}


def merge_matches(block: Block, composite: str, entry: TableEntry, extra_results: bool) -> int:
    """Apply one table entry to `block`, from its last op back; return the number of composites."""
    ops = list(block.ops)
    position: dict[int, float] = {id(o): i for i, o in enumerate(ops)}
    # where each op of the block sits, kept current as ops move (positions are only compared)
    claimed: set[int] = set()
    roots = entry.pattern.root_ops()

    def available(o: Operation) -> bool:
        return id(o) not in claimed

    name = StringAttr(composite)
    made = 0
    for root in reversed(ops):
        if id(root) in claimed or (roots is not None and root.name not in roots):
            continue
        for match in entry.pattern.matches(root, available):
            inside = {id(o) for o in match.ops}
            escaping = _escaping_values(match, inside, block)
            if escaping and not (
                extra_results and _no_cycle(match, escaping, inside, block, position)
            ):
                continue
            if not entry.accepts(match):
                continue
            claimed.update(inside)
            for const in _wrap_in_composite(name, match, escaping, inside, block, position):
                claimed.add(id(const))
            made += 1
            break
    return made


def _escaping_values(match: Match, inside: set[int], block: Block) -> list[SSAValue]:
    """Results of non-root matched ops used by an op outside the match, in match order."""
    out: list[SSAValue] = []
    for o in match.ops:
        if o is match.root:
            continue
        for result in o.results:
            for use in result.uses:
                user = block.find_ancestor_op_in_block(use.operation)
                if user is None or id(user) not in inside:
                    out.append(result)
                    break
    return out


def _outside_users(value: SSAValue, inside: set[int], block: Block) -> list[Operation]:
    """The ops of `block` outside the match (ids in `inside`) that use `value`, directly or
    through an op nested in them."""
    users: list[Operation] = []
    for use in value.uses:
        user = block.find_ancestor_op_in_block(use.operation)
        if user is not None and id(user) not in inside:
            users.append(user)
    return users


def _no_cycle(
    match: Match,
    escaping: list[SSAValue],
    inside: set[int],
    block: Block,
    position: dict[int, float],
) -> bool:
    """Whether no outside user of an escaping value reaches an input of the match.

    Only ops before the last input's producer can reach it, which bounds the search.
    """
    producers = {id(v.op) for v in match.inputs if isinstance(v, OpResult) and v.op.parent is block}
    if not producers:
        return True
    limit = max(position.get(p, -1) for p in producers)
    stack = [u for v in escaping for u in _outside_users(v, inside, block)]
    seen: set[int] = set()
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if id(o) in producers:
            return False
        if position.get(id(o), len(position)) >= limit:
            continue
        for result in o.results:
            stack += _outside_users(result, inside, block)
    return True


def _wrap_in_composite(
    name: StringAttr,
    match: Match,
    escaping: list[SSAValue],
    inside: set[int],
    block: Block,
    position: dict[int, float],
) -> list[Operation]:
    """Replace the match by a composite at the root's place; return the constants moved into it."""
    root = match.root
    results: list[SSAValue] = [root.results[0], *escaping]
    body = Block(arg_types=[v.type for v in match.inputs])
    for arg, value in zip(body.args, match.inputs, strict=True):
        arg.name_hint = value.name_hint
    composite = CompositeOp.create(
        operands=match.inputs,
        result_types=[v.type for v in results],
        properties={"composite": name},
        regions=[Region(body)],
        location=root.location,
    )
    Rewriter.insert_op(composite, InsertPoint.before(root))
    root.results[0].replace_all_uses_with(composite.res[0])  # the root's users are all outside
    for i, value in enumerate(escaping, start=1):
        value.replace_uses_with_if(
            composite.res[i],
            lambda use: (
                (u := block.find_ancestor_op_in_block(use.operation)) is None or id(u) not in inside
            ),
        )
    if escaping:
        _move_after(composite, escaping, inside, block, position)

    mapping: dict[SSAValue, SSAValue] = dict(zip(match.inputs, body.args, strict=True))
    moved: list[Operation] = []
    contents: list[Operation] = []  # the body, inserted in one go
    for const in match.constants:
        value = const.results[0]
        if all(id(block.find_ancestor_op_in_block(use.operation)) in inside for use in value.uses):
            const.detach()  # only the match reads it: move it in
            contents.append(const)
            moved.append(const)
        else:
            copy = const.clone()
            contents.append(copy)
            mapping[value] = copy.results[0]
    for o in sorted(match.ops, key=lambda o: position[id(o)]):
        o.detach()
        contents.append(o)
        for i, operand in enumerate(o.operands):
            new = mapping.get(operand)
            if new is not None:
                o.operands[i] = new  # an input becomes the composite's block argument
    contents.append(YieldOp.create(operands=results, location=root.location))
    Rewriter.insert_op(contents, InsertPoint.at_end(body))
    return moved


def _move_after(
    composite: CompositeOp,
    escaping: list[SSAValue],
    inside: set[int],
    block: Block,
    position: dict[int, float],
) -> None:
    """Move the outside ops that depend on an escaping value and sit before the composite after it.

    The moved ops get positions between the root's and the next op's, so a later match
    (earlier in the block) sees where they are now.
    """
    limit = _position_of_root(composite, position)
    first = min(position[id(v.owner)] for v in escaping if isinstance(v, OpResult))
    to_move: dict[int, Operation] = {}
    stack = [
        u
        for i in range(1, len(composite.res))
        for u in _outside_users(composite.res[i], inside, block)
    ]
    while stack:
        o = stack.pop()
        p = position.get(id(o))
        if p is None or p >= limit or p < first or id(o) in to_move:
            continue
        to_move[id(o)] = o
        for result in o.results:
            for use in result.uses:
                user = block.find_ancestor_op_in_block(use.operation)
                if user is not None:
                    stack.append(user)
    anchor: Operation = composite
    step = 1 / (len(to_move) + 1)
    for k, o in enumerate(sorted(to_move.values(), key=lambda o: position[id(o)]), start=1):
        o.detach()
        Rewriter.insert_op(o, InsertPoint.after(anchor))
        anchor = o
        position[id(o)] = limit + k * step


def _position_of_root(composite: CompositeOp, position: dict[int, float]) -> float:
    nxt = composite.next_op
    assert nxt is not None and id(nxt) in position, "the composite sits right before its root"
    return position[id(nxt)]
