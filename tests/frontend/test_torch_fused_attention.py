"""Attention with a dynamic batch dim, and PyTorch's fused transformer ops.

`nn.TransformerEncoderLayer` and `nn.MultiheadAttention` reach the importer two ways:
`torch.export` traces their unfused ops (projections, views that split the batch-times-heads
dim, `scaled_dot_product_attention`), and `torch.compile` under `no_grad` captures the fast
path as one op (`aten._transformer_encoder_layer_fwd`, `aten._native_multi_head_attention`).
Both must convert with a dynamic batch and match eager PyTorch within the graph's bound.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch (extra byoc[torch])")

from support.bounds import assert_within, normwise_bound, reduction_length  # noqa: E402
from torch_zoo import ZOO  # noqa: E402

import byoc  # noqa: E402
from byoc.frontend.torch.errors import TorchImportError  # noqa: E402
from byoc.targets.dnnl import missing_reason  # noqa: E402
from byoc.tools.torch_backend import ByocFallbackWarning  # noqa: E402

TARGETS = [["ccompiler"]] + ([["dnnl", "ccompiler"]] if missing_reason() is None else [])
BATCH = torch.export.Dim("batch", min=1, max=64)


def check(module: Any, model: Any, inputs: list[Any], targets: list[str]) -> None:
    """Every output of the built module within the graph's bound of eager's, per input."""
    exe = byoc.build(module, targets=targets)
    k = reduction_length(module)
    for x in inputs:
        got = exe.run(*[a.numpy() for a in x])
        with torch.no_grad():
            out = model(*x)
        want = [t.numpy() for t in torch.utils._pytree.tree_flatten(out)[0]]
        assert len(got) == len(want)
        for i, (a, e) in enumerate(zip(got, want, strict=True)):
            assert_within(a, e, normwise_bound(k, e), f"output {i}, batch {x[0].shape[0]} ({'+'.join(targets)})")


@pytest.mark.parametrize("targets", TARGETS, ids="+".join)
def test_vit_dynamic_batch(targets: list[str]) -> None:
    """The zoo's ViT (nn.TransformerEncoderLayer, traced unfused) with a `?` batch dim."""
    model, (x,) = ZOO["vit"]()
    module = byoc.from_torch(model, (x,), dynamic_shapes=({0: BATCH},))
    assert "tensor<?x3x16x16xf32>" in str(module)
    gen = torch.Generator().manual_seed(0)
    check(module, model, [(torch.randn(n, 3, 16, 16, generator=gen),) for n in (1, 2, 5)], targets)


def test_vit_projection_is_one_dense() -> None:
    """Linear layers on 3-D activations (`bmm` against the expanded weight once decomposed)
    become 2-D dense layers, not batched products against a broadcast weight."""
    model, (x,) = ZOO["vit"]()
    text = str(byoc.from_torch(model, (x,), dynamic_shapes=({0: BATCH},)))
    # the four batched products left are the two attention products of each of the 2 layers
    assert text.count("nn.matmul") == 4
    assert "nn.dense" in text


class EncoderLayerFastPath(torch.nn.Module):
    """`nn.TransformerEncoderLayer`'s fused inference op, called as its fast path calls it."""

    def __init__(self, norm_first: bool, gelu: bool) -> None:
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(
            32, 4, 64, 0.0, "gelu" if gelu else "relu", batch_first=True, norm_first=norm_first
        )
        self.gelu = gelu

    def forward(self, x: Any) -> Any:
        m = self.layer
        a = m.self_attn
        return torch._transformer_encoder_layer_fwd(
            x, a.embed_dim, a.num_heads, a.in_proj_weight, a.in_proj_bias, a.out_proj.weight,
            a.out_proj.bias, self.gelu, m.norm_first, m.norm1.eps, m.norm1.weight, m.norm1.bias,
            m.norm2.weight, m.norm2.bias, m.linear1.weight, m.linear1.bias, m.linear2.weight,
            m.linear2.bias, None, None,
        )  # fmt: skip


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("gelu", [False, True], ids=["relu", "gelu"])
def test_encoder_layer_fused_op(norm_first: bool, gelu: bool) -> None:
    torch.manual_seed(1)
    model = EncoderLayerFastPath(norm_first, gelu).eval()
    x = torch.randn(2, 17, 32)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: BATCH},))
    assert any("_transformer_encoder_layer_fwd" in str(n.target) for n in ep.graph.nodes)
    module = byoc.from_torch(ep, (x,))
    check(module, model, [(torch.randn(n, 17, 32),) for n in (1, 3)], ["ccompiler"])


class MultiHeadFastPath(torch.nn.Module):
    def __init__(self, need_weights: bool, average: bool) -> None:
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(32, 4, batch_first=True)
        self.need_weights, self.average = need_weights, average

    def forward(self, q: Any, kv: Any) -> Any:
        a = self.attn
        out, weights = torch._native_multi_head_attention(
            q, kv, kv, a.embed_dim, a.num_heads, a.in_proj_weight, a.in_proj_bias,
            a.out_proj.weight, a.out_proj.bias, None, self.need_weights, self.average,
        )  # fmt: skip
        return (out, weights) if self.need_weights else out


@pytest.mark.parametrize(("need_weights", "average"), [(False, True), (True, True), (True, False)])
def test_native_multi_head_attention(need_weights: bool, average: bool) -> None:
    """Queries apart from keys and values (the fused op wants all three of one shape), with
    and without the attention weights."""
    torch.manual_seed(2)
    model = MultiHeadFastPath(need_weights, average).eval()
    args = (torch.randn(2, 9, 32), torch.randn(2, 9, 32))
    module = byoc.from_torch(model, args, dynamic_shapes=({0: BATCH}, {0: BATCH}))
    check(module, model, [args, (torch.randn(3, 9, 32), torch.randn(3, 9, 32))], ["ccompiler"])


def test_fused_attention_with_mask_is_an_error() -> None:
    class Masked(MultiHeadFastPath):
        def forward(self, q: Any, kv: Any) -> Any:
            a = self.attn
            mask = torch.zeros(q.shape[0], kv.shape[1], dtype=torch.bool)
            return torch._native_multi_head_attention(
                q, kv, kv, a.embed_dim, a.num_heads, a.in_proj_weight, a.in_proj_bias,
                a.out_proj.weight, a.out_proj.bias, mask, False, True, 1,
            )[0]  # fmt: skip

    args = (torch.randn(2, 9, 32), torch.randn(2, 9, 32))
    with pytest.raises(TorchImportError, match="fused attention with a mask"):
        byoc.from_torch(Masked(False, True).eval(), args)


def test_compile_takes_the_fast_path() -> None:
    """torch.compile under no_grad captures the fused encoder-layer op; the backend converts
    it (no eager fallback) and matches eager."""
    torch.manual_seed(3)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, 0.0, batch_first=True).eval()
    seen: list[str] = []

    def spy(gm: Any, example_inputs: Any) -> Any:
        seen.extend(str(n.target) for n in gm.graph.nodes)
        return byoc.tools.torch_backend.byoc_backend(gm, example_inputs)

    torch._dynamo.reset()
    fast = torch.compile(layer, backend=spy)
    x = torch.randn(2, 17, 32)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", ByocFallbackWarning)
        got = fast(x).numpy()
        want = layer(x).numpy()
    torch._dynamo.reset()
    assert any("_transformer_encoder_layer_fwd" in t for t in seen)
    assert_within(got, want, normwise_bound(32 * 3 + 64 + 17, want), "compiled encoder layer")
    assert np.isfinite(got).all()
