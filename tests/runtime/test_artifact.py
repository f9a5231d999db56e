"""Artifacts whose checksums are valid but whose content is not what export_library writes
(issue 14, item 4), and concurrent exports to one path (item 5)."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.paths import ROOT

import byoc
from byoc.runtime.artifact import _PREFIX, MAGIC, ArtifactError, ArtifactWriter, read_artifact
from byoc.runtime.executable import load_executable

BIG = """
func.func @main(%x: tensor<1x2048xf32>, %w: tensor<1x2048xf32>) -> tensor<1x2048xf32> {
  %0 = nn.add %x, %w : tensor<1x2048xf32>
  %1 = nn.relu %0 : tensor<1x2048xf32>
  %2 = nn.tanh %1 : tensor<1x2048xf32>
  func.return %2 : tensor<1x2048xf32>
}
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A model with a C partition whose 2048-float weight byoc_init binds, and a host op."""
    root = tmp_path_factory.mktemp("artifact")
    mp = pytest.MonkeyPatch()
    mp.setenv("BYOC_CACHE_DIR", str(root / "cache"))
    w = np.linspace(-1, 1, 2048, dtype=np.float32).reshape(1, 2048)
    exe = byoc.build(byoc.parse_module(BIG), targets=["ccompiler"], params={"w": w})
    path = root / "big.byoc"
    exe.export_library(str(path))
    np.save(root / "want.npy", exe(np.zeros((1, 2048), np.float32))[0])
    yield path
    mp.undo()


@pytest.fixture(scope="module")
def host_exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host-only model: its weight is a constant of the artifact's own table."""
    path = tmp_path_factory.mktemp("host") / "host.byoc"
    w = np.linspace(-1, 1, 2048, dtype=np.float32).reshape(1, 2048)
    byoc.build(byoc.parse_module(BIG), targets=[], params={"w": w}).export_library(str(path))
    return path


def _raw(path: Path, hbytes: bytes, payload: bytes = b"") -> Path:
    """A file with a valid prefix and header checksum around any header bytes."""
    path.write_bytes(
        _PREFIX.pack(MAGIC, 2, len(hbytes)) + hbytes + hashlib.sha256(hbytes).digest() + payload
    )
    return path


def _rewrite(
    src: Path,
    dst: Path,
    edit_header: Callable[[dict[str, Any]], None] = lambda h: None,
    edit_blob: Callable[[str, bytes], bytes] = lambda name, b: b,
) -> Path:
    """`src` with its header edited and its named blobs replaced, every checksum recomputed."""
    header, sections = read_artifact(src)
    names = {
        index: name for c in header["components"].values() for name, index in c["blobs"].items()
    }
    writer = ArtifactWriter()
    remap = {i: writer.add(edit_blob(names.get(i, ""), s)) for i, s in enumerate(sections)}
    header = copy.deepcopy(header)
    for c in header["components"].values():
        c["blobs"] = {name: remap[i] for name, i in c["blobs"].items()}
    for c in header["constants"]:
        c["section"] = remap[c["section"]]
    for key in ("format", "version", "sections"):
        del header[key]
    edit_header(header)
    writer.write(dst, header)
    return dst


def _in_subprocess(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
        check=False,
    )


LOAD = (
    "import sys\n"
    "from byoc.runtime.artifact import ArtifactError\n"
    "from byoc.runtime.loaders import load_module\n"
    "try:\n"
    "    load_module(sys.argv[1])\n"
    "except ArtifactError as e:\n"
    "    print(e)\n"
    "    sys.exit(0)\n"
    "sys.exit(5)\n"
)


def _rejected_in_subprocess(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    return done.stdout


def test_the_good_artifact_loads(exported: Path) -> None:
    """The same library and constants as the built executable: the same answer, bit for bit."""
    x = np.zeros((1, 2048), np.float32)
    want = np.load(exported.parent / "want.npy")
    np.testing.assert_array_equal(load_executable(exported)(x)[0], want)


@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_truncated_library_with_valid_checksums(exported: Path, tmp_path: Path, cut: float) -> None:
    """dlopen of a truncated ELF died with SIGBUS."""
    bad = _rewrite(
        exported,
        tmp_path / "bad.byoc",
        edit_blob=lambda name, b: b[: int(len(b) * cut)] if name == "library" else b,
    )
    assert "truncated" in _rejected_in_subprocess(bad)


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def test_undersized_c_constant_with_valid_checksums(exported: Path, tmp_path: Path) -> None:
    """A 1-element constant where the library binds 2048 floats loaded, and the C code read
    past it."""
    bad = _rewrite(
        exported,
        tmp_path / "bad.byoc",
        edit_blob=lambda name, b: _npy(np.zeros(1, np.float32)) if name == "constant0" else b,
    )
    assert "constant 0" in _rejected_in_subprocess(bad)


def test_npy_header_claiming_a_huge_array(exported: Path, tmp_path: Path) -> None:
    def huge(name: str, blob: bytes) -> bytes:
        if name != "constant0":
            return blob
        return blob.replace(b"(1, 2048)", b"(1, 10000000000000)".ljust(9))

    bad = _rewrite(exported, tmp_path / "bad.byoc", edit_blob=huge)
    with pytest.raises(ArtifactError, match="constant 0"):
        load_executable(bad)


@pytest.mark.parametrize(
    "header",
    [b"{}", b"[]", b"null", b"7", b'"x"', b"[" * 100_000 + b"]" * 100_000, b'{"sections": [{}]}'],
    ids=["empty-object", "list", "null", "number", "string", "deep", "empty-section"],
)
def test_malformed_header_with_a_valid_checksum(tmp_path: Path, header: bytes) -> None:
    with pytest.raises(ArtifactError):
        load_executable(_raw(tmp_path / "bad.byoc", header))


@pytest.mark.parametrize("offset", ["NaN", "Infinity", "-1", "1.5", '"0"', "true", "1e400"])
def test_bad_section_offsets(tmp_path: Path, offset: str) -> None:
    header = f'{{"sections": [{{"offset": {offset}, "size": 0, "sha256": "{hashlib.sha256(b"").hexdigest()}"}}]}}'
    with pytest.raises(ArtifactError, match="offset|JSON|header"):
        read_artifact(_raw(tmp_path / "bad.byoc", header.encode()))


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(header: dict[str, Any]) -> None:
        obj = header
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value

    return edit


def _delete(*path: Any) -> Callable[[dict[str, Any]], None]:
    def edit(header: dict[str, Any]) -> None:
        obj = header
        for key in path[:-1]:
            obj = obj[key]
        del obj[path[-1]]

    return edit


EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "no-plan": _delete("plan"),
    "no-constants": _delete("constants"),
    "no-components": _delete("components"),
    "no-partitions": _delete("partitions"),
    "num-slots-5e8": _set(("plan", "num_slots"), 5e8),
    "num-slots-huge-int": _set(("plan", "num_slots"), 500_000_000),
    "num-slots-negative": _set(("plan", "num_slots"), -1),
    "num-slots-string": _set(("plan", "num_slots"), "4"),
    "input-slot-float": _set(("plan", "input_slots"), [0.5]),
    "input-slot-out-of-range": _set(("plan", "input_slots"), [99]),
    "output-slot-null": _set(("plan", "output_slots"), [None]),
    "steps-not-a-list": _set(("plan", "steps"), {"a": 1}),
    "step-kind-unknown": _set(("plan", "steps", 0, "kind"), "exec"),
    "step-input-out-of-range": _set(("plan", "steps", 0, "inputs"), [12345]),
    "step-attrs-list": _set(("plan", "steps", 0, "attrs"), []),
    "input-spec-negative-dim": _set(("plan", "input_specs", 0, 1), [1, -2048]),
    "input-spec-object-dtype": _set(("plan", "input_specs", 0, 2), "|O"),
    "input-spec-not-a-list": _set(("plan", "input_specs", 0), {"x": 1}),
    "input-names-mismatch": _set(("plan", "input_names"), []),
    "constant-slot-index": _set(("plan", "constant_slots"), [[0, 7]]),
    "component-not-an-object": _set(("components", "ccompiler"), 3),
    "component-kind-int": _set(("components", "ccompiler", "kind"), 1),
    "component-kind-unknown": _set(("components", "ccompiler", "kind"), "npu"),
    "blob-index-out-of-range": _set(("components", "ccompiler", "blobs", "library"), 99),
    "blob-index-float": _set(("components", "ccompiler", "blobs", "library"), 0.0),
    "no-library-blob": _delete("components", "ccompiler", "blobs", "library"),
    "no-metadata-blob": _delete("components", "ccompiler", "blobs", "metadata"),
    "no-constant-blob": _delete("components", "ccompiler", "blobs", "constant0"),
    "partition-int": _set(("partitions",), [1]),
    "partition-ops-nested": _set(("partitions", 0, "ops"), [[["x"]]]),
    "partition-reason-int": _set(("partitions", 0, "reason"), 1),
    "partition-measured-not-pairs": _set(("partitions", 0, "measured"), [["dnnl"]]),
    "partition-measured-bool": _set(("partitions", 0, "measured"), [["dnnl", True]]),
    "partition-fallback-list": _set(("partitions", 0, "fallback"), ["x"]),
    "fallbacks-not-a-list": _set(("fallbacks",), {"dnnl": "x"}),
    "fallback-without-cause": _set(("fallbacks",), [{"target": "dnnl"}]),
}


CONSTANT_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "constant-dtype-object": _set(("constants", 0, "dtype"), "|O"),
    "constant-dtype-structured": _set(("constants", 0, "dtype"), "V8"),
    "constant-dtype-big-endian": _set(("constants", 0, "dtype"), ">f4"),
    "constant-dtype-garbage": _set(("constants", 0, "dtype"), "not a dtype"),
    "constant-shape-too-small": _set(("constants", 0, "shape"), [1]),
    "constant-shape-huge": _set(("constants", 0, "shape"), [1 << 40, 1 << 40]),
    "constant-shape-float": _set(("constants", 0, "shape"), [2048.0]),
    "constant-section-out-of-range": _set(("constants", 0, "section"), 999),
    "constant-section-negative": _set(("constants", 0, "section"), -1),
}


@pytest.mark.parametrize("edit", list(CONSTANT_EDITS), ids=list(CONSTANT_EDITS))
def test_crafted_constant_with_valid_checksums(host_exported: Path, tmp_path: Path, edit: str) -> None:
    load_executable(host_exported)  # the good one loads
    bad = _rewrite(host_exported, tmp_path / "bad.byoc", edit_header=CONSTANT_EDITS[edit])
    with pytest.raises(ArtifactError, match="constant 0"):
        load_executable(bad)


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_crafted_header_with_valid_checksums(exported: Path, tmp_path: Path, edit: str) -> None:
    bad = _rewrite(exported, tmp_path / "bad.byoc", edit_header=EDITS[edit])
    with pytest.raises(ArtifactError):
        load_executable(bad)


def _metadata(change: Callable[[dict[str, Any]], None]) -> Callable[[str, bytes], bytes]:
    def edit(name: str, blob: bytes) -> bytes:
        if name != "metadata":
            return blob
        meta = json.loads(blob)
        change(meta)
        return json.dumps(meta).encode()

    return edit


def _first_function(meta: dict[str, Any]) -> dict[str, Any]:
    return next(iter(meta["functions"].values()))


METADATA_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "num-constants-huge": lambda m: m.update(num_constants=10**9),
    "num-constants-float": lambda m: m.update(num_constants=1.0),
    "constants-spec-mismatch": lambda m: m.update(constants=[["", [1], "<f4"]]),
    "functions-list": lambda m: m.update(functions=[]),
    "symbol-not-c": lambda m: m.update(functions={"f(void); int g": _first_function(m)}),
    "symbol-missing-from-library": lambda m: m.update(functions={"byoc_nothing": _first_function(m)}),
    "symbol-reserved": lambda m: m.update(functions={"byoc_init": _first_function(m)}),
    "spec-negative": lambda m: _first_function(m).update(inputs=[["x", [-1], "<f4"]]),
    "spec-dtype-object": lambda m: _first_function(m).update(outputs=[["y", [2], "|O"]]),
    "no-inputs": lambda m: _first_function(m).pop("inputs"),
}


@pytest.mark.parametrize("edit", list(METADATA_EDITS), ids=list(METADATA_EDITS))
def test_crafted_c_metadata_with_valid_checksums(exported: Path, tmp_path: Path, edit: str) -> None:
    bad = _rewrite(exported, tmp_path / "bad.byoc", edit_blob=_metadata(METADATA_EDITS[edit]))
    with pytest.raises(ArtifactError, match="ccompiler"):
        load_executable(bad)


def test_metadata_that_is_not_json(exported: Path, tmp_path: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    for blob in (b"\xff", b"NaN", deep):
        bad = _rewrite(
            exported, tmp_path / "bad.byoc", edit_blob=lambda n, b, blob=blob: blob if n == "metadata" else b
        )
        with pytest.raises(ArtifactError, match="metadata"):
            load_executable(bad)


def test_foreign_library_with_valid_checksums(exported: Path, tmp_path: Path) -> None:
    for blob in (b"", b"\x7fELF" + bytes(10), b"#!/bin/sh\n"):
        bad = _rewrite(
            exported, tmp_path / "bad.byoc", edit_blob=lambda n, b, blob=blob: blob if n == "library" else b
        )
        with pytest.raises(ArtifactError, match="library"):
            load_executable(bad)


# ---------------------------------------------------------------------------
# item 5: concurrent export_library to one path
# ---------------------------------------------------------------------------


def test_concurrent_exports_to_one_path(exported: Path, tmp_path: Path) -> None:
    """With a fixed `path + ".tmp"`, concurrent exports failed and readers saw a 0-byte file.
    Each export writes its own temporary and renames it: readers always see a whole file."""
    exe = load_executable(exported)
    path = tmp_path / "shared.byoc"
    exe.export_library(str(path))
    want = path.read_bytes()
    failures: list[BaseException] = []
    seen: list[int] = []
    done = threading.Event()

    def export() -> None:
        try:
            for _ in range(15):
                exe.export_library(str(path))
        except BaseException as e:  # noqa: BLE001 - collected and asserted below
            failures.append(e)

    def read() -> None:
        while not done.is_set():
            data = path.read_bytes()
            seen.append(len(data))
            if data != want:
                failures.append(AssertionError(f"a reader saw {len(data)} bytes"))
                return

    writers = [threading.Thread(target=export) for _ in range(4)]
    reader = threading.Thread(target=read)
    reader.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    reader.join()
    assert failures == []
    assert seen
    assert [p.name for p in tmp_path.iterdir()] == ["shared.byoc"]  # no temporary left


def test_failed_export_leaves_no_temporary(tmp_path: Path) -> None:
    writer = ArtifactWriter()
    writer.add(b"data")
    writer.chunks.append(None)  # type: ignore[arg-type]  # the write of this chunk fails
    with pytest.raises(TypeError):
        writer.write(tmp_path / "out.byoc", {})
    assert list(tmp_path.iterdir()) == []


def test_crafted_examplejson_graph_with_valid_checksums(tmp_path: Path) -> None:
    import zlib

    from byoc.runtime.examplejson_module import _HEADER
    from byoc.runtime.examplejson_module import MAGIC as EJ_MAGIC
    from byoc.runtime.examplejson_module import VERSION as EJ_VERSION

    good = tmp_path / "ej.byoc"
    byoc.build(byoc.parse_module(BIG), targets=["examplejson"]).export_library(str(good))
    for payload in (b"{", b"\xff", b"[" * 100_000):
        blob = _HEADER.pack(EJ_MAGIC, EJ_VERSION, 0, zlib.crc32(payload), len(payload)) + payload
        bad = _rewrite(
            good, tmp_path / "bad.byoc", edit_blob=lambda n, b, blob=blob: blob if n == "examplejson" else b
        )
        with pytest.raises(ArtifactError, match="examplejson"):
            load_executable(bad)


def test_export_gets_the_permissions_of_a_plain_open(exported: Path, tmp_path: Path) -> None:
    """The temporary is created private (0600); the renamed file is 0666 minus the umask."""
    mask = os.umask(0o027)
    try:
        from byoc.runtime import artifact

        artifact._umask.cache_clear()
        load_executable(exported).export_library(str(tmp_path / "out.byoc"))
    finally:
        os.umask(mask)
        artifact._umask.cache_clear()
    assert (tmp_path / "out.byoc").stat().st_mode & 0o777 == 0o640
