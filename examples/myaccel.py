"""A worked example of a new target: "myaccel", an accelerator whose SDK compiles C.

It supports f32 add, multiply and relu, and a fused "scale-and-shift" pattern
(multiply then add by constants). It reuses byoc's C codegen for its
partitions, so the whole target is this module:

    import byoc, myaccel
    from byoc.targets import register_target
    register_target("myaccel", myaccel)                    # or a line in KNOWN_TARGETS
    exe = byoc.build(module, targets=["myaccel"])         # partitions named @myaccel_main_<n>

In-tree, the same module goes to byoc/targets/myaccel.py with one line
`"myaccel": "byoc.targets.myaccel"` in `KNOWN_TARGETS`.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import StringAttr, f32

from byoc.dialects.byoc import COMPILER_ATTR, CompositeOp
from byoc.patterns import is_constant, is_op, wildcard
from byoc.support import dtypes, register_support

NAME = "myaccel"

# 1. What the hardware supports: op name -> predicate on the typed op.
SUPPORT = {
    "nn.add": dtypes(f32),
    "nn.multiply": dtypes(f32),
    "nn.relu": dtypes(f32),
}


def register() -> None:
    """Called once when the target is first used: put the predicates in the op registry."""
    register_support(NAME, SUPPORT)


# 2. Op groups the hardware runs as one kernel: byoc.composite "myaccel.scale_shift".
def pattern_table() -> list[tuple[Any, ...]]:
    scale_shift = is_op("nn.add")(is_op("nn.multiply")(wildcard(), is_constant()), is_constant())
    return [("scale_shift", scale_shift)]


# 3. Codegen: every partition of this target at once -> a runtime component with
#    get_function(symbol) and export(). Here: byoc's own C codegen.
def codegen(module: Any, funcs: list[Any]) -> Any:
    from byoc.targets import ccompiler

    clones = []
    for f in funcs:
        clone = f.clone()
        clone.attributes[COMPILER_ATTR] = StringAttr("ccompiler")  # lower it as C source
        for op in clone.walk():
            if isinstance(op, CompositeOp):  # the C codegen inlines (and fuses) composite bodies
                op.composite = StringAttr("ccompiler." + op.composite.data.split(".", 1)[1])
        clones.append(clone)
    return ccompiler.codegen(module, clones)


# 4. Loading an exported artifact: rebuild the component from what export() wrote.
def load_component(blobs: dict[str, bytes]) -> Any:
    from byoc.targets import ccompiler

    return ccompiler.load_component(blobs)
