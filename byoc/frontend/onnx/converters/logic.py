"""Comparison and logical ONNX ops and Where (nn ops of `byoc.dialects.nn.logic_ops`)."""

from __future__ import annotations

from byoc.dialects import nn
from byoc.dialects.nn import logic_ops as lg
from byoc.frontend.onnx.base import Importer, Node, Value, converts
from byoc.frontend.onnx.converters.elementwise import same_type_binary
from byoc.frontend.onnx.errors import OnnxImportError

_BINARY: dict[str, type[nn.NNOp]] = {
    "Equal": lg.EqualOp,
    "Less": lg.LessOp,
    "Greater": lg.GreaterOp,
    "LessOrEqual": lg.LessEqualOp,
    "GreaterOrEqual": lg.GreaterEqualOp,
    "And": lg.LogicalAndOp,
    "Or": lg.LogicalOrOp,
    "Xor": lg.LogicalXorOp,
}


@converts(*_BINARY)
def _binary(imp: Importer, node: Node) -> list[Value]:
    return same_type_binary(imp, node, _BINARY[node.op_type])


@converts("Not")
def _not(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(lg.LogicalNotOp, node.required(0))]


@converts("Where")
def _where(imp: Importer, node: Node) -> list[Value]:
    c, x, y = node.required(0), node.required(1), node.required(2)
    if imp.dtype(x) != imp.dtype(y):
        raise OnnxImportError(f"Where's x and y element types differ: {imp.dtype(x)} and {imp.dtype(y)}")
    return [imp.emit(lg.WhereOp, c, x, y)]
