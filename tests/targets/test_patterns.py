"""The pattern language (byoc/targets/patterns.py), matched against parsed IR."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import Operation

from byoc.context import parse_module
from byoc.dialects.nn import ConstantOp
from byoc.targets.patterns import (
    TableEntry,
    is_constant,
    is_op,
    is_var,
    table_entries,
    wildcard,
)

IR = """
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %c = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %a = nn.add %x, %c : tensor<4xf32>
  %b = nn.add %c, %x : tensor<4xf32>
  %s = nn.subtract %c, %x : tensor<4xf32>
  %m = nn.multiply %a, %a : tensor<4xf32>
  %k = nn.clip %m {a_min = -1.0 : f64, a_max = 1.0 : f64} : tensor<4xf32>
  %r = nn.relu %k : tensor<4xf32>
  %t = nn.add %r, %y : tensor<4xf32>
  func.return %t : tensor<4xf32>
}
"""


def ops() -> dict[str, Operation]:
    """The ops of @main by result name."""
    module = parse_module(IR)
    func = next(iter(module.ops))
    return {o.results[0].name_hint or "": o for o in func.walk() if o.results}  # type: ignore[union-attr]


def test_is_op_rejects_unknown_names_and_properties() -> None:
    with pytest.raises(ValueError, match="unknown op 'nn.conv'.*did you mean 'nn.conv2d'"):
        is_op("nn.conv")
    with pytest.raises(ValueError, match="has no property 'group'"):
        is_op("nn.conv2d", group=1)
    with pytest.raises(TypeError, match="already has its operands"):
        is_op("nn.relu")(wildcard())(wildcard())


def test_wildcard_operands_become_inputs_in_pattern_order() -> None:
    o = ops()
    m = is_op("nn.add")(wildcard(), wildcard()).match(o["a"])
    assert m is not None
    assert m.ops == (o["a"],)
    assert m.inputs == (o["a"].operands[0], o["a"].operands[1])
    assert m.constants == ()


def test_is_constant_embeds_and_wildcard_does_not() -> None:
    o = ops()
    m = is_op("nn.add")(is_var(), is_constant()).match(o["a"])
    assert m is not None
    assert [type(c) for c in m.constants] == [ConstantOp]
    assert m.inputs == (o["a"].operands[0],)


def test_add_is_commutative_subtract_is_not() -> None:
    o = ops()
    pattern = is_op("nn.add")(is_var(), is_constant())
    assert pattern.match(o["b"]) is not None  # add(%c, %x) matches add(var, const)
    assert is_op("nn.subtract")(is_var(), is_constant()).match(o["s"]) is None
    assert is_op("nn.subtract")(is_constant(), is_var()).match(o["s"]) is not None


def test_a_node_used_twice_matches_one_value() -> None:
    o = ops()
    x = wildcard()
    same = is_op("nn.multiply")(x, x)
    assert same.match(o["m"]) is not None  # multiply(%a, %a)
    y = wildcard()
    # add(%r, %y): the two operands differ, so add(y, y) does not match
    assert is_op("nn.add")(y, y).match(o["t"]) is None


def test_the_same_node_through_a_chain() -> None:
    """multiply(x, clip(add(x, c))) must not match multiply(x, clip(x)) shapes."""
    o = ops()
    x = wildcard()
    pattern = is_op("nn.clip")(is_op("nn.multiply")(x, x))
    assert pattern.match(o["k"]) is not None
    x2 = wildcard()
    strict = is_op("nn.clip")(is_op("nn.multiply")(x2, is_op("nn.add")(x2, is_constant())))
    assert strict.match(o["k"]) is None


def test_attribute_predicates() -> None:
    o = ops()
    assert is_op("nn.clip", a_max=1.0)(wildcard()).match(o["k"]) is not None
    assert is_op("nn.clip", a_max=2.0)(wildcard()).match(o["k"]) is None
    assert is_op("nn.clip", a_min=lambda v: v < 0)(wildcard()).match(o["k"]) is not None
    assert is_op("nn.clip")(wildcard()).has_attr({"a_min": -1.0}).match(o["k"]) is not None
    assert is_op("nn.clip")(wildcard()).has_attr({"a_min": 0.0}).match(o["k"]) is None


def test_type_predicates() -> None:
    o = ops()
    assert is_op("nn.relu")(wildcard()).has_dtype(f32).match(o["r"]) is not None
    assert is_op("nn.relu")(wildcard()).has_dtype(i32).match(o["r"]) is None
    assert is_op("nn.relu")(wildcard()).has_shape((4,)).match(o["r"]) is not None
    assert is_op("nn.relu")(wildcard()).has_shape((2, 2)).match(o["r"]) is None


def test_alternatives_try_left_first() -> None:
    o = ops()
    long = is_op("nn.relu")(is_op("nn.clip")(wildcard()))
    short = is_op("nn.relu")(wildcard())
    m = (long | short).match(o["r"])
    assert m is not None and len(m.ops) == 2
    m = (short | long).match(o["r"])
    assert m is not None and len(m.ops) == 1
    assert [len(m.ops) for m in (short | long).matches(o["r"])] == [1, 2]


def test_optional_prefers_the_extension() -> None:
    o = ops()
    base = is_op("nn.clip")(wildcard())
    pattern = base.optional(lambda p: is_op("nn.relu")(p))
    m = pattern.match(o["r"])
    assert m is not None and [op.name for op in m.ops] == ["nn.relu", "nn.clip"]
    m = pattern.match(o["k"])
    assert m is not None and [op.name for op in m.ops] == ["nn.clip"]


def test_named_captures() -> None:
    o = ops()
    pattern = is_op("nn.relu")(is_op("nn.clip")(wildcard().named("in")).named("clip"))
    m = pattern.match(o["r"])
    assert m is not None
    assert m.op("clip") is o["k"]
    assert m["in"] is o["k"].operands[0]
    with pytest.raises(KeyError, match="no capture 'nope'"):
        m["nope"]
    var = is_op("nn.add")(wildcard(), is_var().named("y")).match(o["t"])
    assert var is not None
    with pytest.raises(KeyError, match="block argument"):
        var.op("y")


def test_is_var_by_name() -> None:
    o = ops()
    assert is_op("nn.add")(wildcard(), is_var("y")).match(o["t"]) is not None
    assert is_op("nn.add")(wildcard(), is_var("x")).match(o["t"]) is None


def test_op_without_operand_patterns_takes_any_operands() -> None:
    o = ops()
    m = is_op("nn.add").match(o["t"])
    assert m is not None and m.inputs == tuple(o["t"].operands)


def test_available_excludes_claimed_ops() -> None:
    o = ops()
    pattern = is_op("nn.relu")(is_op("nn.clip")(wildcard()))
    assert pattern.match(o["r"], available=lambda op: op is not o["k"]) is None


def test_table_entries() -> None:
    p = is_op("nn.relu")(wildcard())
    entries = table_entries([("relu", p), ("relu2", p, lambda m: True)], "t")
    assert [e.name for e in entries] == ["relu", "relu2"]
    assert isinstance(entries[0], TableEntry) and entries[0].check is None
    with pytest.raises(ValueError, match="no '.'"):
        table_entries([("t.relu", p)], "t")
    with pytest.raises(ValueError, match="appears twice"):
        table_entries([("relu", p), ("relu", p)], "t")
