"""The kernel library: kernels compiled once per machine, each model's C a glue unit linked
with them; its cache is checked like the library cache (truncated or planted objects are
rebuilt, concurrent builds do not corrupt it), and artifacts load with an empty cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from support.paths import ROOT

import byoc
from byoc.runtime import kernel_library as kl
from byoc.runtime import toolchain

CONV = """
func.func @main(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<1x4x8x8xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %2 = nn.relu %1 : tensor<1x4x8x8xf32>
  %3 = nn.softmax %2 : tensor<1x4x8x8xf32>
  func.return %3 : tensor<1x4x8x8xf32>
}
"""

RNG = np.random.default_rng(3)

# build the conv model and compare it with the reference; exit 0 when it agrees
BUILD_AND_CHECK = textwrap.dedent(
    f"""
    import sys
    import numpy as np
    import byoc
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((1, 3, 8, 8), (4, 3, 3, 3), (4,))]
    module = byoc.parse_module({CONV!r})
    exe = byoc.build(module, targets=["ccompiler"])
    (want,) = byoc.build(module).run(*args)
    (got,) = exe.run(*args)
    sys.exit(0 if np.allclose(got, want, rtol=1e-5, atol=1e-6) else 3)
    """
)


def _run(code: str, cache: Path, kernels: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "BYOC_CACHE_DIR": str(cache),
            toolchain.KERNEL_CACHE_ENV: str(kernels),
            **env,
        },
        timeout=600,
        check=False,
    )


def _partition_sources(cache: Path, mark: str) -> list[Path]:
    """The kept sources of C partition libraries in `cache` whose text has `mark` (the cache
    also keeps the kernel library's source and the host plan runner's)."""
    return [
        p
        for p in cache.glob("byoc_*.c")
        if "kernels" not in p.name and "." not in p.stem and mark in p.read_text()
    ]


def _args() -> list[np.ndarray]:
    return [RNG.standard_normal(s).astype(np.float32) for s in ((1, 3, 8, 8), (4, 3, 3, 3), (4,))]


AUX = """\
/* /usr/include/stdio.h:1:NC */ extern int printf (const char *, ...);
/* /r/byoc_runtime.h:9:NF */ static int32_t byoc_threads_for (int64_t work, int64_t grain); /* (work, grain) int64_t work; int64_t grain; */
/* /r/byoc_kernels_pool.h:17:NF */ static float byoc_max_window_ (const float *xc, int64_t H); /* (xc, H) const float *xc; int64_t H; */
/* /r/byoc_kernels_pool.h:451:NF */ static void byoc_global_avg_pool2d_f32 (const float *x, float *y, int64_t NC, int64_t HW); /* (x, y, NC, HW) const float *x; float *y; int64_t NC; int64_t HW; */
/* /r/byoc_kernels_glue.h:100:NF */ static byoc_epilogue_ byoc_epilogue_of (int32_t parts); /* (parts) int32_t parts; */
/* /r/byoc_qkernels_gemm.h:523:NF */ static int byoc_qgemm_level (void); /* () */
"""


def test_aux_info_names_the_kernels_and_skips_helpers() -> None:
    """Runtime functions, helpers (trailing `_`) and kernels with header-only types are not
    wrapped; a kernel's wrapper calls it with the same arguments."""
    entries = {e.name: e for e in kl.parse_aux_info(AUX)}
    assert sorted(entries) == ["byoc_global_avg_pool2d_f32", "byoc_qgemm_level"]
    pool = entries["byoc_global_avg_pool2d_f32"]
    assert pool.wrapper == "byoc_k_global_avg_pool2d_f32"
    assert pool.definition().endswith("{ byoc_global_avg_pool2d_f32(x, y, NC, HW); }")
    assert entries["byoc_qgemm_level"].definition().endswith("{ return byoc_qgemm_level(); }")


def test_glue_source_declares_what_it_calls_or_gives_up() -> None:
    entries = kl.parse_aux_info(AUX)
    names = frozenset({"byoc_global_avg_pool2d_f32", "byoc_max_window_", "byoc_qgemm_level"})
    source = '#include "byoc_runtime.h"\n#include "byoc_kernels.h"\nvoid f(void) { byoc_global_avg_pool2d_f32(0, 0, 1, 1); }\n'
    glue = kl.glue_source(source, entries, names)
    assert glue is not None and glue.startswith("#define BYOC_GLUE 1")
    assert '#include "byoc_kernels.h"' not in glue
    assert "#define byoc_global_avg_pool2d_f32 byoc_k_global_avg_pool2d_f32" in glue
    assert "byoc_qgemm_level" not in glue  # only the kernels the source calls
    # a helper of the kernel headers the library does not wrap: one unit, as before
    assert (
        kl.glue_source(
            source.replace("f(void) {", "f(void) { byoc_max_window_(0, 0);"), entries, names
        )
        is None
    )
    # a header the library does not hold (e.g. a vendor library's)
    assert kl.may_split(source) and not kl.may_split('#include "byoc_cblas.h"\n' + source)
    assert kl.glue_source('#include "byoc_cblas.h"\n' + source, entries, names) is None


def test_a_build_links_the_kernel_library_and_agrees_with_one_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "split"))
    module = byoc.parse_module(CONV)
    args = _args()
    (want,) = byoc.build(module).run(*args)
    (split,) = byoc.build(module, targets=["ccompiler"]).run(*args)
    assert len(_partition_sources(tmp_path / "split", "#define BYOC_GLUE 1")) == 1
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "whole"))
    monkeypatch.setenv(toolchain.KERNEL_LIBRARY_ENV, "0")
    (whole,) = byoc.build(module, targets=["ccompiler"]).run(*args)
    assert _partition_sources(tmp_path / "whole", "#define BYOC_GLUE") == []
    assert len(_partition_sources(tmp_path / "whole", '#include "byoc_kernels.h"')) == 1
    np.testing.assert_allclose(split, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(split, whole)


def test_damaged_kernel_library_is_rebuilt_and_concurrent_builds_agree(tmp_path: Path) -> None:
    """Two processes building the kernel library at once into an empty cache both succeed and
    leave one good object; a truncated or replaced object is rebuilt, not linked."""
    kernels = tmp_path / "kernels"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD_AND_CHECK],
            cwd=ROOT,
            env={
                **os.environ,
                "PYTHONPATH": str(ROOT),
                "BYOC_CACHE_DIR": str(tmp_path / f"cache{i}"),
                toolchain.KERNEL_CACHE_ENV: str(kernels),
            },
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err
    objects = sorted(kernels.glob("byoc_obj_*.o"))
    assert objects and not list(kernels.glob(".build_*")) and not list(kernels.glob(".src_*"))
    for obj in objects:
        assert toolchain._verified(obj, toolchain._OBJECT_NAME) is not None
    for damage in ("truncate", "plant"):
        for obj in kernels.glob("byoc_obj_*.o"):
            if damage == "truncate":
                with open(obj, "r+b") as f:
                    f.truncate(obj.stat().st_size // 2)
            else:
                obj.write_bytes(b"\x7fELF" + b"\0" * 64)
        done = _run(BUILD_AND_CHECK, tmp_path / f"after-{damage}", kernels)
        assert done.returncode == 0, (damage, done.stderr)
        good = [
            p
            for p in kernels.glob("byoc_obj_*.o")
            if toolchain._verified(p, toolchain._OBJECT_NAME)
        ]
        assert good, damage


def test_exported_artifact_loads_with_empty_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model library holds the kernels it calls: loading needs no kernel library."""
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "build"))
    args = _args()
    exe = byoc.build(byoc.parse_module(CONV), targets=["ccompiler"])
    (want,) = exe.run(*args)
    artifact = tmp_path / "m.byoc"
    exe.export_library(str(artifact))
    np.savez(tmp_path / "args.npz", *args, want=want)
    code = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        import byoc
        data = np.load({str(tmp_path / "args.npz")!r})
        exe = byoc.load_module({str(artifact)!r})
        (got,) = exe.run(data["arr_0"], data["arr_1"], data["arr_2"])
        sys.exit(0 if np.array_equal(got, data["want"]) else 3)
        """
    )
    empty = tmp_path / "empty-kernels"
    done = _run(code, tmp_path / "empty", empty)
    assert done.returncode == 0, done.stderr
    assert not empty.exists() or not list(empty.glob("byoc_obj_*.o"))


GLUE = """\
#define BYOC_GLUE 1
#include "byoc_runtime.h"
static const float byoc_p_t_c0[2] BYOC_MAYBE_UNUSED = {
  1.5f, 2.5f
};

static void byoc_p_t_0(const float* restrict in0, float* restrict out0) {
  for (int64_t i0 = 0; i0 < 2; ++i0) {
    out0[i0] = in0[i0] * 2.0f;
  }
}

static void byoc_p_t_1(float* restrict out0) {
  for (int64_t i0 = 0; i0 < 2; ++i0) {
    out0[i0] = out0[i0] + byoc_p_t_c0[i0];
  }
}

static void byoc_p_t_2(const float* restrict in0, float* restrict out0) {
  for (int64_t i0 = 0; i0 < 2; ++i0) {
    out0[i0] = out0[i0] - in0[i0];
  }
}

BYOC_EXPORT float byoc_p_t(float x);
BYOC_EXPORT float byoc_p_t(float x) {
  float a[2] = {x, x}, b[2];
  byoc_p_t_0(a, b);
  byoc_p_t_1(b);
  byoc_p_t_2(a, b);
  return b[0] + b[1];
}
"""


def test_split_units_move_self_contained_functions_and_link(tmp_path: Path) -> None:
    """Functions naming nothing else of the source move to units of their own, declared
    in the first; the units compile apart (-Werror) and link into one working library."""
    units = kl.split_units(GLUE, 3, min_unit=1)
    assert len(units) == 3
    first = units[0]
    assert "static void byoc_p_t_1(float* restrict out0) {" in first  # names a constant: stays
    for name in ("byoc_p_t_0", "byoc_p_t_2"):
        assert f"BYOC_HIDDEN_ void {name}(" in first and f"static void {name}(" not in first
        (holder,) = [u for u in units[1:] if f"BYOC_HIDDEN_ void {name}(" in u]
        assert holder.startswith('#define BYOC_GLUE 1\n#include "byoc_runtime.h"\n')
    assert kl.split_units(GLUE, 3) == [GLUE]  # too little code to be worth a second process
    sources = [tmp_path / f"u{i}.c" for i in range(len(units))]
    objects = [tmp_path / f"u{i}.o" for i in range(len(units))]
    for path, text in zip(sources, units, strict=True):
        path.write_text(text)
    flags = toolchain._effective_flags(toolchain.DEFAULT_FLAGS, toolchain.compiler())
    toolchain._compile_objects(toolchain.compiler(), flags, sources, objects)
    kernels = toolchain.kernel_library()
    (tmp_path / "k.o").write_bytes(kernels.object)
    out = tmp_path / "t.so"
    subprocess.run(
        [toolchain.compiler(), *flags, "-o", str(out), *map(str, objects), str(tmp_path / "k.o"),
         *toolchain.LIBS],
        check=True,
    )  # fmt: skip
    import ctypes

    lib = ctypes.CDLL(str(out))
    lib.byoc_p_t.restype = ctypes.c_float
    lib.byoc_p_t.argtypes = [ctypes.c_float]
    assert lib.byoc_p_t(1.0) == (2 + 1.5 - 1) + (2 + 2.5 - 1)


@pytest.mark.parametrize("variant", ["sanitizers", "baseline"])
def test_split_build_under_sanitizers_and_baseline_dispatch(tmp_path: Path, variant: str) -> None:
    """ASan + UBSan builds and `BYOC_CPU_DISPATCH=baseline` builds link a kernel library of
    their own flags (part of its key) and agree with the reference."""
    from support.fuzz.fuzz_harness import sanitizer_env

    if variant == "sanitizers":
        env = sanitizer_env(str(tmp_path / "cache"))
        if env is None:
            pytest.skip("the C compiler has no sanitizer runtimes")
    else:
        env = {"BYOC_CPU_DISPATCH": "baseline"}
    kernels = os.environ[toolchain.KERNEL_CACHE_ENV]
    done = _run(BUILD_AND_CHECK, tmp_path / "cache", Path(kernels), **env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(_partition_sources(tmp_path / "cache", "#define BYOC_GLUE 1")) == 1


def test_glue_units_compile_the_inline_families_themselves() -> None:
    """Transposes, copies and reductions stay in the glue unit (specialised by the call
    site's sizes): it includes their headers and does not redirect them to the library."""
    kernel, inline = kl.kernel_header_names(toolchain.INCLUDE_DIR)
    assert {"byoc_transpose_f32", "byoc_copy_blocks", "byoc_reduce_max_f32"} <= inline
    assert "byoc_conv2d_f32" in kernel and "byoc_conv2d_f32" not in inline
    entries = toolchain.kernel_library().entries
    source = (
        '#include "byoc_runtime.h"\n#include "byoc_kernels.h"\n'
        "void f(const float* x, float* y, const int64_t* s) { byoc_transpose_f32(x, y, 2, s, s); }\n"
    )
    glue = kl.glue_source(source, entries, kernel, inline)
    assert glue is not None
    assert all(f'#include "{h}"' in glue for h in kl.INLINE_HEADERS)
    assert "#define byoc_transpose_f32" not in glue
