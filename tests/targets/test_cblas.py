"""The cblas target end to end: every composite (and each kernel path) against the reference.

All cases go into one `@main`, partitioned for cblas alone and compiled once per
tile setting: the default blocks, and blocks so small that every conv2d is cut
into tiles that end inside output rows and every dense into blocks of rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs, assert_within, graph_bounds
from support.paths import ROOT, TESTS
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue

import byoc
import byoc.lowering.nn_to_c.cblas as cblas_lowering
from byoc.dialects import c as c_dialect
from byoc.dialects import nn
from byoc.targets import cblas
from byoc.tools import byoc_run

Array = np.ndarray[Any, Any]


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh library cache for this module (restored afterwards)."""
    path = tmp_path_factory.mktemp("byoc_cblas_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


# --------------------------------------------------------------------------
# Building the cases
# --------------------------------------------------------------------------


class Graph:
    """@main under construction: inputs (with the arrays fed to them), constants, ops."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.block = Block()
        self.inputs: list[Array] = []
        self.results: list[SSAValue] = []

    def rand(self, *shape: int, scale: float = 1.0) -> Array:
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def arg(self, array: Array) -> SSAValue:
        self.inputs.append(array)
        return self.block.insert_arg(
            nn.tensor(array.shape, nn.element_type_of(array.dtype)), len(self.block.args)
        )

    def const(self, array: Array) -> SSAValue:
        op = nn.ConstantOp.from_array(np.ascontiguousarray(array))
        self.block.add_op(op)
        return op.result

    def op(self, cls: Any, *operands: SSAValue, **attrs: Any) -> SSAValue:
        op = cls.build(*operands, **attrs)
        self.block.add_op(op)
        return op.results[0]

    def module(self) -> ModuleOp:
        self.block.add_op(func.ReturnOp(*self.results))
        types = ([a.type for a in self.block.args], [r.type for r in self.results])
        main = func.FuncOp("main", types, Region(self.block))
        return ModuleOp([main])


@dataclass(frozen=True)
class Case:
    name: str
    composite: str
    """The composite the case must become (`cblas.<name>`)."""
    build: Callable[[Graph], SSAValue]


def _conv(
    c: int,
    o: int,
    hw: tuple[int, int],
    k: tuple[int, int],
    *,
    n: int = 1,
    epilogue: str = "",
    relu: bool = False,
    runtime_weight: bool = False,
    **attrs: Any,
) -> Callable[[Graph], SSAValue]:
    """conv2d with an epilogue: letters in order, b = bias_add, a = add (O,1,1), B = batch_norm,
    m = multiply (1,O,1,1), s = add of one value, R = bias and batch-norm statistics as inputs."""

    def build(g: Graph) -> SSAValue:
        x = g.arg(g.rand(n, c, *hw))
        w_arr = g.rand(o, c, *k, scale=(c * k[0] * k[1]) ** -0.5)
        w = g.arg(w_arr) if runtime_weight else g.const(w_arr)
        y = g.op(nn.Conv2DOp, x, w, **attrs)
        vec = g.arg if "R" in epilogue else g.const
        for step in epilogue.replace("R", ""):
            if step == "b":
                y = g.op(nn.BiasAddOp, y, vec(g.rand(o)))
            elif step == "a":
                y = g.op(nn.AddOp, y, g.const(g.rand(o, 1, 1)))
            elif step == "m":
                y = g.op(nn.MultiplyOp, g.const(g.rand(1, o, 1, 1)), y)  # the chain second
            elif step == "s":
                y = g.op(nn.AddOp, y, g.arg(g.rand(1)))
            elif step == "B":
                stats = [g.rand(o), g.rand(o), g.rand(o), np.abs(g.rand(o)) + 0.5]
                y = g.op(nn.BatchNormOp, y, *(vec(s) for s in stats), epsilon=1e-3)
        return g.op(nn.ReluOp, y) if relu else y

    return build


def _dense(
    lead: tuple[int, ...], k: int, n: int, *, epilogue: str = "", relu: bool = False
) -> Callable[[Graph], SSAValue]:
    """dense with an epilogue: b = bias_add, a = add (N,), r = add (1, N) first operand,
    B = batch_norm."""

    def build(g: Graph) -> SSAValue:
        x = g.arg(g.rand(*lead, k))
        y = g.op(nn.DenseOp, x, g.const(g.rand(n, k, scale=k**-0.5)))
        for step in epilogue:
            if step == "b":
                y = g.op(nn.BiasAddOp, y, g.const(g.rand(n)), axis=-1)
            elif step == "a":
                y = g.op(nn.AddOp, y, g.const(g.rand(n)))
            elif step == "r":
                y = g.op(nn.AddOp, g.const(g.rand(1, n)), y)
            elif step == "B":
                stats = [g.rand(n), g.rand(n), g.rand(n), np.abs(g.rand(n)) + 0.5]
                y = g.op(nn.BatchNormOp, y, *(g.const(s) for s in stats), axis=-1)
        return g.op(nn.ReluOp, y) if relu else y

    return build


def _matmul(
    a: tuple[int, ...], b: tuple[int, ...], const_b: bool = False
) -> Callable[[Graph], SSAValue]:
    def build(g: Graph) -> SSAValue:
        rhs = g.const(g.rand(*b)) if const_b else g.arg(g.rand(*b))
        return g.op(nn.MatmulOp, g.arg(g.rand(*a)), rhs)

    return build


PAD1 = {"padding": (1, 1, 1, 1)}
CASES = [
    # im2col: few channels, strides, padding, dilation, batch > 1
    Case("im2col_stride2_pad", "conv2d", _conv(3, 4, (9, 9), (3, 3), n=2, strides=(2, 2), **PAD1)),
    Case(
        "im2col_dilated_asymmetric",
        "conv2d_relu",
        _conv(
            5, 6, (10, 11), (3, 2), relu=True, strides=(1, 2), dilation=(2, 1), padding=(2, 1, 0, 3)
        ),
    ),
    Case(
        "im2col_bias_relu",
        "conv2d_bias_relu",
        _conv(8, 16, (12, 12), (5, 5), n=2, epilogue="b", relu=True, padding=(2, 2, 2, 2)),
    ),
    Case(
        "im2col_1x1_strided",
        "conv2d_bias",
        _conv(6, 7, (9, 9), (1, 1), epilogue="B", strides=(2, 2)),
    ),
    Case("im2col_1x1_padded", "conv2d", _conv(6, 7, (5, 5), (1, 1), padding=(1, 0, 0, 1))),
    Case("im2col_few_pixels", "conv2d_relu", _conv(64, 8, (7, 7), (3, 3), relu=True, **PAD1)),
    Case(
        "im2col_runtime_weight",
        "conv2d_bias_relu",
        _conv(64, 8, (6, 6), (3, 3), epilogue="b", relu=True, runtime_weight=True, **PAD1),
    ),
    # one GEMM per tap: at least TAPS_MIN_CHANNELS channels, TAPS_MIN_SIZE channels x pixels
    Case(
        "taps_bias_relu",
        "conv2d_bias_relu",
        _conv(48, 5, (27, 26), (3, 3), n=2, epilogue="b", relu=True, **PAD1),
    ),
    Case(
        "taps_dilated",
        "conv2d_bias",
        _conv(64, 12, (24, 23), (3, 2), epilogue="a", dilation=(2, 2), padding=(1, 0, 2, 3)),
    ),
    Case("taps_unpadded", "conv2d", _conv(50, 3, (27, 27), (2, 2))),
    Case(
        "taps_densenet_chain",
        "conv2d_bias_relu",
        _conv(48, 8, (27, 27), (3, 3), epilogue="bBma", relu=True, **PAD1),
    ),
    Case(
        "taps_stride2",
        "conv2d_bias_relu",
        _conv(48, 6, (53, 53), (3, 3), epilogue="b", relu=True, strides=(2, 2), **PAD1),
    ),
    Case("taps_1x1_stride2", "conv2d", _conv(64, 5, (46, 46), (1, 1), n=2, strides=(2, 2))),
    Case(
        "taps_strided_dilated",
        "conv2d_relu",
        _conv(
            50,
            4,
            (57, 75),
            (3, 2),
            relu=True,
            strides=(2, 3),
            dilation=(2, 3),
            padding=(2, 1, 1, 2),
        ),
    ),
    Case(
        "im2col_stride3_dilated",
        "conv2d",
        _conv(3, 4, (14, 13), (3, 3), strides=(3, 2), dilation=(2, 1), padding=(1, 2, 0, 1)),
    ),
    # the direct 1x1 path
    Case("direct_1x1", "conv2d_relu", _conv(9, 10, (6, 7), (1, 1), n=3, relu=True)),
    Case(
        "direct_1x1_add", "conv2d_bias_relu", _conv(16, 24, (5, 5), (1, 1), epilogue="a", relu=True)
    ),
    Case("direct_1x1_bn", "conv2d_bias", _conv(16, 8, (4, 4), (1, 1), epilogue="B")),
    Case("direct_1x1_scale_only", "conv2d_bias", _conv(4, 6, (3, 5), (1, 1), epilogue="m")),
    # epilogue vectors known only at run time (computed per call over the channels)
    Case(
        "runtime_bias_bn",
        "conv2d_bias_relu",
        _conv(3, 6, (5, 5), (3, 3), epilogue="RbB", relu=True, **PAD1),
    ),
    Case("runtime_scalar_add", "conv2d_bias", _conv(4, 6, (5, 5), (1, 1), epilogue="s")),
    # dense: sgemv for one row, sgemm (w transposed) for more; bias_add or add
    Case("dense_gemv_bias_relu", "dense_bias_relu", _dense((1,), 33, 21, epilogue="b", relu=True)),
    Case("dense_rows_add", "dense_bias", _dense((37,), 16, 12, epilogue="a")),
    Case(
        "dense_row_constant_first", "dense_bias_relu", _dense((5,), 8, 9, epilogue="r", relu=True)
    ),
    Case("dense_3d_bn", "dense_bias", _dense((2, 3), 7, 10, epilogue="B")),
    Case("dense_plain", "dense", _dense((70,), 6, 5)),
    Case("dense_relu", "dense_relu", _dense((1,), 12, 17, relu=True)),
    # matmul: numpy batching
    Case("matmul_shared_rhs", "matmul", _matmul((2, 3, 4, 5), (5, 6), const_b=True)),
    Case("matmul_batched", "matmul", _matmul((3, 4, 5), (3, 5, 6))),
    Case("matmul_broadcast_lhs", "matmul", _matmul((4, 5), (2, 5, 6))),
    Case("matmul_broadcast_both", "matmul", _matmul((2, 1, 3, 4), (1, 3, 4, 2))),
    Case("matmul_vector_lhs", "matmul", _matmul((5,), (2, 5, 6))),
    Case("matmul_vector_rhs", "matmul", _matmul((2, 3, 5), (5,))),
]


def _module() -> tuple[ModuleOp, list[Array]]:
    g = Graph(np.random.default_rng(0))
    for case in CASES:
        g.results.append(case.build(g))
    module = g.module()
    module.verify()
    return module, g.inputs


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    module, inputs = _module()
    expected = byoc.run_reference(module, *inputs)
    exes = {"default": byoc.build(module, targets=["cblas"])}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cblas_lowering, "TILE_BYTES", 2048)
        mp.setattr(cblas_lowering, "MIN_TILE", 3)
        exes["small tiles"] = byoc.build(module, targets=["cblas"])
    bounds = graph_bounds(module, inputs, expected)
    return {"module": module, "inputs": inputs, "expected": expected, "exes": exes, "bounds": bounds}


def test_every_case_is_one_cblas_composite(built: dict[str, Any]) -> None:
    for exe in built["exes"].values():
        ops = Counter(op for p in exe.partitions for op in p.ops)
        assert {p.target for p in exe.partitions} == {"cblas"}
        assert ops == Counter(f"cblas.{c.composite}" for c in CASES)
        assert not [s for s in exe.plan.steps if s.kind == "kernel"], "nothing left on the host"


@pytest.mark.parametrize("tiles", ["default", "small tiles"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_composite_equals_reference(built: dict[str, Any], case: Case, tiles: str) -> None:
    i = CASES.index(case)
    outputs = built["exes"][tiles].run(*built["inputs"])
    assert_within(outputs[i], built["expected"][i], built["bounds"][i], case.name)


BASELINE_SCRIPT = """
import sys
sys.path[:0] = sys.argv[1:4]
import ctypes, os
import numpy as np
import byoc
from support.bounds import assert_graph_outputs
import test_cblas
module, inputs = test_cblas._module()
exe = byoc.build(module, targets=["cblas"])
outputs = exe.run(*inputs)
import scipy_openblas32 as ob
lib = ctypes.CDLL(os.path.join(ob.get_lib_dir(), ob.get_library(fullname=True)))
lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
print(lib.scipy_openblas_get_corename().decode())
assert_graph_outputs(module, inputs, outputs, byoc.run_reference(module, *inputs))
"""


def test_composites_under_the_baseline_dispatch(tmp_path: Path) -> None:
    """OpenBLAS picks its kernels once per process, so the baseline level runs every
    composite in a fresh process with BYOC_CPU_DISPATCH=baseline: OpenBLAS takes its
    Nehalem (SSE4.2, no AVX) kernels, the C code its baseline build, and the results
    are within the f32 bound of the reference, as the best path's are above."""
    tests, here, root = str(TESTS), str(TESTS / "targets"), str(ROOT)
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env.update(BYOC_CPU_DISPATCH="baseline", BYOC_CACHE_DIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", BASELINE_SCRIPT, tests, here, root],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["Nehalem"]


def test_kernel_paths_are_the_expected_ones(built: dict[str, Any]) -> None:
    """The source calls each conv2d algorithm (im2col, per-tap GEMMs, direct 1x1) and sgemv."""
    source = built["exes"]["default"].components["cblas"].source
    for callee in (
        "byoc_cblas_conv2d_f32(",
        "byoc_cblas_conv2d_bias_f32(",
        "byoc_cblas_conv2d_taps_f32(",
        "byoc_cblas_conv2d_taps_bias_f32(",
        "byoc_cblas_conv2d_taps_affine_f32(",
        "byoc_cblas_conv2d_1x1_f32(",
        "byoc_cblas_conv2d_1x1_affine_f32(",
        "byoc_cblas_dense_bias_f32(",
        "byoc_cblas_dense_affine_f32(",
        "byoc_cblas_matmul_f32(",
    ):
        assert callee in source, callee


def test_concurrent_calls_share_nothing(built: dict[str, Any]) -> None:
    """Each thread has its own workspace (im2col tiles, padded images, wide outputs)."""
    exe = built["exes"]["small tiles"]
    rng = np.random.default_rng(1)
    feeds = [
        [rng.standard_normal(a.shape).astype(a.dtype) for a in built["inputs"]] for _ in range(4)
    ]
    want = [exe.run(*f) for f in feeds]
    errors: list[str] = []

    def worker(k: int) -> None:
        for _ in range(10):
            for got, ref in zip(exe.run(*feeds[k]), want[k], strict=True):
                if not np.array_equal(got, ref, equal_nan=True):
                    errors.append(f"thread {k}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _harness(symbol: str, n_in: int, shapes: list[tuple[int, ...]], n_consts: int) -> str:
    """A C main: reads the constants and inputs from argv[1] (each in a buffer of exactly its
    size), calls the partition's packed entry, writes the outputs to argv[2]."""
    lines = [
        "static void* read_exact_(FILE* f, size_t n) {",
        "  void* p = malloc(n);",
        "  if (p == NULL || fread(p, 1, n, f) != n) abort();",
        "  return p;",
        "}",
        "int main(int argc, char** argv) {",
        "  if (argc != 3) return 64;",
        '  FILE* in = fopen(argv[1], "rb");',
        '  FILE* out = fopen(argv[2], "wb");',
        "  if (!in || !out) return 65;",
        f"  const void* consts[{max(n_consts, 1)}];",
        f"  for (int i = 0; i < {n_consts}; ++i) {{",
        "    int64_t n;",
        "    if (fread(&n, 8, 1, in) != 1) abort();",
        "    consts[i] = read_exact_(in, (size_t)n);",
        "  }",
        f'  if (byoc_init(consts, {n_consts}) != 0) {{ fprintf(stderr, "%s\\n", byoc_last_error()); return 2; }}',
        f"  DLTensor t[{len(shapes)}];",
        f"  DLTensor* args[{len(shapes)}];",
    ]
    for i, shape in enumerate(shapes):
        nbytes = 4 * int(np.prod(shape))
        dims = ", ".join(map(str, shape))
        data = f"read_exact_(in, {nbytes})" if i < n_in else f"malloc({nbytes})"
        lines += [
            f"  static int64_t shape{i}[] = {{{dims}}};",
            f"  t[{i}] = (DLTensor){{{data}, {{kDLCPU, 0}}, {len(shape)}, {{kDLFloat, 32, 1}}, shape{i}, NULL, 0}};",
            f"  args[{i}] = &t[{i}];",
        ]
    lines += [
        f"  if ({symbol}(args, {len(shapes)}) != 0) {{",
        '    fprintf(stderr, "%s\\n", byoc_last_error());',
        "    return 3;",
        "  }",
    ]
    for i, shape in enumerate(shapes[n_in:], start=n_in):
        lines.append(f"  fwrite(t[{i}].data, 1, {4 * int(np.prod(shape))}, out);")
    lines += [
        f"  for (int i = 0; i < {len(shapes)}; ++i) free(t[i].data);",
        f"  for (int i = 0; i < {n_consts}; ++i) free((void*)consts[i]);",
        "  fclose(in);",
        "  fclose(out);",
        "  return 0;",
        "}",
    ]
    return "\n".join(lines) + "\n"


def test_sanitizers_on_a_standalone_harness(tmp_path: Path, built: dict[str, Any]) -> None:
    """Every kernel path, with small tiles, under AddressSanitizer and UndefinedBehaviorSanitizer
    (OpenBLAS itself is not instrumented): im2col bounds, the padded copy and its slack."""
    from byoc.context import make_context
    from byoc.lowering.c_build import signatures_of
    from byoc.lowering.emit.c import emit_c_source
    from byoc.lowering.nn_to_c import LowerToCPass, constants_of
    from byoc.passes.byoc_pipeline import partition_for
    from byoc.runtime.c_module import c_entry_symbol
    from byoc.runtime.toolchain import INCLUDE_DIR

    module = built["module"].clone()
    partition_for(module, ["cblas"])
    main = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )
    (call,) = [op for op in main.body.block.ops if isinstance(op, func.CallOp)]
    ret = main.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    inputs = [built["inputs"][list(main.body.block.args).index(v)] for v in call.arguments]
    expected = [built["expected"][list(ret.arguments).index(r)] for r in call.results]
    bounds = [built["bounds"][list(ret.arguments).index(r)] for r in call.results]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cblas_lowering, "TILE_BYTES", 2048)
        mp.setattr(cblas_lowering, "MIN_TILE", 3)
        LowerToCPass(const_threshold=8).apply(make_context(), module)
    unit = next(op for op in module.ops if isinstance(op, c_dialect.ModuleOp))
    consts = constants_of(unit)
    ((symbol, sig),) = signatures_of(module).items()
    shapes = [s.shape for s in (*sig.inputs, *sig.outputs)]
    entry = c_entry_symbol(symbol)  # the partition's exported C name
    source = emit_c_source(module) + _harness(entry, len(sig.inputs), shapes, len(consts))
    (tmp_path / "harness.c").write_text(source)
    flags, libs = cblas.build_options()
    sanitize = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                "-fno-sanitize-recover=all"]  # fmt: skip
    compile_flags = [
        f for f in flags if f not in ("-shared", "-fPIC", "-fvisibility=hidden", "-O2")
    ]
    exe = tmp_path / "harness"
    done = subprocess.run(
        ["cc", *compile_flags, *sanitize, f"-I{INCLUDE_DIR}", str(tmp_path / "harness.c"),
         "-o", str(exe), "-lm", "-pthread", *libs],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "in.bin", "wb") as fh:
        for arr in consts:
            fh.write(np.int64(arr.nbytes).tobytes())
            fh.write(np.ascontiguousarray(arr).tobytes())
        for arr in inputs:
            fh.write(np.ascontiguousarray(arr).tobytes())
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="print_stacktrace=1")
    run = subprocess.run(
        [str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "runtime error" not in run.stderr, run.stderr
    raw = (tmp_path / "out.bin").read_bytes()
    offset = 0
    for spec, want, bound in zip(sig.outputs, expected, bounds, strict=True):
        got = np.frombuffer(raw, np.float32, int(np.prod(spec.shape)), offset).reshape(spec.shape)
        offset += got.nbytes
        assert_within(got, want, bound)
    assert offset == len(raw)


# --------------------------------------------------------------------------
# Composition with ccompiler, byoc-run, artifacts, threads
# --------------------------------------------------------------------------

MIXED = """
func.func @main(%x: tensor<2x16x10x10xf32>) -> tensor<2x5xf32> {
  %w = nn.constant dense<0.05> : tensor<16x16x3x3xf32>
  %b = nn.constant dense<[0.1, -0.2, 0.3, 0.0, 0.5, -0.1, 0.2, 0.1, 0.1, -0.2, 0.3, 0.0, 0.5, -0.1, 0.2, 0.1]> : tensor<16xf32>
  %dw = nn.constant dense<0.3> : tensor<16x1x3x3xf32>
  %fw = nn.constant dense<0.01> : tensor<5x400xf32>
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<2x16x10x10xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x10x10xf32>
  %1 = nn.bias_add %0, %b : (tensor<2x16x10x10xf32>, tensor<16xf32>) -> tensor<2x16x10x10xf32>
  %2 = nn.relu %1 : tensor<2x16x10x10xf32>
  %3 = nn.conv2d %2, %dw {groups = 16 : i64} : (tensor<2x16x10x10xf32>, tensor<16x1x3x3xf32>) -> tensor<2x16x8x8xf32>
  %4 = nn.max_pool2d %3 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<2x16x8x8xf32>) -> tensor<2x16x4x4xf32>
  %5 = nn.reshape %4 {newshape = array<i64: 2, 256>} : (tensor<2x16x4x4xf32>) -> tensor<2x256xf32>
  %6 = nn.tanh %3 : tensor<2x16x8x8xf32>
  %7 = nn.reshape %6 {newshape = array<i64: 2, 1024>} : (tensor<2x16x8x8xf32>) -> tensor<2x1024xf32>
  %8 = nn.strided_slice %7 {begin = array<i64: 0, 0>, end = array<i64: 2, 144>, strides = array<i64: 1, 1>} : (tensor<2x1024xf32>) -> tensor<2x144xf32>
  %9 = nn.concatenate %5, %8 {axis = 1 : i64} : (tensor<2x256xf32>, tensor<2x144xf32>) -> tensor<2x400xf32>
  %10 = nn.dense %9, %fw : (tensor<2x400xf32>, tensor<5x400xf32>) -> tensor<2x5xf32>
  func.return %10 : tensor<2x5xf32>
}
"""


def test_gemms_on_cblas_the_rest_on_ccompiler() -> None:
    module = byoc.parse_module(MIXED)
    exe = byoc.build(module, targets=["cblas", "ccompiler"])
    by_target = Counter((p.target, op) for p in exe.partitions for op in p.ops)
    assert by_target[("cblas", "cblas.conv2d_bias_relu")] == 1
    assert by_target[("cblas", "cblas.dense")] == 1
    assert by_target[("ccompiler", "nn.conv2d")] == 1, "the depthwise conv2d stays on ccompiler"
    assert by_target[("ccompiler", "nn.max_pool2d")] == 1
    x = np.random.default_rng(2).standard_normal((2, 16, 10, 10)).astype(np.float32)
    got = exe.run(x)
    assert_graph_outputs(module, [x], got, byoc.run_reference(module, x))


def test_byoc_run_reports_both_targets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "mixed.mlir"
    model.write_text(MIXED)
    assert byoc_run.main([str(model), "--targets", "cblas,ccompiler", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("cblas_", "ccompiler_"))]
    assert {row[1] for row in rows} == {"cblas", "ccompiler"}
    assert "outputs match the reference" in out


_LOAD_SCRIPT = """
import json, sys
import numpy as np
import byoc
from byoc.targets import cblas
exe = byoc.load_module(sys.argv[1])
data = np.load(sys.argv[2])
(got,) = exe.run(data["x"])
np.save(sys.argv[2] + ".got.npy", got)
print(json.dumps({
    "targets": sorted({p.target for p in exe.partitions}),
    "threads": cblas.get_num_threads(),
}))
"""


def _fresh_process(tmp_path: Path, artifact: Path, env: dict[str, str]) -> dict[str, Any]:
    script = tmp_path / "load.py"
    script.write_text(_LOAD_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(artifact), str(tmp_path / "io.npz")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_artifact_loads_in_a_fresh_process(tmp_path: Path) -> None:
    """The exported library finds OpenBLAS by its run path; nothing is recompiled, and the
    loading process runs OpenBLAS on one thread unless BYOC_CBLAS_THREADS says otherwise."""
    module = byoc.parse_module(MIXED)
    exe = byoc.build(module, targets=["cblas", "ccompiler"])
    artifact = tmp_path / "mixed.byoc"
    exe.export_library(str(artifact))
    x = np.random.default_rng(3).standard_normal((2, 16, 10, 10)).astype(np.float32)
    np.savez(tmp_path / "io.npz", x=x)
    env = {k: v for k, v in os.environ.items() if k != cblas.THREADS_ENV}
    env.update(BYOC_CACHE_DIR=str(tmp_path / "fresh_cache"), OPENBLAS_NUM_THREADS="2", CC="false")
    report = _fresh_process(tmp_path, artifact, env)
    assert report["targets"] == ["cblas", "ccompiler"]
    # within the float error bound of the reference, as the building process's run is: the
    # summation order of OpenBLAS's small-matrix kernels may follow the input's alignment
    got = np.load(str(tmp_path / "io.npz") + ".got.npy")
    assert_graph_outputs(module, [x], [got], byoc.run_reference(module, x))
    assert report["threads"] == 1
    report = _fresh_process(tmp_path, artifact, {**env, cblas.THREADS_ENV: "2"})
    assert report["threads"] == 2


def test_set_num_threads() -> None:
    before = cblas.get_num_threads()
    try:
        cblas.set_num_threads(2)
        assert cblas.get_num_threads() == 2
        with pytest.raises(ValueError, match="at least 1 thread"):
            cblas.set_num_threads(0)
    finally:
        cblas.set_num_threads(before)
    assert cblas.get_num_threads() == before


def test_build_options_link_the_wheel() -> None:
    import scipy_openblas32

    flags, libs = cblas.build_options()
    assert f"-I{scipy_openblas32.get_include_dir()}" in flags
    assert libs == (
        f"-L{scipy_openblas32.get_lib_dir()}",
        "-lscipy_openblas",
        f"-Wl,-rpath,{scipy_openblas32.get_lib_dir()}",
    )
