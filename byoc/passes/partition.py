"""partition: outline each region (or tagged op) into a private function of its target.

Contract:
- Expects `byoc.region`s (merge-compiler-regions) and/or top-level ops and
  composites tagged `byoc.target`; a tagged op outside any region is outlined
  on its own. Functions with `byoc.compiler` are left alone.
- Each region becomes `func.func private @<target>_<func>_<n>` with
  `byoc.compiler = "<target>"`, called with `func.call` where the region was.
  Characters outside [A-Za-z0-9_] become `_`; `<n>` counts from 0 per prefix,
  skipping names the module already has.
- Arguments are the distinct outside values the region reads, in first-use
  order. With `bind-constants` (default) an `nn.constant` is copied into the
  function instead (moved, when nothing else reads it). Results are the
  distinct values used outside, in the region's order. Outlined ops lose their
  `byoc.target`: the function's `byoc.compiler` says it.
- Errors, at the op: an unknown target; an op its target has no predicate for
  or whose predicate rejects it; a composite tagged for another target than
  its name's; a region holding a region or an op tagged for another target.

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

import functools
import re
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import FunctionType, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsolatedFromAbove, SymbolOpInterface

from byoc.diagnostics import PassError
from byoc.dialects.byoc import COMPILER_ATTR, TARGET_ATTR, CompositeOp, RegionOp, YieldOp
from byoc.dialects.nn import ConstantOp
from byoc.op_registry import get_op_attr
from byoc.passes.scope import blocks_within, host_functions, target_of
from byoc.targets import Target, UnknownTargetError, get_target
from byoc.utils.gc import paused_gc

_PRIVATE = StringAttr("private")
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def sanitize(name: str) -> str:
    """A C identifier from `name`: every other character becomes `_`; no leading digit."""
    out = _NOT_IDENT.sub("_", name)
    if not out or out[0].isdigit():
        out = "_" + out
    return out


class SymbolNamer:
    """Fresh `<target>_<func>_<n>` names, unique in a module.

    The module's symbols are read once: `SymbolTable.lookup_symbol` scans the module
    on every call, which for thousands of partitions is quadratic.
    """

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
        with paused_gc():
            for func in host_functions(op):
                outlined = partition_function(func, namer, self.bind_constants)
                Rewriter.insert_op(outlined, InsertPoint.after(func))


def partition_function(
    func: FuncOp, namer: SymbolNamer, bind_constants: bool = True
) -> list[FuncOp]:
    """Outline every region and tagged op of `func`; return the new (detached) functions in order."""
    out: list[FuncOp] = []
    func_name = func.sym_name.data
    for block in func.body.blocks:
        units = [o for o in block.ops if isinstance(o, RegionOp) or TARGET_ATTR in o.attributes]
        for unit in units:
            target = _checked_target(unit)
            out.append(_outline(unit, target, namer.fresh(target, func_name), bind_constants))
    return out


def _checked_target(unit: Operation) -> str:
    """The target `unit` is for, after checking that it can take every op in `unit`."""
    target = target_of(unit)
    if target is None:
        raise PassError(unit, f"partition: '{unit.name}' has a non-string 'byoc.target'")
    try:
        module = get_target(target)
    except UnknownTargetError as err:
        raise PassError(unit, f"partition: '{unit.name}' is tagged for {err}") from None
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


def _outline(unit: Operation, target: str, name: str, bind_constants: bool) -> FuncOp:
    """Replace `unit` (a region or one tagged op) by a call of a new function; return it."""
    if isinstance(unit, RegionOp):
        call_point = InsertPoint.before(unit)
        region = Rewriter.move_region_contents_to_new_regions(unit.body)
        body = region.block
        terminator = body.last_op
        assert isinstance(terminator, YieldOp)
        yielded = list(terminator.values)
        Rewriter.erase_op(terminator)
        replaced = list(unit.res)
    else:
        call_point = InsertPoint.after(unit)  # stays valid once `unit` is moved out
        body = Block()
        region = Region(body)
        unit.detach()
        Rewriter.insert_op(unit, InsertPoint.at_end(body))
        yielded = replaced = list(unit.results)

    binder = _Binder(body, bind_constants)
    for o in list(body.ops):
        o.attributes.pop(TARGET_ATTR, None)
        binder.bind(o)
    if binder.constants:
        Rewriter.insert_op(binder.constants, InsertPoint.at_start(body))
    results = list(dict.fromkeys(yielded))  # each value once, in the region's order
    result_types = [v.type for v in results]

    call = CallOp.create(
        operands=binder.args,
        result_types=result_types,
        properties={"callee": SymbolRefAttr(name)},
        location=unit.location,
    )
    Rewriter.insert_op(call, call_point)
    index = {value: i for i, value in enumerate(results)}
    for old, value in zip(replaced, yielded, strict=True):
        new = call.res[index[value]]
        if new.name_hint is None:
            new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    if isinstance(unit, RegionOp):
        Rewriter.erase_op(unit)

    Rewriter.insert_op(
        ReturnOp.create(operands=results, location=unit.location), InsertPoint.at_end(body)
    )
    return FuncOp.create(
        properties={
            "sym_name": StringAttr(name),
            "function_type": _function_type(
                tuple(a.type for a in binder.args), tuple(result_types)
            ),
            "sym_visibility": _PRIVATE,
        },
        attributes={COMPILER_ATTR: _compiler_tag(target)},
        regions=[region],
        location=unit.location,
    )


@functools.lru_cache(maxsize=1024)
def _function_type(inputs: tuple[Attribute, ...], outputs: tuple[Attribute, ...]) -> FunctionType:
    """Partitions of a large graph share few signatures; attributes verify when made."""
    return FunctionType.from_lists(list(inputs), list(outputs))


@functools.lru_cache(maxsize=64)
def _compiler_tag(target: str) -> StringAttr:
    return StringAttr(target)


class _Binder:
    """Makes `body` closed: each outside value it reads becomes an argument (once) or,
    for a bound constant, a copy inside; operands are rewritten as they are met."""

    def __init__(self, body: Block, bind_constants: bool):
        self.body = body
        self.bind_constants = bind_constants
        self.blocks = blocks_within(body)
        """A value is defined in `body` (at any depth) when its owner's block is one of
        these; an op is in `body` when its block is."""
        self.constants: list[Operation] = []
        """Bound constants, in first-use order; they go before the body's first op."""
        self.mapping: dict[SSAValue, SSAValue] = {}
        self.args: list[SSAValue] = []
        """The outside values passed as arguments, in first-use order."""

    def bind(self, op: Operation) -> None:
        blocks = self.blocks
        for i, v in enumerate(op.operands):
            owner = v.owner
            if (owner.parent if isinstance(owner, Operation) else owner) in blocks:
                continue  # defined in the body
            new = self.mapping.get(v)
            if new is None:
                new = self.mapping[v] = self._outside(v)
            if new is not v:  # a constant moved in keeps its value
                op.operands[i] = new
        if op.regions and not op.has_trait(IsolatedFromAbove):
            for region in op.regions:
                for blk in region.blocks:
                    for inner in blk.ops:
                        self.bind(inner)

    def _outside(self, value: SSAValue) -> SSAValue:
        if self.bind_constants and isinstance(value, OpResult) and isinstance(value.op, ConstantOp):
            const = value.op
            if all(use.operation.parent in self.blocks for use in value.uses):
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
            self.constants.append(copy)
            return copy.results[0]
        arg = self.body.insert_arg(value.type, len(self.body.args))
        arg.name_hint = value.name_hint
        self.args.append(value)
        return arg
