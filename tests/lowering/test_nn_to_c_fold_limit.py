"""lower-to-c (and the cblas GEMM chains) compute ops over constants at build time only
up to nn.FOLD_LIMIT_BYTES; above it the op is emitted and computed at run time, with the
same answer (issue 14 item 8)."""

from __future__ import annotations

import numpy as np
import pytest
from support.bounds import assert_graph_outputs

import byoc
from byoc.dialects import nn
from byoc.interpreters.reference import run_reference

GRAPH = """
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>) {
  %a = nn.constant dense<[[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]> : tensor<2x3xf32>
  %w = nn.constant dense<[[1.0, 0.0, 2.0], [0.5, 1.0, 1.0], [0.0, 0.0, 1.0], [3.0, 1.0, 0.0]]> : tensor<4x3xf32>
  %0 = nn.relu %a : tensor<2x3xf32>
  %1 = nn.add %0, %x : tensor<2x3xf32>
  %2 = nn.dense %a, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  func.return %1, %2 : tensor<2x3xf32>, tensor<2x4xf32>
}
"""


@pytest.mark.parametrize("limit", [nn.FOLD_LIMIT_BYTES, 0], ids=["folded", "kept"])
@pytest.mark.parametrize("targets", [["ccompiler"], ["cblas"], ["cblas", "ccompiler"]], ids=str)
def test_ops_over_constants_agree_folded_or_kept(
    monkeypatch: pytest.MonkeyPatch, limit: int, targets: list[str]
) -> None:
    monkeypatch.setattr(nn, "FOLD_LIMIT_BYTES", limit)
    module = byoc.parse_module(GRAPH)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    want = run_reference(module, x)
    got = byoc.build(module, targets=targets).run(x)
    assert_graph_outputs(module, [x], list(got), list(want))
