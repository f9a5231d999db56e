"""`byoc.from_torch`: the converter table op by op, the graph signature, source locations,
dynamic shapes and the one error that lists every unconverted op.

Each op case is a small module run by the numpy reference of the imported IR and compared
with eager PyTorch under the bound of the imported graph (`bounds.assert_graph_outputs`);
integer and boolean outputs must be equal.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch (extra byoc[torch])")

from support.bounds import assert_graph_outputs  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from xdsl.dialects.builtin import FileLineColLoc  # noqa: E402
from xdsl.dialects.func import FuncOp  # noqa: E402

import byoc  # noqa: E402
from byoc.frontend.torch import SUPPORTED_OPS, TorchImportError  # noqa: E402


class Fn(nn.Module):
    """A module around a function of its inputs (and of fixed random weights `w`)."""

    def __init__(self, fn: Callable[..., Any], **weights: Any) -> None:
        super().__init__()
        self.fn = fn
        for name, value in weights.items():
            self.register_buffer(name, value)

    def forward(self, *args: Any) -> Any:
        return self.fn(self, *args)


G = torch.Generator().manual_seed(0)


def r(*shape: int) -> Any:
    return torch.randn(*shape, generator=G)


def ri(high: int, *shape: int) -> Any:
    return torch.randint(0, high, shape, generator=G)


def _seeded(factory: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(0)
    return factory().eval()


CASES: dict[str, Callable[[], tuple[nn.Module, tuple[Any, ...]]]] = {
    # convolutions
    "conv1d": lambda: (_seeded(lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1)), (r(2, 4, 11),)),
    "conv2d_grouped_dilated": lambda: (_seeded(lambda: nn.Conv2d(4, 8, 3, padding=2, dilation=2, groups=2)), (r(1, 4, 9, 9),)),
    "conv2d_depthwise": lambda: (_seeded(lambda: nn.Conv2d(6, 6, 5, stride=2, padding=2, groups=6)), (r(1, 6, 10, 10),)),
    "conv_transpose2d": lambda: (_seeded(lambda: nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)), (r(1, 4, 5, 5),)),
    "conv_transpose2d_grouped": lambda: (_seeded(lambda: nn.ConvTranspose2d(4, 6, 2, stride=2, groups=2)), (r(1, 4, 3, 3),)),
    "conv_transpose1d": lambda: (_seeded(lambda: nn.ConvTranspose1d(3, 2, 4, stride=2)), (r(2, 3, 7),)),
    # matrix products
    "linear_3d": lambda: (_seeded(lambda: nn.Linear(8, 5)), (r(2, 3, 8),)),
    "linear_no_bias": lambda: (_seeded(lambda: nn.Linear(8, 5, bias=False)), (r(4, 8),)),
    "mm_bmm_matmul": lambda: (Fn(lambda m, a, b, c: (a @ b, torch.bmm(c, c.transpose(1, 2)), torch.matmul(c, b))), (r(3, 4), r(4, 5), r(2, 6, 4))),
    "addmm_scaled": lambda: (Fn(lambda m, x, y: torch.addmm(m.b, x, y, beta=0.5, alpha=2.0), b=r(5)), (r(3, 4), r(4, 5))),
    # activations
    "activations": lambda: (
        Fn(lambda m, x: (F.relu(x), F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.hardswish(x),
                         F.hardtanh(x, -0.5, 0.7), torch.sigmoid(x), torch.tanh(x), F.relu6(x), F.hardsigmoid(x),
                         F.leaky_relu(x, 0.1), F.elu(x), F.softplus(x, beta=2.0), F.mish(x))),
        (r(3, 7) * 3,),
    ),  # fmt: skip
    "softmax_log_softmax": lambda: (Fn(lambda m, x: (x.softmax(1), F.log_softmax(x, -1))), (r(2, 5, 6),)),
    # normalisation
    "layer_norm": lambda: (_seeded(lambda: nn.LayerNorm([4, 6])), (r(2, 3, 4, 6),)),
    "layer_norm_no_affine": lambda: (Fn(lambda m, x: F.layer_norm(x, (6,), eps=1e-3)), (r(3, 6),)),
    "batch_norm_1d_2d": lambda: (Fn(lambda m, x, y: (m.bn1(x), m.bn2(y))), (r(4, 3), r(2, 3, 4, 4))),
    "group_norm": lambda: (_seeded(lambda: nn.GroupNorm(2, 6)), (r(2, 6, 3, 3),)),
    # pools
    "max_pool2d_indices": lambda: (Fn(lambda m, x: F.max_pool2d(x, 3, 2, 1, return_indices=True)), (r(1, 2, 7, 7),)),
    "max_pool2d_ceil": lambda: (Fn(lambda m, x: F.max_pool2d(x, 2, 2, ceil_mode=True)), (r(1, 2, 5, 5),)),
    "max_pool1d": lambda: (Fn(lambda m, x: F.max_pool1d(x, 3, 2)), (r(2, 3, 9),)),
    "avg_pools": lambda: (Fn(lambda m, x: (F.avg_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 2, count_include_pad=False, padding=1), F.avg_pool1d(x[0], 2))), (r(1, 3, 6, 6),)),
    "adaptive_avg_pool": lambda: (Fn(lambda m, x: (F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, (3, 2)), F.adaptive_avg_pool2d(x, 4))), (r(1, 2, 7, 8),)),
    "adaptive_max_pool": lambda: (Fn(lambda m, x: (F.adaptive_max_pool2d(x, 1), F.adaptive_max_pool2d(x, (2, 4)))), (r(1, 2, 6, 8),)),
    # embedding, attention
    "embedding": lambda: (_seeded(lambda: nn.Embedding(10, 4)), (ri(10, 2, 5),)),
    "sdpa_masks": lambda: (
        Fn(lambda m, q, k, v: (F.scaled_dot_product_attention(q, k, v, attn_mask=m.keep),
                               F.scaled_dot_product_attention(q, k, v, is_causal=True),
                               F.scaled_dot_product_attention(q, k, v, attn_mask=m.bias, scale=0.3)),
           keep=torch.rand(5, 5, generator=G) > 0.3, bias=r(5, 5)),
        (r(2, 2, 5, 4), r(2, 2, 5, 4), r(2, 2, 5, 4)),
    ),  # fmt: skip
    # layout and indexing
    "shapes": lambda: (
        Fn(lambda m, x: (x.view(2, -1), x.reshape(6, 4).t(), x.permute(2, 0, 1), x[:, :1].expand(2, 3, 4),
                         x.unsqueeze(1).squeeze(1), x.flatten(1), x.transpose(0, 2))),
        (r(2, 3, 4),),
    ),  # fmt: skip
    "slicing": lambda: (
        Fn(lambda m, x: (x[:, 1:3], x[..., ::2], x[:, -1], x[1], x[:, 1:-1, 2:], x.narrow(2, 1, 2))),
        (r(2, 4, 5),),
    ),  # fmt: skip
    "index_gather": lambda: (
        Fn(lambda m, x, i: (x[i], x[:, i], torch.gather(x, 1, i.view(1, -1).expand(3, -1)), x.index_select(1, i), x[i, i])),
        (r(3, 4), ri(3, 3)),
    ),  # fmt: skip
    "cat_split_chunk": lambda: (Fn(lambda m, x, y: (torch.cat([x, y], 1), *x.split(2, dim=1), *torch.chunk(y, 3, dim=1), *x.unbind(0))), (r(2, 5), r(2, 6))),
    "flip_roll": lambda: (Fn(lambda m, x: (x.flip(1), x.flip(0, 2), x.roll(1, 2), x.roll((1, -2), (0, 1)), x.roll(3))), (r(2, 3, 4),)),
    "repeat_tril": lambda: (Fn(lambda m, x: (x.repeat(2, 1, 3), x.tril(), x.triu(1))), (r(3, 4),)),
    "pad_interpolate": lambda: (
        Fn(lambda m, x: (F.pad(x, (1, 2, 0, 1), value=0.5), F.pad(x, (2, 2, 1, 1), mode="reflect"), F.pad(x, (-1, 1)),
                         F.interpolate(x, scale_factor=2, mode="nearest"), F.interpolate(x, size=(5, 7), mode="bilinear"),
                         F.interpolate(x, size=(6, 6), mode="bilinear", align_corners=True))),
        (r(1, 2, 4, 4),),
    ),  # fmt: skip
    # elementwise, comparisons, logic
    "arith": lambda: (
        Fn(lambda m, x, y: (x + 2 * y, x - y, x * 3.0, x / (y.abs() + 1), 1 - x, torch.maximum(x, y), torch.minimum(x, y),
                            x.pow(2), x.abs().pow(1.5), x.abs().sqrt(), torch.rsqrt(x.abs() + 1), x.exp(), (x.abs() + 1).log(),
                            torch.clamp(x, min=-0.5), torch.clamp(x, -1, 1), x.neg(), torch.erf(x), x.reciprocal())),
        (r(3, 4), r(3, 4)),
    ),  # fmt: skip
    "compare_logic_where": lambda: (
        Fn(lambda m, x, y: (x > y, x <= 0.5, x == y, x != 0, (x > 0) & (y > 0), (x > 0) | ~(y > 0), torch.logical_xor(x > 0, y > 0),
                            torch.where(x > y, x, y), torch.where(x > 0, x, 0.0), x.masked_fill(y > 0, -1.0))),
        (r(3, 4), r(3, 4)),
    ),  # fmt: skip
    "integer_math": lambda: (
        Fn(lambda m, i, j: (i + j, i * 3, i // 2, torch.div(i, 3, rounding_mode="floor"), i - 5, i % 3, torch.div(i - 4, 3, rounding_mode="trunc"), i.float() / 2)),
        (ri(9, 3, 4), ri(9, 3, 4) + 1),
    ),  # fmt: skip
    "creation": lambda: (
        Fn(lambda m, x: (x + torch.arange(4), torch.arange(1, 9, 2) * 1.5, torch.full((2, 3), 7.0), torch.full_like(x, 2.5),
                         torch.zeros_like(x), torch.ones(2, 2, dtype=torch.int64), x + torch.tensor(3.0))),
        (r(3, 4),),
    ),  # fmt: skip
    "reductions": lambda: (
        Fn(lambda m, x: (x.mean((1, 2)), x.mean(), x.sum(1, keepdim=True), x.sum(), x.amax(-1), x.amin(0), x.argmax(1), x.argmax(),
                         x.argmin(-1, keepdim=True), x.max(1).values, x.max(1).indices, (x > 0).any(1), (x > 0).all(), x.var(1),
                         x.std(-1, keepdim=True), torch.logsumexp(x, 2), x.norm(dim=1), x.prod(1))),
        (r(2, 3, 4),),
    ),  # fmt: skip
    "cumsum_topk": lambda: (Fn(lambda m, x, i: (x.cumsum(1), i.cumsum(0), torch.topk(x, 2, dim=1).values, torch.topk(x, 2).indices)), (r(3, 5), ri(7, 4))),
    "casts": lambda: (Fn(lambda m, x: (x.to(torch.int64), (x > 0).to(torch.float32), x.double(), x.to(torch.int32) + 1)), (r(3, 4) * 5,)),
}
"""Case name -> factory of (module, example args): what each op family converts into."""


def _flat(out: Any) -> list[np.ndarray[Any, Any]]:
    return [leaf.detach().numpy() for leaf in torch.utils._pytree.tree_leaves(out)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_family(name: str) -> None:
    model, args = CASES[name]()
    if isinstance(model, Fn) and name == "batch_norm_1d_2d":
        model.bn1, model.bn2 = nn.BatchNorm1d(3).eval(), nn.BatchNorm2d(3).eval()
        for bn in (model.bn1, model.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
    model = model.eval()
    module = byoc.from_torch(model, args)
    inputs = [a.numpy() for a in args]
    got = byoc.run_reference(module, *inputs)
    with torch.no_grad():
        want = _flat(model(*args))
    assert_graph_outputs(module, inputs, got, want, what=name)


def test_cases_run_built_code() -> None:
    """A few op families also through the C target (the reference run is what the rest use)."""
    for name in ("conv_transpose2d_grouped", "max_pool2d_indices", "sdpa_masks", "index_gather"):
        model, args = CASES[name]()
        module = byoc.from_torch(model.eval(), args)
        inputs = [a.numpy() for a in args]
        got = byoc.build(module, targets=["ccompiler"]).run(*inputs)
        with torch.no_grad():
            want = _flat(model(*args))
        assert_graph_outputs(module, inputs, got, want, what=name)


# ---- the graph signature ----------------------------------------------------------------------


class WithState(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 2.0))
        self.register_buffer("shift", torch.full((4,), 0.5), persistent=False)

    def forward(self, x: Any, *, y: Any) -> dict[str, Any]:
        return {"sum": self.lin(x) * self.scale + self.shift + y, "first": x[:, 0]}


def test_signature_inputs_params_buffers_outputs() -> None:
    """Parameters and both kinds of buffer become constants; the user inputs (positional,
    then keyword) are the arguments, and the dict's leaves the results, in order."""
    model = WithState().eval()
    x, y = r(3, 4), r(3, 4)
    module = byoc.from_torch(model, (x,), example_kwargs={"y": y})
    main = next(op for op in module.ops if isinstance(op, FuncOp))
    assert [a.name_hint for a in main.body.block.args] == ["x", "y"]
    assert [str(t) for t in main.function_type.outputs.data] == ["tensor<3x4xf32>", "tensor<3xf32>"]
    got = byoc.run_reference(module, x.numpy(), y.numpy())
    with torch.no_grad():
        want = _flat(model(x, y=y))
    assert_graph_outputs(module, [x.numpy(), y.numpy()], got, want)


def test_exported_program_accepted() -> None:
    model = _seeded(lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()))
    x = r(1, 3, 6, 6)
    ep = torch.export.export(model, (x,))
    module = byoc.from_torch(ep)
    got = byoc.run_reference(module, x.numpy())
    with torch.no_grad():
        assert_graph_outputs(module, [x.numpy()], got, [model(x).numpy()])


def test_not_a_module() -> None:
    with pytest.raises(TypeError, match="nn.Module or an ExportedProgram"):
        byoc.from_torch(lambda x: x, (r(2),))


# ---- locations and errors --------------------------------------------------------------------------


class Located(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: Any) -> Any:
        return torch.relu(self.conv(x))  # the conv's and the relu's line


def test_ops_carry_the_python_line() -> None:
    module = byoc.from_torch(Located().eval(), (r(1, 3, 5, 5),))
    line = next(i for i, text in enumerate(inspect.getsource(Located).splitlines()) if "the conv's and" in text)
    want = inspect.getsourcelines(Located)[1] + line
    ops = {op.name: op for op in module.walk() if op.name in ("nn.conv2d", "nn.relu")}
    for op in ops.values():
        assert isinstance(op.location, FileLineColLoc)
        assert op.location.filename.data == __file__
        assert op.location.line.data == want


class TwoUnsupported(nn.Module):
    def forward(self, x: Any) -> Any:
        s = torch.sort(x).values  # first unconverted op
        e = torch.special.erfinv(x.clamp(-0.5, 0.5))  # second unconverted op
        return s + e


def test_one_error_lists_every_unconverted_op() -> None:
    with pytest.raises(TorchImportError) as info:
        byoc.from_torch(TwoUnsupported(), (r(3, 4),))
    err = info.value
    assert err.unconverted_ops == ["aten.sort.default", "aten.erfinv.default"]
    text = str(err)
    source, start = inspect.getsourcelines(TwoUnsupported)
    for marker in ("first unconverted op", "second unconverted op"):
        line = start + next(i for i, t in enumerate(source) if marker in t)
        assert f"{__file__}:{line}: " in text
    assert "2 nodes failed" in text


def test_unsupported_argument_is_reported_at_its_line() -> None:
    model = Fn(lambda m, x: F.avg_pool2d(x, 2, divisor_override=3))
    with pytest.raises(TorchImportError, match="divisor_override is not supported") as info:
        byoc.from_torch(model, (r(1, 2, 4, 4),))
    assert info.value.problems[0].location is not None
    assert info.value.problems[0].location.file == __file__


def test_supported_ops_cover_the_families() -> None:
    for op in (
        "aten.convolution.default", "aten.addmm.default", "aten.bmm.default", "aten.gelu.default",
        "aten.native_layer_norm.default", "aten.native_group_norm.default",
        "aten._native_batch_norm_legit_no_training.default", "aten.max_pool2d_with_indices.default",
        "aten._adaptive_avg_pool2d.default", "aten.embedding.default", "aten.index.Tensor",
        "aten.scaled_dot_product_attention.default", "aten.cumsum.default", "aten.where.self",
    ):  # fmt: skip
        assert op in SUPPORTED_OPS


# ---- dynamic shapes --------------------------------------------------------------------------------


def test_dynamic_batch_is_a_question_mark_dim() -> None:
    from torch.export import Dim

    model = _seeded(lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 25, 3)))
    x = r(2, 3, 5, 5)
    module = byoc.from_torch(model, (x,), dynamic_shapes={"input": {0: Dim("batch", min=1, max=64)}})
    main = next(op for op in module.ops if isinstance(op, FuncOp))
    assert str(main.function_type.inputs.data[0]) == "tensor<?x3x5x5xf32>"
    exe = byoc.build(module, targets=["ccompiler"])
    for n in (1, 3):
        xs = r(n, 3, 5, 5)
        (got,) = exe.run(xs.numpy())
        with torch.no_grad():
            want = model(xs).numpy()
        static = byoc.from_torch(model, (xs,))
        assert_graph_outputs(static, [xs.numpy()], [got], [want], what=f"batch {n}")


def test_input_shapes_make_dynamic_dims_static() -> None:
    from torch.export import Dim

    from byoc.frontend.torch import import_exported_program

    class Flat(nn.Module):
        def forward(self, x: Any) -> Any:
            return x.view(x.shape[0], -1).softmax(-1)

    ep = torch.export.export(Flat(), (r(2, 3, 4),), dynamic_shapes=({0: Dim("n")},))
    module = import_exported_program(ep, input_shapes={"x": (5, 3, 4)})
    main = next(op for op in module.ops if isinstance(op, FuncOp))
    assert str(main.function_type.inputs.data[0]) == "tensor<5x3x4xf32>"
    assert str(main.function_type.outputs.data[0]) == "tensor<5x12xf32>"


def test_every_table_key_is_an_aten_overload() -> None:
    """The table is keyed by real overload names (a typo would silently never match)."""
    missing = []
    for name in sorted(SUPPORTED_OPS):
        packet, overload = name.removeprefix("aten.").rsplit(".", 1)
        if not hasattr(getattr(torch.ops.aten, packet, None), overload):
            missing.append(name)
    assert not missing


@pytest.mark.parametrize("name", ["bert", "gpt"])
def test_dynamic_batch_transformer(name: str) -> None:
    """Linear layers and batched matmuls between views that merge a dynamic batch with
    other dims (`?` rows): nn types cannot say that `?` is 8 times the batch, so they run
    on the N-D values and the views back need no `?` arithmetic."""
    from torch.export import Dim
    from torch_zoo import ZOO

    model, args = ZOO[name]()
    batch = Dim("batch", min=1, max=16)
    module = byoc.from_torch(model, args, dynamic_shapes=tuple({0: batch} for _ in args))
    main = next(op for op in module.ops if isinstance(op, FuncOp))
    assert all(str(t).startswith("tensor<?x") for t in main.function_type.inputs.data)
    exe = byoc.build(module, targets=["ccompiler"])
    bigger = tuple(torch.cat([a, a[:1]]) for a in args)
    got = exe.run(*[a.numpy() for a in bigger])
    with torch.no_grad():
        want = _flat(model(*bigger))
    static = byoc.from_torch(model, bigger)
    assert_graph_outputs(static, [a.numpy() for a in bigger], got, want, what=f"{name} batch 3")


class ClassToken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cls = nn.Parameter(torch.randn(1, 1, 4, generator=G))

    def forward(self, x: Any) -> Any:
        return torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)


def test_expand_to_the_dynamic_batch() -> None:
    """A constant expanded to the input's dynamic batch (ViT's class token)."""
    from torch.export import Dim

    model = ClassToken()
    module = byoc.from_torch(model, (r(2, 3, 4),), dynamic_shapes=({0: Dim("b", max=8)},))
    x = r(5, 3, 4)
    (got,) = byoc.run_reference(module, x.numpy())
    with torch.no_grad():
        np.testing.assert_array_equal(got, model(x).numpy())
