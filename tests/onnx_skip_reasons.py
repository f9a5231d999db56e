"""Why a node test is not passed-or-failed: one reason per case, for docs/conformance.md.

Two kinds of case are not run to a result:
- a case the importer rejects cleanly (`UnsupportedOnnxError`): `import_reason(message)`
  files the message under one reason (`IMPORT_REASONS`, first match wins; a message no
  rule matches is its own reason, names quoted in it elided);
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
    (r"'nn\.[a-z0-9_]+': element type \S+ is not supported",
     "an nn op without that element type (an f16/f64/integer form of an f32-only op)"),
    (r"training mode|training_mode", "training mode (Dropout, BatchNormalization)"),
    (r"rank-5 input \(3-D\)", "3-D convolution and pooling"),
    (r"^Resize ", "Resize modes outside nn.resize2d (cubic, antialias, crop-and-resize, exclude_outside)"),
    (r"must be known at import time", "a shape-defining input computed at run time (value-dependent shape)"),
    (r"^output #\d+ \('[^']*'\) of ", "an optional output nn does not compute (Dropout mask, MaxPool indices)"),
    (r"is not a tensor", "a sequence or optional graph input"),
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


def import_reason(message: str) -> str:
    """The reason a case the importer rejected with `message` is skipped."""
    for pattern, reason in IMPORT_REASONS:
        if re.search(pattern, message):
            return reason
    return re.sub(r"'[^']*'", "'…'", message)


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


__all__ = ["IMPORT_REASONS", "NOT_CONVERTED", "OP_CATEGORIES", "import_reason", "op_category", "op_reason"]
