"""A worked example of a new target: "myaccel", an accelerator whose SDK compiles C.

It supports f32 add, multiply and relu, and a fused "scale-and-shift" kernel
(multiply then add by constants). Its partitions go through byoc's C codegen,
so the whole target is one `Target` object:

    import byoc, myaccel
    byoc.register_target(myaccel.MYACCEL)         # checks the names it uses
    exe = byoc.build(module, targets=["myaccel"])  # partitions named @myaccel_main_<n>

In-tree, the same module goes to byoc/targets/myaccel.py with one line in
`byoc.targets.BUILTIN_TARGETS`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import f32

from byoc.targets import Target
from byoc.targets.patterns import is_constant, is_op, wildcard
from byoc.targets.predicates import dtypes

MYACCEL = Target(
    name="myaccel",
    # 1. What the hardware supports: op name -> predicate on the typed op. Registered as
    #    `target.myaccel` in the op registry; register_op_attr(..., level=11) overrides one.
    support={
        "nn.add": dtypes(f32),
        "nn.multiply": dtypes(f32),
        "nn.relu": dtypes(f32),
    },
    # 2. Op groups it runs as one kernel: merge-composite makes `byoc.composite
    #    "myaccel.scale_shift"`; (name, pattern[, check]) entries, earlier ones win.
    patterns=[
        (
            "scale_shift",
            is_op("nn.add")(is_op("nn.multiply")(wildcard(), is_constant()), is_constant()),
        ),
    ],
    # 3. How its partitions are lowered (a pass, by CLI name) and what they are built into
    #    (a runtime component, by kind): lower-to-c inlines and fuses composite bodies;
    #    `composite_lowering=` would name a hook emitting one kernel per composite (cblas).
    lowering="lower-to-c",
    component="c",
    # Also: c_includes (headers its kernels need), c_build_options (flags, libraries),
    # or codegen=fn(module, funcs) -> component, instead of lowering + component (an SDK).
    description="example accelerator: f32 add, multiply, relu and a fused scale-and-shift",
)
