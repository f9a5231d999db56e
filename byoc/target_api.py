"""Everything a target author imports, from one module (re-exports only).

    from byoc.target_api import GraphEngine, Target, dtypes, is_constant, is_op, wildcard, f32

    ENGINE = GraphEngine("myengine", (Path(__file__).parent / "my_engine.c",))
    MYACCEL = Target(
        name="myaccel",
        support={"nn.relu": dtypes(f32)},
        patterns=[("dense_bias", is_op("nn.bias_add")(is_op("nn.dense")(wildcard(), is_constant()), is_constant()))],
        lowering="lower-to-graph",
        component="graph",
        graph_engine=ENGINE,
    )

The names live where they always did (`byoc.targets.Target`, `byoc.targets.predicates`,
`byoc.targets.patterns`, `byoc.runtime.graph_module.GraphEngine`), and those paths stay
valid; this module only gathers them. docs/tutorial.md walks through writing a target,
docs/plugins.md through shipping it as a package.
"""

from __future__ import annotations

from xdsl.dialects.builtin import f32, i8, i32, i64

from byoc.runtime.graph_module import ENGINES_DIR, GraphEngine
from byoc.runtime.toolchain import DEFAULT_FLAGS, INCLUDE_DIR, CompileError
from byoc.targets.base import Codegen, SupportFn, Target, TargetFamily
from byoc.targets.patterns import (
    Match,
    Pattern,
    TableEntry,
    is_constant,
    is_op,
    is_var,
    wildcard,
)
from byoc.targets.plugins import ENTRY_POINT_GROUP, PLUGINS_ENV, PluginError
from byoc.targets.predicates import Predicate, always, attr_is, dtypes, max_rank

__all__ = [
    "DEFAULT_FLAGS",
    "ENGINES_DIR",
    "ENTRY_POINT_GROUP",
    "INCLUDE_DIR",
    "PLUGINS_ENV",
    "Codegen",
    "CompileError",
    "GraphEngine",
    "Match",
    "Pattern",
    "PluginError",
    "Predicate",
    "SupportFn",
    "TableEntry",
    "Target",
    "TargetFamily",
    "always",
    "attr_is",
    "dtypes",
    "f32",
    "i8",
    "i32",
    "i64",
    "is_constant",
    "is_op",
    "is_var",
    "max_rank",
    "wildcard",
]
