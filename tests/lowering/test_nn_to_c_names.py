"""Legal input and partition names never break the C build (issue 14 item 10).

Inputs named like the macros and functions of the C headers the generated code
includes (`EOF`, `BUFSIZ`, `INT32_MAX`, `expf`, ...) used to become C parameters
and locals of that name, and the C did not compile. The generated C now names its
parameters `in<i>` / `out<j>` and a partition's functions `byoc_p_<sym>...`; the
user's names appear only in the messages.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper
from support.bounds import assert_graph_outputs

import byoc
from byoc.runtime.c_module import CFunctionError, CModule, CSignature
from byoc.runtime.tensor import TensorSpec

NAMES = [
    "EOF", "BUFSIZ", "INT32_MAX", "HUGE_VAL", "SEEK_SET", "EXIT_FAILURE", "NULL", "errno",
    "stdin", "expf", "malloc", "memcpy", "byoc_fail", "byoc_workspace", "in0", "out0", "ws",
]  # fmt: skip


def _sum_module(names: list[str]) -> str:
    args = ", ".join(f"%{n}: tensor<4xf32>" for n in names)
    lines = [f"func.func @main({args}) -> tensor<4xf32> {{"]
    acc = f"%{names[0]}"
    for k, n in enumerate(names[1:]):
        lines.append(f"  %s{k} = nn.add {acc}, %{n} : tensor<4xf32>")
        acc = f"%s{k}"
    lines += [f"  %r = nn.relu {acc} : tensor<4xf32>", "  func.return %r : tensor<4xf32>", "}"]
    return "\n".join(lines)


def test_inputs_named_like_c_library_names_build() -> None:
    module = byoc.parse_module(_sum_module(NAMES))
    exe = byoc.build(module, targets=["ccompiler"])
    assert [p.target for p in exe.partitions] == ["ccompiler"]
    xs = [np.full(4, k - 8, np.float32) for k in range(len(NAMES))]
    np.testing.assert_array_equal(exe.run(*xs)[0], byoc.run_reference(module, *xs)[0])
    (component,) = exe.components.values()
    assert "EOF" not in component.source.replace("'EOF'", "").replace('"EOF"', "")


def test_messages_keep_the_users_name() -> None:
    exe = byoc.build(byoc.parse_module(_sum_module(["EOF", "expf"])), targets=["ccompiler"])
    (component,) = exe.components.values()
    (sym,) = component.functions
    good = np.zeros(4, np.float32)
    with pytest.raises(CFunctionError, match=r"input 'expf' \(#1\) has shape \[5\], expected \[4\]"):
        component.get_function(sym)(good, np.zeros(5, np.float32))


def test_onnx_graph_inputs_named_like_macros() -> None:
    names = ["EOF", "INT32_MAX", "HUGE_VAL"]
    graph = helper.make_graph(
        [helper.make_node("Sum", names, ["y"])],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in names],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    module = byoc.import_onnx(model)
    exe = byoc.build(module, targets=["ccompiler"])
    assert exe.partitions
    xs = [np.arange(4, dtype=np.float32) * (k + 1) for k in range(len(names))]
    np.testing.assert_array_equal(exe.run(*xs)[0], sum(xs))


PARTITIONS = ["expf", "malloc", "memcpy", "byoc_fail", "byoc_init", "byoc_workspace", "EOF"]


def test_partitions_named_like_c_library_names_build() -> None:
    """Hand-partitioned functions named like libc or the runtime: C names are `byoc_p_<sym>`."""
    parts, calls = [], []
    for k, name in enumerate(PARTITIONS):
        parts.append(
            f"func.func private @{name}(%a: tensor<4xf32>) -> tensor<4xf32> "
            f'attributes {{byoc.compiler = "ccompiler"}} {{\n'
            f"  %0 = nn.exp %a : tensor<4xf32>\n  %1 = nn.negative %0 : tensor<4xf32>\n"
            f"  func.return %1 : tensor<4xf32>\n}}"
        )
        prev = "%x" if k == 0 else f"%r{k - 1}"
        calls.append(f"  %r{k} = func.call @{name}({prev}) : (tensor<4xf32>) -> tensor<4xf32>")
    text = "\n".join(
        [*parts, "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {", *calls,
         f"  func.return %r{len(PARTITIONS) - 1} : tensor<4xf32>", "}"]
    )  # fmt: skip
    module = byoc.parse_module(text)
    exe = byoc.build(module, targets=["ccompiler"])
    assert sorted(p.symbol for p in exe.partitions) == sorted(PARTITIONS)
    x = np.linspace(-3, -1, 4, dtype=np.float32)
    assert_graph_outputs(module, [x], exe.run(x), byoc.run_reference(module, x))
    (component,) = exe.components.values()
    with pytest.raises(CFunctionError, match=r"^expf: input 'a' \(#0\) has shape \[5\], expected \[4\]"):
        component.get_function("expf")(np.zeros(5, np.float32))


_LEGACY = """
#include "byoc_runtime.h"
BYOC_EXPORT int32_t byoc_init(const void* const* consts, int32_t n);
BYOC_EXPORT int32_t byoc_init(const void* const* consts, int32_t n) { (void)consts; (void)n; return 0; }
BYOC_EXPORT int32_t twice(DLTensor** args, int32_t n);
BYOC_EXPORT int32_t twice(DLTensor** args, int32_t n) {
  if (n != 2) return byoc_fail("twice: expected 2 arguments, got %d", (int)n);
  const float* x = (const float*)byoc_tensor_data(args[0]);
  float* y = (float*)byoc_tensor_data(args[1]);
  for (int i = 0; i < 4; ++i) y[i] = 2 * x[i];
  return 0;
}
"""


def test_an_entry_named_as_its_partition_still_loads(tmp_path: Path) -> None:
    """Libraries from before the prefix (and hand-written C) export `<sym>` itself."""
    spec = TensorSpec((4,), np.float32)
    lib = CModule.from_source(_LEGACY, {"twice": CSignature((spec,), (spec,))}, directory=tmp_path)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(lib.get_function("twice")(x), 2 * x)
    with pytest.raises(CFunctionError, match="twice: expected 2 arguments, got 3"):
        lib.get_function("twice")(x, x, x)


CLASHING = ["f", "f_0", "f_", "f_wrapper", "f_c0", "f.0", "conv-1", "\u00e9t\u00e9"]
"""Partition names whose C names would collide under `byoc_p_<sym>` + helper suffixes
(`f`'s first kernel is `byoc_p_f_0`, `f_0`'s entry too), or that are no C identifier."""


def _partitions_module(names: list[str]) -> str:
    ops = ["nn.relu", "nn.exp", "nn.tanh", "nn.negative", "nn.abs", "nn.sigmoid", "nn.sqrt", "nn.erf"]
    lines: list[str] = []
    for name, op in zip(names, ops, strict=True):
        lines += [
            f'func.func private @"{name}"(%a: tensor<4xf32>) -> tensor<4xf32> attributes {{byoc.compiler = "ccompiler"}} {{',
            f"  %r = {op} %a : tensor<4xf32>",
            "  func.return %r : tensor<4xf32>",
            "}",
        ]
    types = ", ".join(["tensor<4xf32>"] * len(names))
    lines.append(f"func.func @main(%x: tensor<4xf32>) -> ({types}) {{")
    for k, name in enumerate(names):
        lines.append(f'  %{k} = func.call @"{name}"(%x) : (tensor<4xf32>) -> tensor<4xf32>')
    lines += [f"  func.return {', '.join(f'%{k}' for k in range(len(names)))} : {types}", "}"]
    return "\n".join(lines)


def test_partitions_whose_c_names_would_clash_build_and_agree() -> None:
    source = _partitions_module(CLASHING)
    exe = byoc.build(byoc.parse_module(source), targets=["ccompiler"])
    assert sorted(p.symbol for p in exe.partitions) == sorted(CLASHING)
    x = np.abs(np.random.default_rng(3).standard_normal(4).astype(np.float32))
    host = byoc.build(byoc.parse_module(source))
    assert_graph_outputs(byoc.parse_module(source), [x], exe.run(x), host.run(x))
