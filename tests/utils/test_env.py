"""Every `BYOC_*` variable is parsed in byoc/utils/env.py: a bad value is an `EnvError` naming
the variable and what it accepts, wherever it is read; no other module reads one."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.paths import PACKAGE

import byoc
from byoc.utils import env
from byoc.utils.env import VARIABLES, EnvError

BAD = {
    "BYOC_NUM_THREADS": ["99999999999999999999", "0", "-1", "2.5", "abc", "1e3"],
    "BYOC_SPECIALIZE_CACHE": ["abc", "2.5", "0", "-3", "99999999999999999999"],
    "BYOC_CPU_DISPATCH": ["avx9", "1"],
    "BYOC_SANITIZE": ["thread", "address,memory"],
    "BYOC_PROFILE_KERNELS": ["yes", "2"],
    "BYOC_CFLAGS": ['-DX="unclosed'],
    "BYOC_CBLAS_THREADS": ["0", "many", "99999999999999999999"],
    "BYOC_DNNL_VERBOSE": ["verbose", "2"],
    "BYOC_TIERED": ["on", "2"],
}
GOOD = {
    "BYOC_NUM_THREADS": (" 3 ", 3),
    "BYOC_SPECIALIZE_CACHE": ("16", 16),
    "BYOC_CACHE_DIR": ("/tmp/x", "/tmp/x"),
    "BYOC_CPU_DISPATCH": ("Baseline", "baseline"),
    "BYOC_SANITIZE": ("undefined,address", ("address", "undefined")),
    "BYOC_PROFILE_KERNELS": ("1", True),
    "BYOC_CFLAGS": ("-DA=1 '-DB=2 3'", ("-DA=1", "-DB=2 3")),
    "BYOC_CBLAS_THREADS": ("4", 4),
    "BYOC_DNNL_VERBOSE": ("0", False),
    "BYOC_TIERED": ("1", True),
}


def test_every_variable_has_cases() -> None:
    assert set(GOOD) == set(VARIABLES) and set(BAD) <= set(VARIABLES)


@pytest.mark.parametrize(("name", "text"), [(n, t) for n, ts in BAD.items() for t in ts])
def test_a_bad_value_names_the_variable_and_what_it_accepts(
    monkeypatch: pytest.MonkeyPatch, name: str, text: str
) -> None:
    monkeypatch.setenv(name, text)
    with pytest.raises(EnvError, match=rf"^{name}={re.escape(repr(text))}: expected {re.escape(VARIABLES[name].accepts)}$"):
        env.value(name)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_empty_and_unset_values(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    text, want = GOOD[name]
    monkeypatch.setenv(name, text)
    assert env.value(name) == want
    for blank in ("", "  "):
        monkeypatch.setenv(name, blank)
        assert env.value(name) == VARIABLES[name].default
    monkeypatch.delenv(name)
    assert env.value(name) == VARIABLES[name].default


MODEL = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = nn.relu %x : tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
"""
DYNAMIC = """
func.func @main(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %0 = nn.relu %x : tensor<?x3xf32>
  func.return %0 : tensor<?x3xf32>
}
"""


@pytest.mark.parametrize("target", ["graphref", "ccompiler"])
def test_a_huge_thread_count_is_an_env_error_not_an_overflow(
    monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    monkeypatch.setenv("BYOC_NUM_THREADS", "99999999999999999999")
    with pytest.raises(EnvError, match="BYOC_NUM_THREADS='99999999999999999999': expected an integer"):
        byoc.build(byoc.parse_module(MODEL), targets=[target])


@pytest.mark.parametrize("text", ["abc", "2.5"])
def test_a_bad_specialisation_cache_size_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setenv("BYOC_SPECIALIZE_CACHE", text)
    with pytest.raises(EnvError, match="BYOC_SPECIALIZE_CACHE="):
        byoc.build(byoc.parse_module(DYNAMIC), targets=["ccompiler"])


def test_an_empty_specialisation_cache_size_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BYOC_SPECIALIZE_CACHE", "")
    exe = byoc.build(byoc.parse_module(DYNAMIC), targets=["ccompiler"])
    np.testing.assert_array_equal(exe(np.ones((4, 3), np.float32))[0], np.ones((4, 3), np.float32))


@pytest.mark.parametrize("name", ["BYOC_CBLAS_THREADS", "BYOC_DNNL_VERBOSE"])
def test_a_variable_c_reads_is_checked_before_a_library_loads(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, "lots")
    with pytest.raises(EnvError, match=f"{name}='lots'"):
        byoc.build(byoc.parse_module(MODEL), targets=["ccompiler"])


READS = re.compile(r"""(?:os\.environ(?:\.get)?[\[(]|getenv\()\s*["'](BYOC_\w+)""")


def test_no_other_module_reads_a_byoc_variable() -> None:
    readers = {
        f"{path.relative_to(PACKAGE.parent)}: {m.group(1)}"
        for path in PACKAGE.rglob("*")
        if path.suffix in (".py", ".c", ".h") and path.name != "env.py"
        for m in READS.finditer(path.read_text())
    }
    # C code reads these itself: check_native checks them before every library load
    allowed = {n for n, v in VARIABLES.items() if v.read_by_c}
    assert {r for r in readers if r.rsplit(": ", 1)[1] not in allowed or r.endswith(".py")} == set(), readers
