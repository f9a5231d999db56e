"""The native graph runtime (byoc_graph_runtime.c) with its reference engine, end to end.

Every op the reference engine runs against the numpy reference through `byoc.build`;
the artifact in a fresh process; 8 threads against serial runs; crafted and
corrupted blobs rejected with a message (never a crash); the base and engine
under AddressSanitizer and UndefinedBehaviorSanitizer.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs
from support.paths import ROOT

import byoc
from byoc.runtime import graph_format as gf
from byoc.runtime.artifact import ArtifactError
from byoc.runtime.c_module import CFunctionError
from byoc.runtime.graph_check import GraphCheckError
from byoc.runtime.graph_module import (
    REFERENCE_ENGINE,
    GraphEngine,
    GraphModule,
    GraphRuntimeError,
    default_num_threads,
    needed_libraries,
)


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh library cache for this module (restored afterwards)."""
    path = tmp_path_factory.mktemp("byoc_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


MODEL = """
func.func @main(%x: tensor<2x16xf32>, %y: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %w = nn.constant dense<"0x%W%"> : tensor<8x16xf32>
  %b = nn.constant dense<[1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0]> : tensor<8xf32>
  %0 = nn.dense %x, %w : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = nn.relu %1 : tensor<2x8xf32>
  %3 = nn.add %2, %y : tensor<2x8xf32>
  %4 = nn.tanh %3 : tensor<2x8xf32>
  %5 = nn.multiply %4, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %5 : tensor<2x8xf32>
}
"""


def model_text() -> str:
    w = np.random.default_rng(5).standard_normal((8, 16)).astype(np.float32)
    return MODEL.replace("%W%", w.tobytes().hex().upper())


def random_inputs(module: Any, rng: np.random.Generator) -> list[np.ndarray[Any, Any]]:
    from xdsl.dialects.func import FuncOp

    from byoc.dialects.nn import numpy_dtype

    main = next(op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == "main")
    return [
        rng.standard_normal(tuple(t.get_shape())).astype(numpy_dtype(t.element_type))
        for t in main.function_type.inputs
    ]


# ---------------------------------------------------------------------------
# Every op against the numpy reference
# ---------------------------------------------------------------------------

UNARY = ("relu",)
BINARY = ("add", "subtract", "multiply", "maximum", "minimum")

CASES: dict[str, str] = {
    **{
        f"{op}_{name}": f"""
func.func @main(%a: tensor<{a}xf32>, %b: tensor<{b}xf32>) -> tensor<{o}xf32> {{
  %0 = nn.{op} %a, %b : (tensor<{a}xf32>, tensor<{b}xf32>) -> tensor<{o}xf32>
  func.return %0 : tensor<{o}xf32>
}}"""
        for op in BINARY
        for name, (a, b, o) in {
            "same": ("3x5", "3x5", "3x5"),
            "broadcast": ("2x1x4", "3x1", "2x3x4"),
            "scalar": ("2x3", "1", "2x3"),
        }.items()
    },
    "relu": """
func.func @main(%a: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = nn.relu %a : tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}""",
    "bias_add": """
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<3xf32>) -> tensor<2x3x4xf32> {
  %0 = nn.bias_add %a, %b : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}""",
    "bias_add_last_axis": """
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = nn.bias_add %a, %b {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}""",
    "dense": """
func.func @main(%a: tensor<3x33xf32>, %w: tensor<7x33xf32>) -> tensor<3x7xf32> {
  %0 = nn.dense %a, %w : (tensor<3x33xf32>, tensor<7x33xf32>) -> tensor<3x7xf32>
  func.return %0 : tensor<3x7xf32>
}""",
    "model_with_composite": model_text(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_op_against_the_numpy_reference(name: str) -> None:
    module = byoc.parse_module(CASES[name])
    exe = byoc.build(module, targets=["graphref"])
    host = byoc.build(module)
    assert "graphref" in exe.components
    assert isinstance(exe.components["graphref"], GraphModule)
    offloaded = [op for p in exe.partitions if p.target == "graphref" for op in p.ops]
    assert offloaded, "nothing ran on the graph runtime"
    inputs = random_inputs(module, np.random.default_rng(3))
    got, want = exe.run(*inputs), host.run(*inputs)
    assert_graph_outputs(module, inputs, got, want, what=name)


def test_composites_reach_the_engine_as_one_node() -> None:
    module = byoc.parse_module(CASES["model_with_composite"])
    exe = byoc.build(module, targets=["graphref"])
    ops = [op for p in exe.partitions if p.target == "graphref" for op in p.ops]
    assert "graphref.dense_bias_relu" in ops
    comp = exe.components["graphref"]
    assert sorted(comp.functions) == ["graphref_main_0", "graphref_main_1"]
    # the bias is used by both partitions and by the composite: stored once in the blob
    assert comp.blob.count(np.array([1, -2, 3, -4, 5, -6, 7, -8], np.float32).tobytes()) == 1


# ---------------------------------------------------------------------------
# Artifacts
# ---------------------------------------------------------------------------


def test_export_and_load_in_a_fresh_process(tmp_path: Path) -> None:
    module = byoc.parse_module(CASES["model_with_composite"])
    exe = byoc.build(module, targets=["graphref"])
    inputs = random_inputs(module, np.random.default_rng(4))
    (want,) = exe.run(*inputs)
    exe.export_library(str(tmp_path / "m.byoc"))
    np.save(tmp_path / "x.npy", inputs[0])
    np.save(tmp_path / "y.npy", inputs[1])
    code = (
        "import sys, numpy as np, byoc\n"
        f"d = {str(tmp_path)!r}\n"
        "exe = byoc.load_module(d + '/m.byoc')\n"
        "(out,) = exe.run(np.load(d + '/x.npy'), np.load(d + '/y.npy'))\n"
        "np.save(d + '/out.npy', out)\n"
        "print(type(exe.components['graphref']).__name__)\n"
        "above = sorted(m for m in sys.modules if m.startswith(('byoc.targets', 'byoc.passes', 'byoc.lowering')))\n"
        "assert not above, above\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "GraphModule"
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), want)


def test_a_crafted_graph_blob_in_an_artifact_is_an_artifact_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = byoc.parse_module(CASES["model_with_composite"])
    exe = byoc.build(module, targets=["graphref"])
    comp = exe.components["graphref"]
    blobs = comp.export()
    bad = bytearray(blobs["graph"])
    struct.pack_into("<I", bad, 24, 0xFFFFFFF0)  # the number of constants
    monkeypatch.setattr(comp, "export", lambda: {**blobs, "graph": bytes(bad)})
    exe.export_library(str(tmp_path / "bad.byoc"))  # the artifact's checksums match the bad blob
    with pytest.raises(ArtifactError, match="component 'graphref': graph blob: count 4294967280 .* is larger than the blob"):
        byoc.load_module(tmp_path / "bad.byoc")
    monkeypatch.setattr(comp, "export", lambda: {**blobs, "graph": blobs["graph"][:-7]})
    exe.export_library(str(tmp_path / "short.byoc"))
    with pytest.raises(ArtifactError, match="truncated"):
        byoc.load_module(tmp_path / "short.byoc")
    monkeypatch.setattr(comp, "export", lambda: {**blobs, "metadata": b'{"engine": "dnnl", "format": 1}'})
    exe.export_library(str(tmp_path / "engine.byoc"))
    with pytest.raises(ArtifactError, match="engine is 'reference', expected 'dnnl'"):
        byoc.load_module(tmp_path / "engine.byoc")


# ---------------------------------------------------------------------------
# Crafted blobs: each rule of the C reader
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built() -> tuple[GraphModule, gf.GraphSet]:
    from byoc.context import make_context
    from byoc.dialects.graph import GraphModuleOp
    from byoc.lowering.nn_to_graph import LowerToGraphPass
    from byoc.passes.byoc_pipeline import partition_for

    module = byoc.parse_module(CASES["model_with_composite"])
    partition_for(module, ["graphref"])
    LowerToGraphPass().apply(make_context(), module)
    container = next(op for op in module.walk() if isinstance(op, GraphModuleOp))
    gs = gf.describe(container)
    return GraphModule.build(gf.encode(gs), REFERENCE_ENGINE), gs


def c_load(mod: GraphModule, blob: bytes) -> str | None:
    """None if the C reader accepts `blob` (then frees it), else its message."""
    buf = mod.ffi.from_buffer(blob)
    handle = mod.lib.byoc_graph_module_load(buf, len(blob), 1)
    if handle == mod.ffi.NULL:
        return mod.last_error()
    mod.lib.byoc_graph_module_free(handle)
    return None


def mutated(gs: gf.GraphSet, edit: Any) -> bytes:
    import copy

    gs = copy.deepcopy(gs)
    edit(gs)
    return gf.encode(gs)


def _set(obj: Any, attr: str, value: Any) -> None:
    setattr(obj, attr, value)


EDITS: dict[str, tuple[Any, str]] = {
    "use before definition": (
        lambda gs: _set(gs.graphs[0].nodes[1], "inputs", [7, 1]),
        "reads entry 7 before it is defined",
    ),
    "entry id out of range": (
        lambda gs: _set(gs.graphs[0].nodes[1], "inputs", [2, 99]),
        "refers to entry 99 of 8",
    ),
    "missing constant": (
        lambda gs: _set(gs.graphs[0].entries[3], "name", "nope"),
        "binds constant 'nope', which the blob lacks",
    ),
    "constant of another shape": (
        lambda gs: _set(gs.graphs[0].entries[4], "shape", (4, 2)),
        "another dtype or shape than its use",
    ),
    "rank above 8": (
        lambda gs: _set(gs.graphs[0].entries[0], "shape", (1,) * 9),
        "rank 9, above 8",
    ),
    "values adding up to more than 2**40 bytes": (
        lambda gs: [_set(e, "shape", (1 << 18, 1 << 19)) for e in gs.graphs[0].entries[5:]],
        "its values add up to more than 1099511627776 bytes",
    ),
    "negative dim": (
        lambda gs: _set(gs.graphs[0].entries[0], "shape", (2, -16)),
        "has dim -16",
    ),
    "two graphs of one name": (
        lambda gs: _set(gs.graphs[1], "name", gs.graphs[0].name),
        "two graphs named 'graphref_main_0'",
    ),
    "two constants of one name": (
        lambda gs: _set(gs.constants[1], "name", gs.constants[0].name),
        "two constants named",
    ),
    "an input not taken": (
        lambda gs: _set(gs.graphs[0], "inputs", [0]),
        "entry 1 is an input the graph does not take",
    ),
    "a value defined twice": (
        lambda gs: _set(gs.graphs[0].nodes[1], "outputs", [2]),
        "defined twice",
    ),
    "an output inside a composite": (
        lambda gs: _set(gs.graphs[0], "outputs", [5]),
        "output 0 is a value inside a composite",
    ),
    "a body reading outside the composite": (
        lambda gs: _set(gs.graphs[0].nodes[0], "inputs", [0, 3]),
        "neither an input of the composite nor computed before it inside",
    ),
    "a node without an op": (
        lambda gs: _set(gs.graphs[0].nodes[1], "op", ""),
        "has no op name",
    ),
    "no outputs": (lambda gs: _set(gs.graphs[1], "outputs", []), "has no outputs"),
    "nested body": (
        lambda gs: _set(gs.graphs[0].nodes[0].body[0], "body", [gs.graphs[0].nodes[1]]),
        "inside a composite has a body",
    ),
    "a duplicate attribute": (
        lambda gs: _set(gs.graphs[0].nodes[0].body[1], "attrs", [("axis", 0, 1), ("axis", 0, 1)]),
        "has attribute 'axis' twice",
    ),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_the_reader_rejects_a_crafted_blob(built: tuple[GraphModule, gf.GraphSet], case: str) -> None:
    mod, gs = built
    assert c_load(mod, gf.encode(gs)) is None
    edit, message = EDITS[case]
    problem = c_load(mod, mutated(gs, edit))
    assert problem is not None and message in problem, problem


def test_the_reader_rejects_bad_headers_and_fields(built: tuple[GraphModule, gf.GraphSet]) -> None:
    mod, gs = built
    blob = gf.encode(gs)

    def patched(offset: int, fmt: str, value: int) -> bytes:
        b = bytearray(blob)
        struct.pack_into(fmt, b, offset, value)
        return bytes(b)

    assert "bad magic" in (c_load(mod, b"NOTAGRPH" + blob[8:]) or "")
    assert "format version 2" in (c_load(mod, patched(8, "<I", 2)) or "")
    assert "unknown flags" in (c_load(mod, patched(12, "<I", 1)) or "")
    assert "truncated" in (c_load(mod, blob[:-1]) or "")
    longer = bytearray(blob + b"\0\0\0\0")
    struct.pack_into("<Q", longer, 16, len(longer))  # the size field agrees: trailing bytes
    assert "4 bytes after the last graph" in (c_load(mod, bytes(longer)) or "")
    # the first constant's dtype code (after count u32, name u32 + bytes)
    name_len = struct.unpack_from("<I", blob, 28)[0]
    assert "unknown dtype" in (c_load(mod, patched(32 + name_len, "<B", 9)) or "")
    with pytest.raises(ValueError, match="truncated"):
        gf.check_header(blob[:-3])
    with pytest.raises(GraphCheckError, match="count 4294967295 at byte 24 is larger than the blob"):
        GraphModule(patched(24, "<I", 0xFFFFFFFF), mod._library, engine="reference")


FUZZ = r"""
import sys, numpy as np
from byoc.runtime.graph_module import GraphModule
blob = open(sys.argv[1], "rb").read()
lib_bytes = open(sys.argv[2], "rb").read()
mod = GraphModule(blob, lib_bytes, engine="reference", num_threads=1)
ffi, lib = mod.ffi, mod.lib
accepted = rejected = ran = 0

def attempt(b):
    global accepted, rejected, ran
    buf = ffi.from_buffer(b)
    h = lib.byoc_graph_module_load(buf, len(b), 1)
    if h == ffi.NULL:
        rejected += 1
        assert ffi.string(lib.byoc_last_error()), "a rejection without a message"
        return
    accepted += 1
    # run every graph the mutated blob holds, with arguments of its own signature
    sub = GraphModule.__new__(GraphModule)
    for g in range(lib.byoc_graph_module_num_graphs(h)):
        n_in, n_out = ffi.new("int32_t*"), ffi.new("int32_t*")
        lib.byoc_graph_module_num_args(h, g, n_in, n_out)
        arrays, tensors, keep = [], ffi.new("DLTensor[]", n_in[0] + n_out[0]), []
        argv = ffi.new("DLTensor*[]", n_in[0] + n_out[0])
        code, bits, ndim = ffi.new("uint8_t*"), ffi.new("uint8_t*"), ffi.new("int32_t*")
        shape, name = ffi.new("int64_t[8]"), ffi.new("const char**")
        ok = True
        for a in range(n_in[0] + n_out[0]):
            lib.byoc_graph_module_arg(h, g, a, code, bits, ndim, shape, name)
            dims = [shape[i] for i in range(ndim[0])]
            if np.prod(dims, dtype=np.float64) * bits[0] / 8 > 1 << 26:
                ok = False
                break
            dt = {(2, 32): np.float32, (2, 64): np.float64, (2, 16): np.float16}.get((code[0], bits[0]), np.uint8 if bits[0] == 8 else np.dtype(f"u{bits[0] // 8}"))
            arr = np.ones(dims, dtype=dt)
            keep.append(arr)
            t = tensors[a]
            t.data = ffi.from_buffer(arr) if arr.size else ffi.NULL
            keep.append(t.data)
            t.device.device_type, t.device.device_id, t.ndim = 1, 0, ndim[0]
            t.dtype.code, t.dtype.bits, t.dtype.lanes = code[0], bits[0], 1
            sh = ffi.new("int64_t[]", dims or [0])
            keep.append(sh)
            t.shape, t.strides, t.byte_offset = sh, ffi.NULL, 0
            argv[a] = tensors + a
        if ok:
            lib.byoc_graph_run(h, g, argv, n_in[0] + n_out[0])
            ran += 1
    lib.byoc_graph_module_free(h)

for n in range(len(blob)):
    attempt(blob[:n])
for i in range(len(blob)):
    for v in (0x00, 0xFF, (blob[i] + 1) & 0xFF, (blob[i] - 1) & 0xFF):
        if v != blob[i]:
            attempt(blob[:i] + bytes([v]) + blob[i + 1:])
print(accepted, rejected, ran)
"""


def test_every_truncation_and_byte_change_is_rejected_or_runs(
    built: tuple[GraphModule, gf.GraphSet], tmp_path: Path
) -> None:
    """In a child process, so that a crash would fail the test rather than the suite."""
    mod, gs = built
    (tmp_path / "g.bin").write_bytes(gf.encode(gs))
    (tmp_path / "lib.so").write_bytes(mod._library)
    (tmp_path / "fuzz.py").write_text(FUZZ)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, str(tmp_path / "fuzz.py"), str(tmp_path / "g.bin"), str(tmp_path / "lib.so")],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    accepted, rejected, ran = map(int, done.stdout.split())
    size = len(gf.encode(gs))
    assert rejected >= size  # every truncation, at least
    assert accepted > 0 and ran > 0  # changed constant data still loads and runs


# ---------------------------------------------------------------------------
# Calls, threads
# ---------------------------------------------------------------------------


def test_arguments_are_checked_like_the_generated_c(built: tuple[GraphModule, gf.GraphSet]) -> None:
    mod, _ = built
    f = mod.get_function("graphref_main_0")
    x = np.ones((2, 16), np.float32)
    y = np.ones((2, 8), np.float32)
    assert f(x, y).shape == (2, 8)
    with pytest.raises(CFunctionError, match=r"graphref_main_0: input 'y' \(#1\) has shape \[2, 9\], expected \[2, 8\]"):
        f(x, np.ones((2, 9), np.float32))
    with pytest.raises(CFunctionError, match="has dtype float64, expected float32"):
        f(x.astype(np.float64), y)
    with pytest.raises(CFunctionError, match=r"expected 3 arguments \(2 inputs, 1 outputs\), got 4"):
        f(x, y, np.empty((2, 8), np.float32), np.empty((2, 8), np.float32))
    with pytest.raises(CFunctionError, match="overlaps"):
        f(x, y, y)
    with pytest.raises(KeyError, match="no graph 'nope'"):
        mod.get_function("nope")


def test_eight_threads_agree_with_serial_runs() -> None:
    module = byoc.parse_module(CASES["model_with_composite"])
    exe = byoc.build(module, targets=["graphref"])
    rng = np.random.default_rng(8)
    batches = [random_inputs(module, rng) for _ in range(16)]
    serial = [exe.run(*b)[0] for b in batches]
    results: dict[tuple[int, int], np.ndarray[Any, Any]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(t: int) -> None:
        try:
            start.wait()
            for rep in range(25):
                i = (t * 7 + rep) % len(batches)
                results[(t, rep)] = exe.run(*batches[i])[0]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    comp = exe.components["graphref"]
    n = 0
    while any(th.is_alive() for th in threads):  # the thread count changes under the runs
        comp.set_num_threads(1 + n % 3)
        n += 1
    for th in threads:
        th.join()
    assert not errors, errors
    for (t, rep), out in results.items():
        np.testing.assert_array_equal(out, serial[(t * 7 + rep) % len(batches)])


def test_modules_unload_cleanly_after_threads_ran_them(built: tuple[GraphModule, gf.GraphSet]) -> None:
    """Each module is its own instance of the library: loading and dropping many, run from
    threads that exit before or after the module goes, frees them and leaves no hook behind."""
    import gc
    import weakref

    mod, gs = built
    blob = gf.encode(gs)
    x, y = np.ones((2, 16), np.float32), np.ones((2, 8), np.float32)
    want = mod.get_function("graphref_main_0")(x, y)
    refs = []
    for _ in range(20):
        m = GraphModule(blob, mod._library, engine="reference", num_threads=1)
        f = m.get_function("graphref_main_0")
        th = threading.Thread(target=lambda f=f: np.testing.assert_array_equal(f(x, y), want))
        th.start()
        th.join()
        refs.append(weakref.ref(m))
        del m, f
    gc.collect()
    assert all(r() is None for r in refs)


def test_needed_libraries_are_the_elf_dependencies(built: tuple[GraphModule, gf.GraphSet]) -> None:
    mod, _ = built
    assert "libc.so.6" in needed_libraries(mod._library)
    assert needed_libraries(b"not a library") == []
    assert needed_libraries(mod._library[:256]) == []  # its dynamic section cut off


def test_freeing_the_last_dnnl_module_leaves_what_it_links_loaded() -> None:
    """In a fresh process, with two threads per run and libgomp's idle threads spinning without
    end (`OMP_WAIT_POLICY=active`): freeing the only dnnl module must not unload libgomp (nor
    oneDNN) under the threads of its last parallel region. It did, and the process died with
    SIGSEGV, since no other library there linked libgomp."""
    from byoc.targets.dnnl import missing_reason

    if missing_reason() is not None:
        pytest.skip(f"oneDNN extra absent: {missing_reason()}")
    code = (
        "import gc, weakref, numpy as np, byoc\n"
        f"exe = byoc.build(byoc.parse_module({LOADED_MODEL!r}), targets=['dnnl'])\n"
        "x = np.ones((64, 256), np.float32)\n"
        "for _ in range(3):\n"
        "    exe(x)\n"
        "module = weakref.ref(exe.components['dnnl'])\n"
        "del exe\n"
        "gc.collect()\n"
        "assert module() is None, 'the dnnl module is still alive'\n"
        "maps = open('/proc/self/maps').read()\n"
        "print('libgomp' in maps, 'libdnnl' in maps)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_WAIT_POLICY="active", BYOC_NUM_THREADS="2")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True"]


def test_set_num_threads(built: tuple[GraphModule, gf.GraphSet], monkeypatch: pytest.MonkeyPatch) -> None:
    mod, gs = built
    mod.set_num_threads(3)
    assert mod.num_threads == 3 == mod.lib.byoc_graph_module_num_threads(mod._handle)
    with pytest.raises(ValueError, match="between 1 and 1024, got 0"):
        mod.set_num_threads(0)
    monkeypatch.setenv("BYOC_NUM_THREADS", "2")
    assert default_num_threads() == 2
    other = GraphModule(gf.encode(gs), mod._library, engine="reference")
    assert other.num_threads == 2 == other.lib.byoc_graph_module_num_threads(other._handle)
    monkeypatch.setenv("BYOC_NUM_THREADS", "zero")
    with pytest.raises(ValueError, match="BYOC_NUM_THREADS"):
        default_num_threads()


LOADED_MODEL = """
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %w = nn.constant dense<0.001> : tensor<256x256xf32>
  %0 = nn.dense %x, %w : (tensor<64x256xf32>, tensor<256x256xf32>) -> tensor<64x256xf32>
  %1 = nn.relu %0 : tensor<64x256xf32>
  func.return %1 : tensor<64x256xf32>
}
"""


@pytest.mark.parametrize("target", ["graphref", "dnnl"])
def test_set_num_threads_takes_effect_while_eight_threads_keep_running(target: str) -> None:
    """A thread-count change waits for the runs in flight, not for a stream of new ones:
    with a reader-preferring lock it waited up to seconds behind eight looping runners."""
    if target == "dnnl":
        from byoc.targets.dnnl import missing_reason

        if missing_reason() is not None:
            pytest.skip(f"oneDNN extra absent: {missing_reason()}")
    exe = byoc.build(byoc.parse_module(LOADED_MODEL), targets=[target])
    assert target in exe.components
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    want = exe(x)[0]
    stop = threading.Event()
    errors: list[BaseException] = []

    def runner() -> None:
        try:
            while not stop.is_set():
                np.testing.assert_allclose(exe(x)[0], want, rtol=1e-5, atol=1e-6)
        except BaseException as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=runner) for _ in range(8)]
    for t in threads:
        t.start()
    waits = []
    try:
        time.sleep(0.2)
        for i in range(12):
            start = time.perf_counter()
            exe.set_num_threads(1 + i % 2)
            waits.append(time.perf_counter() - start)
            time.sleep(0.02)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    waits.sort()
    assert waits[len(waits) // 2] < 0.1 and waits[-1] < 1.0, waits


def test_a_graph_target_declares_its_engine() -> None:
    from byoc.targets import Target

    with pytest.raises(ValueError, match="needs a graph_engine"):
        Target(name="g", lowering="lower-to-graph", component="graph")
    with pytest.raises(ValueError, match="only a graph component has one"):
        Target(name="g", lowering="lower-to-c", component="c", graph_engine=REFERENCE_ENGINE)
    with pytest.raises(ValueError, match="at least one C source"):
        GraphEngine("e", ())


TINY_ENGINE = r"""
#include "byoc_graph_engine.h"
#include "tiny.h"
#include "vendor.h"

typedef struct { const byoc_graph* g; } tiny_state;

static void* tiny_init(const byoc_graph* g, int32_t num_threads, size_t* ws) {
  (void)num_threads;
  for (int32_t i = 0; i < g->num_nodes; ++i)
    if (strcmp(g->nodes[i].op, "nn.relu") != 0) {
      byoc_fail("%s: tiny runs nn.relu only, not '%s'", g->name, g->nodes[i].op);
      return NULL;
    }
  if (g->num_nodes != 1) {
    byoc_fail("%s: tiny runs one node", g->name);
    return NULL;
  }
  tiny_state* s = (tiny_state*)malloc(sizeof *s);
  if (s == NULL) return NULL;
  s->g = g;
  *ws = 0;
  return s;
}

static int32_t tiny_run(void* state, DLTensor* const* in, DLTensor* const* out, void* ws) {
  const tiny_state* s = (const tiny_state*)state;
  (void)ws;
  const byoc_graph_entry* e = &s->g->entries[s->g->nodes[0].outputs[0]];
  tiny_relu((const float*)byoc_tensor_data(in[0]), (float*)byoc_tensor_data(out[0]), e->numel);
  return 0;
}

static void tiny_destroy(void* state) { free(state); }

static const byoc_graph_engine tiny = {BYOC_GRAPH_ENGINE_ABI, "tiny", tiny_init, tiny_run, NULL,
                                       tiny_destroy};
const byoc_graph_engine* byoc_graph_engine_def(void) { return &tiny; }
"""


def test_a_target_supplies_only_its_engine(tmp_path: Path) -> None:
    """An out-of-tree engine with a header of its own and a vendor include directory: a
    Target with lowering lower-to-graph, component graph and its GraphEngine is all it takes."""
    from xdsl.dialects.builtin import f32

    from byoc.targets import Target
    from byoc.targets.predicates import dtypes

    src = tmp_path / "engine"
    vendor = tmp_path / "vendor"
    src.mkdir()
    vendor.mkdir()
    (src / "tiny_engine.c").write_text(TINY_ENGINE)
    (src / "tiny.h").write_text(
        "static inline void tiny_relu(const float* x, float* y, int64_t n) {\n"
        "  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;\n}\n"
    )
    # an unused static function: an error under -Werror, unless the directory is -isystem
    (vendor / "vendor.h").write_text("static int vendor_unused(void) { return 0; }\n")
    engine = GraphEngine("tiny", (src / "tiny_engine.c",), include_dirs=(vendor,))
    name = f"tiny{os.getpid()}"
    byoc.register_target(Target(
        name=name, support={"nn.relu": dtypes(f32)},
        lowering="lower-to-graph", component="graph", graph_engine=engine,
    ))
    module = byoc.parse_module(CASES["relu"])
    exe = byoc.build(module, targets=[name])
    assert exe.components[name].engine == "tiny"
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(exe.run(x)[0], np.maximum(x, 0))
    before = engine.source()
    (src / "tiny.h").write_text((src / "tiny.h").read_text() + "/* edited */\n")
    assert engine.source() != before  # an edited engine header is a new cache key
    from byoc.dialects import graph as gd

    other = byoc.parse_module("""
    graph.module {
      graph.graph @g {
        %0 = graph.input "x" : tensor<4xf32>
        %1 = graph.node "nn.add"(%0, %0) {} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        graph.output %1 : tensor<4xf32>
      }
    }""")
    container = next(op for op in other.walk() if isinstance(op, gd.GraphModuleOp))
    with pytest.raises(GraphRuntimeError, match="g: tiny runs nn.relu only, not 'nn.add'"):
        GraphModule.build(gf.encode(gf.describe(container)), engine)


def test_an_engine_that_cannot_plan_reports_why(tmp_path: Path) -> None:
    """The engine's init message reaches Python (an op the reference engine lacks)."""
    from byoc.dialects import graph as gd

    t = byoc.parse_module("""
    graph.module {
      graph.graph @g {
        %0 = graph.input "x" : tensor<4xf32>
        %1 = graph.node "nn.tanh"(%0) {} : (tensor<4xf32>) -> tensor<4xf32>
        graph.output %1 : tensor<4xf32>
      }
    }""")
    container = next(op for op in t.walk() if isinstance(op, gd.GraphModuleOp))
    with pytest.raises(GraphRuntimeError, match="g: the reference engine has no kernel for 'nn.tanh'"):
        GraphModule.build(gf.encode(gf.describe(container)), REFERENCE_ENGINE)


def test_outputs_the_base_fills_and_every_attribute_kind() -> None:
    """Outputs that are an input, a constant, or one value listed twice are copied by the
    base; attributes of every kind cross the format, and a property the op lacks is an
    error naming the node before the engine sees it."""
    from byoc.dialects import graph as gd

    t = byoc.parse_module("""
    graph.module {
      graph.constant @k dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
      graph.graph @g {
        %0 = graph.input "x" : tensor<4xf32>
        %1 = graph.const @k : tensor<4xf32>
        %2 = graph.node "nn.relu"(%0) {i = -3 : i64, f = 2.5 : f64, s = "NCHW", ints = array<i64: 1, -2>, floats = array<f64: 0.5, -1.5>} : (tensor<4xf32>) -> tensor<4xf32>
        graph.output %2, %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
      }
    }""")
    container = next(op for op in t.walk() if isinstance(op, gd.GraphModuleOp))
    gs = gf.describe(container)
    kinds = {name: kind for name, kind, _ in gs.graphs[0].nodes[0].attrs}
    assert kinds == {"i": gf.ATTR_INT, "f": gf.ATTR_FLOAT, "s": gf.ATTR_STRING,
                     "ints": gf.ATTR_INTS, "floats": gf.ATTR_FLOATS}
    assert gf.decode(gf.encode(gs)).graphs[0].nodes[0].attrs == gs.graphs[0].nodes[0].attrs
    with pytest.raises(GraphCheckError, match=r"node 0 \('nn.relu'\): 'nn.relu' has no property"):
        GraphModule.build(gf.encode(gs), REFERENCE_ENGINE)
    gs.graphs[0].nodes[0].attrs = []
    mod = GraphModule.build(gf.encode(gs), REFERENCE_ENGINE)
    x = np.array([-1.0, 0.5, -2.0, 3.0], np.float32)
    relu, same, k, relu2 = mod.get_function("g")(x)
    np.testing.assert_array_equal(relu, np.maximum(x, 0))
    np.testing.assert_array_equal(relu2, relu)
    np.testing.assert_array_equal(same, x)
    np.testing.assert_array_equal(k, [1, 2, 3, 4])


# ---------------------------------------------------------------------------
# Sanitizers
# ---------------------------------------------------------------------------

HARNESS = r"""
#include <pthread.h>
#include <stdio.h>

static uint8_t* read_file(const char* path, long* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* p = (uint8_t*)malloc((size_t)*size + 1);
  if (fread(p, 1, (size_t)*size, f) != (size_t)*size) { free(p); p = NULL; }
  fclose(f);
  return p;
}

typedef struct { byoc_graph_module* m; float* x; float* y; float* out; int ok; } job_t;

static int run_once(byoc_graph_module* m, float* x, float* y, float* out) {
  int64_t sx[2] = {2, 16}, sy[2] = {2, 8};
  DLTensor tx = {x, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, sx, NULL, 0};
  DLTensor ty = {y, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, sy, NULL, 0};
  DLTensor to = {out, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, sy, NULL, 0};
  DLTensor* args[3] = {&tx, &ty, &to};
  int32_t g = byoc_graph_module_find(m, "graphref_main_0");
  if (g < 0) return -1;
  return byoc_graph_run(m, g, args, 3);
}

static void* worker(void* p) {
  job_t* j = (job_t*)p;
  float mine[16];
  j->ok = 1;
  for (int r = 0; r < 50; ++r) {
    if (run_once(j->m, j->x, j->y, mine) != 0) { j->ok = 0; break; }
    if (memcmp(mine, j->out, sizeof mine) != 0) { j->ok = 0; break; }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  long size = 0;
  uint8_t* blob = read_file(argv[1], &size);
  if (!blob) return 2;
  byoc_retain();
  byoc_graph_module* m = byoc_graph_module_load(blob, (uint64_t)size, 2);
  if (!m) { fprintf(stderr, "load: %s\n", byoc_last_error()); return 1; }
  float x[32], y[16], out[16];
  for (int i = 0; i < 32; ++i) x[i] = (float)((i * 37) % 11) - 5.0f;
  for (int i = 0; i < 16; ++i) y[i] = (float)((i * 13) % 7) - 3.0f;
  if (run_once(m, x, y, out) != 0) { fprintf(stderr, "run: %s\n", byoc_last_error()); return 1; }
  if (byoc_graph_module_set_num_threads(m, 1) != 0) return 1;
  pthread_t t[4];
  job_t jobs[4];
  for (int i = 0; i < 4; ++i) {
    jobs[i] = (job_t){m, x, y, out, 0};
    pthread_create(&t[i], NULL, worker, &jobs[i]);
  }
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; ++i) if (!jobs[i].ok) { fprintf(stderr, "thread %d differs\n", i); return 1; }
  FILE* f = fopen(argv[2], "wb");
  fwrite(out, sizeof(float), 16, f);
  fclose(f);
  byoc_graph_module_free(m);
  /* every truncation and every byte changed: rejected, or loaded and run, never a fault */
  long accepted = 0;
  uint8_t* copy = (uint8_t*)malloc((size_t)size);
  for (long n = 0; n < size; ++n) {
    uint8_t* exact = (uint8_t*)malloc(n ? (size_t)n : 1);  /* ASan sees reads past n */
    memcpy(exact, blob, (size_t)n);
    byoc_graph_module* b = byoc_graph_module_load(exact, (uint64_t)n, 1);
    if (b) { accepted++; byoc_graph_module_free(b); }
    free(exact);
  }
  for (long i = 0; i < size; ++i) {
    for (int v = 0; v < 3; ++v) {
      memcpy(copy, blob, (size_t)size);
      copy[i] = v == 0 ? 0 : v == 1 ? 0xFF : (uint8_t)(blob[i] + 1);
      byoc_graph_module* b = byoc_graph_module_load(copy, (uint64_t)size, 1);
      if (b) { accepted++; run_once(b, x, y, out); byoc_graph_module_free(b); }
    }
  }
  printf("%ld\n", accepted);
  free(copy);
  free(blob);
  byoc_release();
  return 0;
}
"""


def test_sanitizers_on_the_runtime_base(built: tuple[GraphModule, gf.GraphSet], tmp_path: Path) -> None:
    mod, gs = built
    source = REFERENCE_ENGINE.source() + HARNESS
    (tmp_path / "harness.c").write_text(source)
    (tmp_path / "g.bin").write_bytes(gf.encode(gs))
    from byoc.runtime.toolchain import INCLUDE_DIR

    exe = tmp_path / "harness"
    flags = ["-std=c11", "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror", "-pthread"]
    done = subprocess.run(
        ["cc", *flags, f"-I{INCLUDE_DIR}", str(tmp_path / "harness.c"), "-o", str(exe), "-lm"],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    run = subprocess.run(
        [str(exe), str(tmp_path / "g.bin"), str(tmp_path / "out.bin")],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "runtime error" not in run.stderr, run.stderr
    assert int(run.stdout) > 0
    x = np.array([(i * 37) % 11 - 5 for i in range(32)], np.float32).reshape(2, 16)
    y = np.array([(i * 13) % 7 - 3 for i in range(16)], np.float32).reshape(2, 8)
    want = mod.get_function("graphref_main_0")(x, y)
    got = np.fromfile(tmp_path / "out.bin", dtype=np.float32).reshape(2, 8)
    np.testing.assert_array_equal(got, want)
