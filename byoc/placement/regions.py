"""Candidate regions as IR: a function per region, the measurement module, canonical keys.

A candidate region is `(target, i, j)`: units `[i, j)` (a contiguous interval of the unit
order, hence acyclic) as one partition of `target`. `region_function` copies its units into
a function of their own whose arguments are the values the units read from outside and
whose results are the values used after them; its ops carry `byoc.target` (a composite of
another target is inlined first, so `target` takes its ops one by one). The measurement
module of one target holds one such function per candidate and an `@main` calling each
with its own arguments: the partition pass outlines each function's ops as one partition
(`<target>_m<k>_0`), so a single build compiles every candidate and one profiled run
times each (`Executable.run_profiled`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from byoc.dialects.byoc import TARGET_ATTR, CompositeOp, YieldOp
from byoc.dialects.nn import ConstantOp
from byoc.placement.search import HOST
from byoc.placement.units import Unit


@dataclass(frozen=True)
class Candidate:
    """Units `[start, stop)` as one partition of `target` (for the host: run by the host)."""

    target: str
    start: int
    stop: int


def outside_uses(units: Sequence[Unit], i: int, j: int) -> list[SSAValue]:
    """The results of units `[i, j)` used by an op after them (or returned), in order."""
    inside = {id(u.op) for u in units[i:j]}
    out: list[SSAValue] = []
    for u in units[i:j]:
        for r in u.op.results:
            if any(id(use.operation) not in inside for use in r.uses):
                out.append(r)
    if not out:  # a dead end: keep its last result alive
        out = list(units[j - 1].op.results[-1:])
    return out


def copy_units(
    units: Sequence[Unit], i: int, j: int, target: str, block: Block, mapper: dict[SSAValue, SSAValue]
) -> None:
    """Append copies of units `[i, j)` to `block`, tagged for `target` (none for the host);
    `mapper` maps the values they read to values of `block`, and receives their results.
    A constant operand not yet mapped is copied in."""
    tag = StringAttr(target) if target != HOST else None
    for u in units[i:j]:
        for v in u.op.operands:
            if v not in mapper and isinstance(v.owner, ConstantOp):
                const = v.owner.clone()
                block.add_op(const)
                mapper[v] = const.result
        for new in inline_for(u.op, target, mapper):
            if tag is not None and not isinstance(new, ConstantOp):
                new.attributes[TARGET_ATTR] = tag
            block.add_op(new)


def inline_for(op: Operation, target: str, mapper: dict[SSAValue, SSAValue]) -> list[Operation]:
    """Copies of `op` for `target`: the op itself, or, for a composite of another target,
    the ops of its body (its results mapped to what the body yields)."""
    if not isinstance(op, CompositeOp) or op.target_name == target or target == HOST:
        new = op.clone(dict(mapper))
        for old, r in zip(op.results, new.results, strict=True):
            mapper[old] = r
        return [new]
    inner: dict[SSAValue, SSAValue] = {
        arg: mapper.get(operand, operand)
        for arg, operand in zip(op.body.block.args, op.args, strict=True)
    }
    out: list[Operation] = []
    for o in op.body.block.ops:
        if isinstance(o, YieldOp):
            for old, v in zip(op.results, o.operands, strict=True):
                mapper[old] = inner[v]
            continue
        new = o.clone(dict(inner))
        for old, r in zip(o.results, new.results, strict=True):
            inner[old] = r
        out.append(new)
    return out


def region_inputs(units: Sequence[Unit], i: int, j: int) -> list[SSAValue]:
    """The non-constant values units `[i, j)` read and do not define, in order of use."""
    inside = {r for u in units[i:j] for r in u.op.results}
    return list(dict.fromkeys(v for u in units[i:j] for v in u.inputs if v not in inside))


def region_function(units: Sequence[Unit], c: Candidate, name: str) -> tuple[FuncOp, list[SSAValue]]:
    """The function of candidate `c` (module doc) and the outside values its arguments are."""
    inputs = region_inputs(units, c.start, c.stop)
    block = Block(arg_types=[v.type for v in inputs])
    mapper: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args, strict=True))
    copy_units(units, c.start, c.stop, c.target, block, mapper)
    results = [mapper[v] for v in outside_uses(units, c.start, c.stop)]
    block.add_op(ReturnOp(*results))
    func = FuncOp(name, ([v.type for v in inputs], [v.type for v in results]), Region(block))
    return func, inputs


def measurement_module(
    units: Sequence[Unit], candidates: Sequence[Candidate]
) -> tuple[ModuleOp, list[SSAValue]]:
    """The module timing `candidates` (function `@m<k>` for the k-th), and the outside
    values `@main`'s arguments stand for, in order."""
    funcs: list[FuncOp] = []
    arg_values: list[SSAValue] = []
    arg_types: list[Attribute] = []
    calls: list[tuple[str, int, int, list[Attribute]]] = []
    for k, c in enumerate(candidates):
        func, inputs = region_function(units, c, f"m{k}")
        funcs.append(func)
        calls.append(
            (f"m{k}", len(arg_values), len(inputs), list(func.function_type.outputs.data))
        )
        arg_values.extend(inputs)
        arg_types.extend(v.type for v in inputs)
    block = Block(arg_types=arg_types)
    results: list[SSAValue] = []
    for name, first, count, outs in calls:
        call = CallOp(name, list(block.args[first : first + count]), outs)
        block.add_op(call)
        results.extend(call.res)
    block.add_op(ReturnOp(*results))
    main = FuncOp("main", (arg_types, [r.type for r in results]), Region(block))
    for f in funcs:
        f.sym_visibility = StringAttr("private")
    module = ModuleOp([main, *funcs])
    partition_tagged(module)
    return module, arg_values


def partition_tagged(module: ModuleOp) -> None:
    """merge-compiler-regions and partition: the tagged ops of each function become its
    partitions (a build without targets then compiles them as they are)."""
    from byoc.context import make_context
    from byoc.passes.merge_compiler_regions import MergeCompilerRegionsPass
    from byoc.passes.partition import PartitionPass

    ctx = make_context()
    MergeCompilerRegionsPass().apply(ctx, module)
    PartitionPass().apply(ctx, module)


_SYMBOL = re.compile(r"_m(\d+)_\d+$")


def candidate_of_symbol(symbol: str) -> int | None:
    """The index k of the candidate whose function `@m<k>` a partition symbol came from."""
    found = _SYMBOL.search(symbol)
    return int(found.group(1)) if found else None


def canonical_text(
    units: Sequence[Unit], c: Candidate, constants: dict[int, str] | None = None
) -> str:
    """The region's IR in a canonical form: op names, properties, attributes and types in
    order, operands numbered by first appearance, constants by a digest of their bytes (so
    the form does not depend on SSA names, and a large weight costs one hash, not a print).
    `constants` memoises each constant op's digest (by id) across calls. The target is not
    part of the form (the cache key adds it)."""
    memo: dict[int, str] = {} if constants is None else constants
    numbers: dict[SSAValue, int] = {}
    lines: list[str] = []

    def number(v: SSAValue) -> int:
        n = numbers.get(v)
        if n is None:
            n = numbers[v] = len(numbers)
        return n

    def emit(op: Operation, depth: int) -> None:
        if isinstance(op, ConstantOp):
            digest = memo.get(id(op))
            if digest is None:
                digest = memo[id(op)] = hashlib.sha256(op.value.data.data).hexdigest()[:24]
            lines.append(f"{'  ' * depth}{number(op.result)} = const {_text(op.result.type)} {digest}")
            return
        props = ",".join(f"{k}={_text(v)}" for k, v in sorted(op.properties.items()))
        attrs = ",".join(
            f"{k}={_text(v)}" for k, v in sorted(op.attributes.items()) if k != TARGET_ATTR
        )
        operands = ",".join(str(number(v)) for v in op.operands)
        results = ",".join(f"{number(r)}:{_text(r.type)}" for r in op.results)
        lines.append(f"{'  ' * depth}{results} = {op.name}({operands}) [{props}] {{{attrs}}}")
        for region in op.regions:
            for block in region.blocks:
                args = ",".join(f"{number(a)}:{_text(a.type)}" for a in block.args)
                lines.append(f"{'  ' * depth}^({args})")
                for inner in block.ops:
                    emit(inner, depth + 1)

    for v in region_inputs(units, c.start, c.stop):
        lines.append(f"in {number(v)}:{_text(v.type)}")
    for u in units[c.start : c.stop]:
        for v in u.op.operands:
            if isinstance(v.owner, ConstantOp) and v not in numbers:
                emit(v.owner, 0)
        emit(u.op, 0)
    lines.append("out " + ",".join(str(number(v)) for v in outside_uses(units, c.start, c.stop)))
    return "\n".join(lines)


@lru_cache(maxsize=1 << 16)
def _text(attr: Attribute) -> str:
    """An attribute's text (xDSL's printer is slow; attributes are immutable values)."""
    return str(attr)


def region_digest(
    units: Sequence[Unit], c: Candidate, constants: dict[int, str] | None = None
) -> str:
    return hashlib.sha256(canonical_text(units, c, constants).encode()).hexdigest()


__all__ = [
    "Candidate",
    "candidate_of_symbol",
    "canonical_text",
    "copy_units",
    "measurement_module",
    "outside_uses",
    "partition_tagged",
    "region_digest",
    "region_function",
    "region_inputs",
]
