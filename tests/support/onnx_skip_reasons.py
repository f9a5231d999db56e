"""Why a node test is not passed-or-failed: one reason per case, for docs/conformance.md.

Two kinds of case are not run to a result:
- a case the importer rejects cleanly (`UnsupportedOnnxError`): `import_reason(message)`
  files the message under one reason (`IMPORT_REASONS`, first match wins); an op type
  it meets only inside a subgraph (an `If` branch) is filed by `op_category`, like a
  case not run; a message no rule matches is `UNCLASSIFIED` and a test fails on it;
- a case whose model uses an op type the importer does not convert: `op_reason(op_types)`
  files it under the category of its unconverted ops (`OP_CATEGORIES`, first match wins;
  an op in no category is "not converted yet", named).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

IMPORT_REASONS: tuple[tuple[str, str], ...] = (
    (
        r"element type [A-Z0-9]+, which nn has no element type for|Cast to [A-Z0-9]+ is not "
        r"supported|a constant of element type|CastLike to",
        "element type outside nn (bfloat16, float8, float4, int4/uint4, int2/uint2, string)",
    ),
    (r"'nn\.[a-z0-9_]+': element type \S+ is not supported|with a float16 scale is not supported",
     "an nn op without that element type (an f16/f64/integer form of an f32-only op)"),
    (r"training mode|training_mode", "training mode (Dropout, BatchNormalization)"),
    (r"rank-5 input \(3-D\)", "3-D convolution and pooling"),
    (r"^Resize ", "Resize modes outside nn.resize2d (cubic, antialias, crop-and-resize, exclude_outside)"),
    (r"must be known at import time", "a shape-defining input computed at run time (value-dependent shape)"),
    (r"^output #\d+ \('[^']*'\) of ", "an optional output nn does not compute (Dropout mask, MaxPool indices)"),
    (r"is not a tensor", "sequence and optional types"),
)  # fmt: skip
"""(regex on the importer's message, reason) for cases the importer rejects."""

OP_CATEGORIES: tuple[tuple[str, str], ...] = (
    (r"^ai\.onnx\.preview\.training\.", "training ops (ai.onnx.preview.training: Adam, Adagrad, Momentum, Gradient)"),
    (r"^ai\.onnx\.ml\.", "the ai.onnx.ml domain (classical ML: trees, encoders, ...)"),
    (r"^ai\.onnx\.preview\.", "preview-domain ops (ai.onnx.preview)"),
    (r"^(String|RegexFullMatch|TfIdfVectorizer)", "string ops"),
    (r"^(Sequence|Optional|SplitToSequence|ConcatFromSequence)", "sequence and optional types"),
    (r"^(Bernoulli|Random|Multinomial)", "random ops"),
    (r"^(Loop|Scan)$", "loops (Loop, Scan)"),
    (r"(?i)quantize|^QLinear|Integer$|^QAttention", "quantized ops"),
    (r"^(DFT|STFT|\w+Window|MelWeightMatrix)$", "signal processing (DFT, STFT, windows)"),
    (r"^ImageDecoder$", "image decoding"),
    (r"Loss$", "loss functions (training graphs)"),
)  # fmt: skip
"""(regex on an ONNX op type, category) for ops the importer does not convert."""

NOT_CONVERTED = "ops not converted yet"

UNCLASSIFIED = "unclassified import rejection"
"""A message no rule of IMPORT_REASONS matches (tests/frontend/test_onnx_conformance.py
requires that no case of the node tests lands here)."""

_UNSUPPORTED_OP = re.compile(r"^unsupported ONNX op type '([^']+)'")


def import_reason(message: str) -> str:
    """The reason a case the importer rejected with `message` is skipped."""
    for pattern, reason in IMPORT_REASONS:
        if re.search(pattern, message):
            return reason
    unsupported = _UNSUPPORTED_OP.match(message)
    if unsupported:  # an op inside a subgraph (an If branch): the same reasons as a case not run
        return op_category(unsupported.group(1)) or NOT_CONVERTED
    return UNCLASSIFIED


def op_category(op_type: str) -> str | None:
    for pattern, category in OP_CATEGORIES:
        if re.search(pattern, op_type):
            return category
    return None


def op_reason(unconverted: Iterable[str]) -> str:
    """The reason a case using the unconverted op types `unconverted` is not run."""
    ops = sorted(unconverted)
    for op in ops:
        category = op_category(op)
        if category is not None:
            return category
    return NOT_CONVERTED


__all__ = [
    "IMPORT_REASONS", "NOT_CONVERTED", "OP_CATEGORIES", "UNCLASSIFIED", "import_reason", "op_category", "op_reason",
]  # fmt: skip
