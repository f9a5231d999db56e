"""Build/run/free loops, thread pools and unloads, each in a fresh process: the exit code must
be 0 and the resident set must stay bounded (issue 14 items 1 and 2 today)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from support.fuzz.fuzz_harness import REPO, env_count, worker_env

PRELUDE = textwrap.dedent(
    """
    import gc, sys
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np
    import byoc

    def rss_mib():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    SMALL_CNN = open("examples/small_cnn.mlir").read()
    # a model whose C workspace is 4 MiB: the pool's input is an intermediate of the partition
    BIG_WORKSPACE = '''
    func.func @main(%x: tensor<1x4x512x512xf32>) -> tensor<1x4x256x256xf32> {
      %0 = nn.relu %x : tensor<1x4x512x512xf32>
      %1 = nn.avg_pool2d %0 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x512x512xf32>) -> tensor<1x4x256x256xf32>
      func.return %1 : tensor<1x4x256x256xf32>
    }
    '''

    def inputs(exe, seed=0):
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(s.shape).astype(s.dtype) for s in exe.plan.input_specs]
    """
)


def run_script(body: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """Run PRELUDE + body in a fresh interpreter from the repository root."""
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=worker_env(),
    )


def check(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (
        f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


LOOP = """
targets = {targets!r}
source = {source}
n = {n}
module = byoc.parse_module(source)
rss = []
for i in range(n):
    exe = byoc.build(module, targets=targets)
    xs = inputs(exe, i)
    {call}
    del exe
    gc.collect()
    rss.append(rss_mib())
warm = rss[min(4, n - 1)]
growth = rss[-1] - warm
print(f"cycles={{n}} rss_warm={{warm:.1f}} rss_end={{rss[-1]:.1f}} growth={{growth:.1f}} MiB")
assert growth < {bound}, f"RSS grew by {{growth:.1f}} MiB over {{n - 5}} cycles"
"""


def loop_script(
    targets: list[str] | None, source: str, n: int, bound: float, threads: bool = False
) -> str:
    call = (
        "with ThreadPoolExecutor(4) as pool: [f.result() for f in [pool.submit(exe.run, *xs) for _ in range(8)]]"
        if threads
        else "exe.run(*xs)"
    )
    return LOOP.format(targets=targets, source=source, n=n, bound=bound, call=call)


TARGETS: list[list[str] | None] = [None, ["examplejson"], ["ccompiler"], ["cblas", "ccompiler"]]


def test_build_run_free_loop_short() -> None:
    n = env_count("loop_short", 6)
    body = "".join(
        loop_script(t, "SMALL_CNN", n, bound=32.0, threads=t != ["ccompiler"]) for t in TARGETS
    )
    print(check(run_script(body)))


def test_unloading_a_model_frees_its_workspace() -> None:
    # 4 MiB of workspace a cycle: 20 cycles leak 80 MiB today
    print(check(run_script(loop_script(["ccompiler"], "BIG_WORKSPACE", 25, bound=40.0))))


def test_model_freed_while_its_thread_pool_is_alive() -> None:
    check(
        run_script(
            """
            pool = ThreadPoolExecutor(2)
            exe = byoc.build(byoc.parse_module(SMALL_CNN), targets=["ccompiler"])
            pool.submit(exe.run, *inputs(exe)).result()
            del exe
            gc.collect()
            pool.shutdown()
            """
        )
    )


def test_loaded_module_freed_while_its_thread_pool_is_alive(tmp_path: object) -> None:
    check(
        run_script(
            f"""
            exe = byoc.build(byoc.parse_module(SMALL_CNN), targets=["ccompiler"])
            exe.export_library({str(tmp_path) + "/m.byoc"!r})
            del exe
            pool = ThreadPoolExecutor(2)
            exe = byoc.load_module({str(tmp_path) + "/m.byoc"!r})
            pool.submit(exe.run, *inputs(exe)).result()
            del exe
            gc.collect()
            pool.shutdown()
            """
        )
    )


def test_host_and_examplejson_models_freed_while_their_thread_pool_is_alive() -> None:
    check(
        run_script(
            """
            for targets in (None, ["examplejson"]):
                pool = ThreadPoolExecutor(2)
                exe = byoc.build(byoc.parse_module(SMALL_CNN), targets=targets)
                xs = inputs(exe)
                want = exe.run(*xs)
                got = [pool.submit(exe.run, *xs).result() for _ in range(4)]
                assert all(np.array_equal(g[0], want[0]) for g in got)
                del exe
                gc.collect()
                pool.shutdown()
            print("ok")
            """
        )
    )


@pytest.mark.slow
@pytest.mark.parametrize("targets", TARGETS)
def test_build_run_free_loop_long(targets: list[str] | None) -> None:
    n = env_count("loop_long", 300)
    print(
        check(
            run_script(
                loop_script(targets, "SMALL_CNN", n, bound=64.0, threads=targets != ["ccompiler"]),
                timeout=3600,
            )
        )
    )
