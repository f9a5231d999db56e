"""Targets from outside byoc: entry points, BYOC_PLUGINS, --load-plugin, --list-targets, and the
example vendor package installed with pip and used by name only.

Discovery runs once per process, so every case that discovers runs in a fresh Python process
with its own PYTHONPATH: a fake installed distribution is a `*.dist-info` directory (METADATA
and entry_points.txt) next to its package in a temporary directory on that path."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.paths import EXAMPLES, ROOT

from byoc.targets import plugins

TARGET_MODULE = """
from xdsl.dialects.builtin import f32
from byoc.target_api import Target, dtypes

def _t(name):
    return Target(name=name, support={{"nn.relu": dtypes(f32)}}, lowering="lower-to-c", component="c")

{body}
"""

RELU = """\
func.func @main(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = nn.relu %x : tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}
"""


def fake_dist(root: Path, dist: str, version: str, module: str, body: str, entry_points: dict[str, str]) -> None:
    """An installed distribution `dist` holding `module` (whose code is `body`) and declaring
    `entry_points` (name -> value) in the byoc.targets group."""
    (root / f"{module}.py").write_text(TARGET_MODULE.format(body=textwrap.dedent(body)))
    info = root / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[byoc.targets]\n{lines}")


def run(args: list[str], path: Path | None = None, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python args...` with this tree (and `path`) on PYTHONPATH."""
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([str(path)] if path else [])])
    full.setdefault("OMP_NUM_THREADS", "1")
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=full, cwd=cwd, timeout=600
    )


def opt(*args: str) -> list[str]:
    return ["-c", "import sys; from byoc.tools.byoc_opt import main; sys.exit(main())", *args]


@pytest.fixture
def dists(tmp_path: Path) -> Path:
    """Three fake distributions: a good one (a Target and a factory of two), one whose
    plugin cannot be imported or returns the wrong thing, and one clashing with both."""
    fake_dist(
        tmp_path, "acme_npu", "2.1", "acme_targets",
        """
        ACME = _t("acme")
        def more():
            return [_t("acme_fast"), _t("acme_small")]
        """,
        {"acme": "acme_targets:ACME", "acme_more": "acme_targets:more"},
    )  # fmt: skip
    fake_dist(
        tmp_path, "broken_vendor", "0.3", "broken_targets",
        """
        def wrong():
            return 42
        """,
        {"ghost": "no_such_module:TARGET", "wrong": "broken_targets:wrong"},
    )  # fmt: skip
    fake_dist(
        tmp_path, "copycat", "1.0", "copycat_targets",
        """
        def both():
            return [_t("acme_fast"), _t("ccompiler")]
        """,
        {"copycat": "copycat_targets:both"},
    )  # fmt: skip
    return tmp_path


def test_installed_targets_are_listed_with_their_distribution(dists: Path, tmp_path: Path) -> None:
    done = run(opt("--list-targets"), dists)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line and not line[0].isspace()}
    assert "acme_npu 2.1 (entry point acme = acme_targets:ACME)" in lines["acme"]
    assert "acme_npu 2.1 (entry point acme_more = acme_targets:more)" in lines["acme_small"]
    assert "built in (byoc" in lines["graphref"]
    # the failed plugins and the clashes are listed with their errors, not raised
    assert "cannot import it: No module named 'no_such_module'" in done.stdout
    assert "returned an object of type int" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_an_installed_target_is_used_by_name_in_byoc_opt_and_build(dists: Path, tmp_path: Path) -> None:
    model = tmp_path / "relu.mlir"
    model.write_text(RELU)
    done = run(opt(str(model), "-p", "byoc{targets=acme}"), dists)
    assert done.returncode == 0, done.stderr
    assert 'byoc.compiler = "acme"' in done.stdout
    script = (
        "import numpy as np, byoc\n"
        f"m = byoc.parse_module(open({str(model)!r}).read())\n"
        "exe = byoc.build(m, targets=['acme_small'])\n"
        "x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)\n"
        "assert [p.target for p in exe.partitions] == ['acme_small']\n"
        "assert (exe.run(x)[0] == np.maximum(x, 0)).all()\n"
        "print('ok')\n"
    )
    done = run(["-c", script], dists)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ghost", "target plugin broken_vendor 0.3 (entry point ghost = no_such_module:TARGET) "
         "failed: cannot import it: No module named 'no_such_module'"),
        ("wrong", "target plugin broken_vendor 0.3 (entry point wrong = broken_targets:wrong) "
         "failed: TypeError: entry point 'wrong = broken_targets:wrong' returned an object of type int"),
        ("acme_fast", "target 'acme_fast' is declared twice: by acme_npu 2.1 (entry point acme_more = "
         "acme_targets:more) and by copycat 1.0 (entry point copycat = copycat_targets:both)"),
        ("ccompiler", "target 'ccompiler' is declared twice: by built in (byoc"),
    ],
)  # fmt: skip
def test_a_broken_or_clashing_plugin_is_one_error_when_its_target_is_asked_for(
    dists: Path, tmp_path: Path, name: str, expected: str
) -> None:
    model = tmp_path / "relu.mlir"
    model.write_text(RELU)
    done = run(opt(str(model), "-p", f"byoc{{targets={name}}}"), dists)
    assert done.returncode == 1
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    # every other target keeps working
    done = run(opt(str(model), "-p", "byoc{targets=acme,graphref}"), dists)
    assert done.returncode == 0, done.stderr


def test_load_plugin_and_byoc_plugins_take_files_and_modules(tmp_path: Path) -> None:
    (tmp_path / "devtarget.py").write_text(
        TARGET_MODULE.format(body='byoc_targets = _t("dev")\ndef other():\n    return [_t("dev_other")]\n')
    )
    model = tmp_path / "relu.mlir"
    model.write_text(RELU)
    file = str(tmp_path / "devtarget.py")
    done = run(opt(str(model), "--load-plugin", file, "-p", "byoc{targets=dev}"))
    assert done.returncode == 0 and 'byoc.compiler = "dev"' in done.stdout, done.stderr
    done = run(opt("--list-targets", "--load-plugin", f"{file}:other"))
    assert f"{file} (--load-plugin)" in next(line for line in done.stdout.splitlines() if line.startswith("dev_other"))
    run_script = "import sys; from byoc.tools.byoc_run import main; sys.exit(main())"
    done = run(["-c", run_script, str(model), "--load-plugin", "devtarget", "--targets", "dev", "--repeat", "1"], tmp_path)
    assert done.returncode == 0 and "outputs match the reference" in done.stdout, done.stderr
    # BYOC_PLUGINS: comma-separated; a broken entry is reported with the unknown name only
    env = {"BYOC_PLUGINS": "devtarget:other, missing_plugin_module"}
    done = run(opt(str(model), "-p", "byoc{targets=dev_other}"), tmp_path, env)
    assert done.returncode == 0, done.stderr
    done = run(opt(str(model), "-p", "byoc{targets=nosuch}"), tmp_path, env)
    assert done.returncode == 1
    assert "unknown target 'nosuch'" in done.stderr
    assert "target plugin missing_plugin_module (BYOC_PLUGINS) failed: cannot import it" in done.stderr


def test_load_plugin_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("X = 1\n")
    done = run(opt("--list-targets", "--load-plugin", str(tmp_path / "empty.py")))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"byoc-opt: error: target plugin {tmp_path / 'empty.py'} (--load-plugin) failed: "
        "AttributeError: it defines no 'byoc_targets' (a Target, a list of them, or a function "
        f"returning them); name another with {tmp_path / 'empty.py'}:ATTRIBUTE"
    ]


def test_plugin_objects() -> None:
    from xdsl.dialects.builtin import f32

    from byoc.target_api import Target, dtypes

    t = Target(name="plugin_object_t", support={"nn.relu": dtypes(f32)})
    assert plugins.targets_of(t, "x") == [t]
    assert plugins.targets_of([t, t], "x") == [t, t]
    assert plugins.targets_of(lambda: t, "x") == [t]
    assert plugins.targets_of(lambda: (t,), "x") == [t]
    with pytest.raises(TypeError, match="x returned None"):
        plugins.targets_of(lambda: None, "x")
    with pytest.raises(TypeError, match="x is a list of 0 items"):
        plugins.targets_of([], "x")
    assert plugins.split_spec("pkg.mod:make") == ("pkg.mod", "make")
    assert plugins.split_spec("dir/file.py") == ("dir/file.py", None)


def test_target_api_gathers_the_existing_names() -> None:
    import byoc.target_api as api
    from byoc.runtime.graph_module import GraphEngine
    from byoc.targets import Target
    from byoc.targets.patterns import is_op
    from byoc.targets.predicates import dtypes

    assert (api.Target, api.GraphEngine, api.dtypes, api.is_op) == (Target, GraphEngine, dtypes, is_op)
    assert set(api.__all__) <= set(dir(api))


def test_engine_compile_errors_name_the_engine_by_its_full_path(tmp_path: Path) -> None:
    """A same-named file in the working directory is neither named nor quoted."""
    src = tmp_path / "src"
    cwd = tmp_path / "cwd"
    src.mkdir()
    cwd.mkdir()
    (src / "my_engine.c").write_text('#include "byoc_graph_engine.h"\nstatic int broken(void) { return undeclared; }\n')
    (cwd / "my_engine.c").write_text("a line of ANOTHER file\nline two of ANOTHER file\n")
    script = (
        "from byoc.target_api import GraphEngine, CompileError\n"
        "from byoc.runtime.toolchain import compile_source\n"
        f"e = GraphEngine('broken', ({str(src / 'my_engine.c')!r},))\n"
        "flags, libs = e.flags_and_libs()\n"
        "try:\n    compile_source(e.source(), flags, libs=libs)\n"
        "except CompileError as err:\n    print(err.output)\n"
    )
    done = run(["-c", script], env={"BYOC_CACHE_DIR": str(tmp_path / "cache")}, cwd=cwd)
    assert f"{src / 'my_engine.c'}:2:" in done.stdout, done.stdout + done.stderr
    assert "undeclared" in done.stdout
    assert "ANOTHER" not in done.stdout


# --------------------------------------------------------------------------
# The example vendor package, installed with pip
# --------------------------------------------------------------------------

VENDOR = EXAMPLES / "vendor_plugin"

ADD_RELU_CLIP = """\
func.func @main(%x: tensor<3x5xf32>, %y: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %0 = nn.add %x, %y : tensor<3x5xf32>
  %1 = nn.relu %0 : tensor<3x5xf32>
  %2 = nn.clip %1 {a_min = 0.0 : f64, a_max = 1.0 : f64} : tensor<3x5xf32>
  return %2 : tensor<3x5xf32>
}
"""


VENDOR_GROUP = pytest.mark.xdist_group("vendor-package")
"""The tests of the installed package run in one pytest-xdist worker (`--dist loadgroup`), so
`vendor_site` installs it once in the run, not once per worker."""


@pytest.fixture(scope="module")
def vendor_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/vendor_plugin installed with pip into a directory (put on PYTHONPATH)."""
    site = tmp_path_factory.mktemp("vendor_site")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-compile", "--target", str(site), str(VENDOR)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (site / "vendor_accel" / "vendor_engine.c").is_file()  # the engine is package data
    return site


@VENDOR_GROUP
def test_the_vendor_package_is_used_by_name_and_its_artifact_loads_elsewhere(
    vendor_site: Path, tmp_path: Path
) -> None:
    env = {"BYOC_CACHE_DIR": str(tmp_path / "cache")}
    done = run(opt("--list-targets"), vendor_site, env)
    assert "byoc-vendor-example 1.0.0 (entry point vendoraccel = vendor_accel:VENDORACCEL)" in done.stdout
    assert "byoc-vendor-example 1.0.0 (entry point vendoraccel_c = vendor_accel:make_targets)" in done.stdout
    model = tmp_path / "model.mlir"
    model.write_text(ADD_RELU_CLIP)
    done = run(opt(str(model), "-p", "byoc{targets=vendoraccel}"), vendor_site, env)
    assert done.returncode == 0, done.stderr
    assert 'byoc.composite "vendoraccel.add_relu"' in done.stdout
    artifact = tmp_path / "model.byoc"
    build = (
        "import numpy as np, byoc\n"
        f"m = byoc.parse_module(open({str(model)!r}).read())\n"
        "exe = byoc.build(m, targets=['vendoraccel'])\n"
        "assert [p.target for p in exe.partitions] == ['vendoraccel']\n"
        f"exe.export_library({str(artifact)!r})\n"
    )
    done = run(["-c", build], vendor_site, env)
    assert done.returncode == 0, done.stderr
    # a fresh process without the vendor package: the artifact holds the compiled engine
    load = (
        "import numpy as np, byoc\n"
        f"exe = byoc.load_module({str(artifact)!r})\n"
        "x = np.linspace(-2, 2, 15, dtype=np.float32).reshape(3, 5)\n"
        "y = np.full((3, 5), 0.25, dtype=np.float32)\n"
        "(out,) = exe.run(x, y)\n"
        "assert (out == np.clip(np.maximum(x + y, 0), 0, 1)).all(), out\n"
        "print('ok')\n"
    )
    done = run(["-c", load], None, env)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@VENDOR_GROUP
def test_the_vendor_targets_pass_the_conformance_kit(vendor_site: Path, tmp_path: Path) -> None:
    env = {"BYOC_CACHE_DIR": str(tmp_path / "cache")}
    rows = {"vendoraccel": ("nn.relu", "nn.clip", "nn.add", "vendoraccel.add_relu"), "vendoraccel_c": ("nn.relu", "nn.clip")}
    for name, expected in rows.items():
        done = run(["-m", "byoc.tools.byoc_check_target", name, "--dtypes", "f32,i32"], vendor_site, env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "all pass" in done.stdout
        for row in expected:
            assert any(line.startswith(row + " ") and "pass (" in line for line in done.stdout.splitlines()), row


def test_the_entry_point_scan_is_skipped_only_when_no_distribution_names_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`importlib.metadata` parses every distribution; it runs whenever one `entry_points.txt`
    on the path names `byoc.targets`, or a path entry is a zip it alone can read."""
    other = tmp_path / "other-1.0.dist-info"
    other.mkdir()
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    (tmp_path / "plain-2.0.dist-info").mkdir()  # no entry_points.txt at all
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(tmp_path / "missing"), "a_path_hook"])
    assert not plugins._may_declare_entry_points()  # pyright: ignore[reportPrivateUsage]
    assert list(plugins.entry_points()) == []
    fake_dist(tmp_path, "acme_npu", "2.1", "acme_targets", "ACME = _t('acme')", {"acme": "acme_targets:ACME"})
    assert plugins._may_declare_entry_points()  # pyright: ignore[reportPrivateUsage]
    assert [ep.name for ep in plugins.entry_points()] == ["acme"]
    zipped = tmp_path / "eggs.zip"
    zipped.write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [str(zipped)])
    assert plugins._may_declare_entry_points()  # pyright: ignore[reportPrivateUsage]
