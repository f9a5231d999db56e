"""Property declarations of nn ops, each with its default in one call:

    axis = int_prop(-1)          # prop_def(IntegerAttr, default_value=int_attr(-1))
    pad_mode = str_prop("constant")
    pad_width = array_prop()     # required: no default

A property without a default is required (`NNOp.python_attrs` says so by name).
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import BoolAttr, DenseArrayBase, FloatAttr, IntegerAttr, StringAttr
from xdsl.irdl import prop_def

from byoc.dialects.nn.types import float_attr, int_attr


def int_prop(default: int | None = None) -> IntegerAttr[Any]:
    """An i64 property; required when `default` is None."""
    return prop_def(IntegerAttr, None if default is None else int_attr(default))


def bool_prop(default: bool) -> IntegerAttr[Any]:
    """A flag (an i1 property)."""
    return prop_def(IntegerAttr, BoolAttr.from_bool(default))


def float_prop(default: float) -> FloatAttr[Any]:
    """An f64 property."""
    return prop_def(FloatAttr, float_attr(default))


def str_prop(default: str | None = None) -> StringAttr:
    """A string property; required when `default` is None."""
    return prop_def(StringAttr, None if default is None else StringAttr(default))


def array_prop(default: DenseArrayBase[Any] | None = None) -> DenseArrayBase[Any]:
    """An array property (`ints(...)`, `floats(...)`); required when `default` is None."""
    return prop_def(DenseArrayBase, default)
