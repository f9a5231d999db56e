"""Real architectures (in-repo definitions with random weights, `torch_zoo`) through
`byoc.from_torch` and `byoc.build`, against eager PyTorch.

Each model is exported, imported, built for `ccompiler` (and `dnnl,ccompiler` where oneDNN
is installed) and run; every output must be within the normwise bound of the whole graph
(`bounds.normwise_bound` with the graph's reduction length), integer outputs exactly.
The larger variants are `slow`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch (extra byoc[torch])")

from support.bounds import assert_within, normwise_bound, reduction_length  # noqa: E402
from torch_zoo import SLOW_ZOO, ZOO  # noqa: E402

import byoc  # noqa: E402
from byoc.targets.dnnl import missing_reason  # noqa: E402

DNNL_MISSING = missing_reason()


def eager_outputs(model: Any, args: tuple[Any, ...]) -> list[np.ndarray[Any, Any]]:
    """The model's outputs in eager mode, flattened as torch.export flattens them."""
    with torch.no_grad():
        out = model(*args)
    leaves, _ = torch.utils._pytree.tree_flatten(out)
    return [leaf.numpy() for leaf in leaves]


def check_against_eager(name: str, model: Any, args: tuple[Any, ...], targets: list[str]) -> Any:
    module = byoc.from_torch(model, args)
    got = byoc.build(module, targets=targets).run(*[a.numpy() for a in args])
    want = eager_outputs(model, args)
    assert len(got) == len(want)
    k = reduction_length(module)
    for i, (a, e) in enumerate(zip(got, want, strict=True)):
        assert_within(a, e, normwise_bound(k, e), f"{name} output {i} ({'+'.join(targets)})")
    return module


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_ccompiler(name: str) -> None:
    model, args = ZOO[name]()
    check_against_eager(name, model, args, ["ccompiler"])


DNNL_DEFAULT = ("resnet", "mobilenet_v3", "vit", "gpt")
"""The dnnl cases of the default run (convolutions, depthwise, attention); the rest are slow."""


@pytest.mark.skipif(DNNL_MISSING is not None, reason=f"oneDNN extra absent: {DNNL_MISSING}")
@pytest.mark.parametrize(
    "name",
    [n if n in DNNL_DEFAULT else pytest.param(n, marks=pytest.mark.slow) for n in sorted(ZOO)],
)
def test_zoo_dnnl(name: str) -> None:
    model, args = ZOO[name]()
    check_against_eager(name, model, args, ["dnnl", "ccompiler"])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_ZOO))
def test_zoo_large(name: str) -> None:
    model, args = SLOW_ZOO[name]()
    check_against_eager(name, model, args, ["ccompiler"])
    if DNNL_MISSING is None:
        check_against_eager(name, model, args, ["dnnl", "ccompiler"])


def test_integer_outputs_exact() -> None:
    """argmax of the GPT logits: i64, equal to eager exactly (ties aside, which random
    weights do not produce)."""

    class Greedy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gpt = ZOO["gpt"]()[0]

        def forward(self, ids: Any) -> Any:
            return self.gpt(ids).argmax(-1)

    model, (ids,) = Greedy().eval(), ZOO["gpt"]()[1]
    module = byoc.from_torch(model, (ids,))
    (got,) = byoc.build(module, targets=["ccompiler"]).run(ids.numpy())
    (want,) = eager_outputs(model, (ids,))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
