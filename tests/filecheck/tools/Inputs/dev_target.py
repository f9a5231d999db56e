"""A target under development, loaded by list-targets.mlir and load-plugin.mlir with --load-plugin."""

from xdsl.dialects.builtin import f32

from byoc.target_api import Target, dtypes

byoc_targets = Target(
    name="devaccel", support={"nn.relu": dtypes(f32)}, lowering="lower-to-c", component="c"
)
