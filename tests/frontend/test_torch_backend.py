"""The `torch.compile` backend "byoc": found by name through its entry point, one build per
input signature, tensors through DLPack, eager fallback with one warning."""

from __future__ import annotations

import sys
import tomllib
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch (extra byoc[torch])")

from support.bounds import assert_within, normwise_bound, reduction_length  # noqa: E402
from torch import nn  # noqa: E402
from torch_zoo import ZOO  # noqa: E402

import byoc  # noqa: E402
from byoc.targets.dnnl import missing_reason  # noqa: E402
from byoc.tools.torch_backend import ByocFallbackWarning, CompiledGraph, byoc_backend  # noqa: E402

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Any:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


_REDUCTION_LENGTHS: dict[tuple[int, tuple[tuple[tuple[int, ...], str], ...]], tuple[Any, int]] = {}
"""`reduction_length` of a model's export, by the model's id and its arguments' shapes and
dtypes (the model is kept alongside, so its id is not reused)."""


def _reduction_length(model: Any, args: tuple[Any, ...]) -> int:
    """The k of the bound: it depends on the graph's ops and shapes, not on the weights or
    the input values, so a test that compares many calls of one model at the same shapes
    exports it once per signature."""
    if not all(isinstance(a, torch.Tensor) for a in args):
        return reduction_length(byoc.from_torch(model, args))
    key = (id(model), tuple((tuple(a.shape), str(a.dtype)) for a in args))
    if key not in _REDUCTION_LENGTHS:
        _REDUCTION_LENGTHS[key] = (model, reduction_length(byoc.from_torch(model, args)))
    return _REDUCTION_LENGTHS[key][1]


def _compare(name: str, model: Any, args: tuple[Any, ...], got: Any, want: Any) -> None:
    k = _reduction_length(model, args)
    got_leaves, want_leaves = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for i, (a, e) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        assert isinstance(a, torch.Tensor)
        assert_within(a.numpy(), e.numpy(), normwise_bound(k, e.numpy()), f"{name} output {i}")


@pytest.mark.parametrize("name", ["resnet", "mobilenet_v3", "vit", "bert", "gpt"])
def test_backend_matches_eager(name: str) -> None:
    model, args = ZOO[name]()
    fast = torch.compile(model, backend=byoc_backend, options={"targets": ["ccompiler"], "num_threads": 1})
    with torch.no_grad():
        got, want = fast(*args), model(*args)
    _compare(name, model, args, got, want)


def test_recurrent_layers_with_allow_rnn() -> None:
    """dynamo leaves nn.LSTM/GRU to eager unless `allow_rnn`; with it they are captured and
    run through byoc like any other op."""
    model, args = ZOO["lstm"]()
    with torch._dynamo.config.patch(allow_rnn=True), warnings.catch_warnings():
        warnings.simplefilter("error", ByocFallbackWarning)
        with torch.no_grad():
            got = torch.compile(model, backend=byoc_backend)(*args)
            want = model(*args)
    _compare("lstm", model, args, got, want)


@pytest.mark.skipif(missing_reason() is not None, reason=f"oneDNN extra absent: {missing_reason()}")
def test_backend_with_dnnl() -> None:
    model, args = ZOO["convnext"]()
    fast = torch.compile(model, backend=byoc_backend, options={"targets": ["dnnl", "ccompiler"]})
    with torch.no_grad():
        _compare("convnext", model, args, fast(*args), model(*args))


def test_one_build_per_input_signature() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.GELU(), nn.Linear(5, 3)).eval()
    seen: list[CompiledGraph] = []

    def backend(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
        compiled = byoc_backend(gm, example_inputs, **kwargs)
        seen.append(compiled)
        return compiled

    fast = torch.compile(model, backend=backend)

    def run(batches: tuple[int, ...]) -> int:
        with torch.no_grad():
            for batch in batches:
                x = torch.randn(batch, 6)
                _compare(f"batch {batch}", model, (x,), fast(x), model(x))
        return sum(c.builds for c in seen)

    # dynamo's first graph is static (batch 2), its recompile for 4 has a dynamic batch and
    # then takes every batch: each graph builds each signature it sees once
    first = run((2, 4, 7, 2))
    assert first <= 4
    assert run((2, 4, 7, 4, 2, 7)) == first, "a signature seen before was built again"
    assert all(c.builds == len(c.cache) and c.fallback is None for c in seen)


def test_parameters_changed_in_place_rebuild() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 2).eval()
    fast = torch.compile(model, backend=byoc_backend)
    x = torch.randn(3, 4)
    with torch.no_grad():
        before = fast(x)
        model.weight.mul_(2.0)
        after = fast(x)
        _compare("changed", model, (x,), after, model(x))
    assert not torch.allclose(before, after)


def test_tensors_cross_without_copies() -> None:
    """The built model reads the caller's tensor memory, and the returned tensors are views
    of the arrays byoc computed."""
    import numpy as np

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    x = torch.randn(2, 4)
    graph = CompiledGraph(torch.fx.symbolic_trace(model), [x], ["ccompiler"], None)
    ((exe, tensors, spec),) = graph.cache.values()
    seen_inputs: list[int] = []
    produced: list[int] = []

    class Recording:
        def run(self, *inputs: Any) -> Any:
            seen_inputs.extend(np.from_dlpack(i).__array_interface__["data"][0] for i in inputs)
            outputs = exe.run(*inputs)
            produced.extend(o.__array_interface__["data"][0] for o in outputs)
            return outputs

    graph.cache = {key: (Recording(), tensors, spec) for key in graph.cache}
    out = graph(x)
    assert seen_inputs == [x.data_ptr()]
    assert isinstance(out, torch.Tensor) and produced == [out.data_ptr()]
    with torch.no_grad():
        _compare("dlpack", model, (x,), out, model(x))


class Unconvertible(nn.Module):
    def forward(self, x: Any) -> Any:
        return torch.sort(x * 2).values + 1


def test_unconvertible_graph_runs_eagerly_with_one_warning() -> None:
    fast = torch.compile(Unconvertible(), backend=byoc_backend)
    x = torch.randn(3, 5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            got = fast(x)
    ours = [w for w in caught if issubclass(w.category, ByocFallbackWarning)]
    assert len(ours) == 1
    assert "aten.sort.default" in str(ours[0].message)
    assert f"{__file__}:" in str(ours[0].message)  # the user's line, not the graph's code
    torch.testing.assert_close(got, Unconvertible()(x))


def test_unknown_option() -> None:
    with pytest.raises(Exception, match="unknown option"):
        torch.compile(nn.ReLU(), backend=byoc_backend, options={"target": ["ccompiler"]})(torch.randn(2))


def test_entry_point_finds_the_backend_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pyproject.toml declares the backend in `torch_dynamo_backends`; a distribution
    declaring the same entry point makes `backend="byoc"` work with no import of byoc."""
    from torch._dynamo.backends import registry

    declared = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]["torch_dynamo_backends"]
    assert declared == {"byoc": "byoc.tools.torch_backend:byoc_backend"}
    dist = tmp_path / "byoc_entry_point_probe-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: byoc-entry-point-probe\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        "[torch_dynamo_backends]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items())
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # torch's own backends register themselves when their modules are first imported: that
    # must happen into the real registry, not into the copies the test swaps in and drops.
    registry._lazy_import()
    monkeypatch.setattr(registry, "_BACKENDS", {k: v for k, v in registry._BACKENDS.items() if k != "byoc"})
    monkeypatch.setattr(registry, "_COMPILER_FNS", {k: v for k, v in registry._COMPILER_FNS.items() if k != "byoc"})
    registry._lazy_import.cache_clear()
    registry._discover_entrypoint_backends.cache_clear()
    try:
        assert registry.lookup_backend("byoc") is byoc_backend
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval()
        x = torch.randn(1, 3, 6, 6)
        with torch.no_grad():
            got = torch.compile(model, backend="byoc", options={"targets": ["ccompiler"]})(x)
            _compare("by name", model, (x,), got, model(x))
    finally:
        registry._lazy_import.cache_clear()
        registry._discover_entrypoint_backends.cache_clear()
    assert "byoc.tools.torch_backend" in sys.modules


def test_builds_are_tiered_unless_the_option_says_otherwise() -> None:
    """A specialisation is built tiered by default (its C compiles in the background) and
    compiled before the first call with `tiered=False`; both give the eager answer."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    x = torch.randn(2, 4)
    for tiered, kind in ((True, "TieredCModule"), (False, "CModule")):
        graph = byoc_backend(torch.fx.symbolic_trace(model), [x], options={"tiered": tiered})
        ((exe, _, _),) = graph.cache.values()
        assert type(exe.components["ccompiler"]).__name__ == kind
        assert exe.wait_compiled() and exe.tier == "compiled"
        with torch.no_grad():
            _compare(f"tiered={tiered}", model, (x,), graph(x), model(x))
