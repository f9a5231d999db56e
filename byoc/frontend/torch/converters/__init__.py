"""The ATen op -> nn converter table, one module an op family.

A converter is `fn(importer, call) -> value`, registered with
`@converts("aten.<op>.<overload>", ...)`; it returns the node's value: a tensor (an SSA
value, or a numpy array when folded), or a tuple of them for ops with several results.
"""

from byoc.frontend.torch.base import CONVERTERS, Converter, converts
from byoc.frontend.torch.converters import elementwise, layout, neural, transformer  # noqa: F401

SUPPORTED_OPS: frozenset[str] = frozenset(CONVERTERS)
"""The ATen overloads the importer converts."""

__all__ = ["CONVERTERS", "SUPPORTED_OPS", "Converter", "converts"]
