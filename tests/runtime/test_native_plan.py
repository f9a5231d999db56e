"""The compiled host plan (`byoc.runtime.native_plan`) against the Python host executor.

Both run the same kernels, so every output must agree bit for bit: on random DAGs
split across a C library, a graph runtime and host kernels, at 1 and 2 threads, from
several Python threads at once, and after an export loaded in a fresh process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.dag_strategies import DagSpec, build_module, dags, random_inputs

import byoc
from byoc.runtime.executable import Executable, InputError
from byoc.runtime.native_plan import SLOT_ARENA, SLOT_PYTHON, plan_arena

Array = np.ndarray[Any, Any]


def python_twin(exe: Executable) -> Executable:
    """The same plan, constants and components, run by the Python host executor."""
    return Executable(
        exe.plan,
        exe.constants,
        exe.components,
        exe.partitions,
        num_threads=exe.num_threads,
        native=False,
    )


def assert_same(got: list[Array], want: list[Array]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()


MIXED = """
func.func @main(%a: tensor<4x5xf32>, %b: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  %0 = nn.add %a, %b : tensor<4x5xf32>
  %1 = nn.tanh %0 : tensor<4x5xf32>
  %2 = nn.sigmoid %1 : tensor<4x5xf32>
  %3 = nn.multiply %2, %a : tensor<4x5xf32>
  %4 = nn.relu %3 : tensor<4x5xf32>
  %5 = nn.exp %4 : tensor<4x5xf32>
  %6 = nn.maximum %5, %0 : tensor<4x5xf32>
  func.return %6, %2 : tensor<4x5xf32>, tensor<4x5xf32>
}
"""
"""graphref takes add/multiply/relu/maximum; tanh, sigmoid and exp stay on the host."""


@pytest.fixture(scope="module")
def mixed() -> Executable:
    return byoc.build(byoc.parse_module(MIXED), targets=["graphref"], num_threads=1)


def _inputs(seed: int, shape: tuple[int, ...] = (4, 5)) -> list[Array]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]


def test_a_mixed_plan_runs_natively_with_host_steps(mixed: Executable) -> None:
    native = mixed.native_plan
    assert native is not None, mixed.native_reason
    kinds = [s.kind for s in mixed.plan.steps]
    assert "call" in kinds and "kernel" in kinds
    assert native.host_steps == kinds.count("kernel")
    inputs = _inputs(0)
    assert_same(mixed.run(*inputs), python_twin(mixed).run(*inputs))


def test_values_only_host_kernels_read_take_no_arena_space(mixed: Executable) -> None:
    native = mixed.native_plan
    assert native is not None
    kinds = native.layout.kinds
    # tanh's result is read by sigmoid only (a host kernel): it stays a Python object
    tanh = next(s for s in mixed.plan.steps if s.name == "nn.tanh")
    assert kinds[tanh.outputs[0]] == SLOT_PYTHON
    # add's result is read by a graph partition later: it needs bytes of the arena
    add_call = next(s for s in mixed.plan.steps if s.kind == "call")
    assert kinds[add_call.outputs[0]] == SLOT_ARENA


@pytest.mark.parametrize("threads", [1, 2])
def test_two_threads_agree_with_one(mixed: Executable, threads: int) -> None:
    twin = python_twin(mixed)
    mixed.set_num_threads(threads)
    twin.set_num_threads(threads)
    try:
        for seed in range(3):
            inputs = _inputs(seed)
            assert_same(mixed.run(*inputs), twin.run(*inputs))
    finally:
        mixed.set_num_threads(1)


@pytest.mark.parametrize("threads", [1, 2])
def test_concurrent_runs_each_get_their_own_arena(mixed: Executable, threads: int) -> None:
    twin = python_twin(mixed)
    mixed.set_num_threads(threads)
    cases = [_inputs(seed) for seed in range(8)]
    expected = [twin.run(*c) for c in cases]
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(k: int) -> None:
        try:
            barrier.wait()
            for i in range(60):
                c = (k + i) % len(cases)
                assert_same(mixed.run(*cases[c]), expected[c])
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    try:
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    finally:
        mixed.set_num_threads(1)
    assert not errors, errors[0]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.asmatrix
def test_inputs_the_fast_path_does_not_take(mixed: Executable) -> None:
    """Named inputs, ndarray subclasses, misaligned and non-contiguous arrays go through
    the checks of the Python side, then run natively."""
    twin = python_twin(mixed)
    a, b = _inputs(1)
    want = twin.run(a, b)
    assert_same(mixed.run(a=a, b=b), want)
    assert_same(mixed.run(np.asmatrix(a), b), want)
    raw = np.zeros(a.nbytes + 1, np.uint8)
    misaligned = raw[1:].view(np.float32).reshape(a.shape)
    misaligned[...] = a
    assert not misaligned.flags.aligned
    assert_same(mixed.run(misaligned, b), want)
    with pytest.raises(InputError, match="not C-contiguous"):
        mixed.run(np.asfortranarray(a), b)
    with pytest.raises(InputError, match="dtype"):
        mixed.run(a.astype(np.float64), b)


def test_outputs_are_fresh_arrays(mixed: Executable) -> None:
    a, b = _inputs(2)
    first = mixed.run(a, b)
    second = mixed.run(a, b)
    for x, y in zip(first, second, strict=True):
        assert x.flags.owndata and x.flags.writeable and x.flags.c_contiguous
        assert not np.shares_memory(x, y)
    assert_same(first, second)


PASS_THROUGH = """
func.func @main(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %c = nn.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 1.0, 2.0, 3.0]]> : tensor<3x4xf32>
  %0 = nn.add %a, %b : tensor<3x4xf32>
  %1 = nn.tanh %0 : tensor<3x4xf32>
  func.return %1, %a, %c, %1, %0 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}
"""


@pytest.mark.parametrize("targets", [["ccompiler"], ["graphref"]])
def test_inputs_constants_and_repeated_values_as_outputs(targets: list[str]) -> None:
    exe = byoc.build(byoc.parse_module(PASS_THROUGH), targets=targets, num_threads=1)
    assert exe.native_plan is not None, exe.native_reason
    a, b = (np.arange(12, dtype=np.float32).reshape(3, 4) * k for k in (0.1, -0.2))
    got = exe.run(a, b)
    assert_same(got, python_twin(exe).run(a, b))
    assert not np.shares_memory(got[1], a)
    assert not np.shares_memory(got[0], got[3])
    got[2][0, 0] = 99.0  # the constant stays as it was for the next run
    assert exe.run(a, b)[2][0, 0] == 1.0


def test_a_failing_host_step_raises_its_own_error(mixed: Executable) -> None:
    exe = byoc.build(byoc.parse_module(MIXED), targets=["graphref"], num_threads=1)
    k = next(i for i, s in enumerate(exe.plan.steps) if s.kind == "kernel")

    def broken(slots: list[Any]) -> None:
        raise ZeroDivisionError("from a host kernel")

    saved = exe._bound.runners[k]
    exe._bound.runners[k] = broken
    with pytest.raises(ZeroDivisionError, match="from a host kernel"):
        exe.run(*_inputs(0))
    exe._bound.runners[k] = saved
    assert_same(exe.run(*_inputs(0)), python_twin(exe).run(*_inputs(0)))


def test_host_only_and_dynamic_plans_stay_in_python() -> None:
    host = byoc.build(byoc.parse_module(MIXED), num_threads=1)
    assert host.native_plan is None and "C entry" in host.native_reason
    dynamic = byoc.parse_module(
        """
func.func @main(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = nn.relu %a : tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}
"""
    )
    exe = byoc.build(dynamic, num_threads=1)
    assert exe.native_plan is None


def test_an_unusable_shipped_runner_is_not_loaded() -> None:
    from byoc.runtime.native_plan import _open, runner_library

    assert _open(b"not a library") is None
    runner = _open(runner_library().library)  # the real one is
    assert runner is not None
    runner.ffi.dlclose(runner.lib)


def test_the_runner_is_built_once_in_the_kernel_cache(tmp_path: Path) -> None:
    """The runner is model-independent: built into the kernel cache, then found there by a
    process with another (empty) library cache, without running the compiler."""
    build = "from byoc.runtime.native_plan import runner_library; runner_library()"
    no_compiler = (
        "import byoc.runtime.toolchain as t\n"
        "def refuse(command, src): raise AssertionError('compiled ' + str(src))\n"
        "t._run_compiler = refuse\n"
    )
    kernels = tmp_path / "kernels"
    for n, code in enumerate([build, no_compiler + build]):
        env = {**os.environ, "BYOC_CACHE_DIR": str(tmp_path / f"cache{n}"),
               "BYOC_KERNEL_CACHE_DIR": str(kernels)}  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
        )
        assert done.returncode == 0, done.stderr
        assert not list((tmp_path / f"cache{n}").glob("*.so"))
    assert len(list(kernels.glob("byoc_lib_*.so"))) == 1


def test_exported_plan_runs_natively_in_a_fresh_process(mixed: Executable, tmp_path: Path) -> None:
    path = tmp_path / "mixed.byoc"
    mixed.export_library(str(path))
    inputs = _inputs(5)
    np.save(tmp_path / "a.npy", inputs[0])
    np.save(tmp_path / "b.npy", inputs[1])
    code = f"""
import numpy as np, byoc
exe = byoc.load_module({str(path)!r})
assert exe.native_plan is not None, exe.native_reason
outs = exe.run(np.load({str(tmp_path / "a.npy")!r}), np.load({str(tmp_path / "b.npy")!r}))
for i, o in enumerate(outs):
    np.save({str(tmp_path)!r} + f"/out{{i}}.npy", o)
"""
    # a fresh cache and no compiler: the artifact carries the runner as well as the libraries
    env = {**os.environ, "BYOC_CACHE_DIR": str(tmp_path / "fresh_cache"), "CC": "false"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )
    assert done.returncode == 0, done.stderr
    got = [np.load(tmp_path / f"out{i}.npy") for i in range(len(mixed.plan.output_slots))]
    assert_same(got, python_twin(mixed).run(*inputs))


SANITIZED_RUN = """
import threading
import numpy as np, byoc
text = open({path!r}).read()
for targets in (["graphref"], ["graphref", "ccompiler"]):
    exe = byoc.build(byoc.parse_module(text), targets=targets, num_threads=1)
    assert exe.native_plan is not None, exe.native_reason
    rng = np.random.default_rng(0)
    cases = [[rng.standard_normal((4, 5)).astype(np.float32) for _ in range(2)] for _ in range(4)]
    want = [exe.run(*c) for c in cases]
    def work():
        for i in range(40):
            got = exe.run(*cases[i % 4])
            assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want[i % 4]))
    workers = [threading.Thread(target=work) for _ in range(3)]
    for t in workers: t.start()
    for t in workers: t.join()
    del exe
print("clean")
"""


def test_the_runner_is_clean_under_sanitizers(tmp_path: Path) -> None:
    """The runner, a C library and a graph runtime built with ASan and UBSan, run from
    several threads in a process that preloads their runtimes: any report aborts it."""
    from support.fuzz.fuzz_harness import sanitizer_env

    env = sanitizer_env(str(tmp_path / "cache"))
    if env is None:
        pytest.skip("the C compiler has no ASan/UBSan runtime (libasan.so, libubsan.so)")
    model = tmp_path / "mixed.mlir"
    model.write_text(MIXED)
    done = subprocess.run(
        [sys.executable, "-c", SANITIZED_RUN.format(path=str(model))],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0 and "clean" in done.stdout, done.stderr[-4000:]


# ---------------------------------------------------------------------------
# The arena
# ---------------------------------------------------------------------------


@given(
    st.lists(
        st.tuples(st.integers(0, 5000), st.integers(0, 30), st.integers(0, 6)),
        min_size=1,
        max_size=40,
    )
)
def test_buffers_alive_at_once_never_share_bytes(buffers: list[tuple[int, int, int]]) -> None:
    sizes = [b[0] for b in buffers]
    lifetimes = [(b[1], b[1] + b[2]) for b in buffers]
    offsets, total = plan_arena(sizes, lifetimes)
    for i, (o, s) in enumerate(zip(offsets, sizes, strict=True)):
        assert o % 64 == 0 and o + s <= total
        for j in range(i):
            (f1, l1), (f2, l2) = lifetimes[i], lifetimes[j]
            if f1 <= l2 and f2 <= l1 and s and sizes[j]:
                assert o + s <= offsets[j] or offsets[j] + sizes[j] <= o


def test_a_chain_reuses_the_arena() -> None:
    sizes = [4096] * 10
    lifetimes = [(k, k + 1) for k in range(10)]  # each value read by the next step only
    _, total = plan_arena(sizes, lifetimes)
    assert total == 2 * 4096


# ---------------------------------------------------------------------------
# Random DAGs: the compiled plan against the Python executor
# ---------------------------------------------------------------------------


def _differential(spec: DagSpec, targets: list[str]) -> None:
    module = build_module(spec)
    exe = byoc.build(module, targets=targets, num_threads=1)
    if any(p.target != "examplejson" for p in exe.partitions):  # a partition with a C entry
        assert exe.native_plan is not None, exe.native_reason
    twin = python_twin(exe)
    for seed in range(2):
        inputs = random_inputs(spec, seed)
        assert_same(exe.run(*inputs), twin.run(*inputs))
    exe.set_num_threads(2)
    twin.set_num_threads(2)
    inputs = random_inputs(spec, 7)
    assert_same(exe.run(*inputs), twin.run(*inputs))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(min_ops=3, max_ops=30, shapes=((2, 3), (4,), (3, 1, 2))))
def test_random_dags_graph_runtime_and_host(spec: DagSpec) -> None:
    """graphref takes the binary ops and relu; every other op is a host kernel between."""
    _differential(spec, ["graphref"])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(min_ops=3, max_ops=20, shapes=((2, 3), (5,))))
def test_random_dags_graph_runtime_and_c(spec: DagSpec) -> None:
    """Every op in a partition, alternating between a graph runtime and a C library."""
    _differential(spec, ["graphref", "ccompiler"])


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(min_ops=3, max_ops=12, shapes=((2, 3),)))
def test_random_dags_examplejson_and_c(spec: DagSpec) -> None:
    """ExampleJSON partitions (no C entry: called back into Python) between C partitions."""
    _differential(spec, ["examplejson", "ccompiler"])
