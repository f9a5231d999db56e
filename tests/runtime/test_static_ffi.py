"""static_ffi: declarations parsed once per machine, kept as cffi's out-of-line ABI module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from byoc.runtime import static_ffi as sf

CDEF = "typedef struct { int a; double b; } pair_t;\nint abs(int);\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BYOC_KERNEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(sf, "_FFIS", {})
    return tmp_path


def test_the_declarations_are_written_once_and_read_back(cache: Path) -> None:
    ffi = sf.static_ffi(CDEF)
    (written,) = cache.glob("byoc_ffi_*.py")
    assert sf.static_ffi(CDEF) is ffi  # one per text in the process
    assert ffi.sizeof("pair_t") == 16
    p = ffi.new("pair_t*", {"a": 3, "b": 0.5})
    assert (p.a, p.b) == (3, 0.5)
    libc = ffi.dlopen(None)
    assert libc.abs(-4) == 4
    # another process reads the file and never imports the C parser
    code = (
        "import sys; from byoc.runtime.static_ffi import static_ffi; "
        f"ffi = static_ffi({CDEF!r}); print(ffi.sizeof('pair_t'), 'pycparser' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["16", "False"]
    assert list(cache.glob("byoc_ffi_*.py")) == [written]


def test_a_damaged_cache_file_is_parsed_again_and_rewritten(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sf.static_ffi(CDEF)
    (written,) = cache.glob("byoc_ffi_*.py")
    written.write_text("raise RuntimeError('truncated')\n")
    monkeypatch.setattr(sf, "_FFIS", {})
    ffi = sf.static_ffi(CDEF)
    assert ffi.sizeof("pair_t") == 16
    assert "truncated" not in written.read_text()


def test_an_unwritable_cache_parses_the_declarations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("BYOC_KERNEL_CACHE_DIR", str(blocked / "cache"))  # under a file
    monkeypatch.setattr(sf, "_FFIS", {})
    assert sf.static_ffi(CDEF).sizeof("pair_t") == 16
