"""The library cache is not trusted by file name (issue 14, item 3): a truncated or planted
library is rebuilt, not loaded; each load is a private instance; killed compiles leave nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from support.paths import ROOT

import byoc
from byoc.runtime import toolchain
from byoc.runtime.toolchain import compile_source, sweep_orphans

SEED = """
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = nn.add %a, %b : tensor<10x10xf32>
  %1 = nn.multiply %0, %b : tensor<10x10xf32>
  func.return %1 : tensor<10x10xf32>
}
"""

BIG = """
func.func @main(%x: tensor<1x2048xf32>, %w: tensor<1x2048xf32>) -> tensor<1x2048xf32> {
  %0 = nn.add %x, %w : tensor<1x2048xf32>
  func.return %0 : tensor<1x2048xf32>
}
"""

# build (or find in the cache) the seed model and check one answer; exit 0 when right, after
# printing the name of the model's library in the cache (the plan runner's is there too)
BUILD_AND_RUN = textwrap.dedent(
    f"""
    import sys
    import numpy as np
    import byoc
    exe = byoc.build(byoc.parse_module({SEED!r}), targets=["ccompiler"])
    (lib,) = exe.components.values()
    print(lib.library_path.name)
    a = np.full((10, 10), 3, np.float32)
    sys.exit(0 if (exe(a, a)[0] == 18).all() else 3)
    """
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "cache"
    monkeypatch.setenv("BYOC_CACHE_DIR", str(path))
    yield path


def _run(code: str, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter (a crash is an exit status, not a dead test run)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "BYOC_CACHE_DIR": str(cache), **env},
        timeout=300,
        check=False,
    )


def _libraries(cache: Path) -> list[Path]:
    return sorted(cache.glob("byoc_lib_*.so"))


def test_truncated_cached_library_is_rebuilt(cache: Path) -> None:
    """Truncating the cached .so made the next build of the same model die with SIGBUS."""
    first = _run(BUILD_AND_RUN, cache)
    assert first.returncode == 0, first.stderr
    library = cache / first.stdout.split()[-1]
    size = library.stat().st_size
    with open(library, "r+b") as f:
        f.truncate(size // 2)
    again = _run(BUILD_AND_RUN, cache)
    assert again.returncode == 0, (again.returncode, again.stderr)
    assert library.stat().st_size == size  # rebuilt in place


def test_truncated_cached_library_of_an_artifact_is_rewritten(cache: Path, tmp_path: Path) -> None:
    """load_module of a good artifact whose library in the cache was truncated: SIGBUS before."""
    artifact = tmp_path / "m.byoc"
    byoc.build(byoc.parse_module(SEED), targets=["ccompiler"]).export_library(str(artifact))
    for library in _libraries(cache):
        with open(library, "r+b") as f:
            f.truncate(100)
    code = (
        "import sys, numpy as np, byoc\n"
        f"exe = byoc.load_module({str(artifact)!r})\n"
        "a = np.full((10, 10), 3, np.float32)\n"
        "sys.exit(0 if (exe(a, a)[0] == 18).all() else 3)\n"
    )
    done = _run(code, cache)
    assert done.returncode == 0, (done.returncode, done.stderr)


def _planted_library(tmp_path: Path, status: int) -> bytes:
    """A shared object whose constructor ends the process with `status`."""
    src = tmp_path / "planted.c"
    src.write_text(
        "#include <unistd.h>\n"
        f"__attribute__((constructor)) static void planted(void) {{ _exit({status}); }}\n"
    )
    out = tmp_path / "planted.so"
    subprocess.run([toolchain.compiler(), "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out.read_bytes()


def test_library_planted_under_the_expected_name_does_not_run(cache: Path, tmp_path: Path) -> None:
    first = _run(BUILD_AND_RUN, cache)
    assert first.returncode == 0, first.stderr
    library = cache / first.stdout.split()[-1]
    library.write_bytes(_planted_library(tmp_path, 77))
    done = _run(BUILD_AND_RUN, cache)  # the build finds the mismatch and rebuilds
    assert done.returncode == 0, (done.returncode, done.stderr)
    artifact = tmp_path / "m.byoc"
    byoc.build(byoc.parse_module(SEED), targets=["ccompiler"]).export_library(str(artifact))
    library.write_bytes(_planted_library(tmp_path, 77))
    done = _run(f"import byoc; byoc.load_module({str(artifact)!r})", cache)
    assert done.returncode == 0, (done.returncode, done.stderr)


@pytest.mark.parametrize("what", ["fifo", "symlink-to-fifo", "symlink-to-the-library", "directory"])
def test_a_cache_entry_that_is_not_a_regular_file_is_replaced(
    cache: Path, tmp_path: Path, what: str
) -> None:
    """A FIFO, a symlink or an empty directory planted under a library's or an index's name
    in the cache: the build neither blocks on it nor follows it; it rebuilds and replaces
    the name with a regular file."""
    first = _run(BUILD_AND_RUN, cache)
    assert first.returncode == 0, first.stderr
    library = cache / first.stdout.split()[-1]
    (index,) = (i for i in cache.glob("byoc_*.lib") if i.read_text() == library.name)
    good = library.read_bytes()
    outside = tmp_path / "outside"
    outside.mkdir()
    for entry in (library, index):
        entry.unlink()
        if what == "fifo":
            os.mkfifo(entry)
        elif what == "symlink-to-fifo":
            os.mkfifo(outside / entry.name)
            entry.symlink_to(outside / entry.name)
        elif what == "symlink-to-the-library":
            (outside / entry.name).write_bytes(good if entry == library else library.name.encode())
            entry.symlink_to(outside / entry.name)
        else:
            entry.mkdir()
    done = _run(BUILD_AND_RUN, cache)
    assert done.returncode == 0, done.stderr
    for entry in (library, index):
        assert entry.is_file() and not entry.is_symlink(), entry
    assert library.read_bytes() == good


def test_models_sharing_a_library_keep_their_own_constants(cache: Path) -> None:
    """Two models with the same code and different large weights compile to one library;
    loaded from one file they shared its globals, and the first answered with the second's
    weights. Each load is a private instance."""
    x = np.zeros((1, 2048), np.float32)
    exes = [
        byoc.build(
            byoc.parse_module(BIG),
            targets=["ccompiler"],
            params={"w": np.full((1, 2048), value, np.float32)},
        )
        for value in (1.0, 2.0)
    ]
    libraries = {lib.library_path for exe in exes for lib in exe.components.values()}
    assert len(libraries) == 1
    np.testing.assert_array_equal(exes[0](x)[0], np.full((1, 2048), 1.0, np.float32))
    np.testing.assert_array_equal(exes[1](x)[0], np.full((1, 2048), 2.0, np.float32))


def test_load_leaves_no_private_copy(cache: Path) -> None:
    exe = byoc.build(byoc.parse_module(SEED), targets=["ccompiler"])
    assert exe(np.ones((10, 10), np.float32), np.ones((10, 10), np.float32))[0][0, 0] == 2
    assert sorted(p.name[:5] for p in cache.iterdir()) == ["byoc_", "byoc_", "byoc_"]


def test_failed_compile_leaves_no_temporary(cache: Path) -> None:
    with pytest.raises(toolchain.CompileError):
        compile_source("this is not C;", directory=cache)
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]


def test_killed_compile_leaves_an_orphan_the_next_compile_removes(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compile killed with SIGKILL cannot clean up after itself: its `.build_<pid>_*`
    is removed by the next compile once that process is gone (and ORPHAN_AGE has passed)."""
    cc = tmp_path / "killer-cc"
    cc.write_text('#!/bin/sh\n[ "$1" = --version ] && exec cc --version\nkill -KILL $PPID\nsleep 5\n')
    cc.chmod(0o755)
    code = (
        "from byoc.runtime.toolchain import compile_source\n"
        "compile_source('int byoc_x(void) { return 1; }')\n"
    )
    done = _run(code, cache, CC=str(cc))
    assert done.returncode == -signal.SIGKILL
    orphans = [p for p in cache.iterdir() if p.name.startswith(".build_")]
    assert len(orphans) == 1
    assert sweep_orphans(cache) == []  # too recent: it could be another machine's compile
    monkeypatch.setattr(toolchain, "ORPHAN_AGE", 0.0)
    compile_source("int byoc_y(void) { return 2; }", directory=cache)
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]


def test_temporaries_of_live_processes_are_kept(cache: Path) -> None:
    cache.mkdir()
    mine = cache / f".build_{os.getpid()}_abc.so"
    mine.write_bytes(b"")
    assert sweep_orphans(cache, age=0.0) == []
    assert mine.exists()


def test_byoc_cflags_adds_flags_to_the_build_and_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(toolchain.CFLAGS_ENV, raising=False)
    assert toolchain.extra_flags() == ()
    monkeypatch.setenv(toolchain.CFLAGS_ENV, "-DBYOC_STEAL=0  -DNAME='a b'")
    assert toolchain.extra_flags() == ("-DBYOC_STEAL=0", "-DNAME=a b")
    monkeypatch.setenv(toolchain.CFLAGS_ENV, "-DX='open")
    with pytest.raises(ValueError, match="BYOC_CFLAGS=.*expected compiler flags a shell can split"):
        toolchain.extra_flags()



def test_compiler_version_is_kept_per_executable_and_asked_again_when_it_changes(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version in the cache key is read from the kernel cache while the compiler's file is
    the same one; a replaced compiler (another size or time) is asked again, and each answer
    is the compiler's own."""
    monkeypatch.delenv(toolchain.KERNEL_CACHE_ENV, raising=False)
    cc = tmp_path / "bin" / "mycc"
    cc.parent.mkdir()
    calls = tmp_path / "calls"

    def install(version: str) -> None:
        cc.write_text(f"#!/bin/sh\necho x >> {calls}\necho '{version}'\n")
        cc.chmod(0o755)

    install("mycc 1.0")
    for _ in range(2):
        toolchain.compiler_version.cache_clear()  # a new process: only the disk record is left
        assert toolchain.compiler_version(str(cc)) == "mycc 1.0\n"
    assert calls.read_text().count("x") == 1
    record = toolchain._compiler_record(str(cc))  # pyright: ignore[reportPrivateUsage]
    assert record is not None and record.parent == cache and record.exists()
    install("mycc 2.0.1")  # an upgrade: another file
    os.utime(cc, ns=(1, 1))
    toolchain.compiler_version.cache_clear()
    assert toolchain.compiler_version(str(cc)) == "mycc 2.0.1\n"
    assert calls.read_text().count("x") == 2
    toolchain.compiler_version.cache_clear()


def test_compiler_version_of_a_compiler_not_on_the_path_is_an_error(cache: Path) -> None:
    toolchain.compiler_version.cache_clear()
    with pytest.raises(toolchain.CompileError, match="cannot run the C compiler"):
        toolchain.compiler_version(str(cache / "no-such-cc"))
    assert not cache.exists() or not list(cache.glob("byoc_cc_*"))
