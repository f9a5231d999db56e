"""The one element-type table (`byoc.dialects.nn.types`): builtin type <-> numpy dtype <-> name."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import BFloat16Type, IntegerType, i8
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import nn


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
