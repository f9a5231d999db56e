"""Small but real PyTorch architectures, written out here, with random weights.

Each is the building block of a published network at a size that exports and builds in
seconds: a ResNet basic block network, MobileNetV2 and V3 (inverted residuals, hardswish,
squeeze-excite), an EfficientNet-style MBConv with squeeze-excite and SiLU, a ConvNeXt
block (depthwise 7x7, layer norm over channels-last, GELU), a ViT (patch embedding,
multi-head attention, MLP), a BERT-style encoder (embeddings, attention mask, layer
norm), a GPT-style causal decoder block, LSTM and GRU sequence models, and a UNet
(transposed convolutions, skip concatenations). `ZOO` maps a name to a factory returning
`(model, example_args)`; `SLOW_ZOO` holds the larger variants.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

Example = tuple[nn.Module, tuple[Any, ...]]


def _randomize(model: nn.Module, seed: int) -> nn.Module:
    """Random weights drawn so activations keep their scale through depth (and non-trivial
    batch-norm statistics), in eval mode."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
    return model.eval()


# ---- ResNet -------------------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: Tensor) -> Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.down(x))


class ResNet(nn.Module):
    def __init__(self, widths: tuple[int, ...] = (8, 16), classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 7, 2, 3, bias=False),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        blocks: list[nn.Module] = []
        cin = widths[0]
        for i, w in enumerate(widths):
            blocks += [BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w)]
            cin = w
        self.layers = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


# ---- MobileNetV2 / V3, EfficientNet -----------------------------------------------


def _divisible(v: float, d: int = 8) -> int:
    return max(d, int(v + d / 2) // d * d)


class SqueezeExcite(nn.Module):
    def __init__(self, c: int, squeeze: int, gate: Callable[[Tensor], Tensor], act: nn.Module) -> None:
        super().__init__()
        self.fc1 = nn.Conv2d(c, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, c, 1)
        self.act = act
        self.gate = gate

    def forward(self, x: Tensor) -> Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


class InvertedResidual(nn.Module):
    """MobileNetV2's block (ReLU6, no SE) or V3's (hardswish or ReLU, optional SE with a
    hardsigmoid gate)."""

    def __init__(
        self, cin: int, cout: int, stride: int, expand: int, kernel: int = 3,
        act: type[nn.Module] = nn.ReLU6, se: bool = False,
    ) -> None:  # fmt: skip
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), act()]
        layers += [
            nn.Conv2d(hidden, hidden, kernel, stride, kernel // 2, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            act(),
        ]
        if se:
            layers.append(SqueezeExcite(hidden, _divisible(hidden / 4), F.hardsigmoid, nn.ReLU()))
        layers += [nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: Tensor) -> Tensor:
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
            InvertedResidual(16, 8, 1, 1),
            InvertedResidual(8, 16, 2, 6),
            InvertedResidual(16, 16, 1, 6),
            InvertedResidual(16, 24, 2, 6),
            nn.Conv2d(24, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU6(),
        )  # fmt: skip
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, classes))

    def forward(self, x: Tensor) -> Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 1).flatten(1)
        return self.classifier(x)


class MobileNetV3(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish(),
            InvertedResidual(16, 16, 2, 1, 3, nn.ReLU, se=True),
            InvertedResidual(16, 24, 2, 4, 3, nn.ReLU),
            InvertedResidual(24, 24, 1, 3, 5, nn.Hardswish, se=True),
            nn.Conv2d(24, 96, 1, bias=False), nn.BatchNorm2d(96), nn.Hardswish(),
        )  # fmt: skip
        self.classifier = nn.Sequential(
            nn.Linear(96, 128), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(128, classes)
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class MBConv(nn.Module):
    """EfficientNet's block: expand, depthwise, squeeze-excite (SiLU, sigmoid gate), project."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int = 4, kernel: int = 3) -> None:
        super().__init__()
        hidden = cin * expand
        self.expand = nn.Sequential(nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.SiLU())
        self.depthwise = nn.Sequential(
            nn.Conv2d(hidden, hidden, kernel, stride, kernel // 2, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.SiLU(),
        )
        self.se = SqueezeExcite(hidden, max(1, cin // 4), torch.sigmoid, nn.SiLU())
        self.project = nn.Sequential(nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x: Tensor) -> Tensor:
        y = self.project(self.se(self.depthwise(self.expand(x))))
        return x + y if self.residual else y


class EfficientNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU())
        self.blocks = nn.Sequential(MBConv(16, 16, 1), MBConv(16, 24, 2), MBConv(24, 24, 1, kernel=5))
        self.head = nn.Linear(24, classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


# ---- ConvNeXt ------------------------------------------------------------------------


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 0.5))

    def forward(self, x: Tensor) -> Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(F.gelu(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    def __init__(self, dims: tuple[int, ...] = (16, 32), classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, dims[0], 4, 4)
        stages: list[nn.Module] = []
        for i, d in enumerate(dims):
            if i:
                stages += [nn.GroupNorm(1, dims[i - 1]), nn.Conv2d(dims[i - 1], d, 2, 2)]
            stages.append(ConvNeXtBlock(d))
        self.stages = nn.Sequential(*stages)
        self.norm = nn.LayerNorm(dims[-1])
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.norm(self.stages(self.stem(x)).mean((-2, -1))))


# ---- transformers: ViT, BERT, GPT --------------------------------------------------


class Attention(nn.Module):
    """Multi-head self-attention written out (q, k, v projections, softmax(qkᵀ/√d + mask) v)."""

    def __init__(self, dim: int, heads: int, causal: bool = False) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads)
        if self.causal:
            keep = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~keep, float("-inf"))
        if mask is not None:
            scores = scores + mask
        y = scores.softmax(-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class ViT(nn.Module):
    def __init__(
        self, image: int = 16, patch: int = 4, dim: int = 32, depth: int = 2, heads: int = 4,
        classes: int = 10,
    ) -> None:  # fmt: skip
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        n = (image // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, 2 * dim, 0.0, "gelu", batch_first=True, norm_first=True)
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: Tensor) -> Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x[:, 0]))


class BertLayer(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.attn = Attention(dim, heads)
        self.ln1 = nn.LayerNorm(dim, eps=1e-12)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))
        self.ln2 = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.ff(x))


class Bert(nn.Module):
    """Token, position and segment embeddings; an additive mask from the attention mask;
    post-norm layers; a tanh pooler on the first token."""

    def __init__(self, vocab: int = 100, dim: int = 32, depth: int = 2, heads: int = 4, seq: int = 16) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.seg = nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(dim, heads) for _ in range(depth))
        self.pool = nn.Linear(dim, dim)

    def forward(self, ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, Tensor]:
        t = ids.shape[1]
        positions = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.ln(self.tok(ids) + self.pos(positions) + self.seg(torch.zeros_like(ids)))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask)
        return x, torch.tanh(self.pool(x[:, 0]))


class GPTBlock(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32, depth: int = 2, heads: int = 4, seq: int = 16) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(GPTBlock(dim, heads) for _ in range(depth))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: Tensor) -> Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


# ---- recurrent ------------------------------------------------------------------------


class LSTMTagger(nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 16, hidden: int = 24, tags: int = 5, layers: int = 2) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, layers, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, ids: Tensor) -> Tensor:
        y, _ = self.lstm(self.emb(ids))
        return self.out(y).log_softmax(-1)


class GRUClassifier(nn.Module):
    def __init__(self, features: int = 8, hidden: int = 16, classes: int = 3) -> None:
        super().__init__()
        self.gru = nn.GRU(features, hidden, 1)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        y, h = self.gru(x)
        return self.out(h[-1]), y


# ---- UNet -----------------------------------------------------------------------------


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )  # fmt: skip


class UNet(nn.Module):
    def __init__(self, cin: int = 3, classes: int = 2, base: int = 8) -> None:
        super().__init__()
        self.inc = _double_conv(cin, base)
        self.down1 = _double_conv(base, 2 * base)
        self.down2 = _double_conv(2 * base, 4 * base)
        self.up1 = nn.ConvTranspose2d(4 * base, 2 * base, 2, 2)
        self.conv1 = _double_conv(4 * base, 2 * base)
        self.up2 = nn.ConvTranspose2d(2 * base, base, 2, 2)
        self.conv2 = _double_conv(2 * base, base)
        self.outc = nn.Conv2d(base, classes, 1)

    def forward(self, x: Tensor) -> Tensor:
        x1 = self.inc(x)
        x2 = self.down1(F.max_pool2d(x1, 2))
        x3 = self.down2(F.max_pool2d(x2, 2))
        y = self.conv1(torch.cat([x2, self.up1(x3)], dim=1))
        y = self.conv2(torch.cat([x1, self.up2(y)], dim=1))
        return self.outc(y)


# ---- the table --------------------------------------------------------------------------


def _images(n: int, size: int, seed: int) -> Tensor:
    return torch.randn(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


def _tokens(n: int, t: int, vocab: int, seed: int) -> Tensor:
    return torch.randint(0, vocab, (n, t), generator=torch.Generator().manual_seed(seed))


def _bert(seq: int = 8) -> Example:
    torch.manual_seed(4)
    model = _randomize(Bert(seq=16), 4)
    ids = _tokens(2, seq, 100, 4)
    mask = torch.ones(2, seq, dtype=torch.int64)
    mask[1, seq - 3 :] = 0
    return model, (ids, mask)


def _seeded(factory: Callable[[], nn.Module], seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return _randomize(factory(), seed)


ZOO: dict[str, Callable[[], Example]] = {
    "resnet": lambda: (_seeded(ResNet, 1), (_images(1, 32, 1),)),
    "mobilenet_v2": lambda: (_seeded(MobileNetV2, 2), (_images(1, 32, 2),)),
    "mobilenet_v3": lambda: (_seeded(MobileNetV3, 3), (_images(1, 32, 3),)),
    "efficientnet": lambda: (_seeded(EfficientNet, 5), (_images(1, 32, 5),)),
    "convnext": lambda: (_seeded(ConvNeXt, 6), (_images(1, 32, 6),)),
    "vit": lambda: (_seeded(ViT, 7), (_images(2, 16, 7),)),
    "bert": _bert,
    "gpt": lambda: (_seeded(GPT, 8), (_tokens(2, 8, 100, 8),)),
    "lstm": lambda: (_seeded(LSTMTagger, 9), (_tokens(2, 6, 50, 9),)),
    "gru": lambda: (_seeded(GRUClassifier, 10), (torch.randn(5, 2, 8, generator=torch.Generator().manual_seed(10)),)),
    "unet": lambda: (_seeded(UNet, 11), (_images(1, 16, 11),)),
}
"""Name -> factory of (model in eval mode, example arguments): the default-size cases."""

SLOW_ZOO: dict[str, Callable[[], Example]] = {
    "resnet_wide": lambda: (_seeded(lambda: ResNet((16, 32, 64)), 21), (_images(2, 64, 21),)),
    "mobilenet_v3_large_input": lambda: (_seeded(MobileNetV3, 22), (_images(2, 96, 22),)),
    "convnext_deep": lambda: (_seeded(lambda: ConvNeXt((32, 64, 128)), 23), (_images(1, 64, 23),)),
    "vit_deep": lambda: (_seeded(lambda: ViT(32, 4, 64, 4, 4), 24), (_images(2, 32, 24),)),
    "gpt_deep": lambda: (_seeded(lambda: GPT(500, 64, 4, 4, 64), 25), (_tokens(2, 32, 500, 25),)),
    "unet_large": lambda: (_seeded(lambda: UNet(3, 4, 16), 26), (_images(1, 64, 26),)),
}
"""Larger variants, for `@pytest.mark.slow`."""
