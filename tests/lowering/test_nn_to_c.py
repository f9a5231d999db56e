"""The C codegen end to end: lower-to-c, -t c, the compiled library and its ABI.

Every supported op (tests/support/c_codegen_cases.py) is put in one module, lowered in
both modes and compiled once per session (one translation unit each, built
with -Werror); each case is then run and compared with the numpy reference.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.bounds import assert_within, graph_bounds, reduction_bound
from support.c_codegen_cases import (
    CASES,
    Case,
    case_module,
    make_partition,
    random_dag,
    random_inputs,
)
from support.dag_strategies import INT_SAFE_OPS, build_module, dags
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr

from byoc.context import make_context
from byoc.diagnostics import EmitError, PassError
from byoc.dialects import c, nn
from byoc.interpreters import run_reference
from byoc.lowering.c_build import build_c_module
from byoc.lowering.emit.c import emit_c_source
from byoc.lowering.nn_to_c import LowerToCPass
from byoc.runtime.c_module import CFunctionError, CModule, c_entry_symbol
from byoc.runtime.toolchain import CompileError, compile_source
from byoc.targets.ccompiler import SUPPORTED_OPS, unsupported_reason

Array = np.ndarray[Any, Any]
CASE_BY_NAME = {c.name: c for c in CASES}


# one pytest-xdist worker runs this file (`--dist loadgroup`), so its session fixtures (every
# case compiled in three modes, the random partitions) are built once in the run, not per worker
pytestmark = pytest.mark.xdist_group("c-codegen-cases")


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh library cache for this session (restored afterwards)."""
    path = tmp_path_factory.mktemp("byoc_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


def lower(module: ModuleOp, **options: Any) -> ModuleOp:
    LowerToCPass(**options).apply(make_context(), module)
    module.verify()
    return module


def references(module: ModuleOp, names: list[str], inputs: dict[str, list[Array]]) -> dict[str, list[Array]]:
    with np.errstate(all="ignore"):
        return {n: run_reference(module, *inputs[n], function=n) for n in names}


MODES = ["fused", "per-op", "fused-baseline"]
"""Lowering modes the cases are compiled in; `-baseline` compiles with
BYOC_CPU_DISPATCH=baseline (no AVX2/FMA kernels), the rest with the CPU's best."""


@pytest.fixture(scope="session")
def compiled(cache: Path) -> dict[str, Any]:
    """Every mode of every case, compiled once; inputs, expected outputs and bounds."""
    rng = np.random.default_rng(0)
    names = [f"ccompiler_{c.name}" for c in CASES]
    inputs = {f"ccompiler_{c.name}": random_inputs(c, rng) for c in CASES}
    module = case_module(CASES)
    expected = references(module, names, inputs)
    libs = {}
    for mode in MODES:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BYOC_CPU_DISPATCH", "baseline" if mode.endswith("-baseline") else "auto")
            unit = lower(case_module(CASES), fuse=mode.startswith("fused"))
            libs[mode] = build_c_module(unit)
    bounds = {n: graph_bounds(module, inputs[n], expected[n], function=n) for n in names}
    return {"libs": libs, "inputs": inputs, "expected": expected, "bounds": bounds}


def check_close(got: Array, want: Array, bound: Array, what: str) -> None:
    """Floats within the f32 bound of the case (tests/support/bounds.py), NaNs in the same places;
    integers equal."""
    assert_within(got, want, bound, what)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_op_matches_reference(compiled: dict[str, Any], case: Case, mode: str) -> None:
    name = f"ccompiler_{case.name}"
    f = compiled["libs"][mode].get_function(name)
    got = f(*compiled["inputs"][name])
    check_close(got, compiled["expected"][name][0], compiled["bounds"][name][0], f"{case.name} ({mode})")


def test_every_supported_op_has_a_case() -> None:
    covered = {
        op.name for c_ in CASES for op in make_partition("probe", c_).body.walk() if isinstance(op, nn.NNOp)
    }
    missing = set(SUPPORTED_OPS) - covered
    assert not missing, f"supported but untested: {sorted(missing)}"


# ---------------------------------------------------------------------------
# Random partitions
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def random_partitions(cache: Path) -> dict[str, Any]:
    rng = np.random.default_rng(2024)
    funcs = []
    specs = {}
    for k in range(24):
        f, args = random_dag(f"ccompiler_dag_{k}", rng, int(rng.integers(3, 48)))
        funcs.append(f)
        specs[f.sym_name.data] = args
    module = ModuleOp([f.clone() for f in funcs])
    names = list(specs)
    inputs = {n: [rng.standard_normal(s).astype(np.float32) for s, _ in specs[n]] for n in names}
    expected = references(module, names, inputs)
    libs = {
        mode: build_c_module(lower(ModuleOp([f.clone() for f in funcs]), fuse=mode == "fused"))
        for mode in ("fused", "per-op")
    }
    bounds = {n: graph_bounds(module, inputs[n], expected[n], function=n) for n in names}
    return {"libs": libs, "inputs": inputs, "expected": expected, "names": names, "bounds": bounds}


@pytest.mark.parametrize("mode", ["fused", "per-op"])
def test_random_partitions_match_reference(random_partitions: dict[str, Any], mode: str) -> None:
    lib = random_partitions["libs"][mode]
    for name in random_partitions["names"]:
        outs = lib.get_function(name)(*random_partitions["inputs"][name])
        outs = outs if isinstance(outs, tuple) else (outs,)
        want = random_partitions["expected"][name]
        assert len(outs) == len(want)
        bounds = random_partitions["bounds"][name]
        for j, (g, w, b) in enumerate(zip(outs, want, bounds, strict=True)):
            check_close(g, w, b, f"{name} output {j} ({mode})")


def test_fused_mode_uses_fewer_kernels(random_partitions: dict[str, Any]) -> None:
    fused, per_op = (random_partitions["libs"][m].source for m in ("fused", "per-op"))
    assert fused.count("static void ") < per_op.count("static void ")


# ---------------------------------------------------------------------------
# Through the partitioning pipeline
# ---------------------------------------------------------------------------

PIPELINE = """
func.func @main(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %n: tensor<4x8xi16>) -> (tensor<1x4x8x8xf32>, tensor<4x8xi16>, tensor<1x4x8x8xf32>) {
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x8x8xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %2 = nn.relu %1 : tensor<1x4x8x8xf32>
  %3 = nn.add %n, %n : tensor<4x8xi16>
  %4 = nn.sigmoid %2 : tensor<1x4x8x8xf32>
  %5 = nn.multiply %4, %1 : tensor<1x4x8x8xf32>
  func.return %2, %3, %5 : tensor<1x4x8x8xf32>, tensor<4x8xi16>, tensor<1x4x8x8xf32>
}
"""


def test_pipeline_partitions_compile_and_match(cache: Path) -> None:
    from byoc.context import parse_module
    from byoc.passes.byoc_pipeline import partition_for

    module = parse_module(PIPELINE)
    partition_for(module, ["ccompiler"])
    parts = [
        f.sym_name.data
        for f in module.ops
        if isinstance(f, func.FuncOp) and "byoc.compiler" in f.attributes
    ]
    assert parts, "nothing was offloaded"
    rng = np.random.default_rng(3)
    inputs: dict[str, list[Array]] = {}
    for name in parts:
        f = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == name)
        for t in f.function_type.inputs.data:
            assert nn.numpy_dtype(t.element_type) != np.int16  # i16 stays on the host
        inputs[name] = [
            rng.standard_normal(nn.shape_of(t)).astype(np.float32) for t in f.function_type.inputs.data
        ]
    expected = references(module, parts, inputs)
    bounds = {n: graph_bounds(module, inputs[n], expected[n], function=n) for n in parts}
    lib = build_c_module(lower(module))
    for name in parts:
        outs = lib.get_function(name)(*inputs[name])
        outs = outs if isinstance(outs, tuple) else (outs,)
        for g, w, b in zip(outs, expected[name], bounds[name], strict=True):
            check_close(g, w, b, name)


# ---------------------------------------------------------------------------
# ABI errors
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def seed(compiled: dict[str, Any]) -> Any:
    return compiled["libs"]["fused"].get_function("ccompiler_add_1")  # (2,3,4) + (4,)


def _args(rng: np.random.Generator) -> list[Array]:
    return [rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda a: [a[0], np.zeros(5, np.float32)], r"input 'x1' \(#1\) has shape \[5\], expected \[4\]"),
        (lambda a: [a[0].astype(np.float64), a[1]], r"input 'x0' \(#0\) has dtype float64, expected float32"),
        (lambda a: [a[0], a[1].astype(np.int32)], r"input 'x1' \(#1\) has dtype int32, expected float32"),
        (lambda a: [a[0][None], a[1]], r"input 'x0' \(#0\) has rank 4 .*expected rank 3"),
        (lambda a: [a[0]], r"expected 3 arguments \(2 inputs, 1 output\), got 1"),
        (
            lambda a: [np.ascontiguousarray(a[0].transpose(1, 0, 2)).transpose(1, 0, 2), a[1]],
            r"input 'x0' \(#0\) is not contiguous",
        ),
        (lambda a: [a[0], a[1], np.zeros((2, 3, 5), np.float32)], r"output 'out0' \(#0\) has shape \[2, 3, 5\]"),
        (lambda a: [a[0], a[1], a[0]], r"output 'out0' overlaps input 'x0'"),
    ],
    ids=["shape", "dtype64", "dtype_int", "rank", "count", "strided", "out_shape", "overlap"],
)
def test_abi_errors_name_the_argument(seed: Any, mutate: Any, message: str) -> None:
    rng = np.random.default_rng(1)
    with pytest.raises(CFunctionError, match=message):
        seed(*mutate(_args(rng)))
    # the function still works afterwards
    a = _args(rng)
    np.testing.assert_allclose(seed(*a), a[0] + a[1])


def test_python_side_argument_errors(seed: Any) -> None:
    a = _args(np.random.default_rng(2))
    readonly = np.zeros((2, 3, 4), np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="output 'out0' .* is read-only"):
        seed(a[0], a[1], readonly)
    with pytest.raises(TypeError, match="input 'x0' .* has dtype object"):
        seed(np.empty((2, 3, 4), dtype=object), a[1])
    with pytest.raises(TypeError, match="output 'out0' .* must be a numpy array"):
        seed(a[0], a[1], [[0.0]])


def test_inputs_through_dlpack_and_lists(seed: Any) -> None:
    a = _args(np.random.default_rng(3))

    class Exporter:
        def __init__(self, arr: Array) -> None:
            self.arr = arr

        def __dlpack__(self, **kw: Any) -> Any:
            return self.arr.__dlpack__(**kw)

        def __dlpack_device__(self) -> Any:
            return self.arr.__dlpack_device__()

    np.testing.assert_allclose(seed(Exporter(a[0]), a[1].tolist()), a[0] + a[1])


def test_cached_arguments_follow_new_arrays(seed: Any) -> None:
    rng = np.random.default_rng(4)
    out = np.empty((2, 3, 4), np.float32)
    for _ in range(3):
        a = _args(rng)
        seed(a[0], a[1], out)  # same output object, new inputs
        np.testing.assert_allclose(out, a[0] + a[1])
        a[0][...] = 1.0  # same objects, new contents
        seed(a[0], a[1], out)
        np.testing.assert_allclose(out, np.broadcast_to(1.0 + a[1], out.shape))


# ---------------------------------------------------------------------------
# Constants, cache, compile errors, threads
# ---------------------------------------------------------------------------

BIG = """
func.func private @ccompiler_big(%x: tensor<1x2048xf32>) -> tensor<1x4xf32> attributes {byoc.compiler = "ccompiler"} {
  %w = nn.constant dense<1.0> : tensor<4x2048xf32>
  %b = nn.constant dense<[0.5, -1.0, 2.0, 0.25]> : tensor<4xf32>
  %0 = nn.dense %x, %w : (tensor<1x2048xf32>, tensor<4x2048xf32>) -> tensor<1x4xf32>
  %1 = nn.bias_add %0, %b {axis = -1 : i64} : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  func.return %1 : tensor<1x4xf32>
}
"""


def test_large_constants_are_bound_at_load_not_printed(cache: Path) -> None:
    from byoc.context import parse_module

    module = lower(parse_module(BIG))
    source = emit_c_source(module)
    globals_ = [op for op in module.walk() if isinstance(op, c.GlobalOp)]
    assert sorted(g.init_index is not None for g in globals_) == [False, True]
    assert "2048" not in source.split("ccompiler_big_c0")[1].split(";")[0]  # a pointer, no data
    assert "0.25f" in source  # the small bias is printed
    lib = build_c_module(module)
    x = np.random.default_rng(5).standard_normal((1, 2048)).astype(np.float32)
    want = (x.sum() + np.array([[0.5, -1, 2, 0.25]])).astype(np.float32)
    bound = reduction_bound(x.size + 1, np.abs(x).sum() + 2.0)
    assert_within(lib.get_function("ccompiler_big")(x), want, bound)
    reopened = CModule.load(lib.library_path, lib.metadata(), lib.constants)
    np.testing.assert_allclose(reopened.get_function("ccompiler_big")(x), lib.get_function("ccompiler_big")(x))


def test_second_build_hits_the_cache(compiled: dict[str, Any]) -> None:
    again = build_c_module(lower(case_module(CASES), fuse=True))
    assert again.cache_hit
    assert again.library_path == compiled["libs"]["fused"].library_path


def test_compile_error_shows_output_and_kept_source(cache: Path) -> None:
    with pytest.raises(CompileError) as info:
        compile_source("int f(void) { return undeclared_name; }\n")
    assert "undeclared_name" in info.value.output
    assert info.value.source_path.exists()
    assert str(info.value.source_path) in str(info.value)


def test_concurrent_calls_from_threads(compiled: dict[str, Any]) -> None:
    lib = compiled["libs"]["fused"]
    names = ["ccompiler_conv_stride2", "ccompiler_softmax_axis1", "ccompiler_add_2", "ccompiler_matmul_broadcast"]
    rng = np.random.default_rng(6)
    work = []
    for k in range(64):
        name = names[(k // 4) % len(names)]  # every thread calls every partition, at the same time
        case = CASE_BY_NAME[name.removeprefix("ccompiler_")]
        args = random_inputs(case, rng)
        with np.errstate(all="ignore"):
            want = run_reference(case_module([case]), *args, function=name)[0]
        (bound,) = graph_bounds(case_module([case]), args, [want], function=name)
        work.append((name, args, want, bound))
    barrier = threading.Barrier(4)

    def run(chunk: int) -> int:
        barrier.wait()
        ok = 0
        for _ in range(5):
            for name, args, want, bound in work[chunk::4]:
                got = lib.get_function(name)(*args)
                assert_within(got, want, bound, name)
                ok += 1
        return ok

    with ThreadPoolExecutor(4) as pool:
        assert sum(pool.map(run, range(4))) == 5 * len(work)


# ---------------------------------------------------------------------------
# lower-to-c rejects what it cannot emit; the emitter locates its errors
# ---------------------------------------------------------------------------


def test_unsupported_forms_are_pass_errors() -> None:
    from byoc.context import parse_module

    text = """
    func.func private @ccompiler_x(%a: tensor<4xi16>) -> tensor<4xi16> attributes {byoc.compiler = "ccompiler"} {
      %0 = nn.add %a, %a : tensor<4xi16>
      func.return %0 : tensor<4xi16>
    }
    """
    module = parse_module(text)
    with pytest.raises(PassError, match="i16"):
        lower(module)
    add = next(op for op in parse_module(text).walk() if isinstance(op, nn.AddOp))
    assert unsupported_reason(add) is not None


def test_ccompiler_predicates_are_lower_to_c_support() -> None:
    from byoc.op_registry import get_op_attr
    from byoc.targets import get_target

    get_target("ccompiler")
    for c_ in CASES:
        f = case_module([c_]).ops.first
        assert isinstance(f, func.FuncOp)
        for op in f.body.walk():
            if isinstance(op, nn.NNOp) and not isinstance(op, nn.ConstantOp):
                predicate = get_op_attr(op.name, "target.ccompiler")
                assert predicate is not None and predicate(op), op.name


def test_emitter_error_names_the_op() -> None:
    from byoc.context import parse_module

    module = parse_module(
        """
        c.module {
          c.global @h = dense<[1.0, 2.0]> : tensor<2xf16>
        }
        """
    )
    with pytest.raises(EmitError, match="emit-c: cannot emit type f16") as info:
        emit_c_source(module)
    assert isinstance(info.value.op, c.GlobalOp)


# ---------------------------------------------------------------------------
# AddressSanitizer + UndefinedBehaviorSanitizer: a standalone harness
# ---------------------------------------------------------------------------

SANITIZED = [
    "add_2", "maximum_i32", "cast_f32_i32", "clip", "bias_add_nchw", "batch_norm_const",
    "conv_groups", "conv_5x5_s3", "dense_batched", "dense_const_w", "matmul_broadcast", "max_pool_pad_ceil",
    "avg_pool_pad_include", "softmax_axis1", "reduce_sum_i32", "reduce_mean_02_keep",
    "transpose_201", "concat_axis1", "pad_reflect", "flatten", "abs_i32",
    "conv_depthwise_s2", "conv_depthwise_s2_d2", "conv_1x1_wide", "conv_t_3x3_pad", "conv_t_odd_s3",
    "resize_nearest_ceil_tf", "resize_linear_align", "resize_linear_w_only", "lrn_even_last_axis",
    "add_i64", "multiply_i8", "where", "cast_f32_i64", "cast_i1_f32", "logical_not", "broadcast_to",
    "strided_slice", "split_add", "take_axis0", "take_axis1_i32", "take_const", "take_scalar",
    "tile_ui8", "reduce_min", "reduce_prod_i32", "reduce_log_sum_exp", "argmin_last_i32",
    "cumsum_exclusive_reverse_i64", "one_hot", "one_hot_axis0_f32", "layer_norm_axis1",
    "einsum_attention", "einsum_out_perm", "transpose_bool", "pad_ui8", "concat_bool",
    "is_inf_negative", "reduce_l2_keep", "cumprod_exclusive_i32", "rms_norm", "log_softmax",
    "lstm_bidirectional_seq_peephole", "gru_reverse_no_bias", "rnn_batch_major_relu",
]


def _harness(module: ModuleOp, cases: list[Case], n_consts: int) -> str:
    lines = [
        "#include <pthread.h>",
        "static void* byoc_read_(FILE* f, size_t n) {",
        "  void* p = malloc(n ? n : 1);",
        "  if (p == NULL || (n && fread(p, 1, n, f) != n)) abort();",
        "  return p;",
        "}",
        "static int byoc_run_all_(FILE* in, FILE* out);",
        "static void* byoc_thread_(void* arg) {",
        "  /* a second thread: its workspace is freed when it exits */",
        "  FILE** io = (FILE**)arg;",
        "  return (void*)(intptr_t)byoc_run_all_(io[0], io[1]);",
        "}",
        "int main(int argc, char** argv) {",
        "  if (argc != 4) return 64;",
        "  FILE* in = fopen(argv[1], \"rb\");",
        "  FILE* out = fopen(argv[2], \"wb\");",
        "  FILE* out2 = fopen(argv[3], \"wb\");",
        "  if (!in || !out || !out2) return 65;",
        f"  const void* consts[{max(n_consts, 1)}];",
        f"  for (int i = 0; i < {n_consts}; ++i) {{ int64_t n; if (fread(&n, 8, 1, in) != 1) abort(); consts[i] = byoc_read_(in, (size_t)n); }}",
        f"  if (byoc_init(consts, {n_consts}) != 0) {{ fprintf(stderr, \"%s\\n\", byoc_last_error()); return 2; }}",
        "  long start = ftell(in);",
        "  int rc = byoc_run_all_(in, out);",
        "  if (rc) return rc;",
        "  fseek(in, start, SEEK_SET);",
        "  FILE* io[2] = {in, out2};",
        "  pthread_t t;",
        "  void* trc;",
        "  if (pthread_create(&t, NULL, byoc_thread_, io) != 0 || pthread_join(t, &trc) != 0) return 66;",
        f"  for (int i = 0; i < {n_consts}; ++i) free((void*)consts[i]);",
        "  fclose(in); fclose(out); fclose(out2);",
        "  return (int)(intptr_t)trc;",
        "}",
        "static int byoc_run_all_(FILE* in, FILE* out) {",
    ]
    for k, case in enumerate(cases):
        name = f"ccompiler_{case.name}"
        entry = c_entry_symbol(name)
        f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name)
        types = [*f.function_type.inputs.data, *f.function_type.outputs.data]
        lines.append("  {")
        for i, t in enumerate(types):
            shape = nn.shape_of(t)
            n = int(np.prod(shape))
            dt = nn.numpy_dtype(t.element_type)
            code = {"f": "kDLFloat", "i": "kDLInt", "u": "kDLUInt", "b": "kDLBool"}[dt.kind]
            bits = dt.itemsize * 8
            dims = ", ".join(map(str, shape)) or "0"
            lines.append(f"    int64_t s{i}[] = {{{dims}}};")
            data = (
                f"byoc_read_(in, {n * dt.itemsize})"
                if i < len(f.function_type.inputs.data)
                else f"calloc({n}, {dt.itemsize})"
            )
            lines.append(
                f"    DLTensor t{i} = {{{data}, {{kDLCPU, 0}}, {len(shape)}, {{{code}, {bits}, 1}}, s{i}, NULL, 0}};"
            )
        argv = ", ".join(f"&t{i}" for i in range(len(types)))
        lines.append(f"    DLTensor* args[] = {{{argv}}};")
        lines.append(
            f"    if ({entry}(args, {len(types)}) != 0) {{ fprintf(stderr, \"%s\\n\", byoc_last_error()); return 3; }}"
        )
        lines.append(f"    if ({entry}(args, {len(types) - 1}) == 0) return 4;  /* wrong count is rejected */")
        lines.append("    s0[0] += 1;")
        lines.append(f"    if ({entry}(args, {len(types)}) == 0) return 5;  /* wrong shape is rejected */")
        lines.append("    s0[0] -= 1;")
        for i in range(len(f.function_type.inputs.data), len(types)):
            n = int(np.prod(nn.shape_of(types[i])))
            size = nn.numpy_dtype(types[i].element_type).itemsize
            lines.append(f"    fwrite(t{i}.data, {size}, {n}, out);")
        for i in range(len(types)):
            lines.append(f"    free(t{i}.data);")
        lines.append("  }")
        del k
    lines.append("  return 0;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def test_sanitizers_on_a_standalone_harness(tmp_path: Path) -> None:
    from byoc.lowering.nn_to_c import constants_of
    from byoc.runtime.toolchain import INCLUDE_DIR

    cases = [CASE_BY_NAME[n] for n in SANITIZED]
    module = case_module(cases)
    lowered = lower(case_module(cases), const_threshold=8)  # exercise byoc_init too
    unit = next(op for op in lowered.ops if isinstance(op, c.ModuleOp))
    consts = constants_of(unit)
    assert consts, "the harness should bind at least one constant"
    source = emit_c_source(lowered) + _harness(module, cases, len(consts))
    (tmp_path / "harness.c").write_text(source)
    exe = tmp_path / "harness"
    flags = ["-std=c11", "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror", "-pthread"]
    done = subprocess.run(
        ["cc", *flags, f"-I{INCLUDE_DIR}", str(tmp_path / "harness.c"), "-o", str(exe), "-lm"],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    rng = np.random.default_rng(9)
    inputs = {f"ccompiler_{c_.name}": random_inputs(c_, rng) for c_ in cases}
    with open(tmp_path / "in.bin", "wb") as fh:
        for arr in consts:
            fh.write(np.int64(arr.nbytes).tobytes())
            fh.write(np.ascontiguousarray(arr).tobytes())
        for c_ in cases:
            for arr in inputs[f"ccompiler_{c_.name}"]:
                fh.write(np.ascontiguousarray(arr).tobytes())
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    run = subprocess.run(
        [str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin"), str(tmp_path / "out2.bin")],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "runtime error" not in run.stderr, run.stderr
    expected = references(module, list(inputs), inputs)
    for path in ("out.bin", "out2.bin"):
        raw = (tmp_path / path).read_bytes()
        offset = 0
        for c_ in cases:
            want = expected[f"ccompiler_{c_.name}"][0]
            got = np.frombuffer(raw, dtype=want.dtype, count=want.size, offset=offset).reshape(want.shape)
            offset += want.nbytes
            name = f"ccompiler_{c_.name}"
            (bound,) = graph_bounds(module, inputs[name], [want], function=name)
            check_close(got, want, bound, f"{c_.name} under sanitizers ({path})")
        assert offset == len(raw)


def test_werror_build_of_the_emitted_text(compiled: dict[str, Any]) -> None:
    """Everything the tests compile uses -Werror (the default flags); check it is in the key."""
    from byoc.runtime.toolchain import DEFAULT_FLAGS

    assert {"-Wall", "-Wextra", "-Werror"} <= set(DEFAULT_FLAGS)
    for lib in compiled["libs"].values():
        assert lib.source is not None and lib.source_path is not None and lib.source_path.exists()


def test_build_export_and_load_with_bound_constants(cache: Path, tmp_path: Path) -> None:
    """byoc.build puts the partition in one library; an artifact reopens it, constants included."""
    import byoc

    text = """
    func.func @main(%x: tensor<1x2048xf32>, %w: tensor<4x2048xf32>) -> tensor<1x4xf32> {
      %0 = nn.dense %x, %w : (tensor<1x2048xf32>, tensor<4x2048xf32>) -> tensor<1x4xf32>
      %1 = nn.relu %0 : tensor<1x4xf32>
      func.return %1 : tensor<1x4xf32>
    }
    """
    rng = np.random.default_rng(11)
    w = rng.standard_normal((4, 2048)).astype(np.float32)
    x = rng.standard_normal((1, 2048)).astype(np.float32)
    exe = byoc.build(byoc.parse_module(text), params={"w": w}, targets=["ccompiler"])
    component = exe.components["ccompiler"]
    assert isinstance(component, CModule) and len(component.constants) == 1
    (y,) = exe.run(x)
    want = [np.maximum(x @ w.T, 0)]
    (bound,) = graph_bounds(byoc.parse_module(text), [x, w], want)
    assert_within(y, want[0], bound)
    exe.export_library(tmp_path / "model.byoc")
    (y2,) = byoc.load_module(tmp_path / "model.byoc").run(x)
    np.testing.assert_array_equal(y, y2)


ODD_OUTPUTS = """
func.func private @ccompiler_odd(%x: tensor<4xf32>, %y: tensor<2x2xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<4xf32>, tensor<2x2xi32>) attributes {byoc.compiler = "ccompiler"} {
  %c = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = nn.relu %x : tensor<4xf32>
  %1 = nn.reshape %0 {newshape = array<i64: 2, 2>} : (tensor<4xf32>) -> tensor<2x2xf32>
  %2 = nn.cast %y {dtype = "f32"} : (tensor<2x2xi32>) -> tensor<2x2xf32>
  %3 = nn.add %1, %2 : tensor<2x2xf32>
  %4 = nn.reshape %3 {newshape = array<i64: 4>} : (tensor<2x2xf32>) -> tensor<4xf32>
  func.return %0, %0, %x, %c, %1, %4, %y : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<4xf32>, tensor<2x2xi32>
}
"""


@pytest.mark.parametrize("fuse", [True, False])
def test_results_that_are_inputs_constants_aliases_or_repeated(cache: Path, fuse: bool) -> None:
    """A result computed here is written in place; an input, a constant, a reshape of
    another result or a repeated value is copied into its output."""
    from byoc.context import parse_module

    x = np.array([-1, 2, -3, 4], np.float32)
    y = np.array([[1, 2], [3, 4]], np.int32)
    want = run_reference(parse_module(ODD_OUTPUTS), x, y, function="ccompiler_odd")
    lib = build_c_module(lower(parse_module(ODD_OUTPUTS), fuse=fuse))
    got = lib.get_function("ccompiler_odd")(x, y)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------
# Property test: random DAGs (tests/support/dag_strategies.py) through the whole pipeline
# ---------------------------------------------------------------------------


_SPECS = st.lists(
    st.one_of(dags(min_ops=3, max_ops=40), dags(min_ops=3, max_ops=40, ops=INT_SAFE_OPS, dtypes=("i32",))),
    min_size=4,
    max_size=4,
)


@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(specs=_SPECS)
def test_random_dags_partitioned_and_compiled_match_reference(cache: Path, specs: list[Any]) -> None:
    """Four random DAGs per example, partitioned for ccompiler, lowered in both modes
    into one library each; every partition equals the reference on random inputs."""
    from byoc.passes.byoc_pipeline import partition_for

    funcs = []
    for k, spec in enumerate(specs):
        main = build_module(spec).ops.first
        assert isinstance(main, func.FuncOp)
        main.detach()
        main.sym_name = StringAttr(f"g{k}")
        funcs.append(main)
    module = ModuleOp(funcs)
    partition_for(module, ["ccompiler"])
    parts = [f for f in module.ops if isinstance(f, func.FuncOp) and "byoc.compiler" in f.attributes]
    rng = np.random.default_rng(0)
    inputs = {
        f.sym_name.data: [
            rng.integers(-3, 4, size=nn.shape_of(t)).astype(nn.numpy_dtype(t.element_type))
            for t in f.function_type.inputs.data
        ]
        for f in parts
    }
    expected = references(module, list(inputs), inputs)
    for fuse in (True, False):
        lib = build_c_module(lower(module.clone(), fuse=fuse))
        for name, args in inputs.items():
            outs = lib.get_function(name)(*args)
            outs = outs if isinstance(outs, tuple) else (outs,)
            bounds = graph_bounds(module, args, expected[name], function=name)
            for g, w, b in zip(outs, expected[name], bounds, strict=True):
                check_close(g, w, b, f"{name} (fuse={fuse})")


def test_argument_names_that_clash_with_c(cache: Path) -> None:
    """IR names that are C macros, types or the generated functions' own names still compile."""
    from byoc.context import parse_module

    text = """
    func.func private @ccompiler_main_0(%NAN: tensor<4xf32>, %ccompiler_main_0_0: tensor<4xf32>, %ws: tensor<4xf32>, %byoc_fail: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "ccompiler"} {
      %0 = nn.add %NAN, %ccompiler_main_0_0 : tensor<4xf32>
      %1 = nn.multiply %0, %ws : tensor<4xf32>
      func.return %1 : tensor<4xf32>
    }
    """
    args = [np.full(4, v, np.float32) for v in (1, 2, 3, 4)]
    for fuse in (True, False):
        lib = build_c_module(lower(parse_module(text), fuse=fuse))
        np.testing.assert_array_equal(lib.get_function("ccompiler_main_0")(*args), np.full(4, 9, np.float32))


GROUP_CYCLE = """
func.func private @ccompiler_cycle(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) attributes {byoc.compiler = "ccompiler"} {
  %p = nn.relu %x : tensor<2x8xf32>
  %q = nn.exp %x : tensor<2x8xf32>
  %k = nn.softmax %p : tensor<2x8xf32>
  %h = nn.add %q, %k : tensor<2x8xf32>
  %n = nn.add %p, %q : tensor<2x8xf32>
  func.return %h, %n : tensor<2x8xf32>, tensor<2x8xf32>
}
"""


def test_fusion_never_makes_a_cycle_between_groups(cache: Path) -> None:
    """q and h fuse into one group H; fusing p with n would then need
    {p, n} -> softmax -> H -> {p, n}: a cycle through another group, which a
    node-level check misses. n joins H instead, and the groups run in order."""
    from byoc.context import parse_module
    from byoc.lowering.nn_to_c import GraphBuilder, fuse_groups

    fn = parse_module(GROUP_CYCLE).ops.first
    assert isinstance(fn, func.FuncOp)
    graph = GraphBuilder(fn)
    graph.build()
    groups = fuse_groups(graph.nodes, fuse=True)
    names = [[n.op_name for n in g] for g in groups]
    assert names == [["nn.relu"], ["nn.softmax"], ["nn.exp", "nn.add", "nn.add"]]
    x = np.random.default_rng(12).standard_normal((2, 8)).astype(np.float32)
    want = run_reference(parse_module(GROUP_CYCLE), x, function="ccompiler_cycle")
    got = build_c_module(lower(parse_module(GROUP_CYCLE))).get_function("ccompiler_cycle")(x)
    bounds = graph_bounds(parse_module(GROUP_CYCLE), [x], want, function="ccompiler_cycle")
    for g, w, b in zip(got, want, bounds, strict=True):
        assert_within(g, w, b)


def test_fused_groups_run_after_everything_they_read() -> None:
    """Over many random DAGs (larger than the compiled ones), every fused group is
    scheduled after the groups producing what it reads, and no group reads itself
    through another group."""
    from byoc.lowering.nn_to_c import GraphBuilder, fuse_groups

    rng = np.random.default_rng(99)
    for k in range(200):
        fn, _ = random_dag(f"ccompiler_g{k}", rng, int(rng.integers(10, 80)))
        graph = GraphBuilder(fn)
        graph.build()
        groups = fuse_groups(graph.nodes, fuse=True)
        position = {n: i for i, group in enumerate(groups) for n in group}
        assert sorted(position, key=lambda n: n.index) == graph.nodes
        for i, group in enumerate(groups):
            assert len({n.out.shape for n in group}) == 1
            for n in group:
                for v in n.inputs:
                    producer = v.root().node
                    if producer is not None and producer not in group:
                        assert position[producer] < i, f"dag {k}: {n.op_name} runs before its input"


def test_ccompiler_composites_are_inlined_and_fused(cache: Path) -> None:
    from byoc.context import parse_module

    text = """
    func.func private @ccompiler_comp(%x: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> attributes {byoc.compiler = "ccompiler"} {
      %0 = byoc.composite "ccompiler.bias_relu"(%x, %b) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
      ^bb0(%y: tensor<2x4xf32>, %c: tensor<4xf32>):
        %1 = nn.bias_add %y, %c {axis = -1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
        %2 = nn.relu %1 : tensor<2x4xf32>
        byoc.yield %2 : tensor<2x4xf32>
      }
      %3 = nn.negative %0 : tensor<2x4xf32>
      func.return %3 : tensor<2x4xf32>
    }
    """
    module = lower(parse_module(text))
    kernels = [f for f in module.walk() if isinstance(f, c.FuncOp) and f.sym_name.data.startswith("byoc_p_ccompiler_comp_") and f.is_static]
    assert [f.sym_name.data for f in kernels] == ["byoc_p_ccompiler_comp_0", "byoc_p_ccompiler_comp_"]  # one fused loop
    rng = np.random.default_rng(13)
    x, b = rng.standard_normal((2, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    got = build_c_module(module).get_function("ccompiler_comp")(x, b)
    np.testing.assert_array_equal(got, -np.maximum(x + b, 0))
