"""The ONNX graphs TVM fails on, imported, partitioned, built and run.

- A `Reshape` whose shape is computed in the graph (`Shape -> Gather -> Unsqueeze ->
  Concat -> Reshape`, what `torch.onnx.export` writes for `x.view(x.size(0), -1)`):
  TVM's Relax importer fails on models that do this. Here shape computations on
  static shapes fold at import, so the reshape is an `nn.reshape` with a static shape.
- An OCR text detector shaped like DBNet: a strided conv backbone, an FPN whose
  levels are upsampled (`Resize`) and added, a concat of the upsampled levels, and
  two heads that upsample with `ConvTranspose`. The C codegen takes the convs, adds,
  concat, batch norms and activations but neither `Resize` nor `ConvTranspose`, so
  supported and unsupported ops interleave, and one region of every supported op
  would depend on itself through a host op. TVM's partitioner stops with "cyclic
  dependency detected" on such a detector; here regions are the largest acyclic
  ones and the model runs.

Every graph is built with onnx.helper and checked against onnxruntime (one thread).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.bounds import assert_graph_outputs
from support.onnx_harness import host_ops, main_function, onnxruntime_execute

import byoc
from byoc.context import make_context
from byoc.dialects import nn
from byoc.dialects.byoc import TARGET_ATTR, RegionOp
from byoc.frontend.onnx import import_model
from byoc.passes.annotate_target import AnnotateTargetPass
from byoc.passes.byoc_pipeline import partition_for
from byoc.passes.merge_compiler_regions import MergeCompilerRegionsPass, build_graph
from byoc.passes.region_proposal import validate_region


class GraphBuilder:
    """Nodes and seeded random initializers of one ONNX graph."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, value: Any, prefix: str = "c") -> str:
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], n_out: int = 1, **attrs: Any) -> Any:
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=outs[0], **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x: str, cin: int, cout: int, k: int = 3, stride: int = 1) -> str:
        w = self.rng.standard_normal((cout, cin, k, k), dtype=np.float32)
        w *= np.float32(np.sqrt(2.0 / (cin * k * k)))
        b = (self.rng.standard_normal(cout, dtype=np.float32) * 0.1).astype(np.float32)
        p = k // 2
        return self.node(
            "Conv", [x, self.const(w, "w"), self.const(b, "b")], kernel_shape=[k, k],
            strides=[stride, stride], pads=[p, p, p, p],
        )  # fmt: skip

    def bn(self, x: str, c: int) -> str:
        var = self.rng.uniform(0.5, 1.5, c).astype(np.float32)
        scale = (np.sqrt(var) * self.rng.uniform(0.8, 1.2, c)).astype(np.float32)
        shift = (self.rng.standard_normal(c) * 0.1).astype(np.float32)
        mean = (self.rng.standard_normal(c) * 0.1).astype(np.float32)
        return self.node(
            "BatchNormalization",
            [x, self.const(scale), self.const(shift), self.const(mean), self.const(var)],
        )

    def up(self, x: str, factor: int) -> str:
        scales = self.const(np.array([1, 1, factor, factor], np.float32), "scales")
        return self.node("Resize", [x, "", scales], mode="nearest")

    def deconv(self, x: str, cin: int, cout: int) -> str:
        w = self.rng.standard_normal((cin, cout, 2, 2), dtype=np.float32)
        w *= np.float32(np.sqrt(1.0 / (cin * 4)))
        return self.node(
            "ConvTranspose", [x, self.const(w, "w")], kernel_shape=[2, 2], strides=[2, 2]
        )

    def model(self, inputs: list[Any], outputs: list[Any], opset: int = 13) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "g", inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        onnx.checker.check_model(model)
        return model


def _float_input(name: str, shape: list[int]) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _check_against_onnxruntime(model: onnx.ModelProto, targets: list[str], seed: int = 0) -> Any:
    module = import_model(model)
    shapes = [[d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in model.graph.input]
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
    exe = byoc.build(module, targets=targets)
    actual = exe.run(*xs)
    expected = onnxruntime_execute(model, xs)
    assert_graph_outputs(module, xs, actual, expected)
    return module, exe


# ---- Reshape with a computed shape ---------------------------------------------------


def _flatten_by_shape(opset: int) -> onnx.ModelProto:
    """conv -> x.view(x.size(0), -1) -> Gemm, as torch.onnx.export writes the view."""
    g = GraphBuilder(seed=1)
    y = g.node("Relu", [g.conv("x", 3, 4, stride=2)])
    shape = g.node("Shape", [y])
    batch = g.node("Gather", [shape, g.const(np.array(0, np.int64))], axis=0)
    if opset >= 13:
        batch1 = g.node("Unsqueeze", [batch, g.const(np.array([0], np.int64))])
    else:
        batch1 = g.node("Unsqueeze", [batch], axes=[0])
    target = g.node("Concat", [batch1, g.const(np.array([-1], np.int64))], axis=0)
    flat = g.node("Reshape", [y, target])
    w = g.const(g.rng.standard_normal((5, 4 * 4 * 4), dtype=np.float32) * np.float32(0.1), "fc")
    out = g.node("Gemm", [flat, w], transB=1)
    return g.model([_float_input("x", [2, 3, 8, 8])], [_float_input(out, [2, 5])], opset)


def _reshape_like(opset: int) -> onnx.ModelProto:
    """x.reshape(1, C, -1) with C read from another input's shape, then back to y's shape."""
    g = GraphBuilder(seed=2)
    channels = g.node("Slice", [
        g.node("Shape", ["y"]), g.const(np.array([1], np.int64)), g.const(np.array([2], np.int64)),
    ])  # fmt: skip
    target = g.node(
        "Concat", [g.const(np.array([1], np.int64)), channels, g.const(np.array([-1], np.int64))],
        axis=0,
    )  # fmt: skip
    mean = g.node("Softmax", [g.node("Reshape", ["x", target])], axis=2)
    back = g.node("Reshape", [mean, g.node("Shape", ["y"])])
    out = g.node("Add", [back, "y"])
    inputs = [_float_input("x", [4, 6, 2]), _float_input("y", [1, 4, 3, 4])]
    return g.model(inputs, [_float_input(out, [1, 4, 3, 4])], opset)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("make", [_flatten_by_shape, _reshape_like])
def test_computed_reshape_imports_static_and_runs(make: Any, opset: int) -> None:
    module, exe = _check_against_onnxruntime(make(opset), ["ccompiler"])
    ops = [op.name for op in main_function(module).body.block.ops]
    # the shape arithmetic folded away: nothing but tensor ops and constants remain
    assert "nn.reshape" in ops
    assert {"nn.take", "nn.concatenate", "nn.strided_slice"}.isdisjoint(ops)
    assert all(s.kind == "call" for s in exe.plan.steps)  # all of it in C


# ---- a DBNet-like OCR detector ---------------------------------------------------------


def _dbnet_like() -> onnx.ModelProto:
    g = GraphBuilder(seed=3)
    relu = lambda x: g.node("Relu", [x])  # noqa: E731
    c1 = relu(g.bn(g.conv("image", 3, 8, stride=2), 8))  # 32x32
    c2 = relu(g.bn(g.conv(c1, 8, 16, stride=2), 16))  # 16x16
    c3 = relu(g.bn(g.conv(c2, 16, 16, stride=2), 16))  # 8x8
    c4 = relu(g.bn(g.conv(c3, 16, 32, stride=2), 32))  # 4x4
    # FPN: lateral 1x1 convs, top-down upsample-and-add
    in4, in3, in2 = g.conv(c4, 32, 8, k=1), g.conv(c3, 16, 8, k=1), g.conv(c2, 16, 8, k=1)
    out3 = g.node("Add", [in3, g.up(in4, 2)])
    out2 = g.node("Add", [in2, g.up(out3, 2)])
    p4 = g.up(g.conv(in4, 8, 4), 4)
    p3 = g.up(g.conv(out3, 8, 4), 2)
    p2 = g.conv(out2, 8, 4)
    fuse = g.node("Concat", [p4, p3, p2], axis=1)  # 12 x 16x16

    def head(x: str) -> str:
        h = relu(g.bn(g.conv(x, 12, 6), 6))
        h = relu(g.bn(g.deconv(h, 6, 6), 6))  # 32x32
        return g.node("Sigmoid", [g.deconv(h, 6, 1)])  # 64x64

    prob, thresh = head(fuse), head(fuse)
    k = g.const(np.array(50.0, np.float32), "k")
    binary = g.node("Sigmoid", [g.node("Mul", [k, g.node("Sub", [prob, thresh])])])
    out = [_float_input(v, [1, 1, 64, 64]) for v in (prob, thresh, binary)]
    return g.model([_float_input("image", [1, 3, 64, 64])], out)


def test_dbnet_like_one_region_of_all_supported_ops_would_be_cyclic() -> None:
    module = import_model(_dbnet_like())
    # a backend without resize2d and conv2d_transpose (as ccompiler was, and as TVM's
    # DNNL/TensorRT lists were for the detector of the issue): the test target with the rest
    names = {op.name for op in main_function(module).body.block.ops}
    supported = sorted(
        n.removeprefix("nn.")
        for n in names - {"nn.resize2d", "nn.conv2d_transpose", "nn.constant", "func.return"}
    )
    AnnotateTargetPass(targets=("test",), ops=tuple(supported)).apply(make_context(), module)
    nodes, graph = build_graph(main_function(module).body.block)
    tagged = [i for i, op in enumerate(nodes) if TARGET_ATTR in op.attributes]
    host = {op.name for op in nodes if TARGET_ATTR not in op.attributes}
    assert host == {"nn.resize2d", "nn.conv2d_transpose"} | {"nn.constant"}
    assert not validate_region(graph, tagged)

    MergeCompilerRegionsPass().apply(make_context(), module)
    module.verify()  # SSA order in one block: the regions and host ops form a DAG
    nodes, graph = build_graph(main_function(module).body.block)
    regions = [op for op in nodes if isinstance(op, RegionOp)]
    assert len(regions) > 1
    # each region is maximal: no two merge without a cycle
    index = {id(op): i for i, op in enumerate(nodes)}
    for a in regions:
        for b in regions:
            if a is not b:
                assert not validate_region(graph, [index[id(a)], index[id(b)]])


@pytest.mark.parametrize("targets", [["ccompiler"], ["ccompiler", "examplejson"]])
def test_dbnet_like_partitions_and_runs(targets: list[str]) -> None:
    module, exe = _check_against_onnxruntime(_dbnet_like(), targets)
    partitioned = partition_for(module.clone(), targets)
    host = sorted({op.name for op in host_ops(partitioned)})
    # ccompiler has resize2d and conv2d_transpose kernels: nothing is left on the host
    assert host == []
    assert {p.target for p in exe.partitions} == {"ccompiler"}
    assert [s.name for s in exe.plan.steps if s.kind == "kernel"] == [
        op.name for op in host_ops(partitioned)
    ]
    assert all(isinstance(op, nn.NNOp) for op in host_ops(partitioned))
