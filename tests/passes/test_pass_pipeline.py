"""The partitioning passes composed in Python with xDSL's PassPipeline, from `byoc.passes`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.paths import ROOT
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.passes import PassPipeline
from xdsl.traits import SymbolTable

import byoc
import byoc.passes

# nn.lrn has no ccompiler predicate, so the graph splits into two partitions around it.
MODEL = """
func.func @main(%x: tensor<1x4x2x2xf32>, %y: tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32> {
  %a = nn.add %x, %y : tensor<1x4x2x2xf32>
  %r = nn.relu %a : tensor<1x4x2x2xf32>
  %l = nn.lrn %r {size = 3 : i64} : tensor<1x4x2x2xf32>
  %t = nn.tanh %l : tensor<1x4x2x2xf32>
  %s = nn.add %t, %a : tensor<1x4x2x2xf32>
  func.return %s : tensor<1x4x2x2xf32>
}
"""


def byoc_opt(text: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "byoc.tools.byoc_opt", *args],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    return result.stdout


def test_pass_pipeline_of_pass_classes_matches_byoc_opt() -> None:
    from byoc.passes import AnnotateTargetPass, MergeCompilerRegionsPass, PartitionPass

    module = byoc.parse_module(MODEL)
    PassPipeline(
        (AnnotateTargetPass(targets=("ccompiler",)), MergeCompilerRegionsPass(), PartitionPass())
    ).apply(byoc.make_context(), module)
    module.verify()

    main, *partitions = [op for op in module.ops if isinstance(op, FuncOp)]
    # ccompiler has an nn.lrn kernel: the whole model is one partition
    assert [p.sym_name.data for p in partitions] == ["ccompiler_main_0"]
    assert [o.name for o in main.body.block.ops] == ["func.call", "func.return"]
    for call in (o for o in main.body.block.ops if isinstance(o, CallOp)):
        callee = SymbolTable.lookup_symbol(module, call.callee)
        assert isinstance(callee, FuncOp)
        assert callee.attributes["byoc.compiler"] == StringAttr("ccompiler")

    expected = byoc_opt(
        MODEL, "-p", "annotate-target{targets=ccompiler},merge-compiler-regions,partition"
    )
    assert str(module).strip() == expected.strip()


def test_pass_classes_are_those_the_cli_uses() -> None:
    from byoc.passes import (
        ALL_PASSES,
        AnnotateTargetPass,
        ByocPass,
        MergeCompilerRegionsPass,
        MergeCompositePass,
        PartitionPass,
    )

    for cls in (
        MergeCompositePass,
        AnnotateTargetPass,
        MergeCompilerRegionsPass,
        PartitionPass,
        ByocPass,
    ):
        assert ALL_PASSES[cls.name]() is cls
    assert byoc.passes.partition_for is byoc.partition_for
    assert {"AnnotateTargetPass", "PartitionPass", "partition_for"} <= set(dir(byoc.passes))


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NoSuchPass'"):
        byoc.passes.NoSuchPass  # noqa: B018


def test_importing_byoc_passes_loads_no_pass() -> None:
    code = (
        "import sys, byoc.passes\n"
        "loaded = [m for m in sys.modules if m.startswith('byoc.passes.')]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
