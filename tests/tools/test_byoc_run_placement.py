"""byoc-run --placement: a measured build runs, matches the reference, and uses the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.paths import EXAMPLES

from byoc.tools import byoc_run


def test_measured_placement_builds_runs_and_fills_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "placement.json"
    args = [
        str(EXAMPLES / "small_cnn.mlir"), "--targets", "ccompiler,examplejson",
        "--placement", "measure", "--placement-cache", str(cache), "--repeat", "2", "--threads", "1",
    ]
    assert byoc_run.main(args) == 0
    out, err = capsys.readouterr()
    assert "outputs match the reference" in out, err
    entries = json.loads(cache.read_text())["entries"]
    assert any("assignment" in e for e in entries.values())
    assert byoc_run.main(args) == 0
    again, _ = capsys.readouterr()
    assert "outputs match the reference" in again
    assert json.loads(cache.read_text())["entries"].keys() == entries.keys()


def test_an_unknown_placement_is_an_option_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        byoc_run.main([str(EXAMPLES / "small_cnn.mlir"), "--placement", "fastest"])
    assert exc.value.code == 2
    assert "invalid choice: 'fastest'" in capsys.readouterr().err
