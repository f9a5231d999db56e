"""The sliding windows of NCHW images that the convolution and pooling kernels (float and
quantized) and the QDQ pooling checks read."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from byoc.interpreters.registry import Array


def pad_nchw(x: Array, padding: Sequence[int], value: float) -> Array:
    """`x` with (top, left, bottom, right) `padding` rows and columns of `value`."""
    pt, pl, pb, pr = padding
    if not any(padding):
        return x
    return np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=value)


def windows(x: Array, kh: int, kw: int, strides: Sequence[int], dilation: Sequence[int]) -> Array:
    """(N, C, OH, OW, KH, KW) view of the (already padded) input."""
    dh, dw = dilation
    sh, sw = strides
    win = sliding_window_view(x, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    return win[:, :, ::sh, ::sw, ::dh, ::dw]
