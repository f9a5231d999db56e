"""annotate-target: tag every op a listed target supports with `byoc.target = "<target>"`.

Contract:
- Expects `nn` IR, possibly with composites (merge-composite) and regions.
- For each top-level op of each non-partition function (not inside a
  composite or region): an op that already has `byoc.target` keeps it; a
  `byoc.composite "<t>.<name>"` is tagged `<t>` when `<t>` is listed; any
  other op except `nn.constant` is tagged with the first listed target whose
  predicate (`target.<t>` in the op registry; for a test target, the `ops`
  option) returns true for it. List order is priority.
- It only tags (ExecuTorch's partitioner contract): no op moves, none is
  created. So the pass is idempotent, and `{targets=a}` then `{targets=b}`
  equals `{targets=a,b}`.

    // annotate-target{targets=test ops=add}
    %0 = nn.add %x, %y : tensor<4xf32>
    %1 = nn.tanh %0 : tensor<4xf32>
    // becomes
    %0 = nn.add %x, %y {byoc.target = "test"} : tensor<4xf32>
    %1 = nn.tanh %0 : tensor<4xf32>
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from byoc.dialects.byoc import TARGET_ATTR, CompositeOp
from byoc.dialects.nn import ConstantOp, NNOp
from byoc.op_registry import get_op_attr
from byoc.passes.options import as_names, check_targets
from byoc.passes.scope import host_functions
from byoc.targets import get_target
from byoc.utils.gc import paused_gc

SupportFn = Callable[[Operation], bool]


@dataclass(frozen=True)
class AnnotateTargetPass(ModulePass):
    """Tag supported ops and composites with `byoc.target`."""

    name: ClassVar[str] = "annotate-target"

    targets: tuple[str, ...]
    """Targets to offload to, highest priority first."""

    ops: tuple[str, ...] = ()
    """The ops the test targets support in this run: `[<target>:]<op>` entries
    (see byoc/targets/test.py), e.g. `ops=add,relu`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", as_names(self.targets))
        object.__setattr__(self, "ops", as_names(self.ops))
        check_targets(self.targets)
        self.support()  # bad `ops` entries fail here

    def support(self) -> list[tuple[str, Mapping[str, SupportFn] | None]]:
        """Per target in priority order: op name -> predicate from `ops`, or None (the registry)."""
        configured: dict[str, Mapping[str, SupportFn]] = {}
        configurable = [t for t in self.targets if get_target(t).support_from_ops is not None]
        if configurable:
            parse = get_target(configurable[0]).support_from_ops
            assert parse is not None
            configured = parse(configurable, self.ops)
        elif self.ops:
            raise ValueError(
                "the 'ops' option chooses the support of test targets (test, test_<x>), "
                f"and none is among the targets ({', '.join(self.targets) or 'none'})"
            )
        return [(t, configured.get(t)) for t in self.targets]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with paused_gc():
            annotate(op, self.support())


class TargetSupport:
    """Which listed targets can take an op: the predicates of `support` (in priority order),
    looked up once per op name, and each target's layout check."""

    def __init__(self, support: list[tuple[str, Mapping[str, SupportFn] | None]]):
        self.support = support
        self.listed = {t for t, _ in support}
        self._lookup: dict[str, list[tuple[str, SupportFn]]] = {}
        self._targets: dict[str, Any] = {}

    def predicates(self, op_name: str) -> list[tuple[str, SupportFn]]:
        found = self._lookup.get(op_name)
        if found is None:
            found = []
            for target, table in self.support:
                fn = (
                    table.get(op_name)
                    if table is not None
                    else get_op_attr(op_name, f"target.{target}")
                )
                if fn is not None:
                    found.append((target, fn))
            self._lookup[op_name] = found
        return found

    def layouts_ok(self, target: str, op: Operation) -> bool:
        """A layout the target does not implement is a rejection, never a wrong answer."""
        t = self._targets.get(target)
        if t is None:
            t = self._targets[target] = get_target(target)
        return t.implements_layouts(op)

    def accepting(self, op: Operation) -> Iterator[str]:
        """The listed targets that can take `op`, in priority order: for a composite, its
        target when listed; for an `nn` op other than `nn.constant`, each target whose
        predicate holds. Lazy, so the first one costs only its own checks."""
        if isinstance(op, CompositeOp):
            prefix = op.target_name
            if prefix in self.listed and self.layouts_ok(prefix, op):
                yield prefix
            return
        if not isinstance(op, NNOp) or isinstance(op, ConstantOp):
            return
        for target, fn in self.predicates(op.name):
            if fn(op) and self.layouts_ok(target, op):
                yield target


def accepting_targets(
    op: Operation, support: list[tuple[str, Mapping[str, SupportFn] | None]] | TargetSupport
) -> list[str]:
    """Every listed target that can take `op`, in priority order (annotate-target tags the
    first); placement by measurement (byoc/placement) chooses among all of them."""
    checker = support if isinstance(support, TargetSupport) else TargetSupport(support)
    return list(checker.accepting(op))


def annotate(module: ModuleOp, support: list[tuple[str, Mapping[str, SupportFn] | None]]) -> int:
    """Tag the top-level ops of every host function; return how many were tagged."""
    checker = TargetSupport(support)
    tags = {t: StringAttr(t) for t in checker.listed}

    # Tagging sets an attribute and moves nothing, so a loop over the top-level ops suffices
    # (a pattern walker would also visit every op nested in composites and regions).
    tagged = 0
    for func in host_functions(module):
        for block in func.body.blocks:
            for o in block.ops:
                if TARGET_ATTR in o.attributes:
                    continue
                first = next(checker.accepting(o), None)
                if first is not None:
                    o.attributes[TARGET_ATTR] = tags[first]
                    tagged += 1
    return tagged
