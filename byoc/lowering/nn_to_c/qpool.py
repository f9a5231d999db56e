"""The `qavgpool` and `qreshape` composites of `lower-to-c` (byoc/targets/qdq.py).

- `qavgpool` -> `byoc_qavgpool_<x>_<y>` (byoc/runtime/byoc_qpool.h): the integer sum of the
  block's table over each window, then the reference's f64 / f32 steps per output; the table
  (int64, 256), the counts (int32, OH x OW) and the linear split of the table (`linear_split`:
  two byte tables, m and c, for the AVX-512 VBMI sum) are constants of the kernel.
- `qconcat` of 2 to 4 inputs -> `byoc_qconcat<n>` (byoc_qpool.h): each input through its
  table (or copied) straight into its slice of the output, one pass; more inputs keep
  quant.py's tables and the C backend's block copies. An input copied unchanged (no table)
  whose slice is contiguous is computed in place by its producer instead (lower-to-c's
  `place_concat_inputs`, buffers.py) and the kernel skips it; an input with a table is
  never placed (its producer's integers go through the table first).
- `qreshape` -> x itself in the output's shape (an alias, as a float reshape is) when the
  parameters are equal, else x's `qlut` table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from byoc.lowering.nn_to_c.graph import Tensor, i32_attr, i64_attr, pool_window
from byoc.targets.qdq import QAvgPool, QConcat, QReshape

_SHORT = {"i8": "i8", "ui8": "u8"}


def _f32_attr(v: float) -> Any:
    from xdsl.dialects.builtin import FloatAttr, f32

    return FloatAttr(float(np.float32(v)), f32)


def lower_qpool(lowering: Any, b: QAvgPool | QReshape | QConcat) -> Tensor:
    """The nodes of one block; `lowering` is quant.py's `_Lowering` (values, node, const, _lut)."""
    if isinstance(b, QConcat):
        return _qconcat(lowering, b)
    x = lowering.values[b.x]
    if isinstance(b, QReshape):
        if b.table is None:
            out = Tensor(b.shape, b.y_dtype, "node")
            out.alias_of = x
            return out
        looked = lowering._lut(x, b.table, b.y_dtype)  # pyright: ignore[reportPrivateUsage]
        out = Tensor(b.shape, b.y_dtype, "node")
        out.alias_of = looked
        return out
    ints = pool_window(b.pool, x.shape)
    out = Tensor((ints[0], ints[1], ints[6], ints[7]), b.y_dtype, "node")
    form, m, c, r = b.split
    args = [
        *(i64_attr(v) for v in ints), i32_attr(b.exponent), _f32_attr(b.y_scale), i32_attr(b.y_zero_point),
        i32_attr(form), i64_attr(m), i64_attr(c),
    ]
    return lowering.node(
        f"byoc_qavgpool_{_SHORT[x.dtype]}_{_SHORT[b.y_dtype]}",
        [x, lowering.const(b.table), lowering.const(b.counts), lowering.const(r)], out, args,
    )


def _qconcat(lowering: Any, b: QConcat) -> Tensor:
    """`byoc_qconcat<n>` (2 to 4 inputs): each input through its table, or copied, straight
    into its place in the output."""
    xs = [lowering.values[v] for v in b.inputs]
    shape = list(xs[0].shape)
    shape[b.axis] = sum(x.shape[b.axis] for x in xs)
    out = Tensor(tuple(shape), b.y_dtype, "node")
    outer = math.prod(shape[: b.axis])
    inner = [math.prod(x.shape[b.axis :]) for x in xs]
    identity = np.arange(256, dtype=np.uint8)
    tables = np.stack([identity if t is None else np.asarray(t, np.uint8).reshape(256) for t in b.tables])
    mask = sum(1 << k for k, t in enumerate(b.tables) if t is not None)
    args = [i64_attr(outer), *(i64_attr(n) for n in inner), i32_attr(mask)]
    lowering.node(f"byoc_qconcat{len(xs)}", [*xs, lowering.const(tables)], out, args)
    # the inputs it copies unchanged may be computed in their slice (buffers.place_concat_inputs,
    # which then sets bit 8 + k of the mask: byoc_qconcat<n> skips input k)
    assert out.node is not None
    copied = [k for k, t in enumerate(b.tables) if t is None and xs[k].dtype == b.y_dtype]
    out.node.params["concat"] = {"axis": b.axis, "copied": copied}
    return out


__all__ = ["lower_qpool"]
