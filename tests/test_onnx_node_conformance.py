"""ONNX backend node tests through the importer and the numpy reference.

The cases are built once per session (`load_node_cases`, 10-25 s) and run
once (`run_cases`); each test below then checks one op's share of the results.
`python -m byoc.frontend.conformance` writes the same results to
docs/conformance.md.
"""

from __future__ import annotations

import pytest

from byoc.frontend.conformance import CaseResult, load_node_cases, run_cases, select_cases
from byoc.frontend.onnx import SUPPORTED_OPS

# The ops issue 7 lists: each must pass at least one node test case.
REQUIRED_OPS = """
Conv ConvTranspose Gemm MatMul BatchNormalization MaxPool AveragePool GlobalAveragePool
GlobalMaxPool LRN Relu LeakyRelu PRelu Sigmoid HardSigmoid HardSwish Tanh Erf Exp Log Sqrt Pow
Reciprocal Neg Abs Clip Add Sub Mul Div Max Min Sum Mean Softmax Reshape Flatten Transpose
Concat Split Slice Squeeze Unsqueeze Pad ReduceMean ReduceSum ReduceMax Resize Cast Identity
Dropout Constant ConstantOfShape Shape Gather Range
""".split()


@pytest.fixture(scope="session")
def results() -> list[CaseResult]:
    return run_cases(select_cases(load_node_cases()))


def test_required_ops_are_supported() -> None:
    assert set(REQUIRED_OPS) <= SUPPORTED_OPS


@pytest.mark.parametrize("op", sorted(SUPPORTED_OPS))
def test_no_case_fails(results: list[CaseResult], op: str) -> None:
    failed = [f"{r.name}: {r.reason}" for r in results if op in r.op_types and r.status == "failed"]
    assert failed == []


@pytest.mark.parametrize("op", REQUIRED_OPS)
def test_op_passes_some_case(results: list[CaseResult], op: str) -> None:
    passed = [r.name for r in results if op in r.op_types and r.status == "passed"]
    assert passed, f"no node test case using {op} passed"


def test_skips_are_clean_rejections(results: list[CaseResult]) -> None:
    # a skip carries the importer's message; a case with a wrong answer is never a skip
    skipped = [r for r in results if r.status == "skipped"]
    assert all(r.reason for r in skipped)
    assert not [r for r in skipped if r.bound_inputs]


def test_float32_core_cases_all_pass(results: list[CaseResult]) -> None:
    # the single-op float cases of the core CNN ops run unbound: nothing to skip there
    core = ("test_conv_", "test_basic_conv", "test_gemm_", "test_matmul_", "test_relu", "test_lrn")
    chosen = [r for r in results if r.name.startswith(core)]
    assert len(chosen) >= 25
    assert [r.name for r in chosen if r.status != "passed"] == []
