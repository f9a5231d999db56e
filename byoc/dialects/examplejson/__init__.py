"""The `examplejson` dialect (`ops`) and the ExampleJSON text it prints to and reads from (`text`)."""

from byoc.dialects.examplejson.ops import (
    KEYWORDS,
    NAME_OF,
    OPS,
    ConstOp,
    ExampleJson,
    ExampleJsonModuleOp,
    InputOp,
    LineError,
    NodeOp,
    OutputOp,
    SubgraphOp,
    ValueOp,
    subgraphs_of,
)

__all__ = [
    "ExampleJson",
    "ExampleJsonModuleOp",
    "SubgraphOp",
    "InputOp",
    "ConstOp",
    "NodeOp",
    "OutputOp",
    "ValueOp",
    "LineError",
    "OPS",
    "NAME_OF",
    "KEYWORDS",
    "subgraphs_of",
]
