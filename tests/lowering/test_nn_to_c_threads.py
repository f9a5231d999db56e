"""Issue 15 in the C kernels: epilogue fusion changes no result, and a kernel split across
two OpenMP threads gives the 1-thread result bit for bit (each output keeps its summation
order), under both CPU dispatch levels (`BYOC_CPU_DISPATCH=auto` and `baseline`).

The shapes are large enough that every kernel below splits its work at 2 threads
(`byoc_threads_for` leaves small loops on the caller). No test asserts on wall time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_within, graph_bounds
from support.c_codegen_cases import CASES, Case, case_module, random_inputs

from byoc.context import make_context
from byoc.dialects import c, nn
from byoc.interpreters import run_reference
from byoc.lowering.c_build import build_c_module
from byoc.lowering.emit.c import emit_c_source
from byoc.lowering.nn_to_c import LowerToCPass
from byoc.runtime import toolchain
from byoc.runtime.cpu import distinct_levels

Array = np.ndarray[Any, Any]
F32 = "f32"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("byoc_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


def lowered(cases: list[Case], fuse: bool = True) -> Any:
    module = case_module(cases)
    LowerToCPass(fuse=fuse).apply(make_context(), module)
    module.verify()
    return module


def build(cases: list[Case], dispatch: str, fuse: bool = True) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CPU_DISPATCH", dispatch)
        return build_c_module(lowered(cases, fuse))


def same(a: Array, b: Array, what: str) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype, what
    assert np.array_equal(a, b, equal_nan=True), f"{what}: max diff {np.nanmax(np.abs(a - b))}"


# ---- epilogue fusion ----------------------------------------------------------------------------

EPILOGUE = [c_ for c_ in CASES if c_.name.startswith("ep_")]
NOT_FUSED = {"ep_conv_shared", "ep_dense_bias_wrong_axis"}
"""A conv whose result is also read elsewhere; a bias on the wrong axis of a dense."""
BIAS_ONLY = {"ep_conv_silu_shared"}
"""A SiLU whose sigmoid is also read elsewhere: only the bias joins the kernel."""


def test_epilogue_kernels_are_called_where_the_chain_allows() -> None:
    unit = next(op for op in lowered(EPILOGUE).ops if isinstance(op, c.ModuleOp))
    source = emit_c_source(unit)
    for case in EPILOGUE:
        fused = "byoc_conv2d_ep_f32" if "dense" not in case.name else "byoc_dense_ep_f32"
        body = source.split(f"byoc_p_ccompiler_{case.name}_wrapper")[0].split(f"byoc_p_ccompiler_{case.name}_0(")[1]
        if case.name in NOT_FUSED:
            assert "_ep_f32" not in body, case.name
        else:
            assert fused in body, case.name
        if "silu" in case.name:  # the kernel's comment names the chain it absorbed
            chain = "nn.bias_add:" if case.name in BIAS_ONLY else "nn.bias_add, nn.sigmoid, nn.multiply:"
            assert f"nn.conv2d, {chain}" in body, case.name


@pytest.mark.parametrize("dispatch", distinct_levels())
def test_epilogue_fusion_changes_no_result(cache: Path, dispatch: str) -> None:
    """Fused (the chain in the kernel's epilogue) and per-op (a kernel per op) agree bit for
    bit, and both are within the f32 bound of the reference."""
    fused = build(EPILOGUE, dispatch, fuse=True)
    per_op = build(EPILOGUE, dispatch, fuse=False)
    rng = np.random.default_rng(3)
    module = case_module(EPILOGUE)
    for case in EPILOGUE:
        name = f"ccompiler_{case.name}"
        inputs = random_inputs(case, rng)
        a = fused.get_function(name)(*inputs)
        b = per_op.get_function(name)(*inputs)
        same(a, b, f"{case.name} ({dispatch})")
        with np.errstate(all="ignore"):
            want = run_reference(module, *inputs, function=name)
        (bound,) = graph_bounds(module, inputs, want, function=name)
        assert_within(a, want[0], bound, f"{case.name} ({dispatch})")


# ---- two threads --------------------------------------------------------------------------------

def _op(cls: type[nn.NNOp], **attrs: Any) -> Any:
    return lambda vs: cls.build(*vs, **attrs)


def _conv_bias_relu(vs: list[Any]) -> list[Any]:
    conv = nn.Conv2DOp.build(vs[0], vs[1], padding=(1, 1, 1, 1))
    bias = nn.BiasAddOp.build(conv, vs[2])
    return [conv, bias, nn.ReluOp.build(bias)]


def _conv_act(act: type[nn.NNOp], **attrs: Any) -> Any:
    """conv2d 3x3 (padding 1) and one activation, fused into the kernel's epilogue."""

    def build(vs: list[Any]) -> list[Any]:
        conv = nn.Conv2DOp.build(vs[0], vs[1], padding=(1, 1, 1, 1))
        return [conv, act.build(conv, **attrs)]

    return build


def _conv_act_groups(act: type[nn.NNOp], groups: int, strides: tuple[int, int] = (1, 1)) -> Any:
    """A grouped conv2d 3x3 (padding 1) and an activation fused into its epilogue."""

    def build(vs: list[Any]) -> list[Any]:
        conv = nn.Conv2DOp.build(vs[0], vs[1], padding=(1, 1, 1, 1), groups=groups, strides=strides)
        return [conv, act.build(conv)]

    return build



def _scale_shift_relu(vs: list[Any]) -> list[Any]:
    mul = nn.MultiplyOp.build(vs[0], vs[1])
    add = nn.AddOp.build(mul, vs[2])
    return [mul, add, nn.ReluOp.build(add)]

BIG: list[Case] = [
    Case("t_conv3x3", [((1, 16, 30, 34), F32), ((30, 16, 3, 3), F32)], _op(nn.Conv2DOp, padding=(1, 1, 1, 1))),
    Case("t_conv1x1_few_pixels", [((1, 256, 5, 5), F32), ((200, 256, 1, 1), F32)], _op(nn.Conv2DOp)),
    Case("t_conv_groups", [((2, 32, 17, 17), F32), ((48, 8, 3, 3), F32)], _op(nn.Conv2DOp, groups=4, strides=(2, 2))),
    Case("t_conv_bias_relu", [((1, 24, 28, 28), F32), ((32, 24, 3, 3), F32), ((32,), F32)],
         _conv_bias_relu),
    Case("t_depthwise_s2", [((1, 64, 41, 39), F32), ((64, 1, 3, 3), F32)],
         _op(nn.Conv2DOp, groups=64, strides=(2, 2), padding=(1, 1, 1, 1))),
    Case("t_depthwise_s1", [((1, 48, 30, 30), F32), ((48, 1, 5, 5), F32)],
         _op(nn.Conv2DOp, groups=48, padding=(2, 2, 2, 2))),
    Case("t_dense_rows", [((64, 300), F32), ((100, 300), F32)], _op(nn.DenseOp)),
    Case("t_dense_one_row", [((1, 1024), F32), ((257, 1024), F32)], _op(nn.DenseOp)),
    Case("t_conv_t", [((1, 32, 20, 20), F32), ((32, 16, 2, 2), F32)], _op(nn.Conv2DTransposeOp, strides=(2, 2))),
    Case("t_resize_linear", [((1, 16, 40, 40), F32)], _op(nn.Resize2DOp, size=(80, 80), method="linear")),
    Case("t_resize_nearest", [((1, 32, 40, 40), F32)], _op(nn.Resize2DOp, size=(80, 80))),
    Case("t_lrn", [((1, 32, 30, 30), F32)], _op(nn.LRNOp, size=5)),
    Case("t_max_pool_s2", [((1, 64, 56, 56), F32)], _op(nn.MaxPool2DOp, pool_size=(3, 3), strides=(2, 2))),
    Case("t_max_pool_s1", [((1, 32, 40, 40), F32)], _op(nn.MaxPool2DOp, pool_size=(3, 3), padding=(1, 1, 1, 1))),
    Case("t_avg_pool", [((1, 64, 40, 40), F32)], _op(nn.AvgPool2DOp, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))),
    Case("t_global_avg", [((1, 512, 20, 20), F32)], _op(nn.GlobalAvgPool2DOp)),
    Case("t_global_avg_13", [((1, 1000, 13, 13), F32)], _op(nn.GlobalAvgPool2DOp)),
    Case("t_global_max", [((1, 512, 20, 20), F32)], _op(nn.GlobalMaxPool2DOp)),
    Case("t_softmax", [((256, 1000), F32)], _op(nn.SoftmaxOp)),
    Case("t_reduce_mean", [((64, 64, 40), F32)], _op(nn.ReduceMeanOp, axes=(2,))),
    Case("t_reduce_sum_middle", [((64, 64, 40), F32)], _op(nn.ReduceSumOp, axes=(1,))),
    # h15: epilogues in blocks of 8 and a tail (27x25 = 675 pixels a channel), the max pool's
    # overlapping last group (22 output columns: 16 + an overlapping 8), a transpose of whole
    # rows (a channel shuffle), a 1x1 conv with a partial last pixel tile
    Case("t_conv_leaky_odd", [((1, 8, 27, 25), F32), ((20, 8, 3, 3), F32)], _conv_act(nn.LeakyReluOp, alpha=0.1)),
    Case("t_conv_clip_odd", [((1, 8, 27, 25), F32), ((20, 8, 3, 3), F32)], _conv_act(nn.ClipOp, a_min=-0.5, a_max=0.5)),
    Case("t_conv_hsig_odd", [((1, 8, 27, 25), F32), ((20, 8, 3, 3), F32)],
         _conv_act(nn.HardSigmoidOp, alpha=0.2, beta=0.5)),
    Case("t_max_pool_tail", [((1, 48, 61, 45), F32)], _op(nn.MaxPool2DOp, pool_size=(3, 3), strides=(2, 2))),
    Case("t_avg_pool_s1_tail", [((1, 40, 29, 27), F32)], _op(nn.AvgPool2DOp, pool_size=(3, 3), padding=(1, 1, 1, 1))),
    Case("t_avg_pool_s1_pad", [((1, 40, 29, 27), F32)],
         _op(nn.AvgPool2DOp, pool_size=(3, 3), padding=(1, 1, 1, 1), count_include_pad=True)),
    Case("t_concat_channels", [((1, 96, 40, 41), F32), ((1, 70, 40, 41), F32)], _op(nn.ConcatenateOp, axis=1)),
    Case("t_concat_rows", [((6, 8, 300, 41), F32), ((6, 8, 13, 41), F32)], _op(nn.ConcatenateOp, axis=2)),
    Case("t_shuffle_rows", [((1, 4, 30, 899), F32)], _op(nn.TransposeOp, axes=(0, 2, 1, 3))),
    Case("t_conv1x1_tail", [((1, 40, 13, 13), F32), ((70, 40, 1, 1), F32)], _conv_act(nn.ReluOp)),
    # h15k: conv2d split into equal shares of (group, tile, 6-channel chunk) units, a tile
    # at a share's edge split between two threads' channel chunks (14x14: 13 tiles; 7x7: 4;
    # 1x1 maps; 3 groups on 2 threads; two images); depthwise padding each thread's own
    # channels (with an epilogue, stride 1 and 2); transposes split by output rows
    Case("t_conv3x3_14", [((1, 40, 14, 14), F32), ((64, 40, 3, 3), F32), ((64,), F32)], _conv_bias_relu),
    Case("t_conv3x3_7_few_oc", [((1, 128, 7, 7), F32), ((32, 128, 3, 3), F32)], _op(nn.Conv2DOp, padding=(1, 1, 1, 1))),
    Case("t_conv1x1_map1", [((1, 512, 1, 1), F32), ((250, 512, 1, 1), F32)], _conv_act(nn.ReluOp)),
    Case("t_conv_groups3", [((2, 48, 11, 11), F32), ((45, 16, 1, 1), F32)], _op(nn.Conv2DOp, groups=3)),
    Case("t_depthwise_ep_s2", [((1, 72, 28, 28), F32), ((72, 1, 3, 3), F32)],
         _conv_act_groups(nn.ReluOp, groups=72, strides=(2, 2))),
    Case("t_depthwise_ep_s1", [((1, 100, 14, 14), F32), ((100, 1, 3, 3), F32)], _conv_act_groups(nn.ReluOp, groups=100)),
    Case("t_shuffle_big", [((1, 4, 30, 40, 40), F32)], _op(nn.TransposeOp, axes=(0, 2, 1, 3, 4))),
    Case("t_transpose_cols", [((1, 64, 40, 56), F32)], _op(nn.TransposeOp, axes=(0, 1, 3, 2))),
    # h15d: depthwise in groups of six output vectors from one padded plane per thread (rows
    # of 7 stored whole into the next row; 14 and 28 columns: the last vector overlapping;
    # a leftover vector, an overlapping last group; stride 2 split with shuffles; stride 3
    # and dilation one vector at a time); average pools from a padded plane (stride 2 with
    # include_pad and ceil rows), over the whole map (8 channels a time, 13 = 8 + 5), and
    # global averages 8 channels at a time; a max pool's rows 4 vectors at a time
    Case("t_dw_7", [((1, 200, 7, 7), F32), ((200, 1, 3, 3), F32)], _conv_act_groups(nn.ReluOp, groups=200)),
    Case("t_dw_14_s1", [((1, 136, 14, 14), F32), ((136, 1, 3, 3), F32)], _op(nn.Conv2DOp, groups=136, padding=(1, 1, 1, 1))),
    Case("t_dw_28_s2", [((1, 40, 57, 28), F32), ((40, 1, 3, 3), F32)],
         _op(nn.Conv2DOp, groups=40, strides=(2, 2), padding=(1, 1, 1, 1))),
    Case("t_dw_s3_dilated", [((1, 64, 45, 44), F32), ((64, 1, 3, 3), F32)],
         _op(nn.Conv2DOp, groups=64, strides=(3, 3), dilation=(2, 1), padding=(2, 1, 2, 1))),
    Case("t_dw_rows_of_3", [((1, 64, 40, 3), F32), ((64, 1, 3, 3), F32)], _op(nn.Conv2DOp, groups=64, padding=(1, 1, 1, 1))),
    Case("t_dw_s2_31_columns", [((1, 40, 30, 61), F32), ((40, 1, 3, 3), F32)],
         _op(nn.Conv2DOp, groups=40, strides=(2, 2), padding=(1, 1, 1, 1))),
    Case("t_avg_pool_s1_asym", [((2, 40, 20, 37), F32)], _op(nn.AvgPool2DOp, pool_size=(3, 3), padding=(1, 2, 1, 0))),
    Case("t_avg_pool_wide_window", [((1, 40, 9, 40), F32)],
         _op(nn.AvgPool2DOp, pool_size=(5, 5), strides=(1, 2), padding=(2, 2, 2, 2))),
    Case("t_avg_pool_dilated_s3", [((1, 64, 30, 61), F32)],
         _op(nn.AvgPool2DOp, pool_size=(2, 3), strides=(3, 3), dilation=(2, 2), ceil_mode=True)),
    Case("t_dw_dilated_rows", [((1, 48, 20, 20), F32), ((48, 1, 3, 3), F32)],
         _op(nn.Conv2DOp, groups=48, dilation=(2, 1), padding=(2, 1, 2, 1))),
    Case("t_max_pool_stem", [((1, 24, 112, 112), F32)],
         _op(nn.MaxPool2DOp, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))),
    Case("t_avg_pool_s2_pad_ceil", [((1, 136, 14, 13), F32)],
         _op(nn.AvgPool2DOp, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1), ceil_mode=True, count_include_pad=True)),
    Case("t_avg_pool_whole", [((1, 13, 7, 7), F32)], _op(nn.AvgPool2DOp, pool_size=(7, 7))),
    Case("t_avg_pool_whole_many", [((1, 3000, 5, 5), F32)], _op(nn.AvgPool2DOp, pool_size=(5, 5))),
    Case("t_global_avg_odd", [((1, 1003, 13, 13), F32)], _op(nn.GlobalAvgPool2DOp)),
    # a per-channel scale, shift and relu: the split copy's inner loop is `omp simd`
    Case("t_bn_relu", [((1, 64, 40, 41), F32), ((1, 64, 1, 1), F32), ((1, 64, 1, 1), F32)], _scale_shift_relu),
    # h15c: at least 2 output channels a pixel split by channel chunks (a share's edge in the
    # middle of a chunk: 39 chunks, the last of 2 channels, over 4 tiles); the tiles of a small
    # map packed together, k in several blocks (2700 rows; 4500 rows on a 1-tile map); a 1x1
    # conv at stride 2 reading the image in place (channel and tile splits); a grouped conv
    # split by channels; a stride-2 3x3 with padding split by channels
    Case("t_conv3x3_7_by_channel", [((1, 64, 7, 7), F32), ((230, 64, 3, 3), F32), ((230,), F32)],
         _conv_bias_relu),
    Case("t_conv3x3_7_k_blocks", [((1, 300, 7, 7), F32), ((120, 300, 3, 3), F32)], _op(nn.Conv2DOp, padding=(1, 1, 1, 1))),
    Case("t_conv1x1_map2_k_blocks", [((1, 4500, 2, 2), F32), ((40, 4500, 1, 1), F32)], _conv_act(nn.ReluOp)),
    Case("t_conv1x1_s2_by_channel", [((1, 96, 14, 14), F32), ((200, 96, 1, 1), F32)], _op(nn.Conv2DOp, strides=(2, 2))),
    Case("t_conv1x1_s2_tiles", [((1, 32, 30, 31), F32), ((48, 32, 1, 1), F32)], _op(nn.Conv2DOp, strides=(2, 2))),
    Case("t_conv_groups_by_channel", [((1, 64, 5, 5), F32), ((128, 32, 3, 3), F32)],
         _op(nn.Conv2DOp, groups=2, padding=(1, 1, 1, 1))),
    Case("t_conv3x3_s2_by_channel", [((1, 64, 14, 14), F32), ((110, 64, 3, 3), F32)],
         _op(nn.Conv2DOp, strides=(2, 2), padding=(1, 1, 1, 1))),
]


@pytest.mark.parametrize("dispatch", distinct_levels())
def test_two_threads_give_the_one_thread_result(cache: Path, dispatch: str) -> None:
    lib = build(BIG, dispatch)
    rng = np.random.default_rng(5)
    module = case_module(BIG)
    for case in BIG:
        name = f"ccompiler_{case.name}"
        f = lib.get_function(name)
        inputs = random_inputs(case, rng)
        lib.set_num_threads(1)
        one = f(*inputs)
        lib.set_num_threads(2)
        two = f(*inputs)
        lib.set_num_threads(1)
        same(two, one, f"{case.name} ({dispatch}): 2 threads vs 1")
        with np.errstate(all="ignore"):
            want = run_reference(module, *inputs, function=name)
        (bound,) = graph_bounds(module, inputs, want, function=name)
        assert_within(one, want[0], bound, f"{case.name} ({dispatch})")


@pytest.mark.parametrize("flags", ["-DBYOC_STEAL=0", "-DBYOC_STEAL_CLAIMS=64"])
def test_fixed_shares_and_small_claims_give_the_same_bits(cache: Path, flags: str) -> None:
    """The kernels' shares with stealing (BYOC_STEAL_) against fixed shares (-DBYOC_STEAL=0,
    the split before it) and against claims of 1/64 of a share (more claim boundaries, more
    steals), through BYOC_CFLAGS: at 2 threads, the same bits for every case above."""
    default = build(BIG, "auto")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(toolchain.CFLAGS_ENV, flags)
        other = build(BIG, "auto")
    rng = np.random.default_rng(6)
    for case in BIG:
        name = f"ccompiler_{case.name}"
        inputs = random_inputs(case, rng)
        default.set_num_threads(2)
        other.set_num_threads(2)
        same(other.get_function(name)(*inputs), default.get_function(name)(*inputs), f"{case.name} ({flags})")


# ---- one thread: no OpenMP region ---------------------------------------------------------------

def test_split_elementwise_loop_has_a_copy_without_a_region() -> None:
    """A fused elementwise loop big enough to split is emitted twice: with the pragma inside
    `if (byoc_nt > 1)`, and plain in the `else` branch, so a 1-thread call enters no OpenMP
    region (an if(0) region still sets up a team per call, and its outlined body is
    compiled worse); a small loop gets neither."""

    def add_relu(vs: list[Any]) -> list[Any]:
        add = nn.AddOp.build(vs[0], vs[1])
        return [add, nn.ReluOp.build(add)]

    big = Case("t_add_relu_big", [((4, 64, 33, 31), F32), ((4, 64, 33, 31), F32)], add_relu)
    small = Case("t_add_relu_small", [((3, 7), F32), ((3, 7), F32)], add_relu)
    unit = next(op for op in lowered([big, small]).ops if isinstance(op, c.ModuleOp))
    source = emit_c_source(unit)
    body = source.split("byoc_p_ccompiler_t_add_relu_big_0(")[1].split("\n}\n")[0]
    split, serial = body.split("} else {")
    # one contiguous loop: the split copy is also marked `omp simd` (BYOC_PARALLEL_FOR_SIMD),
    # the plain copy `omp simd` alone (BYOC_SIMD: a vector loop, no region)
    assert "if (byoc_nt > 1) {" in split and "BYOC_PARALLEL_FOR_SIMD(byoc_nt)" in split
    assert "BYOC_PARALLEL" not in serial and "BYOC_SIMD" in serial and "for (" in serial
    assert split.count("for (") == serial.count("for (")
    small_body = source.split("byoc_p_ccompiler_t_add_relu_small_0(")[1].split("\n}\n")[0]
    assert "byoc_nt" not in small_body and "BYOC_PARALLEL" not in small_body


def test_split_loop_marks_its_inner_contiguous_loop_simd() -> None:
    """The split copy of a per-channel loop (a batch norm's scale and shift) keeps its outer
    loop split and marks the inner contiguous loop `omp simd` (BYOC_SIMD: the outlined region
    loses `restrict`, and gcc -O2 left it scalar: 0.18 -> 0.60 ms on densenet121's first
    1x64x112x112 loop from 1 to 2 threads); the plain copy marks the same inner loop (gcc
    -O2 leaves a loop whose trip count is no multiple of the vector width scalar, its selects
    branches); a strided inner loop is not marked. The results are the same at 1 and 2
    threads at both dispatch levels (`t_bn_relu` in BIG)."""
    case = next(c_ for c_ in BIG if c_.name == "t_bn_relu")
    unit = next(op for op in lowered([case]).ops if isinstance(op, c.ModuleOp))
    source = emit_c_source(unit)
    body = source.split("byoc_p_ccompiler_t_bn_relu_0(")[1].split("\n}\n")[0]
    split, serial = body.split("} else {")
    assert "BYOC_PARALLEL_FOR(byoc_nt)" in split and split.count("BYOC_SIMD") == 1
    assert split.index("BYOC_PARALLEL_FOR(byoc_nt)") < split.index("BYOC_SIMD")
    assert serial.count("BYOC_SIMD") == 1 and "BYOC_PARALLEL" not in serial
