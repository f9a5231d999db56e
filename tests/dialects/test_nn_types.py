"""The one element-type table (`byoc.dialects.nn.types`): builtin type <-> numpy dtype <-> name."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    BFloat16Type,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    i8,
    i64,
)
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import nn
from byoc.dialects.nn.types import array_dense


@pytest.mark.parametrize("entry", nn.ELEMENT_TYPES, ids=lambda e: e.name)
def test_each_entry_converts_both_ways(entry: nn.DType) -> None:
    assert nn.numpy_dtype(entry.element_type) == entry.numpy
    assert nn.element_type_of(entry.numpy) == entry.element_type
    assert nn.element_type_named(entry.name) == entry.element_type
    assert nn.DTYPE_NAMES[entry.element_type] == entry.name
    assert str(entry.element_type) == entry.name


def test_the_table_holds_the_nn_element_types() -> None:
    names = [e.name for e in nn.ELEMENT_TYPES]
    assert names == ["f32", "f64", "f16", "i32", "i64", "i8", "i16", "ui8", "ui16", "ui32", "ui64", "i1"]
    assert nn.numpy_dtype(i8) == np.int8 and nn.element_type_of(np.uint8) == nn.element_type_named("ui8")
    assert str(nn.element_type_named("ui8")) == "ui8"
    assert set(nn.NUMERIC) <= {e.element_type for e in nn.ELEMENT_TYPES}


def test_unknown_types_are_errors() -> None:
    with pytest.raises(VerifyException, match="unsupported element type bf16"):
        nn.numpy_dtype(BFloat16Type())
    with pytest.raises(ValueError, match="unsupported numpy dtype complex64"):
        nn.element_type_of(np.complex64)
    assert nn.element_type_named("bf16") is None
    assert not nn.is_known_element_type(IntegerType(4))


def test_cast_targets_come_from_the_table() -> None:
    for name in nn.CastOp.TARGETS:
        assert nn.element_type_named(name) is not None


@pytest.mark.parametrize(
    "array",
    [
        np.arange(24, dtype=np.float32).reshape(2, 3, 4),
        np.asarray(7, dtype=np.int64),
        np.zeros((0, 5), dtype=np.bool_),
        np.frombuffer(bytes(range(16)), dtype=np.uint8).reshape(4, 4),
    ],
    ids=["f32", "0-d i64", "empty bool", "bytes view"],
)
def test_array_dense_equals_and_hashes_as_a_verified_value(array: np.ndarray) -> None:
    """`array_dense` skips xDSL's verification of the value's parameters; what it builds is
    equal to, hashes as, and prints as the value built through the verifying constructor."""
    ty = nn.tensor(array.shape, nn.element_type_of(array.dtype))
    cheap = array_dense(array, ty)
    checked = DenseIntOrFPElementsAttr(ty, BytesAttr(array.tobytes()))
    assert cheap == checked and checked == cheap
    assert hash(cheap) == hash(checked)
    assert str(cheap) == str(checked)
    assert {cheap: 1}[checked] == 1
    cheap.verify()  # what was skipped holds
    op = nn.ConstantOp.from_array(array)
    assert op.value == checked
    op.verify()


def test_integer_property_values_are_shared_and_exact() -> None:
    """`ints` and `int_attr` return one instance per tuple of Python ints; a bool or a
    numpy integer is converted afresh, never looked up under the int it equals."""
    assert nn.ints(1, 2) is nn.ints(1, 2)
    assert nn.int_attr(3) is nn.int_attr(3)
    assert nn.ints(1, 2) == DenseArrayBase.from_list(i64, [1, 2])
    assert nn.int_attr(-7) == IntegerAttr(-7, i64)
    assert nn.ints(np.int64(1), 2) == nn.ints(1, 2)
    assert nn.ints() is nn.ints()
    assert nn.ints(True) is not nn.ints(1) and nn.int_attr(True) is not nn.int_attr(1)
