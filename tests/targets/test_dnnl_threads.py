"""How many threads each oneDNN primitive gets (dnnl_run.c, docs/threads.md "oneDNN's
threads"): with a setting above 1, a primitive whose work is below two grains is created
and run with one thread, so it opens no OpenMP region; a bigger one gets the setting.

- the plan (`BYOC_DNNL_VERBOSE`) says each primitive's count: `...@1`, `...@2` (a reorder
  by its own size, not its consumer's);
- a model of small primitives run at 2 threads starts no OpenMP worker (counted in
  /proc/self/task, in a fresh process: libgomp's workers live as long as the process),
  and gives the bits of its 1-thread run; a big convolution starts one worker;
- the answer stays the reference's at either count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_within, graph_bounds

import byoc
from byoc.targets.dnnl import missing_reason

REASON = missing_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"oneDNN extra absent: {REASON}")


def _conv_relu(c: int, hw: int) -> str:
    """conv2d 3x3 (c -> c channels on a hw x hw map, padded) + bias + relu + max pool."""
    x = f"tensor<1x{c}x{hw}x{hw}xf32>"
    p = f"tensor<1x{c}x{hw // 2}x{hw // 2}xf32>"
    w = f"tensor<{c}x{c}x3x3xf32>"
    return textwrap.dedent(
        f"""
        func.func @main(%x: {x}) -> {p} {{
          %w = nn.constant dense<0.01> : {w}
          %b = nn.constant dense<0.5> : tensor<{c}xf32>
          %0 = nn.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({x}, {w}) -> {x}
          %1 = nn.bias_add %0, %b : ({x}, tensor<{c}xf32>) -> {x}
          %2 = nn.relu %1 : {x}
          %3 = nn.max_pool2d %2 {{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}} : ({x}) -> {p}
          func.return %3 : {p}
        }}"""
    )


SMALL = _conv_relu(8, 8)
"""37 K multiply-adds, a few hundred elements: every primitive below its grain."""
BIG = _conv_relu(32, 56)
"""29 M multiply-adds: the convolution gets both threads."""


def _plan(text: str, threads: int, monkeypatch: pytest.MonkeyPatch,
          capfd: pytest.CaptureFixture[str]) -> list[str]:  # fmt: skip
    monkeypatch.setenv("BYOC_DNNL_VERBOSE", "1")
    capfd.readouterr()
    byoc.build(byoc.parse_module(text), targets=["dnnl"], num_threads=threads)
    # the last plan: the one built for `threads` (a build may plan at the default count first)
    line = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("dnnl plan ")][-1]
    return line.split(": ", 1)[1].split("; ")


def test_the_plan_gives_small_primitives_one_thread(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    small = [s for s in _plan(SMALL, 2, monkeypatch, capfd) if not s.startswith("guard:")]
    assert small and all(s.endswith("@1") for s in small), small
    big = _plan(BIG, 2, monkeypatch, capfd)
    (conv,) = [s for s in big if s.startswith("conv2d")]
    assert conv.endswith("@2"), big
    # the conv's input reorder (200 K elements moved) has a count of its own
    reorders = [s for s in big if s.startswith("reorder:")]
    assert reorders and all(s.endswith("@1") for s in reorders), big
    # one thread: nothing to say per primitive
    assert not [s for s in _plan(BIG, 1, monkeypatch, capfd) if "@" in s]


@pytest.mark.parametrize("text", [SMALL, BIG], ids=["small", "big"])
def test_both_counts_give_the_reference_answer(text: str) -> None:
    module = byoc.parse_module(text)
    c, hw = (8, 8) if text is SMALL else (32, 56)
    x = np.random.default_rng(3).standard_normal((1, c, hw, hw)).astype(np.float32)
    (expected,) = byoc.build(byoc.parse_module(text)).run(x)
    (bound,) = graph_bounds(byoc.parse_module(text), [x], [expected])
    exe = byoc.build(module, targets=["dnnl"], num_threads=1)
    assert {p.target for p in exe.partitions} == {"dnnl"}
    (one,) = exe.run(x)
    exe.set_num_threads(2)
    (two,) = exe.run(x)
    assert_within(one, expected, bound)
    assert_within(two, expected, bound)
    if text is SMALL:  # every primitive made and run as at one thread: the same bits
        np.testing.assert_array_equal(two, one)


_COUNT_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import byoc
    sys.path[:0] = [{here!r}, {tests!r}]
    from test_dnnl_threads import BIG, SMALL

    def count():
        return len(os.listdir("/proc/self/task"))

    out = {{}}
    for name, text, c, hw in (("small", SMALL, 8, 8), ("big", BIG, 32, 56)):
        before = count()
        exe = byoc.build(byoc.parse_module(text), targets=["dnnl"], num_threads=2)
        x = np.ones((1, c, hw, hw), np.float32)
        for _ in range(5):
            exe.run(x)
        out[name] = count() - before
    print(json.dumps(out))
    """
)


def _fresh_json(script: str, unset: tuple[str, ...]) -> Any:
    """Run `script` in a fresh process with the variables `unset` left out of the
    environment; the JSON value on its last line of output."""
    env = {k: v for k, v in os.environ.items() if k not in unset}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _thread_counts(script: str) -> dict[str, int]:
    """`script`'s JSON, run without a thread setting in the environment."""
    return dict(_fresh_json(script, ("OMP_NUM_THREADS", "BYOC_NUM_THREADS")))


def test_small_primitives_start_no_openmp_worker() -> None:
    """In a fresh process: building the small model at 2 threads and five runs leave the
    thread count as it was (no libgomp worker was started); the big convolution then starts
    one (at init, where its weights are reordered, or at its first run)."""
    here = Path(__file__).resolve().parent
    counts = _thread_counts(_COUNT_SCRIPT.format(here=str(here), tests=str(here.parent)))
    assert counts == {"small": 0, "big": 1}, counts


_ORDER_SCRIPT = """
import json
from byoc.runtime import c_module
from byoc.targets.dnnl import onednn, quant
assert not c_module._OPENMP_RUNTIMES
out = {"reason": onednn.unavailable_reason(), "pinned": len(c_module._OPENMP_RUNTIMES)}
out["isa"] = quant.effective_isa() is not None
print(json.dumps(out))
"""


def test_openmp_is_pinned_before_onednn_loads() -> None:
    """libgomp reads its spin count once, when it is loaded: the availability check, the
    first thing to load libdnnl (and with it libgomp) in a process, loads gcc's OpenMP
    runtime through `pin_openmp_runtime` first, so byoc's spin count applies (with
    libgomp's own default, light_squeezenet on dnnl,ccompiler at 2 threads took 0.4-0.5 s
    a call at load 5-10, against 15 ms)."""
    assert _fresh_json(_ORDER_SCRIPT, ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")) == {
        "reason": None, "pinned": 1, "isa": True
    }  # fmt: skip


_INT8_SCRIPT = """
import json, os, sys
sys.path[:0] = [{here!r}, {tests!r}]
import numpy as np
import byoc
from test_dnnl_int8 import gemm_model

def count():
    return len(os.listdir("/proc/self/task"))

rng = np.random.default_rng(0)
out = {{}}
for name, c, hw in (("small", 8, 8), ("big", 64, 56)):
    w = rng.integers(-20, 20, (c, c, 3, 3))
    model = gemm_model(
        "conv", [1, c, hw, hw], w, None, xs=0.05, xz=np.asarray(0, np.uint8),
        ws=np.full(c, 0.01, np.float32), ys=0.1, yz=np.asarray(0, np.uint8),
        conv=dict(pads=[1, 1, 1, 1]),
    )
    path = os.path.join({tmp!r}, name + ".onnx")
    import onnx
    onnx.save(model, path)
    before = count()
    exe = byoc.build(byoc.import_onnx(path), targets=["dnnl", "ccompiler"], num_threads=2)
    assert any(p.target == "dnnl" for p in exe.partitions), exe.partitions
    x = rng.random((1, c, hw, hw)).astype(np.float32)
    for _ in range(5):
        exe.run(x)
    out[name] = count() - before
print(json.dumps(out))
"""


def test_small_int8_blocks_start_no_openmp_worker(tmp_path: Path) -> None:
    """The int8 blocks follow the same rule: a 37 K multiply-add quantized convolution at 2
    threads starts no thread; a 116 M multiply-add one starts libgomp's worker."""
    from byoc.targets.dnnl.quant import int8_unavailable_reason

    if int8_unavailable_reason() is not None:
        pytest.skip(f"no int8 blocks on dnnl here: {int8_unavailable_reason()}")
    here = Path(__file__).resolve().parent
    counts = _thread_counts(
        _INT8_SCRIPT.format(here=str(here), tests=str(here.parent), tmp=str(tmp_path))
    )
    assert counts["small"] == 0 and counts["big"] >= 1, counts
