"""What the dnnl engine's plan does, read from oneDNN's own log (`ONEDNN_VERBOSE=2`) in a
fresh process (oneDNN reads the variable once per process):

- every primitive is created at init, none while the model runs;
- constant weights are reordered once, at init, to the blocked layouts oneDNN chose
  (format_tag::any); a run executes exactly the plan's steps, and no weight reorder;
- inside the partition, activations are in the layouts oneDNN picked, not plain NCHW.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from byoc.targets.dnnl import missing_reason

REASON = missing_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"oneDNN extra absent: {REASON}")

TESTS = Path(__file__).resolve().parent.parent

_SCRIPT = """
import sys
sys.path[:0] = [{targets!r}, {tests!r}]
import byoc
from test_dnnl import _model
module, inputs = _model()
exe = byoc.build(module, targets=["dnnl"])
print("RUN-BEGIN", flush=True)
for _ in range(3):
    exe.run(*inputs)
print("RUN-END", flush=True)
"""


def _mds(line: str) -> dict[str, str]:
    """{'src': 'aBcd16b', 'wei': ..., 'dst': ...} of a oneDNN verbose line."""
    return dict(re.findall(r"\b(src|wei|dst)_f32:\w*:blocked:(\w+)", line))


def _reorder(line: str) -> str:
    """'abcd Acdb16a:32x8x3x3': a reorder's source and destination formats and its dims."""
    mds = _mds(line)
    dims = line.split(",,,", 1)[1].split(",", 1)[0]
    return f"{mds['src']} {mds['dst']}:{dims}"


def test_weights_are_reordered_once_at_init_and_layouts_are_chosen(tmp_path: Path) -> None:
    script = tmp_path / "plan.py"
    script.write_text(_SCRIPT.format(targets=str(TESTS / "targets"), tests=str(TESTS)))
    env = dict(os.environ, ONEDNN_VERBOSE="2", BYOC_DNNL_VERBOSE="1", BYOC_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    init, rest = out.split("RUN-BEGIN", 1)
    run = rest.split("RUN-END", 1)[0]
    (plan,) = re.findall(r"dnnl plan \w+: (.*)", done.stderr)
    steps = plan.split("; ")
    run_lines = [ln for ln in run.splitlines() if ln.startswith("onednn_verbose")]
    # the plan is built at init: nothing is created while running
    assert not [ln for ln in run_lines if ",create:" in ln], run
    # a run executes exactly the plan's primitive steps, in order (a NaN guard is a pass in
    # C, which on finite data runs no primitive)
    primitives = [s for s in steps if not s.startswith("guard:")]
    assert len(run_lines) == 3 * len(primitives), (plan, run)
    # weights: reordered (executed) at init into the layouts the primitives asked for,
    # never during a run (a reorder is told by its source, destination and dims)
    init_reorders = {_reorder(ln) for ln in init.splitlines() if ",exec,cpu,reorder," in ln}
    weight_formats = {f.split(":")[0].split(" ")[1] for f in init_reorders}
    convs = [ln for ln in run_lines if ",convolution," in ln or ",matmul," in ln]
    assert len(init_reorders) >= 3, init  # the three convolutions' and the dense's weights
    assert {_mds(ln)["wei"] for ln in convs} <= weight_formats, (convs, weight_formats)
    for ln in run_lines:
        if ",reorder," in ln:
            assert _reorder(ln) not in init_reorders, ln
    # format_tag::any: the convolutions write a layout oneDNN chose (blocked or channels-last)
    assert any(_mds(ln)["dst"] != "abcd" for ln in convs if ",convolution," in ln), run


_EDGE_SCRIPT = """
import sys
sys.path[:0] = [{targets!r}, {tests!r}]
import numpy as np
import byoc
from byoc.dialects import nn
from test_dnnl import Graph, bias, conv
g = Graph(seed=3)
x = g.arg(g.rand(1, 200, 2, 96))
r = g.arg(g.rand(1, 32, 2, 96))
y = g.op(nn.AddOp, bias(g, conv(g, x, 200, 32, (1, 1)), 32), r)
g.results.append(bias(g, conv(g, y, 32, 200, (1, 1)), 200))
exe = byoc.build(g.module(), targets=["dnnl"])
exe.run(*g.inputs)
"""


def test_a_residual_convolution_on_partition_inputs_gets_a_fast_kernel(tmp_path: Path) -> None:
    """Source and residual both partition inputs (plain NCHW), as when another target runs
    the ops around the partition: the residual is brought to the layout oneDNN picks for
    the convolution, so it never lands on oneDNN's reference convolution (mixed layouts;
    about 50x slower on the priority order `ccompiler,dnnl` of a MobileNetV3)."""
    script = tmp_path / "edge.py"
    script.write_text(_EDGE_SCRIPT.format(targets=str(TESTS / "targets"), tests=str(TESTS)))
    env = dict(os.environ, BYOC_DNNL_VERBOSE="1", BYOC_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    (plan,) = re.findall(r"dnnl plan \w+: (.*)", done.stderr)
    convs = [s for s in plan.split("; ") if s.startswith("conv2d")]
    assert len(convs) == 2, plan
    assert not [s for s in convs if ":ref" in s], plan


_MASKED_ATTENTION = """
func.func @main(%q: tensor<1x6x64x32xf32>, %k: tensor<1x6x32x64xf32>,
                %m: tensor<1x6x1x64xf32>) -> tensor<1x6x64x64xf32> {
  %w = nn.constant dense<0.5> : tensor<1x6x1x64xf32>
  %0 = nn.matmul %q, %k : (tensor<1x6x64x32xf32>, tensor<1x6x32x64xf32>) -> tensor<1x6x64x64xf32>
  %1 = nn.add %0, %m : (tensor<1x6x64x64xf32>, tensor<1x6x1x64xf32>) -> tensor<1x6x64x64xf32>
  %2 = nn.softmax %1 {axis = -1 : i64} : tensor<1x6x64x64xf32>
  %3 = nn.add %2, %w : (tensor<1x6x64x64xf32>, tensor<1x6x1x64xf32>) -> tensor<1x6x64x64xf32>
  func.return %3 : tensor<1x6x64x64xf32>
}
"""


def test_a_masked_attention_gets_no_reference_kernel(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A transformer's scores plus a padding mask that broadcasts over the rows (khmer_seg):
    oneDNN 3.2 takes that add as a matmul post-op, or as a binary of rank 4, only with its
    reference kernels (26 ms and 1.4 ms where the jit ones take tens of microseconds). The
    matmul runs without the post-op and each add as the (N, 1, W) broadcast of a rank-3
    view; the answer is the reference's."""
    import numpy as np
    from support.bounds import assert_within, graph_bounds

    import byoc

    monkeypatch.setenv("BYOC_DNNL_VERBOSE", "1")
    monkeypatch.setenv("BYOC_NUM_THREADS", "1")
    capfd.readouterr()
    exe = byoc.build(byoc.parse_module(_MASKED_ATTENTION), targets=["dnnl"])
    plan = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("dnnl plan ")][-1]
    assert {p.target for p in exe.partitions} == {"dnnl"}
    steps = plan.split(": ", 1)[1].split("; ")
    assert [s for s in steps if s.startswith("matmul")] and not [s for s in steps if ":ref" in s]
    assert len([s for s in steps if s.startswith("add:")]) == 2, plan
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((1, 6, 64, 32), (1, 6, 32, 64))]
    inputs.append(np.where(rng.random((1, 6, 1, 64)) < 0.3, -1e4, 0.0).astype(np.float32))
    expected = byoc.build(byoc.parse_module(_MASKED_ATTENTION)).run(*inputs)
    (bound,) = graph_bounds(byoc.parse_module(_MASKED_ATTENTION), inputs, expected)
    assert_within(exe.run(*inputs)[0], expected[0], bound)
