"""CModule unloading: the per-thread workspaces are freed and no destructor outlives the library.

The crash reproducers run in a subprocess: a SIGSEGV would take pytest down with it,
and the fault (a thread-exit destructor in an unloaded library) happens only as the
threads of a pool exit, which the child's exit code reports.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from support.paths import EXAMPLES

import byoc

_CNN = EXAMPLES / "small_cnn.mlir"


def _run_child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_model_freed_while_its_pool_threads_live() -> None:
    """Issue 14 item 1: the pool thread exits after the model's library was unloaded."""
    child = _run_child(
        """
        import gc, sys
        from concurrent.futures import ThreadPoolExecutor
        import numpy as np, byoc
        m = byoc.parse_module(open(sys.argv[1]).read())
        x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
        pool = ThreadPoolExecutor(2)
        exe = byoc.build(m, targets=["ccompiler"])
        assert [p.target for p in exe.partitions] == ["ccompiler"]
        pool.submit(exe.run, x).result()
        del exe
        gc.collect()
        pool.shutdown()
        print("done")
        """,
        str(_CNN),
    )
    assert (child.returncode, child.stdout.strip()) == (0, "done"), child.stderr


def test_loaded_module_freed_while_its_pool_threads_live(tmp_path: Path) -> None:
    """Issue 14 item 1, through `load_module` of an exported artifact."""
    path = tmp_path / "cnn.byoc"
    byoc.build(byoc.parse_module(_CNN.read_text()), targets=["ccompiler"]).export_library(str(path))
    child = _run_child(
        """
        import gc, sys
        from concurrent.futures import ThreadPoolExecutor
        import numpy as np, byoc
        x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
        pool = ThreadPoolExecutor(2)
        for _ in range(3):
            exe = byoc.load_module(sys.argv[1])
            list(pool.map(lambda _: exe.run(x), range(4)))
            del exe
            gc.collect()
        pool.shutdown()
        print("done")
        """,
        str(path),
    )
    assert (child.returncode, child.stdout.strip()) == (0, "done"), child.stderr


def test_freeing_one_of_two_loads_of_a_library_keeps_the_other() -> None:
    """Two builds of one model share the cached library (one dlopen handle, one set of
    workspaces): freeing one must not free the workspace the other's threads use."""
    module = byoc.parse_module(_CNN.read_text())
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    a = byoc.build(module, targets=["ccompiler"])
    b = byoc.build(module, targets=["ccompiler"])
    with ThreadPoolExecutor(1) as pool:
        want = pool.submit(a.run, x).result()[0].copy()
        pool.submit(b.run, x).result()
        del b
        gc.collect()
        got = pool.submit(a.run, x).result()[0]
    np.testing.assert_array_equal(got, want)


_LEAK_CHILD = """
    import gc, sys
    import numpy as np, byoc
    n = 1024
    ty = f"tensor<1x1x{n}x{n}xf32>"
    m = byoc.parse_module(f'''
    func.func @main(%x: {ty}) -> {ty} {{
      %0 = nn.relu %x : {ty}
      %1 = nn.softmax %0 : {ty}
      %2 = nn.relu %1 : {ty}
      func.return %2 : {ty}
    }}''')
    x = np.ones((1, 1, n, n), np.float32)

    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

    def cycle():
        exe = byoc.build(m, targets=["ccompiler"])
        exe.run(x)
        del exe
        gc.collect()

    exe = byoc.build(m, targets=["ccompiler"])
    assert "byoc_workspace(" in exe.components["ccompiler"].source
    del exe
    for _ in range(3):  # the compile, the caches, the allocator's first arenas
        cycle()
    before = rss()
    for _ in range(int(sys.argv[1])):
        cycle()
    print(rss() - before)
"""


def test_unloading_frees_the_workspace() -> None:
    """Issue 14 item 2: build, run and free a model whose workspace is a few MiB.

    Before the fix every cycle leaked the workspace: 8 MiB here (two 4 MiB
    intermediates), 160 MiB over 20 cycles. After it, the growth is the allocator's
    noise; the bound is two workspaces (16 MiB), so one leaked workspace every ten
    cycles would still fail, while a single late arena or page-cache blip does not.
    """
    cycles = 20
    child = _run_child(_LEAK_CHILD, str(cycles))
    assert child.returncode == 0, child.stderr
    growth = int(child.stdout.strip())
    assert growth < 16 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB over {cycles} cycles"
