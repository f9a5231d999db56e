"""The op registry (TVM's RELAY_REGISTER_OP / OpRegEntry / Op::Get): records,
lookups with suggestions, and attribute levels."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import pytest

from byoc import get_op, get_op_attr, list_op_names, register_op_attr
from byoc.dialects import nn
from byoc.interpreters.kernels import KERNELS
from byoc.op_registry import (
    PATTERN_KINDS,
    OpRecord,
    OpRegistryError,
    ops_with_attr,
    register_op,
    reset_op_attr,
)

_counter = itertools.count()


@pytest.fixture
def key() -> Iterator[str]:
    """A fresh attribute key, removed from every op afterwards (the registry is global)."""
    name = f"test.attr_{next(_counter)}"
    yield name
    for op_name in list_op_names():
        reset_op_attr(op_name, name)


def test_list_op_names_covers_every_nn_op() -> None:
    names = list_op_names()
    assert set(nn.NN_OPS) <= set(names)
    assert names == sorted(names)


@pytest.mark.parametrize("name", sorted(nn.NN_OPS))
def test_every_record_describes_its_op(name: str) -> None:
    record = get_op(name)
    cls = nn.NN_OPS[name]
    assert record.name == name
    assert record.op_class is cls
    assert record.pattern_kind == cls.KIND and record.pattern_kind in PATTERN_KINDS
    assert record.reference is KERNELS[name]
    assert record.support_level >= 1
    operands = [o for o, _ in cls.get_irdl_definition().operands]
    assert [a.name for a in record.arguments] == operands
    assert all(a.description for a in record.arguments)


def test_arity() -> None:
    assert get_op("nn.add").num_inputs == 2
    assert get_op("nn.relu").num_inputs == 1
    assert get_op("nn.batch_norm").num_inputs == 5
    assert get_op("nn.constant").num_inputs == 0
    assert get_op("nn.concatenate").num_inputs == -1  # variadic


def test_pattern_kinds_and_levels_follow_tvm() -> None:
    assert get_op("nn.add").pattern_kind == "broadcast"
    assert get_op("nn.relu").pattern_kind == "elementwise"
    assert get_op("nn.conv2d").pattern_kind == "out-elementwise-fusable"
    assert get_op("nn.reshape").pattern_kind == "injective"
    assert get_op("nn.reduce_sum").pattern_kind == "reduce"
    assert get_op("nn.softmax").pattern_kind == "opaque"
    assert get_op("nn.dense").support_level == 1
    assert get_op("nn.conv2d").support_level == 2
    assert get_op("nn.transpose").support_level == 3
    assert get_op("nn.power").support_level == 4


def test_unknown_op_suggests_close_names() -> None:
    with pytest.raises(OpRegistryError) as info:
        get_op("nn.conv")
    message = str(info.value)
    assert message.startswith("operator 'nn.conv' is not registered; did you mean ")
    assert "'nn.conv2d'" in message
    with pytest.raises(OpRegistryError, match="did you mean 'nn.relu'"):
        get_op("nn.rlu")


def test_unknown_op_without_close_names() -> None:
    with pytest.raises(OpRegistryError) as info:
        get_op("zzzzzzzzzzzzzzzz")
    assert str(info.value) == "operator 'zzzzzzzzzzzzzzzz' is not registered"


def test_the_error_is_a_key_error_with_a_readable_message() -> None:
    with pytest.raises(KeyError) as info:
        get_op("nn.nope")
    assert not str(info.value).startswith("'")  # no KeyError quoting


def test_attribute_get_and_default(key: str) -> None:
    assert get_op_attr("nn.add", key) is None
    assert get_op_attr("nn.add", key, default=False) is False
    register_op_attr("nn.add", key, "v10")
    assert get_op_attr("nn.add", key) == "v10"
    assert get_op_attr("nn.subtract", key) is None


def test_higher_level_overrides(key: str) -> None:
    register_op_attr("nn.conv2d", key, "base", level=10)
    register_op_attr("nn.conv2d", key, "vendor", level=11)
    assert get_op_attr("nn.conv2d", key) == "vendor"


def test_same_level_twice_is_an_error(key: str) -> None:
    register_op_attr("nn.conv2d", key, "first", level=10)
    with pytest.raises(
        OpRegistryError, match=f"attribute '{key}' of 'nn.conv2d' is already registered at level 10"
    ):
        register_op_attr("nn.conv2d", key, "second", level=10)
    assert get_op_attr("nn.conv2d", key) == "first"


def test_lower_level_is_ignored(key: str) -> None:
    register_op_attr("nn.dense", key, "high", level=20)
    register_op_attr("nn.dense", key, "low", level=5)
    assert get_op_attr("nn.dense", key) == "high"
    # ...and the level of the value kept is still 20: 20 again is the error
    with pytest.raises(OpRegistryError):
        register_op_attr("nn.dense", key, "again", level=20)


def test_attributes_are_keyed_per_op(key: str) -> None:
    def yes(*_: object) -> bool:
        return True

    register_op_attr("nn.add", key, yes)
    register_op_attr("nn.relu", key, yes, level=3)
    assert ops_with_attr(key) == {"nn.add": yes, "nn.relu": yes}
    reset_op_attr("nn.add", key)
    assert ops_with_attr(key) == {"nn.relu": yes}
    register_op_attr("nn.add", key, "after reset")  # a reset frees the level
    assert get_op_attr("nn.add", key) == "after reset"


def test_attribute_of_an_unknown_op_is_an_error(key: str) -> None:
    with pytest.raises(OpRegistryError, match="did you mean .*'nn.add'"):
        register_op_attr("nn.ad", key, 1)
    with pytest.raises(OpRegistryError):
        get_op_attr("nn.ad", key)


def test_registering_an_op_twice_is_an_error() -> None:
    record = get_op("nn.add")
    with pytest.raises(OpRegistryError, match="op 'nn.add' is already registered"):
        register_op(OpRecord("nn.add", 2, record.arguments, 1, "broadcast", record.reference))


def test_pattern_kind_must_be_known() -> None:
    record = get_op("nn.add")
    with pytest.raises(ValueError, match="pattern kind 'fancy' is not one of elementwise"):
        register_op(OpRecord("test.fancy_op", 2, record.arguments, 1, "fancy", record.reference))
    with pytest.raises(OpRegistryError):
        get_op("test.fancy_op")


def test_concurrent_registration_keeps_exactly_one_winner_per_level(key: str) -> None:
    errors: list[Exception] = []
    barrier = threading.Barrier(8)

    def register(i: int) -> None:
        barrier.wait()
        try:
            register_op_attr("nn.multiply", key, i, level=10)
        except OpRegistryError as e:
            errors.append(e)

    threads = [threading.Thread(target=register, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 7
    assert get_op_attr("nn.multiply", key) in range(8)
