"""Helpers the tests share (and benchmarks/ imports): error bounds, path constants, the
ONNX node-test harness, random-graph strategies and C codegen cases.

Nothing here is collected by pytest. `pythonpath = ["tests"]` in pyproject.toml puts
tests/ on `sys.path`, so a test imports these as `from support.bounds import ...`.
"""
