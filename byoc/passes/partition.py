"""partition: outline each region (or tagged op) into a private function of its target.

Contract:
- Expects `byoc.region`s (merge-compiler-regions) and/or top-level ops and
  composites tagged `byoc.target`; a tagged op outside any region is outlined
  on its own. Functions that already carry `byoc.compiler` are left alone. A
  module with neither regions nor tagged ops is unchanged.
- Each region becomes `func.func private @<target>_<func>_<n>` with
  `byoc.compiler = "<target>"` (the raw target name), called with `func.call`
  where the region was. The symbol is the target and function names with
  every character outside [A-Za-z0-9_] replaced by `_`, and `<n>` counts from 0
  per prefix, skipping names the module already has: unique across functions.
- Arguments are the distinct outside values the region reads, in first-use
  order (a value read twice is passed once). With `bind-constants` (default) an
  `nn.constant` is copied into the function instead of passed (moved, when
  nothing else reads it). Results are the distinct values used
  outside, in the region's order — never `(%0, %0, %0)`.
- Errors (located at the op): an unknown target; an op tagged for a target
  that has no predicate for it or whose predicate rejects it; a composite tagged
  for another target than its name's; a region holding a region or an op
  tagged for another target.
- The `byoc.target` tags of outlined ops are dropped: the function's
  `byoc.compiler` says it all.

    %r:2 = byoc.region "test" -> (tensor<4xf32>, tensor<4xf32>) {
      %a = nn.abs %x {byoc.target = "test"} : tensor<4xf32>
      %b = nn.relu %a {byoc.target = "test"} : tensor<4xf32>
      byoc.yield %a, %b : tensor<4xf32>, tensor<4xf32>
    }
    // becomes
    %r:2 = func.call @test_main_0(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    ...
    func.func private @test_main_0(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
        attributes {byoc.compiler = "test"} {
      %a = nn.abs %x : tensor<4xf32>
      %b = nn.relu %a : tensor<4xf32>
      func.return %a, %b : tensor<4xf32>, tensor<4xf32>
    }
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsolatedFromAbove, SymbolOpInterface

from byoc.diagnostics import PassError
from byoc.dialects.byoc import COMPILER_ATTR, TARGET_ATTR, CompositeOp, RegionOp, YieldOp
from byoc.dialects.nn import ConstantOp
from byoc.op_registry import get_op_attr
from byoc.passes.common import AttrCache, erase, host_functions, paused_gc, target_of
from byoc.targets import Target, UnknownTargetError, get_target, known_targets_text

_PRIVATE = StringAttr("private")
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def sanitize(name: str) -> str:
    """A C identifier from `name`: every other character becomes `_`; no leading digit."""
    out = _NOT_IDENT.sub("_", name)
    if not out or out[0].isdigit():
        out = "_" + out
    return out


class SymbolNamer:
    """Fresh `<target>_<func>_<n>` names, unique in a module."""

    def __init__(self, module: ModuleOp):
        self.taken: set[str] = set()
        for op in module.ops:
            interface = op.get_trait(SymbolOpInterface)
            if interface is not None:
                sym = interface.get_sym_attr_name(op)
                if sym is not None:
                    self.taken.add(sym.data)
        self.next: dict[str, int] = {}
        self.prefixes: dict[tuple[str, str], str] = {}

    def fresh(self, target: str, func: str) -> str:
        prefix = self.prefixes.get((target, func))
        if prefix is None:
            prefix = self.prefixes[(target, func)] = f"{sanitize(target)}_{sanitize(func)}_"
        n = self.next.get(prefix, 0)
        while f"{prefix}{n}" in self.taken:
            n += 1
        name = f"{prefix}{n}"
        self.taken.add(name)
        self.next[prefix] = n + 1
        return name


@dataclass(frozen=True)
class PartitionPass(ModulePass):
    """Outline regions and tagged ops into `byoc.compiler` functions called from the host."""

    name: ClassVar[str] = "partition"

    bind_constants: bool = True
    """Copy `nn.constant` operands into the partition instead of passing them as arguments."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        namer = SymbolNamer(op)
        attrs = AttrCache()
        with paused_gc():
            for func in host_functions(op):
                anchor: Operation = func
                for outlined in partition_function(func, namer, self.bind_constants, attrs):
                    op.body.block.insert_op_after(outlined, anchor)
                    anchor = outlined


def partition_function(
    func: FuncOp, namer: SymbolNamer, bind_constants: bool = True, attrs: AttrCache | None = None
) -> list[FuncOp]:
    """Outline every region and tagged op of `func`; return the new functions in order."""
    attrs = attrs if attrs is not None else AttrCache()
    out: list[FuncOp] = []
    func_name = func.sym_name.data
    for block in func.body.blocks:
        units = [o for o in block.ops if isinstance(o, RegionOp) or TARGET_ATTR in o.attributes]
        for unit in units:
            target = _checked_target(unit)
            name = namer.fresh(target, func_name)
            out.append(_outline(unit, target, name, bind_constants, attrs))
    return out


def _checked_target(unit: Operation) -> str:
    target = target_of(unit)
    if target is None:
        raise PassError(unit, f"partition: '{unit.name}' has a non-string 'byoc.target'")
    try:
        module = get_target(target)
    except UnknownTargetError:
        raise PassError(
            unit,
            f"partition: '{unit.name}' is tagged for unknown target '{target}'; "
            f"known targets: {known_targets_text()}",
        ) from None
    per_run = module.support_from_ops is not None  # a test target: support chosen per run
    if isinstance(unit, RegionOp):
        for inner in unit.body.block.ops:
            if isinstance(inner, RegionOp):
                raise PassError(inner, "partition: a 'byoc.region' may not contain another region")
            tag = inner.attributes.get(TARGET_ATTR)
            if tag is not None and (not isinstance(tag, StringAttr) or tag.data != target):
                shown = f"'{tag.data}'" if isinstance(tag, StringAttr) else str(tag)
                raise PassError(
                    inner,
                    f"partition: '{inner.name}' is tagged for {shown} inside a region of '{target}'",
                )
            if not isinstance(inner, YieldOp):
                _check_support(inner, target, module, per_run)
    else:
        _check_support(unit, target, module, per_run)
    return target


def _check_support(op: Operation, target: str, module: Target, per_run: bool) -> None:
    """A composite must belong to `target`; a plain op must pass `target.<target>`."""
    if isinstance(op, CompositeOp):
        if op.target_name != target:
            raise PassError(
                op,
                f"partition: composite '{op.composite.data}' is tagged for '{target}'; a composite "
                f"belongs to the target its name starts with ('{op.target_name}')",
            )
        return
    if per_run or isinstance(op, ConstantOp):
        return  # a test target's support is chosen per run; constants go with their users
    if op.name.partition(".")[0] != "nn":
        return
    predicate = get_op_attr(op.name, f"target.{target}")
    if predicate is None:
        hint = "; run merge-composite first" if module.patterns else ""
        raise PassError(
            op,
            f"partition: '{op.name}' is tagged for '{target}', which has no 'target.{target}' "
            f"predicate for it{hint}",
        )
    if not predicate(op):
        raise PassError(
            op, f"partition: '{op.name}' is tagged for '{target}', whose predicate rejects it"
        )


def _defined_under(value: SSAValue, body: Block) -> bool:
    if isinstance(value, BlockArgument):
        block: Block | None = value.block
    else:
        assert isinstance(value, OpResult)
        block = value.op.parent
    while block is not None:
        if block is body:
            return True
        parent = block.parent_op()
        block = parent.parent if parent is not None else None
    return False


class _Binder:
    """Makes `body` closed: each outside value it reads becomes an argument (once) or,
    for a bound constant, a copy inside; operands are rewritten as they are met."""

    def __init__(self, body: Block, bind_constants: bool):
        self.body = body
        self.bind_constants = bind_constants
        self.first = body.first_op
        self.mapping: dict[SSAValue, SSAValue] = {}
        self.args: list[SSAValue] = []
        """The outside values passed as arguments, in first-use order."""

    def bind(self, op: Operation) -> None:
        body = self.body
        for i, v in enumerate(op.operands):
            owner = v.owner
            if (owner.parent if isinstance(owner, Operation) else owner) is body:
                continue  # defined by a top-level op of the body
            new = self.mapping.get(v)
            if new is None:
                if _defined_under(v, body):
                    continue
                new = self.mapping[v] = self._outside(v)
            op.operands[i] = new
        if op.regions and not op.has_trait(IsolatedFromAbove):
            for region in op.regions:
                for blk in region.blocks:
                    for inner in blk.ops:
                        self.bind(inner)

    def _outside(self, value: SSAValue) -> SSAValue:
        body = self.body
        if self.bind_constants and isinstance(value, OpResult) and isinstance(value.op, ConstantOp):
            const = value.op
            if _only_used_under(value, body):
                const.detach()  # nothing else reads it: move it in
                copy: Operation = const
            else:
                copy = ConstantOp.create(
                    properties=dict(const.properties),
                    attributes=dict(const.attributes),
                    result_types=[value.type],
                    location=const.location,
                )
                copy.results[0].name_hint = value.name_hint
            copy.attributes.pop(TARGET_ATTR, None)
            if self.first is None:
                body.add_op(copy)
            else:
                body.insert_op_before(copy, self.first)
            return copy.results[0]
        arg = body.insert_arg(value.type, len(body.args))
        arg.name_hint = value.name_hint
        self.args.append(value)
        return arg


def _outline(
    unit: Operation, target: str, name: str, bind_constants: bool, attrs: AttrCache
) -> FuncOp:
    """Replace `unit` (a region or one tagged op) by a call of a new function; return it."""
    parent = unit.parent
    assert parent is not None
    before: Operation | None  # the call goes right before this op of `parent` (None: at the end)
    if isinstance(unit, RegionOp):
        region = unit.detach_region(unit.body)
        body = region.block
        terminator = body.last_op
        assert isinstance(terminator, YieldOp)
        yielded = list(terminator.values)
        erase(terminator)
        old_results = list(unit.res)
        before = unit  # the emptied region stays until its results are replaced
    else:
        body = Block()
        region = Region(body)
        yielded = list(unit.results)
        old_results = list(unit.results)
        before = unit.next_op
        unit.detach()
        body.add_op(unit)
    binder = _Binder(body, bind_constants)
    for o in list(body.ops):
        o.attributes.pop(TARGET_ATTR, None)
        binder.bind(o)
    args = binder.args

    results: list[SSAValue] = []
    for v in yielded:
        if v not in results:
            results.append(v)
    body.add_op(ReturnOp.create(operands=results, location=unit.location))
    result_types = [v.type for v in results]
    func = FuncOp.create(
        properties={
            "sym_name": StringAttr(name),
            "function_type": attrs.function_type([a.type for a in args], result_types),
            "sym_visibility": _PRIVATE,
        },
        attributes={COMPILER_ATTR: attrs.string(target)},
        regions=[region],
        location=unit.location,
    )
    call = CallOp.create(
        operands=args,
        result_types=result_types,
        properties={"callee": SymbolRefAttr(name)},
        location=unit.location,
    )
    if before is None:
        parent.add_op(call)
    else:
        parent.insert_op_before(call, before)
    index = {id(v): i for i, v in enumerate(results)}
    returned = body.last_op
    for old, value in zip(old_results, yielded, strict=True):
        new = call.res[index[id(value)]]
        if new.name_hint is None:
            new.name_hint = old.name_hint
        if old is value:  # a lone op: its results are also read by the return
            old.replace_uses_with_if(new, lambda use: use.operation is not returned)
        else:
            old.replace_all_uses_with(new)
    if isinstance(unit, RegionOp):
        erase(unit)
    return func


def _only_used_under(value: SSAValue, body: Block) -> bool:
    """Whether every use of `value` is in `body` (stops at the first use outside)."""
    for use in value.uses:
        if not _under(use.operation, body):
            return False
    return True


def _under(op: Operation, block: Block) -> bool:
    current: Operation | None = op
    while current is not None:
        if current.parent is block:
            return True
        current = current.parent_op()
    return False
