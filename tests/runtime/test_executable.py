"""Executable, host plan, input validation, DLPack inputs, threads and artifacts."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs
from support.paths import EXAMPLES
from xdsl.passes import PassPipeline

import byoc
from byoc.passes import MergeCompilerRegionsPass, PartitionPass
from byoc.runtime.artifact import MAGIC, ArtifactError
from byoc.runtime.executable import InputError
from byoc.runtime.loaders import load_module


def _module(name: str) -> Any:
    return byoc.parse_module((EXAMPLES / name).read_text())


def _seed_inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((10, 10)).astype(np.float32) for _ in range(4)]


class DLPackOnly:
    """An array holder that is not an ndarray and exports only through DLPack."""

    def __init__(self, array: np.ndarray):
        self._array = array

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._array.__dlpack_device__()


def test_host_only_build_matches_reference() -> None:
    module = _module("small_cnn.mlir")
    exe = byoc.build(module)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    assert_graph_outputs(module, [x], exe(x), byoc.run_reference(module, x))
    assert exe.partitions == []


def test_repr_names_targets_partitions_and_threads() -> None:
    module = _module("small_cnn.mlir")
    exe = byoc.build(module, targets=["examplejson", "ccompiler"], num_threads=2)
    assert repr(exe) == (
        "<Executable targets: examplejson; partitions: [@examplejson_main_0 (examplejson, 8 ops)]; "
        "threads: 2>"
    )
    assert repr(byoc.build(module, num_threads=1)) == (
        "<Executable targets: none (host only); partitions: []; threads: 1>"
    )


def test_repr_of_many_partitions_names_the_first_and_counts_them() -> None:
    # relu, tanh, relu, ...: the relus tagged for examplejson, the tanhs on the host
    chain = "\n".join(
        f"  %{i + 1} = nn.relu %{i} {{byoc.target = \"examplejson\"}} : tensor<4xf32>"
        if i % 2 == 0
        else f"  %{i + 1} = nn.tanh %{i} : tensor<4xf32>"
        for i in range(11)
    )
    module = byoc.parse_module(
        f"func.func @main(%0: tensor<4xf32>) -> tensor<4xf32> {{\n{chain}\n"
        "  func.return %11 : tensor<4xf32>\n}"
    )
    PassPipeline((MergeCompilerRegionsPass(), PartitionPass())).apply(byoc.make_context(), module)
    exe = byoc.build(module, num_threads=1)
    assert [p.symbol for p in exe.partitions] == [f"examplejson_main_{i}" for i in range(6)]
    assert repr(exe) == (
        "<Executable targets: examplejson; partitions: [@examplejson_main_0 (examplejson, 1 ops), "
        "@examplejson_main_1 (examplejson, 1 ops), @examplejson_main_2 (examplejson, 1 ops), "
        "@examplejson_main_3 (examplejson, 1 ops), ... 6 in all]; threads: 1>"
    )


def test_params_bind_named_inputs() -> None:
    module = _module("seed_subgraph.mlir")
    a, b, c, d = _seed_inputs()
    exe = byoc.build(module, params={"d": d})
    assert exe.input_names == ["a", "b", "c"]
    assert_graph_outputs(module, [a, b, c, d], exe(a, b, c), [(a + b - c) * d])
    with pytest.raises(ValueError, match="'nope' is not an input"):
        byoc.build(module, params={"nope": d})


def test_named_and_positional_inputs() -> None:
    exe = byoc.build(_module("seed_subgraph.mlir"))
    a, b, c, d = _seed_inputs()
    np.testing.assert_array_equal(exe(a, b, d=d, c=c)[0], exe.run(a, b, c, d)[0])


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((1, 2), {"zz": 0}, "unknown input 'zz'"),
        ((), {}, "missing input"),
        ((0, 0, 0, 0, 0), {}, "takes 4 inputs"),
        (("shape",), {}, "input 'a' has shape"),
        (("dtype",), {}, "input 'a' has dtype float64"),
        (("strided",), {}, "input 'a' is not C-contiguous"),
        (("twice",), {"a": 0}, "input 'a' given twice"),
    ],
)
def test_input_validation_names_the_input(args: tuple, kwargs: dict, message: str) -> None:
    exe = byoc.build(_module("seed_subgraph.mlir"))
    good = _seed_inputs()
    bad = {
        "shape": np.zeros((10, 11), np.float32),
        "dtype": np.zeros((10, 10), np.float64),
        "strided": np.zeros((10, 20), np.float32)[:, ::2],
        "twice": good[0],
    }
    if args and isinstance(args[0], str):
        call_args = [bad[args[0]], *good[1:]]
    else:
        call_args = list(args)
    with pytest.raises(InputError, match=message):
        exe(*call_args, **kwargs)


def test_dlpack_input_that_is_not_an_ndarray() -> None:
    exe = byoc.build(_module("seed_subgraph.mlir"))
    xs = _seed_inputs()
    wrapped = [DLPackOnly(x) for x in xs]
    assert not isinstance(wrapped[0], np.ndarray)
    np.testing.assert_array_equal(exe(*wrapped)[0], exe(*xs)[0])


def test_threads_equal_serial() -> None:
    exe = byoc.build(_module("small_cnn.mlir"))
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(8)]
    expected = [exe(x)[0] for x in inputs]
    failures: list[str] = []

    def worker(k: int) -> None:
        for i in range(100):
            j = (k + i) % len(inputs)
            if not np.array_equal(exe(inputs[j])[0], expected[j]):
                failures.append(f"thread {k} call {i}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_artifact_round_trip_in_a_fresh_process(tmp_path: Path) -> None:
    module = _module("small_cnn.mlir")
    exe = byoc.build(module)
    path = tmp_path / "cnn.byoc"
    exe.export_library(str(path))
    x = np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", exe(x)[0])
    code = (
        "import numpy as np, byoc, sys;"
        f"exe = byoc.load_module(r'{path}');"
        f"x = np.load(r'{tmp_path / 'x.npy'}');"
        f"want = np.load(r'{tmp_path / 'want.npy'}');"
        "sys.exit(0 if np.array_equal(exe(x)[0], want) else 3)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_artifact_stores_each_constant_once(tmp_path: Path) -> None:
    w = np.arange(4096, dtype=np.float32)
    text = """
    func.func @main(%x: tensor<4096xf32>, %w1: tensor<4096xf32>, %w2: tensor<4096xf32>) -> tensor<4096xf32> {
      %0 = nn.add %x, %w1 : tensor<4096xf32>
      %1 = nn.multiply %0, %w2 : tensor<4096xf32>
      func.return %1 : tensor<4096xf32>
    }"""
    exe = byoc.build(byoc.parse_module(text), params={"w1": w, "w2": w.copy()})
    path = tmp_path / "m.byoc"
    exe.export_library(str(path))
    size = path.stat().st_size
    assert w.nbytes <= size < 2 * w.nbytes


def _exported(tmp_path: Path) -> bytes:
    path = tmp_path / "seed.byoc"
    byoc.build(_module("small_cnn.mlir")).export_library(str(path))
    return path.read_bytes()


@pytest.mark.parametrize("cut", [0, 4, 12, 20, 100, -33, -1])
def test_truncated_artifact_is_rejected(tmp_path: Path, cut: int) -> None:
    data = _exported(tmp_path)
    bad = tmp_path / "bad.byoc"
    bad.write_bytes(data[:cut] if cut >= 0 else data[: len(data) + cut])
    with pytest.raises(ArtifactError, match="truncated|corrupted|not a byoc artifact"):
        load_module(str(bad))


@pytest.mark.parametrize("where", ["header", "payload", "end"])
def test_flipped_byte_is_rejected(tmp_path: Path, where: str) -> None:
    data = bytearray(_exported(tmp_path))
    index = {"header": 30, "payload": len(data) // 2 + 40, "end": len(data) - 1}[where]
    data[index] ^= 0x55
    bad = tmp_path / "bad.byoc"
    bad.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="corrupted|checksum"):
        load_module(str(bad))


def test_foreign_and_newer_files_are_rejected(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.byoc"
    foreign.write_bytes(b"\x7fELF" + bytes(200))
    with pytest.raises(ArtifactError, match="bad magic"):
        load_module(str(foreign))
    data = bytearray(_exported(tmp_path))
    assert bytes(data[:8]) == MAGIC
    data[8:12] = (99).to_bytes(4, "little")
    newer = tmp_path / "newer.byoc"
    newer.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="version 99 is newer"):
        load_module(str(newer))
