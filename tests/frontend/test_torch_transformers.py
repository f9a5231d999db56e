"""Models of the `transformers` library, built from small configurations with random weights
(no download), through `byoc.from_torch` and `byoc.build`, against eager PyTorch.

Their outputs are `ModelOutput`s: the results of `@main` are its tensor leaves in order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch (extra byoc[torch])")
transformers = pytest.importorskip("transformers", reason="these cases build transformers models")

from support.bounds import assert_within, normwise_bound, reduction_length  # noqa: E402

import byoc  # noqa: E402


def _bert() -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    config = transformers.BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=32,
    )  # fmt: skip
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 100, (2, 8), generator=g)
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 5:] = 0
    return transformers.BertModel(config).eval(), (ids,), {"attention_mask": mask}


def _gpt2() -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    config = transformers.GPT2Config(
        vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=32, use_cache=False,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(2))
    return transformers.GPT2LMHeadModel(config).eval(), (ids,), {}


def _vit() -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    config = transformers.ViTConfig(
        image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, num_labels=5,
    )  # fmt: skip
    pixels = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(3))
    return transformers.ViTForImageClassification(config).eval(), (pixels,), {}


CASES: dict[str, Callable[[], tuple[Any, tuple[Any, ...], dict[str, Any]]]] = {
    "bert": _bert,
    "gpt2": _gpt2,
    "vit": _vit,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_transformers_model(name: str) -> None:
    torch.manual_seed(0)
    model, args, kwargs = CASES[name]()
    module = byoc.from_torch(model, args, example_kwargs=kwargs)
    inputs = [a.numpy() for a in args] + [v.numpy() for v in kwargs.values()]
    got = byoc.build(module, targets=["ccompiler"]).run(*inputs)
    with torch.no_grad():
        leaves = torch.utils._pytree.tree_leaves(model(*args, **kwargs))
    assert len(got) == len(leaves)
    k = reduction_length(module)
    for i, (a, e) in enumerate(zip(got, leaves, strict=True)):
        assert_within(a, e.numpy(), normwise_bound(k, e.numpy()), f"{name} output {i}")
