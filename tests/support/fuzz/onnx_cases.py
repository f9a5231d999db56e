"""Mutated ONNX models through `byoc.import_onnx` (run in the fuzz worker): each must import
(a verified module) or raise the importer's own `OnnxImportError`.

Two modes, each seeded:

- `small`: a model of one to four nodes made with `onnx.helper` (Relu, Clip, Conv, MaxPool,
  AveragePool, Add, Reshape, Flatten, Gemm, ConstantOfShape, Range, Pad, Transpose) whose
  attributes, shapes and initializers are drawn with edge values: 0, -1, -3, huge, NaN.
- `light`: one field of a light model shipped with onnx (light_*.onnx) changed: a node's
  attribute, op type or inputs, a graph input's dims, an initializer's dims or data.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np

EDGE_INTS = (0, 1, 2, 3, -1, -3, 7, 2**31, 2**40, 2**62)
EDGE_FLOATS = (0.0, -1.0, 1e20, math.nan, math.inf, -math.inf)
LIGHT = ("squeezenet",)
"""The light model whose import is quick: the others fold hundreds of MB of weights."""


def _dims(rng: random.Random) -> list[int]:
    return [
        rng.choice([1, 1, 2, 3, 0, -1, 8]) if rng.random() < 0.2 else rng.choice([1, 2, 3, 4, 8])
        for _ in range(4)
    ]


def small_model(rng: random.Random) -> Any:
    from onnx import TensorProto, helper, numpy_helper

    shape = _dims(rng)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    nodes, inits = [], []
    cur = "x"
    for i in range(rng.randint(1, 4)):
        out = f"v{i}"
        op = rng.choice(
            [
                "Relu",
                "Clip",
                "Conv",
                "MaxPool",
                "AveragePool",
                "Add",
                "Reshape",
                "Flatten",
                "Gemm",
                "ConstantOfShape",
                "Range",
                "Pad",
                "Transpose",
            ]
        )
        k = [rng.choice([1, 2, 3]), rng.choice([1, 2, 3])]
        pads = [rng.choice(EDGE_INTS[:6]) for _ in range(4)]
        if op == "Relu":
            nodes.append(helper.make_node("Relu", [cur], [out]))
        elif op == "Clip":
            lo = numpy_helper.from_array(np.array(rng.choice(EDGE_FLOATS), np.float32), f"lo{i}")
            hi = numpy_helper.from_array(np.array(rng.choice(EDGE_FLOATS), np.float32), f"hi{i}")
            inits += [lo, hi]
            nodes.append(helper.make_node("Clip", [cur, f"lo{i}", f"hi{i}"], [out]))
        elif op in ("MaxPool", "AveragePool"):
            attrs: dict[str, Any] = {
                "kernel_shape": k,
                "pads": pads,
                "strides": [rng.choice([1, 2, 0, -1]), 1],
            }
            if op == "MaxPool" and rng.random() < 0.5:
                attrs["dilations"] = [rng.choice([1, 2, 0]), rng.choice([1, 2])]
            attrs["ceil_mode"] = rng.choice([0, 1])
            nodes.append(helper.make_node(op, [cur], [out], **attrs))
        elif op == "Conv":
            c = shape[1] if shape[1] > 0 else 1
            w = numpy_helper.from_array(np.ones((2, c, *k), np.float32), f"w{i}")
            inits.append(w)
            nodes.append(
                helper.make_node(
                    "Conv",
                    [cur, f"w{i}"],
                    [out],
                    pads=pads,
                    dilations=[rng.choice([1, 2, 0]), 1],
                    group=rng.choice([1, 1, 2, 0]),
                )
            )
        elif op == "Add":
            b = numpy_helper.from_array(np.ones([max(d, 1) for d in shape], np.float32), f"b{i}")
            inits.append(b)
            nodes.append(helper.make_node("Add", [cur, f"b{i}"], [out]))
        elif op == "Reshape":
            s = numpy_helper.from_array(
                np.array([rng.choice(EDGE_INTS[:6]) for _ in range(2)], np.int64), f"s{i}"
            )
            inits.append(s)
            nodes.append(helper.make_node("Reshape", [cur, f"s{i}"], [out]))
        elif op == "Flatten":
            nodes.append(
                helper.make_node("Flatten", [cur], [out], axis=rng.choice([0, 1, 3, 4, -1, 9]))
            )
        elif op == "Gemm":
            w = numpy_helper.from_array(np.ones((3, rng.choice([1, 3, 4])), np.float32), f"g{i}")
            inits.append(w)
            nodes.append(helper.make_node("Gemm", [cur, f"g{i}"], [out], transB=rng.choice([0, 1])))
        elif op == "ConstantOfShape":
            dims = [rng.choice([2, 3, 60000, 0, -1]) for _ in range(rng.randint(1, 2))]
            s = numpy_helper.from_array(np.array(dims, np.int64), f"cs{i}")
            inits.append(s)
            nodes.append(helper.make_node("ConstantOfShape", [f"cs{i}"], [out]))
        elif op == "Range":
            vals = [rng.choice([0.0, 3.0, 3e9, -1.0, 1.0, 0.5, math.nan]) for _ in range(3)]
            for name, v in zip("sld", vals, strict=True):
                inits.append(numpy_helper.from_array(np.array(v, np.float32), f"r{name}{i}"))
            nodes.append(helper.make_node("Range", [f"rs{i}", f"rl{i}", f"rd{i}"], [out]))
        elif op == "Pad":
            p = numpy_helper.from_array(
                np.array([rng.choice(EDGE_INTS[:6]) for _ in range(8)], np.int64), f"p{i}"
            )
            inits.append(p)
            nodes.append(
                helper.make_node(
                    "Pad", [cur, f"p{i}"], [out], mode=rng.choice(["constant", "reflect", "edge"])
                )
            )
        else:
            perm = rng.sample(range(4), 4) if rng.random() < 0.8 else [0, 0, 1, 5]
            nodes.append(helper.make_node("Transpose", [cur], [out], perm=perm))
        cur = out
    y = helper.make_tensor_value_info(cur, TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "fuzz", [x], [y], initializer=inits)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", rng.choice([11, 13, 17]))]
    )


def mutate_light(rng: random.Random) -> Any:
    import onnx

    from support.onnx_harness import light_models

    model = onnx.load(light_models()[rng.choice(LIGHT)])
    graph = model.graph
    what = rng.randrange(5)
    if what == 0 and graph.node:
        node = rng.choice(graph.node)
        if node.attribute:
            attr = rng.choice(node.attribute)
            if attr.ints:
                attr.ints[rng.randrange(len(attr.ints))] = rng.choice(EDGE_INTS)
            elif attr.type == onnx.AttributeProto.FLOAT:
                attr.f = rng.choice(EDGE_FLOATS)
            elif attr.type == onnx.AttributeProto.INT:
                attr.i = rng.choice(EDGE_INTS)
            else:
                node.attribute.remove(attr)
        else:
            node.input.append(rng.choice(["", "nope", node.input[0] if node.input else "x"]))
    elif what == 1 and graph.node:
        node = rng.choice(graph.node)
        node.op_type = rng.choice(["Relu", "Conv", "MaxPool", "Gemm", "Nope", "Softmax", "Concat"])
    elif what == 2 and graph.input:
        dims = graph.input[0].type.tensor_type.shape.dim
        if dims:
            d = dims[rng.randrange(len(dims))]
            if rng.random() < 0.2:
                d.dim_param = "N"
            else:
                d.dim_value = rng.choice(EDGE_INTS[:7])
    elif what == 3 and graph.initializer:
        init = rng.choice(graph.initializer)
        if init.dims:
            init.dims[rng.randrange(len(init.dims))] = rng.choice(EDGE_INTS[:7])
    elif graph.initializer:
        init = rng.choice(graph.initializer)
        if init.raw_data:
            init.raw_data = init.raw_data[: rng.randrange(len(init.raw_data) + 1)]
        elif init.float_data:
            del init.float_data[rng.randrange(len(init.float_data)) :]
    return model


def run_onnx_case(case: dict[str, Any]) -> tuple[str, str]:
    import byoc
    from byoc.frontend.onnx.errors import OnnxImportError

    rng = random.Random(case["seed"])
    model = small_model(rng) if case["mode"] == "small" else mutate_light(rng)
    try:
        module = byoc.import_onnx(model.SerializeToString())
    except OnnxImportError:
        return "ok-rejected", ""
    except MemoryError as exc:
        return "memory", f"MemoryError {exc}"
    except Exception as exc:  # noqa: BLE001
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        return (
            "wrong-error",
            f"{type(exc).__name__}: {str(exc)[:300]} at {Path(where.filename).name}:{where.lineno}",
        )
    # what the importer returns prints and parses back (negative dims did not, issue 14 item 8)
    try:
        byoc.parse_module(str(module))
    except Exception as exc:  # noqa: BLE001
        return "unparseable", f"{type(exc).__name__}: {str(exc)[:300]}"
    return "ok", ""
