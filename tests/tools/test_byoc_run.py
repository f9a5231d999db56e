"""byoc-run: its table, what it reports for each kind of model, and its error lines."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from support.paths import EXAMPLES

from byoc.tools import byoc_run


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = byoc_run.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_onnx_model_without_the_onnx_package_names_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now fails as if not installed
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07")
    code, out, err = run(capsys, str(model))
    assert (code, out) == (1, "")
    assert err == (
        f"{model}: error: reading ONNX models needs the 'onnx' package "
        "(pip install 'byoc[onnx]')\n"
    )


# ---- --input-shape (the parser byoc-opt uses) -------------------------------------------


def test_input_shape_makes_a_symbolic_batch_static(
    batch_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, str(batch_model), "--targets", "ccompiler", "--repeat", "1")
    assert code == 1 and "the ? dims are known only at run time" in err
    assert "--input-shape NAME=DxDx..." in err
    code, out, err = run(
        capsys, str(batch_model), "--targets", "ccompiler", "--input-shape", "x=4x3", "--repeat", "1"
    )
    assert code == 0, err
    assert "ccompiler_main_0" in out and "outputs match the reference" in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--input-shape", "foo=1x3"], "{model}: error: --input-shape: model has no input 'foo'; inputs: x"),
        (
            ["--input-shape", "x=1xN"],
            "byoc-run: error: --input-shape 'x=1xN': expected NAME=DxDx..., e.g. x=1x3x224x224",
        ),
        (
            ["--input-shape", "x=1x3", "--input-shape", "x=2x3"],
            "byoc-run: error: --input-shape: input 'x' is given two shapes",
        ),
    ],
)
def test_a_bad_input_shape_is_an_error_as_in_byoc_opt(
    batch_model: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    code, out, err = run(capsys, str(batch_model), *flags)
    assert (code, out) == (1, "")
    assert err == message.format(model=batch_model) + "\n"


def test_input_shape_on_an_mlir_model_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    model = str(EXAMPLES / "seed_subgraph.mlir")
    code, out, err = run(capsys, model, "--input-shape", "a=10x10")
    assert (code, out) == (1, "")
    assert err == f"byoc-run: error: --input-shape applies to .onnx and .pt2 models; '{model}' is not one\n"


# ---- the table ------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _ScriptedExecutable:
    """run_profiled takes the next (wall, table) of a script, advancing a fake clock."""

    def __init__(self, clock: _Clock, script: list[tuple[float, dict[str, float]]]) -> None:
        self.clock = clock
        self.script = list(script)

    def run_profiled(self, *inputs: object) -> tuple[list[object], dict[str, float]]:
        wall, table = self.script.pop(0)
        self.clock.now += wall
        return [wall], table


def test_times_are_medians_of_the_same_runs_without_the_warm_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock()
    monkeypatch.setattr(byoc_run.time, "perf_counter", clock)
    script = [
        (900.0, {"p": 800.0, "host": 50.0}),  # warm-up: a build, first-call checks
        (3.0, {"p": 2.0, "host": 0.5}),
        (9.0, {"p": 8.0, "host": 0.25}),
        (4.0, {"p": 1.0, "host": 1.0}),
    ]
    exe = _ScriptedExecutable(clock, script)
    outputs, timings = byoc_run._time_runs(exe, [], 3)
    assert outputs == [4.0] and exe.script == []
    assert timings.total == 4.0
    assert timings.steps == {"p": 2.0, "host": 0.5}


def _table(out: str) -> dict[str, list[str]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("partition")) + 2
    end = next(i for i, line in enumerate(lines) if line.startswith("total")) + 1
    return {line.split()[0]: line.split()[1:] for line in lines[start:end]}


def test_no_row_of_the_table_exceeds_the_total(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, str(EXAMPLES / "small_cnn.mlir"), "--targets", "ccompiler,examplejson", "--repeat", "3"
    )
    assert code == 0, err
    assert "build: " in out and "runs: 3 (median times)" in out
    rows = _table(out)
    assert set(rows) == {"ccompiler_main_0", "host", "total"}
    total = float(rows["total"][-1])
    assert all(float(cells[-1]) <= total for cells in rows.values())


def test_a_loaded_artifact_says_where_from_and_its_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    artifact = tmp_path / "seed.byoc"
    model = str(EXAMPLES / "seed_subgraph.mlir")
    assert run(capsys, model, "--targets", "examplejson", "--export", str(artifact))[0] == 0
    code, out, err = run(capsys, str(artifact), "--repeat", "2")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"model: {artifact}  targets: examplejson (from the artifact)  ")
    assert lines[1].startswith(f"loaded: {artifact} (") and " ms)   runs: 2" in lines[1]
    assert "build:" not in out and "(none: host only)" not in out
    assert "examplejson_main_0" in _table(out)


def test_a_model_built_for_no_target_says_host_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(EXAMPLES / "seed_subgraph.mlir"), "--repeat", "1")
    assert code == 0, err
    assert "  targets: (none: host only)  " in out.splitlines()[0]
    assert set(_table(out)) == {"host", "total"}


def test_help_shows_the_default_and_the_known_targets(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        byoc_run.main(["--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: none, so every op runs on the host," in out
    assert "known: cblas, ccompiler, dnnl, examplejson, graphref" in out


# ---- errors: which file, what is wrong with it, never a Python exception name ----------


@pytest.fixture
def seed_files(tmp_path: Path) -> Path:
    """Inputs files for seed_subgraph.mlir (inputs a, b, c, d: 10x10 f32), good and bad."""
    f32 = np.zeros((10, 10), np.float32)
    np.savez(tmp_path / "good.npz", a=f32, b=f32, c=f32, d=f32)
    np.savez(tmp_path / "names.npz", q=f32)
    np.savez(tmp_path / "dtype.npz", a=f32.astype(np.float64), b=f32, c=f32, d=f32)
    np.savez(tmp_path / "shape.npz", a=np.zeros(3, np.float32), b=f32, c=f32, d=f32)
    np.save(tmp_path / "one.npy", f32)
    (tmp_path / "junk.npz").write_bytes(b"junk")
    (tmp_path / "adir").mkdir()
    return tmp_path


SEED = str(EXAMPLES / "seed_subgraph.mlir")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--inputs", "{d}/absent.npz"], "{d}/absent.npz: error: no such file"),
        (["--inputs", "{d}/adir"], "{d}/adir: error: is a directory"),
        (
            ["--inputs", "{d}/junk.npz"],
            "{d}/junk.npz: error: not an .npz file of arrays (numpy.savez writes one)",
        ),
        (
            ["--inputs", "{d}/one.npy"],
            "{d}/one.npy: error: holds one array (.npy); give the inputs as an .npz file (numpy.savez)",
        ),
        (
            ["--inputs", "{d}/names.npz"],
            "{d}/names.npz: error: inputs must be named a, b, c, d (or arr_0..arr_3); found q",
        ),
        (
            ["--inputs", "{d}/dtype.npz"],
            "{d}/dtype.npz: error: input 'a' has dtype float64, expected float32",
        ),
        (
            ["--inputs", "{d}/shape.npz"],
            "{d}/shape.npz: error: input 'a' has shape (3,), expected (10, 10)",
        ),
        (["--export", "{d}/no/such/dir/out.byoc"], "{d}/no/such/dir/out.byoc: error: no such directory"),
        (["--export", "{d}/adir"], "{d}/adir: error: is a directory"),
        (["--repeat", "0"], "byoc-run: error: --repeat 0: need at least 1 timed run"),
        (["--threads", "0"], "byoc-run: error: --threads must be between 1 and 1024, got 0"),
    ],
)
def test_an_error_names_the_file_it_is_about(
    seed_files: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run(capsys, SEED, *(a.format(d=seed_files) for a in args))
    assert code == 1
    assert err == message.format(d=seed_files) + "\n"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.mlir", None, "no such file"),
        ("adir.mlir", "dir", "is a directory"),
        ("bad.onnx", b"garbage", "error: not an ONNX model: "),
        ("bad.byoc", b"garbage", "not a byoc artifact (file is 7 bytes, truncated)"),
    ],
)
def test_a_bad_model_file_is_named_with_what_is_wrong(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes | str | None,
    message: str,
) -> None:
    path = tmp_path / name
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    code, out, err = run(capsys, str(path))
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}: error: ")
    assert message in err and err.count(str(path)) == 1  # said once, not `path: error: path: ...`
    assert "Error:" not in err and "Traceback" not in err


def test_an_artifact_is_exported_again_and_keeps_its_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a.byoc", tmp_path / "b.byoc"
    assert run(capsys, SEED, "--targets", "ccompiler", "--export", str(first))[0] == 0
    code, out, err = run(capsys, str(first), "--export", str(second), "--repeat", "1")
    assert code == 0, err
    assert f"exported: {second}" in out and second.exists()
    code, out, err = run(capsys, str(first), "--targets", "examplejson")
    assert (code, out) == (1, "")
    assert err == (
        f"byoc-run: error: --targets cannot re-partition an exported artifact ('{first}' keeps "
        "its own)\n"
    )


def test_byoc_errors_show_their_message_and_others_their_class(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import byoc

    def broken(*args: object, **kwargs: object) -> object:
        raise KeyError("x")  # not byoc's: a bug, whose class a report needs

    monkeypatch.setattr(byoc, "build", broken)
    code, out, err = run(capsys, SEED)
    assert (code, err) == (1, f"{SEED}: error: KeyError: 'x'\n")


# ---- the placement section and --no-fallback --------------------------------------------


def test_the_placement_section_names_each_partition_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(EXAMPLES / "small_cnn.mlir"), "--targets", "ccompiler", "--repeat", "1")
    assert code == 0, err
    lines = out.splitlines()
    start = lines.index("placement:")
    assert lines[start + 1].split()[:4] == ["partition", "target", "ops", "reason"]
    assert lines[start + 2].split()[:4] == ["@ccompiler_main_0", "ccompiler", "8", "priority"]
    assert lines[start + 3].startswith("max abs error")


def test_a_target_that_cannot_build_is_left_out_with_a_warning_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from support.scratch_targets import MISSING_HEADER, broken_c_target, registered

    model = str(EXAMPLES / "seed_subgraph.mlir")
    with registered(broken_c_target("fb_broken", ["nn.add", "nn.subtract", "nn.multiply"])):
        code, out, err = run(capsys, model, "--targets", "fb_broken,ccompiler", "--repeat", "1")
        assert code == 0, err
        (warning,) = err.splitlines()
        assert warning.startswith(f"{model}: warning: target 'fb_broken' cannot run here")
        assert MISSING_HEADER in warning
        placement = out[out.index("placement:") :]
        assert "  left out: fb_broken: its build failed: CompileError" in placement
        assert "fallback" in placement.splitlines()[2]
        assert "outputs match the reference" in out

        code, out, err = run(
            capsys, model, "--targets", "fb_broken,ccompiler", "--repeat", "1", "--no-fallback"
        )
        assert (code, out) == (1, "")
        assert err.startswith(f"{model}: error:") and "C compilation failed" in err
        assert "Traceback" not in err


# ---- --tiered ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "environ", "expected"),
    [
        (None, "", True),  # byoc-run's default: tiered
        (None, "0", None),  # BYOC_TIERED set: byoc.build reads it
        (False, "", False),
        (True, "0", True),  # a flag wins over the environment
    ],
)
def test_tiered_is_on_unless_a_flag_or_the_environment_says_otherwise(
    flag: bool | None, environ: str, expected: bool | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BYOC_TIERED", environ)
    assert byoc_run._tiered(flag) is expected


@pytest.mark.parametrize("flag", ["--tiered", "--no-tiered"])
def test_tiered_and_untiered_runs_match_the_reference(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, str(EXAMPLES / "small_cnn.mlir"), "--targets", "ccompiler", "--repeat", "2", flag
    )
    assert code == 0, err
    assert "ccompiler_main_0" in out and "outputs match the reference" in out
    if flag == "--no-tiered":
        assert "tier: first" not in out
