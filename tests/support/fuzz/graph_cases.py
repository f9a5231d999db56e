"""Graph blobs with one field edited, in artifacts whose checksums are recomputed (run in
the fuzz worker, see fuzz_harness).

An artifact of a model built for a graph-runtime target (`dnnl`, `graphref`) holds the
target's graph blob (docs/graph.md). A case decodes that blob, edits ONE field — a node's
op name, an input or output id, an attribute's value, kind or presence, an entry's dims,
dtype or kind, a graph input or output, a constant's type — encodes it, and writes the
artifact back with every checksum, size and offset recomputed: a crafted file the base
reader parses. Loading it must raise `ArtifactError` (naming the node whose type relation,
arity or properties fail) or load and run, giving the original outputs or byoc's own
error; never a crash or a hang.

`RECIPES` are the named edits each of which once crashed or hung the dnnl engine.
"""

from __future__ import annotations

import copy
import math
import random
from pathlib import Path
from typing import Any

import numpy as np

from support.fuzz.artifact_cases import _replace_section, join, split

DNNL_MODEL = """
func.func @main(%x: tensor<1x3x8x8xf32>, %y: tensor<1x8x8x8xf32>, %z: tensor<2x4x6xf32>)
    -> (tensor<1x8x16x4xf32>, tensor<1x8x4x4xf32>, tensor<2x4x6xf32>) {
  %w1 = nn.constant dense<0.5> : tensor<8x3x3x3xf32>
  %b1 = nn.constant dense<0.25> : tensor<8xf32>
  %g = nn.constant dense<1.5> : tensor<6xf32>
  %be = nn.constant dense<-0.5> : tensor<6xf32>
  %0 = nn.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
  %1 = nn.bias_add %0, %b1 : (tensor<1x8x8x8xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %2 = nn.relu %1 : tensor<1x8x8x8xf32>
  %3 = nn.max_pool2d %2 {pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  %4 = nn.add %y, %2 : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %5 = nn.concatenate %4, %y {axis = 2} : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x16x8xf32>
  %6 = nn.max_pool2d %5 {pool_size = array<i64: 1, 2>, strides = array<i64: 1, 2>} : (tensor<1x8x16x8xf32>) -> tensor<1x8x16x4xf32>
  %7 = nn.softmax %6 : tensor<1x8x16x4xf32>
  %8 = nn.transpose %3 {axes = array<i64: 0, 1, 3, 2>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %9 = nn.clip %8 {a_min = 0.0 : f32, a_max = 6.0 : f32} : tensor<1x8x4x4xf32>
  %10 = nn.layer_norm %z, %g, %be : (tensor<2x4x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x4x6xf32>
  func.return %7, %9, %10 : tensor<1x8x16x4xf32>, tensor<1x8x4x4xf32>, tensor<2x4x6xf32>
}
"""
"""Every kind of node the dnnl engine plans: a conv2d+bias_add+relu composite, pools, a
binary op, concatenate, softmax, transpose, clip and layer_norm."""

GRAPHREF_MODEL = """
func.func @main(%x: tensor<2x16xf32>, %y: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %w = nn.constant dense<0.125> : tensor<8x16xf32>
  %b = nn.constant dense<-0.5> : tensor<8xf32>
  %0 = nn.dense %x, %w : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = nn.relu %1 : tensor<2x8xf32>
  %3 = nn.add %2, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %4 = nn.maximum %3, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %5 = nn.multiply %4, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %5, %2 : tensor<2x8xf32>, tensor<2x8xf32>
}
"""
"""What the reference engine runs: a dense+bias_add+relu composite and broadcasting ops."""

MODELS = {"dnnl": DNNL_MODEL, "graphref": GRAPHREF_MODEL}

OP_NAMES = (
    "nn.batch_norm",
    "nn.layer_norm",
    "nn.conv2d",
    "nn.dense",
    "nn.bias_add",
    "nn.relu",
    "nn.add",
    "nn.concatenate",
    "nn.max_pool2d",
    "nn.avg_pool2d",
    "nn.global_max_pool2d",
    "nn.softmax",
    "nn.transpose",
    "nn.reshape",
    "nn.clip",
    "nn.matmul",
    "nn.conv2d_transpose",
    "nn.constant",
    "dnnl.conv2d_bias_act",
    "nn.nope",
    "",
)
INTS: tuple[int, ...] = (0, 1, -1, 2, 3, 7, 2**20, 2**31, 2**40, -(2**31), 2**63 - 1, -(2**63))
FLOATS: tuple[float, ...] = (0.0, -1.0, 1e30, math.nan, math.inf, -math.inf, 5e-324)
DIMS: tuple[int, ...] = (0, 1, 2, 3, 5, 2**20, 2**31, 2**40)


def build_graph_artifacts(directory: Path, targets: list[str]) -> list[str]:
    """Export the model of each target, with an input and the reference outputs beside it."""
    import byoc

    paths = []
    directory.mkdir(parents=True, exist_ok=True)
    for target in targets:
        source = MODELS[target]
        exe = byoc.build(byoc.parse_module(source), targets=[target])
        assert target in exe.components, f"{target} took no partition of its fuzz model"
        path = directory / f"{target}.byoc"
        exe.export_library(path)
        rng = np.random.default_rng(0)
        xs = [rng.standard_normal(s.shape).astype(s.dtype) for s in exe.plan.input_specs]
        ys = exe(*xs)
        np.savez(directory / f"{target}.npz", *xs)
        np.savez(directory / f"{target}.out.npz", *ys)
        paths.append(str(path))
    return paths


def _nodes(graphs: Any) -> list[Any]:
    """Every node, top-level and inner, of every graph."""
    out = []
    for g in graphs.graphs:
        for node in g.nodes:
            out.append(node)
            out.extend(node.body)
    return out


def _value(rng: random.Random, like: tuple[int, Any]) -> tuple[int, Any]:
    """A new (kind, value) for an attribute that was `like`."""
    from byoc.runtime.graph_format import ATTR_FLOAT, ATTR_FLOATS, ATTR_INT, ATTR_INTS, ATTR_STRING

    kind, value = like
    r = rng.random()
    if r < 0.15:  # another kind
        k = rng.choice([ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS, ATTR_FLOATS])
        return k, {
            ATTR_INT: 1,
            ATTR_FLOAT: 1.0,
            ATTR_STRING: "NHWC",
            ATTR_INTS: [1, 1],
            ATTR_FLOATS: [1.0],
        }[k]
    if kind == ATTR_INT:
        return kind, rng.choice(INTS)
    if kind == ATTR_FLOAT:
        return kind, rng.choice(FLOATS)
    if kind == ATTR_STRING:
        return kind, rng.choice(["", "NHWC", "HWIO", "x", "NCHW", "OIHW", "IOHW"])
    values = list(value)
    if r < 0.3 or not values:
        values = values + [rng.choice(INTS) if kind == ATTR_INTS else rng.choice(FLOATS)]
    elif r < 0.4:
        values = values[:-1]
    else:
        i = rng.randrange(len(values))
        values[i] = rng.choice(INTS) if kind == ATTR_INTS else rng.choice(FLOATS)
    return kind, values


def mutate_graph(graphs: Any, rng: random.Random) -> str:
    """Edit one field of `graphs` in place; return what was edited."""
    g = rng.choice(graphs.graphs)
    nodes = _nodes(graphs)
    r = rng.randrange(12)
    if r == 0:
        node = rng.choice(nodes)
        old, node.op = node.op, rng.choice(OP_NAMES)
        return f"op {old} -> {node.op}"
    if r in (1, 2):
        node = rng.choice([n for n in nodes if n.inputs] or nodes)
        how = rng.randrange(4)
        if how == 0 and node.inputs:
            del node.inputs[rng.randrange(len(node.inputs))]
        elif how == 1 and len(node.inputs) > 1:
            i, j = rng.sample(range(len(node.inputs)), 2)
            node.inputs[i], node.inputs[j] = node.inputs[j], node.inputs[i]
        elif how == 2 and node.inputs:
            node.inputs.append(rng.choice(node.inputs))
        else:
            node.inputs[rng.randrange(len(node.inputs))] = rng.randrange(len(g.entries))
        return f"inputs of {node.op} ({how}) -> {node.inputs}"
    if r == 3:
        node = rng.choice(nodes)
        node.outputs[rng.randrange(len(node.outputs))] = rng.randrange(len(g.entries))
        return f"outputs of {node.op} -> {node.outputs}"
    if r in (4, 5, 6):
        node = rng.choice([n for n in nodes if n.attrs] or nodes)
        if not node.attrs:
            node.attrs.append(("axis", 0, 1))
            return f"attribute added to {node.op}"
        i = rng.randrange(len(node.attrs))
        name, kind, value = node.attrs[i]
        if rng.random() < 0.1:
            del node.attrs[i]
            return f"{node.op}: {name} deleted"
        kind, value = _value(rng, (kind, value))
        node.attrs[i] = (name, kind, value)
        return f"{node.op}: {name} = {value!r}"
    if r in (7, 8, 9):
        i = rng.randrange(len(g.entries))
        e = g.entries[i]
        how = rng.randrange(6)
        if how == 0:
            e.shape = (0, 0)
        elif how == 1 and e.shape:
            dims = list(e.shape)
            dims[rng.randrange(len(dims))] = rng.choice(DIMS)
            e.shape = tuple(dims)
        elif how == 2:
            e.shape = e.shape[:-1] if e.shape and rng.random() < 0.5 else (*e.shape, 1)
        elif how == 3:
            e.dtype = np.dtype(rng.choice(["f8", "f2", "i4", "u1", "?", "i8"]))
        elif how == 4:
            e.kind = rng.randrange(4)
        else:
            e.shape = tuple(reversed(e.shape))
        return f"entry {i} -> kind {e.kind} {e.dtype} {e.shape}"
    if r == 10:
        ids = rng.choice([g.inputs, g.outputs])
        if ids and rng.random() < 0.5:
            ids[rng.randrange(len(ids))] = rng.randrange(len(g.entries))
        elif ids:
            del ids[rng.randrange(len(ids))]
        return f"graph inputs {g.inputs} outputs {g.outputs}"
    if graphs.constants:
        c = rng.choice(graphs.constants)
        how = rng.randrange(3)
        if how == 0:
            c.array = c.array.reshape(-1)
        elif how == 1:
            c.array = c.array.astype(np.float64)
        else:
            c.array = np.full_like(c.array, rng.choice(FLOATS))
        return f"constant {c.name} -> {c.array.dtype}{list(c.array.shape)}"
    return "nothing"


def _find(nodes: list[Any], op: str) -> Any:
    return next(n for n in nodes if n.op == op)


def recipe(name: str, graphs: Any) -> None:
    """The named single-field edits that crashed or hung the dnnl engine."""
    nodes = _nodes(graphs)
    if name == "bias-add-inputs-swapped":
        node = _find(nodes, "nn.bias_add")
        node.inputs.reverse()
    elif name in ("inner-op-batch-norm", "inner-op-layer-norm"):
        _find(nodes, "nn.relu").op = "nn.batch_norm" if name.endswith("batch-norm") else "nn.layer_norm"
    elif name == "layer-norm-input-dropped":
        del _find(nodes, "nn.layer_norm").inputs[2]
    elif name == "concatenate-axis-2^31":
        node = _find(nodes, "nn.concatenate")
        node.attrs = [(k, kind, 2**31 if k == "axis" else v) for k, kind, v in node.attrs]
    elif name == "result-shape-0x0":
        graphs.graphs[0].entries[_find(nodes, "nn.add").outputs[0]].shape = (0, 0)
    elif name == "transpose-result-2^20":
        graphs.graphs[0].entries[_find(nodes, "nn.transpose").outputs[0]].shape = (2**20, 8, 8, 3)
    elif name == "max-pool-size-2^40":
        node = _find(nodes, "nn.max_pool2d")
        node.attrs = [(k, kind, [2, 2**40] if k == "pool_size" else v) for k, kind, v in node.attrs]
    else:
        raise KeyError(name)


RECIPES = (
    "bias-add-inputs-swapped",
    "inner-op-batch-norm",
    "inner-op-layer-norm",
    "layer-norm-input-dropped",
    "concatenate-axis-2^31",
    "result-shape-0x0",
    "transpose-result-2^20",
    "max-pool-size-2^40",
)


def edited_artifact(case: dict[str, Any]) -> tuple[bytes, str]:
    """The artifact of `case` with its graph blob edited (checksums recomputed)."""
    from byoc.runtime.graph_format import decode, encode

    header, payload = split(Path(case["artifact"]).read_bytes())
    (target,) = [t for t, c in header["components"].items() if c["kind"] == "graph"]
    index = int(header["components"][target]["blobs"]["graph"])
    section = header["sections"][index]
    graphs = decode(payload[section["offset"] : section["offset"] + section["size"]])
    graphs = copy.deepcopy(graphs)
    if "recipe" in case:
        recipe(case["recipe"], graphs)
        what = case["recipe"]
    else:
        what = mutate_graph(graphs, random.Random(case["seed"]))
    return join(*_replace_section(header, payload, index, encode(graphs))), what


def run_graph_case(case: dict[str, Any]) -> tuple[str, str]:
    """One case; `{"build": directory}` exports the artifacts into `directory` first (in the
    worker, so that under `BYOC_SANITIZE` their libraries are the instrumented ones)."""
    import byoc
    from byoc.runtime.artifact import ArtifactError
    from support.fuzz.artifact_cases import _byoc_errors

    if "build" in case:
        return "ok-built", " ".join(build_graph_artifacts(Path(case["build"]), case["targets"]))
    source = Path(case["artifact"])
    try:
        data, what = edited_artifact(case)
    except (ValueError, OverflowError, TypeError) as exc:  # an edit the format cannot encode
        return "ok-unencodable", f"{type(exc).__name__}: {exc}"
    path = source.with_name(f"edited-{source.stem}.byoc")
    path.write_bytes(data)
    try:
        exe = byoc.load_module(path)
    except ArtifactError as exc:
        if "recipe" in case and "node" not in str(exc):
            return "wrong-error", f"{what}: the error does not name the node: {exc}"
        return "ok-rejected", f"{what}: {exc}"
    except Exception as exc:  # noqa: BLE001
        return "wrong-error", f"{what}: load: {type(exc).__name__}: {str(exc)[:300]}"
    with np.load(source.with_suffix(".npz")) as f:
        xs = [f[k] for k in f.files]
    with np.load(source.with_suffix(".out.npz")) as f:
        want = [f[k] for k in f.files]
    try:
        got = exe(*xs)
    except _byoc_errors():
        return "ok-run-error", what
    except Exception as exc:  # noqa: BLE001
        return "wrong-error", f"{what}: run: {type(exc).__name__}: {str(exc)[:300]}"
    same = len(got) == len(want) and all(
        g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w, equal_nan=True)
        for g, w in zip(got, want, strict=False)
    )
    return ("ok" if same else "ok-loaded-crafted"), what
