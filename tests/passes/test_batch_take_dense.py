"""batch-take-dense (byoc/passes/batch_take_dense.py) on the shape of an unrolled recurrent
net: each time step taken from one tensor, its input projection a dense with the same
constant weight (and a bias), the recurrence a dense of the previous state. The rewritten
graph has one projection dense of every step; it computes the unrewritten graph's values
within the f32 bound of the graph (tests/support/bounds.py), through the numpy reference and
through the C target (whose build runs the pass: `Target.prepare`) at 1 and 2 threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

import byoc
from byoc.driver import prepare_for
from byoc.interpreters import run_reference
from byoc.passes import ALL_PASSES
from byoc.passes.batch_take_dense import BatchTakeDensePass

Array = np.ndarray[Any, Any]


def unrolled(t: int, k: int, n: int, steps: list[int], rng: np.random.Generator) -> str:
    """x (t, 1, k); per step s in `steps`: h = tanh(dense(take(x, s), W) + b + dense(h, R))."""
    w = rng.standard_normal((n, k)).astype(np.float32) * 0.3
    r = rng.standard_normal((n, n)).astype(np.float32) * 0.3
    b = rng.standard_normal(n).astype(np.float32)

    def lit(a: Array) -> str:
        return "[" + ", ".join(repr(float(v)) for v in a.reshape(-1)) + "]"

    lines = [
        f"  %w = nn.constant dense<{lit(w)}> : tensor<{n}x{k}xf32>",
        f"  %r = nn.constant dense<{lit(r)}> : tensor<{n}x{n}xf32>",
        f"  %b = nn.constant dense<{lit(b)}> : tensor<{n}xf32>",
        f"  %h0 = nn.constant dense<0.0> : tensor<1x{n}xf32>",
    ]
    h = "%h0"
    for i, s in enumerate(steps):
        lines += [
            f"  %c{i} = nn.constant dense<{s}> : tensor<i64>",
            f"  %x{i} = nn.take %x, %c{i} : (tensor<{t}x1x{k}xf32>, tensor<i64>) -> tensor<1x{k}xf32>",
            f"  %p{i} = nn.dense %x{i}, %w : (tensor<1x{k}xf32>, tensor<{n}x{k}xf32>) -> tensor<1x{n}xf32>",
            f"  %q{i} = nn.bias_add %p{i}, %b {{axis = 1 : i64}} : (tensor<1x{n}xf32>, tensor<{n}xf32>) -> tensor<1x{n}xf32>",
            f"  %u{i} = nn.dense {h}, %r : (tensor<1x{n}xf32>, tensor<{n}x{n}xf32>) -> tensor<1x{n}xf32>",
            f"  %v{i} = nn.add %q{i}, %u{i} : tensor<1x{n}xf32>",
            f"  %h{i + 1} = nn.tanh %v{i} : tensor<1x{n}xf32>",
        ]
        h = f"%h{i + 1}"
    body = "\n".join(lines)
    return f"""func.func @main(%x: tensor<{t}x1x{k}xf32>) -> tensor<1x{n}xf32> {{
{body}
  func.return {h} : tensor<1x{n}xf32>
}}"""


def dense_rows(module: ModuleOp) -> list[int]:
    """The rows of each nn.dense's data (all but its last dim)."""
    return [
        int(np.prod(op.operands[0].type.get_shape()[:-1]))  # type: ignore[attr-defined]
        for op in module.walk()
        if op.name == "nn.dense"
    ]


@pytest.mark.parametrize(
    ("t", "k", "n", "steps"),
    [(5, 70, 9, [0, 1, 2, 3, 4]), (6, 33, 17, [5, 4, 3, 2, 1, 0]), (7, 130, 5, [0, -1, 3, 3, 5])],
)
def test_the_projections_become_one_dense_within_the_bound(
    t: int, k: int, n: int, steps: list[int]
) -> None:
    rng = np.random.default_rng(t * 100 + k)
    text = unrolled(t, k, n, steps, rng)
    x = rng.standard_normal((t, 1, k)).astype(np.float32)
    original = byoc.parse_module(text)
    expected = list(run_reference(original, x))
    rewritten = byoc.parse_module(text)
    PassPipeline((BatchTakeDensePass(),)).apply(byoc.make_context(), rewritten)
    rewritten.verify()
    assert sorted(dense_rows(rewritten)) == [1] * len(steps) + [t]  # the recurrence stays
    assert_graph_outputs(original, [x], list(run_reference(rewritten, x)), expected, what="reference")
    for threads in (1, 2):
        exe = byoc.build(byoc.parse_module(text), targets=["ccompiler"], num_threads=threads)
        out = exe.run(x)
        actual = list(out) if isinstance(out, list | tuple) else [out]
        assert_graph_outputs(original, [x], actual, expected, what=f"C, {threads} thread(s)")


def test_fewer_than_half_the_rows_stay_as_they_are() -> None:
    text = unrolled(7, 16, 4, [0, 6, 0], np.random.default_rng(1))  # rows 0 and 6 of 7
    module = byoc.parse_module(text)
    PassPipeline((BatchTakeDensePass(),)).apply(byoc.make_context(), module)
    assert dense_rows(module) == [1] * 6


def test_the_pass_is_registered_and_the_ccompiler_target_prepares_with_it() -> None:
    assert ALL_PASSES["batch-take-dense"]() is BatchTakeDensePass
    module = byoc.parse_module(unrolled(3, 8, 4, [0, 1, 2], np.random.default_rng(2)))
    prepare_for(module, ["ccompiler"])
    assert sorted(dense_rows(module)) == [1, 1, 1, 3]
