"""The `test` targets: support chosen per run, for lit tests, property tests and benchmarks.

Every target named `test`, `test_<suffix>` or `test-<suffix>` (any suffix
without a `.`, e.g. `test_a`, `test_b`, `test-npu+`) is a member of
`TEST_FAMILY`, made on first use. A test target registers no predicates:
the ops it supports in a run are listed by the `ops` option of
`annotate-target` (and `byoc`):

    annotate-target{targets=test ops=add,relu}                 // nn.add, nn.relu
    annotate-target{targets=test_a,test_b ops="test_a:add","test_b:nn.relu"}

An entry is `[<target>:]<op>`; the `nn.` prefix may be left out (xDSL's
pipeline syntax has no bare `.`, so `"nn.add"` needs quotes and `add` does not).
An entry without a target applies to every test target of the run. Every
instance of a listed op is supported, whatever its element types.

Its pattern table is a library of small patterns the tests select by name
with `merge-composite{targets=test patterns=...}`; without `patterns`, the
whole table applies in the order below.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from byoc.dialects.nn import NN_OPS
from byoc.targets.base import Target, TargetFamily
from byoc.targets.patterns import Match, is_constant, is_op, is_var, wildcard
from byoc.targets.predicates import Predicate, always

NAME = "test"

SEPARATORS = ("_", "-")
"""A test target is `test` or `test` + one of these + a suffix."""


def is_test_target(name: str) -> bool:
    """Whether `name` names a test target."""
    return name in TEST_FAMILY


def _op_name(text: str) -> str:
    name = text if text.startswith("nn.") else f"nn.{text}"
    if name not in NN_OPS:
        close = difflib.get_close_matches(name, list(NN_OPS), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"'ops' names an unknown op '{text}'{hint}")
    return name


def support_from_ops(
    targets: Sequence[str], entries: Sequence[str]
) -> dict[str, dict[str, Predicate]]:
    """Parse `ops` entries into, for each test target of `targets`, op name -> predicate.

    An entry `<target>:<op>` must name a test target of `targets`; `<op>` alone
    applies to all of them.
    """
    tests = [t for t in targets if is_test_target(t)]
    support: dict[str, dict[str, Predicate]] = {t: {} for t in tests}
    for entry in entries:
        scope, colon, op_text = entry.rpartition(":")
        name = _op_name(op_text)
        if colon:
            if scope not in support:
                raise ValueError(
                    f"'ops' entry '{entry}' names '{scope}', which is not a test target of this "
                    f"run (test targets: {', '.join(tests) or 'none'})"
                )
            support[scope][name] = always()
        else:
            if not tests:
                raise ValueError(
                    f"'ops' entry '{entry}' needs a test target (test, test_<x>) among the targets"
                )
            for t in tests:
                support[t][name] = always()
    return support


# --------------------------------------------------------------------------
# The pattern library
# --------------------------------------------------------------------------


def _conv_groups_is_one(match: Match) -> bool:
    groups = match.op("conv").attr_values()["groups"]  # type: ignore[attr-defined]
    return groups == 1


def pattern_table() -> list[tuple[object, ...]]:
    """(name, pattern[, check]) entries; the composites are named `<target>.<name>`."""
    x = wildcard()
    add_abs = is_op("nn.abs")(is_op("nn.add")(wildcard(), wildcard()))
    conv_bias = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard())
    c = wildcard()
    mul_x = wildcard()
    v = is_var()
    return [
        # TVM's test_merge_order: on add -> abs -> relu, the first entry applied wins.
        ("add_abs_relu", is_op("nn.relu")(add_abs)),
        ("add_abs", is_op("nn.abs")(is_op("nn.add")(wildcard(), wildcard()))),
        ("abs_relu", is_op("nn.relu")(is_op("nn.abs")(wildcard()))),
        # an optional tail: conv2d -> bias_add [-> relu]
        ("conv2d_bias_relu", conv_bias.optional(lambda p: is_op("nn.relu")(p))),
        # a check callback reading an attribute of a captured op
        (
            "conv2d_relu_groups1",
            is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()).named("conv")),
            _conv_groups_is_one,
        ),
        ("conv2d_relu", is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))),
        # the benchmark block: conv2d -> add(bias) -> relu
        (
            "conv2d_add_relu",
            is_op("nn.relu")(is_op("nn.add")(is_op("nn.conv2d")(wildcard(), wildcard()), c)),
        ),
        # one node used twice: x must be the same value in both places
        (
            "mul_clip_add",
            is_op("nn.multiply")(mul_x, is_op("nn.clip")(is_op("nn.add")(mul_x, is_constant()))),
        ),
        # is_constant() embeds the weight; wildcard() makes the bias an operand
        ("dense_bias", is_op("nn.bias_add")(is_op("nn.dense")(x, is_constant()), wildcard())),
        # commutative add: matches add(%x, %c) and add(%c, %x)
        ("add_const_relu", is_op("nn.relu")(is_op("nn.add")(wildcard(), is_constant()))),
        # alternatives over a function input
        ("relu_or_tanh_of_input", is_op("nn.relu")(v) | is_op("nn.tanh")(v)),
    ]


def make_test_target(name: str) -> Target:
    """The member `name` of the family: no registered support (the `ops` option chooses it)
    and the whole pattern library."""
    return Target(
        name=name,
        patterns=pattern_table(),
        support_from_ops=support_from_ops,
        description="support chosen per run (annotate-target's `ops` option)",
    )


TEST_FAMILY = TargetFamily(NAME, make_test_target, SEPARATORS)


__all__ = [
    "NAME",
    "TEST_FAMILY",
    "is_test_target",
    "make_test_target",
    "pattern_table",
    "support_from_ops",
]
