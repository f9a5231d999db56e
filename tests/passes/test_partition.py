"""The partitioning passes from Python: partition_for, PassPipeline, options, errors, targets, predicates."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, f32, i32
from xdsl.dialects.func import FuncOp
from xdsl.passes import PassPipeline

import byoc
from byoc.context import make_context, parse_module
from byoc.diagnostics import PassError
from byoc.dialects import nn
from byoc.passes import ALL_PASSES
from byoc.passes.annotate_target import AnnotateTargetPass
from byoc.passes.byoc_pipeline import ByocPass, partition_for
from byoc.passes.merge_compiler_regions import MergeCompilerRegionsPass
from byoc.passes.merge_composite import MergeCompositePass
from byoc.passes.partition import PartitionPass, sanitize
from byoc.targets import UnknownTargetError, get_target
from byoc.targets.predicates import always, attr_is, dtypes, max_rank
from byoc.targets.test import is_test_target, support_from_ops

SEED = """
func.func @main(%x: tensor<10x10xf32>, %y: tensor<10x10xf32>, %z: tensor<10x10xf32>, %w: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %a = nn.add %x, %y : tensor<10x10xf32>
  %s = nn.subtract %a, %z : tensor<10x10xf32>
  %t = nn.tanh %s : tensor<10x10xf32>
  %m = nn.multiply %t, %w : tensor<10x10xf32>
  func.return %m : tensor<10x10xf32>
}
"""


def partitions(module: ModuleOp) -> dict[str, str]:
    """name -> byoc.compiler of every partition function."""
    out: dict[str, str] = {}
    for op in module.ops:
        if isinstance(op, FuncOp) and "byoc.compiler" in op.attributes:
            out[op.sym_name.data] = op.attributes["byoc.compiler"].data  # type: ignore[attr-defined]
    return out


def test_partition_for_runs_the_pipeline_in_place() -> None:
    module = parse_module(SEED)
    inputs = [np.full((10, 10), v, np.float32) for v in (1.0, 2.0, 3.0, 4.0)]
    before = byoc.run_reference(module, *inputs)
    result = byoc.partition_for(module, targets=["test"], ops=["add", "subtract", "multiply"])
    assert result is module
    assert partitions(module) == {"test_main_0": "test", "test_main_1": "test"}
    np.testing.assert_array_equal(byoc.run_reference(module, *inputs)[0], before[0])


def test_partition_for_with_a_registered_target() -> None:
    module = parse_module(SEED)
    partition_for(module, "ccompiler")
    assert set(partitions(module).values()) == {"ccompiler"}
    main = next(op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == "main")
    assert [o.name for o in main.body.block.ops] == ["func.call", "func.return"]


def test_passes_compose_in_a_pass_pipeline() -> None:
    module = parse_module(SEED)
    pipeline = PassPipeline(
        (
            MergeCompositePass(targets=("test",), patterns=("add_abs",)),
            AnnotateTargetPass(targets=("test",), ops=("add", "multiply")),
            MergeCompilerRegionsPass(),
            PartitionPass(),
        )
    )
    pipeline.apply(make_context(), module)
    assert len(partitions(module)) == 2


def test_pipeline_from_a_spec_string() -> None:
    module = parse_module(SEED)
    pipeline = PassPipeline.parse_spec(
        ALL_PASSES,
        "annotate-target{targets=test ops=add,subtract},merge-compiler-regions,partition",
    )
    pipeline.apply(make_context(), module)
    assert partitions(module) == {"test_main_0": "test"}
    spec = str(ByocPass(targets=("test_a", "test_b"), ops=("add",), min_ops=2).spec())
    assert spec.startswith("byoc{targets=") and "min_ops=2" in spec


def test_options_accept_lists_and_comma_strings() -> None:
    p = AnnotateTargetPass(targets=["test_a", "test_b"], ops="add,relu")  # type: ignore[arg-type]
    assert p.targets == ("test_a", "test_b") and p.ops == ("add", "relu")


def test_option_errors_are_raised_when_the_pass_is_made() -> None:
    with pytest.raises(
        UnknownTargetError, match="unknown target 'npu'; known targets: .*test_<suffix>"
    ):
        AnnotateTargetPass(targets=("npu",))
    with pytest.raises(ValueError, match="unknown pattern 'nope'"):
        MergeCompositePass(targets=("test",), patterns=("nope",))
    with pytest.raises(ValueError, match="min-ops must not be negative"):
        MergeCompilerRegionsPass(min_ops=-1)
    with pytest.raises(ValueError, match="listed twice"):
        ByocPass(targets=("test", "test"))


def test_pass_errors_carry_the_op() -> None:
    module = parse_module(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = nn.relu %x {byoc.target = "nope"} : tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        """
    )
    with pytest.raises(PassError) as info:
        PartitionPass().apply(make_context(), module)
    assert info.value.op is not None and info.value.op.name == "nn.relu"
    assert info.value.message.startswith("partition: 'nn.relu' is tagged for unknown target 'nope'")


def test_test_target_family() -> None:
    assert all(is_test_target(n) for n in ("test", "test_a", "test-npu+"))
    assert not any(is_test_target(n) for n in ("tests", "test_", "test.a", "testa", "ccompiler"))
    member = get_target("test_x")  # made on first use, once
    assert member is get_target("test_x") and member.name == "test_x"
    assert [e.name for e in member.patterns] == [e.name for e in get_target("test").patterns]
    assert member.support_from_ops is get_target("test").support_from_ops
    with pytest.raises(UnknownTargetError):
        get_target("test.a")
    support = support_from_ops(["test_a", "ccompiler", "test_b"], ["relu", "test_b:nn.add"])
    assert sorted(support) == ["test_a", "test_b"]
    assert sorted(support["test_a"]) == ["nn.relu"]
    assert sorted(support["test_b"]) == ["nn.add", "nn.relu"]


def test_sanitize() -> None:
    assert sanitize("test-npu+") == "test_npu_"
    assert sanitize("main") == "main"
    assert sanitize("3d") == "_3d"
    assert sanitize("") == "_"


def test_support_predicates_compose() -> None:
    x = nn.ConstantOp.from_array(np.zeros((1, 4, 5, 5), np.float32))
    w = nn.ConstantOp.from_array(np.zeros((4, 2, 3, 3), np.float32))
    conv = nn.Conv2DOp.build(x, w, groups=2)
    xi = nn.ConstantOp.from_array(np.zeros((4,), np.int32))
    add_i = nn.AddOp.build(xi, xi)
    assert dtypes(f32)(conv) and not dtypes(f32)(add_i) and dtypes(f32, i32)(add_i)
    assert attr_is(groups=2)(conv) and not attr_is(groups=1)(conv)
    assert attr_is(groups=lambda g: g > 1)(conv)
    assert attr_is(strides=[1, 1])(conv)
    assert not attr_is(groups=1)(add_i)  # no such property
    assert max_rank(4)(conv) and not max_rank(3)(conv)
    both = dtypes(f32) & attr_is(groups=1)
    assert not both(conv) and (dtypes(f32) | attr_is(groups=1))(conv)
    assert (~attr_is(groups=1))(conv) and always()(add_i)
    assert "groups=1" in repr(both) and "f32" in repr(both)
