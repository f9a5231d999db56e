"""Legal input names never break the C build (issue 14 item 10).

Inputs named like the macros and functions of the C headers the generated code
includes (`EOF`, `BUFSIZ`, `INT32_MAX`, `expf`, ...) used to become C parameters
and locals of that name, and the C did not compile. The generated C now names its
parameters `in<i>` / `out<j>`; the user's name appears only in the messages.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import byoc
from byoc.runtime.c_module import CFunctionError

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
    assert [p.target for p in exe.partitions()] == ["ccompiler"]
    xs = [np.full(4, k - 8, np.float32) for k in range(len(NAMES))]
    np.testing.assert_array_equal(exe.run(*xs)[0], byoc.run_reference(module, xs)[0])
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
    assert exe.partitions()
    xs = [np.arange(4, dtype=np.float32) * (k + 1) for k in range(len(names))]
    np.testing.assert_array_equal(exe.run(*xs)[0], sum(xs))
