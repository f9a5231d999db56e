"""Artifacts name their runtime components by kind, and loading one needs nothing above the
runtime (tests/test_layering.py checks the imports themselves)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.paths import ROOT

import byoc
from byoc.runtime.artifact import _PREFIX, MAGIC, ArtifactError, ArtifactWriter, read_artifact
from byoc.runtime.component import COMPONENT_LOADERS, UnknownComponentError, load_component
from byoc.runtime.executable import load_executable

RUNTIME = ROOT / "byoc" / "runtime"
ABOVE = ("byoc.passes", "byoc.lowering", "byoc.targets", "byoc.frontend", "byoc.tools", "byoc.driver")

SEED = """
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = nn.add %a, %b : tensor<10x10xf32>
  %1 = nn.multiply %0, %b : tensor<10x10xf32>
  func.return %1 : tensor<10x10xf32>
}
"""


def _export(tmp_path: Path) -> Path:
    exe = byoc.build(byoc.parse_module(SEED), targets=["ccompiler"])
    path = tmp_path / "m.byoc"
    exe.export_library(str(path))
    return path


def test_artifact_records_component_kinds(tmp_path: Path) -> None:
    header, _ = read_artifact(_export(tmp_path))
    assert header["components"]["ccompiler"]["kind"] == "c"
    assert set(header["components"]["ccompiler"]["blobs"]) >= {"library", "metadata"}


def test_loading_an_artifact_imports_no_target(tmp_path: Path) -> None:
    path = _export(tmp_path)
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from byoc.runtime.loaders import load_module\n"
        f"exe = load_module({str(path)!r})\n"
        "a = np.ones((10, 10), np.float32)\n"
        "assert (exe(a, a)[0] == 2).all()\n"
        "above = sorted(m for m in sys.modules if m.startswith(('byoc.targets', 'byoc.passes', 'byoc.lowering')))\n"
        "assert not above, above\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr


def test_format_1_artifacts_still_load(tmp_path: Path) -> None:
    """Format 1 did not record kinds: each component's kind is told by its blob names."""
    header, sections = read_artifact(_export(tmp_path))
    writer = ArtifactWriter()
    for s in sections:
        writer.add(s)
    header["components"] = {t: c["blobs"] for t, c in header["components"].items()}
    header["version"] = 1
    header["sections"] = writer.sections
    hbytes = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    old = tmp_path / "old.byoc"
    old.write_bytes(
        _PREFIX.pack(MAGIC, 1, len(hbytes)) + hbytes + hashlib.sha256(hbytes).digest() + b"".join(writer.chunks)
    )
    a = np.full((10, 10), 3, np.float32)
    np.testing.assert_array_equal(load_executable(old)(a, a)[0], (a + a) * a)


def test_unknown_component_kind_is_an_error() -> None:
    assert {"c", "examplejson"} <= set(COMPONENT_LOADERS)
    with pytest.raises(UnknownComponentError, match="kind 'npu'.*register_component_loader"):
        load_component("npu", {})


def test_artifact_with_an_unknown_kind_names_it(tmp_path: Path) -> None:
    header, sections = read_artifact(_export(tmp_path))
    writer = ArtifactWriter()
    for s in sections:
        writer.add(s)
    header["components"]["ccompiler"]["kind"] = "npu"
    for key in ("format", "version", "sections"):
        del header[key]
    bad = tmp_path / "npu.byoc"
    writer.write(bad, header)
    with pytest.raises((UnknownComponentError, ArtifactError), match="'npu'"):
        load_executable(bad)
