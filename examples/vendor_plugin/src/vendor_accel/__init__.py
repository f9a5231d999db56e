"""vendor_accel: an example vendor package adding two byoc targets from outside byoc.

Installed (`pip install examples/vendor_plugin`), it declares in its pyproject.toml

    [project.entry-points."byoc.targets"]
    vendoraccel = "vendor_accel:VENDORACCEL"
    vendoraccel_c = "vendor_accel:make_targets"

and byoc finds both by name, with no import by the user:

- `vendoraccel`: partitions run by the package's own C engine (vendor_engine.c, shipped as
  package data) on byoc's native graph runtime: float32 relu, clip, add, subtract and
  multiply on operands of one shape, and the composite `vendoraccel.add_relu`.
- `vendoraccel_c`: made by a factory, as a target built from options would be: the same
  unary ops lowered to C by byoc's own C codegen.
"""

from __future__ import annotations

from pathlib import Path

from xdsl.ir import Operation

from byoc.target_api import (
    GraphEngine,
    Predicate,
    Target,
    dtypes,
    f32,
    is_op,
    max_rank,
    wildcard,
)

HERE = Path(__file__).resolve().parent

ENGINE = GraphEngine("vendor", (HERE / "vendor_engine.c",))
"""The engine: one C source implementing byoc_graph_engine.h (docs/graph.md)."""


def _static_same_shapes(op: Operation) -> bool:
    """Static shapes, every operand of the result's shape (the engine does not broadcast)."""
    shapes = {tuple(v.type.get_shape()) for v in (*op.operands, *op.results)}  # type: ignore[attr-defined]
    return len(shapes) == 1 and all(d >= 0 for d in next(iter(shapes)))


def _non_empty(op: Operation) -> bool:
    return all(d > 0 for v in op.results for d in v.type.get_shape())  # type: ignore[attr-defined]


ELEMENTWISE = dtypes(f32) & max_rank(8) & Predicate(_static_same_shapes, "operands of one static shape")

VENDORACCEL = Target(
    name="vendoraccel",
    support={
        "nn.relu": ELEMENTWISE,
        "nn.clip": ELEMENTWISE,
        "nn.add": ELEMENTWISE,
        "nn.subtract": ELEMENTWISE,
        "nn.multiply": ELEMENTWISE,
    },
    # the check: the engine runs the composite's body, so its ops must be ones it takes
    patterns=[
        (
            "add_relu",
            is_op("nn.relu")(is_op("nn.add")(wildcard(), wildcard()).named("add")),
            lambda m: ELEMENTWISE(m.op("add")) and ELEMENTWISE(m.root),
        )
    ],
    lowering="lower-to-graph",
    component="graph",
    graph_engine=ENGINE,
    description="the example vendor's C engine on byoc's graph runtime",
)


def make_targets() -> list[Target]:
    """The factory the `vendoraccel_c` entry point names: called once, on discovery."""
    # byoc's C codegen takes static, non-empty shapes
    static = (
        dtypes(f32)
        & Predicate(_static_same_shapes, "static shapes")
        & Predicate(_non_empty, "no zero-size dimension")
    )
    return [
        Target(
            name="vendoraccel_c",
            support={"nn.relu": static, "nn.clip": static},
            lowering="lower-to-c",
            component="c",
            description="the example vendor's unary ops through byoc's C codegen",
        )
    ]


__all__ = ["ENGINE", "VENDORACCEL", "make_targets"]
