"""Diagnostics: every bad input gives `file:line:col: error: ...`, exit code 1 and
no Python traceback (through the `byoc-opt` process), and errors raised by
passes and emitters are placed at their op (in-process, with test passes).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from byoc.diagnostics import (
    Diagnostic,
    PassError,
    SourceBuffer,
    SourceError,
    check_expectations,
    parse_expectations,
    parse_source,
    split_input,
    warn,
)
from byoc.dialects import nn
from byoc.dialects.verify import ChangeVerifier
from byoc.tools.byoc_opt import ByocOptMain

LOCATED = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?P<col>\d+): error: .+", re.MULTILINE)


def byoc_opt(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "byoc.tools.byoc_opt", *args],
        input=stdin.decode("latin-1") if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
    )


GOOD_FUNC = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""

# name -> (file contents, expected (line, col), a fragment of the message)
BAD_INPUTS: dict[str, tuple[bytes, tuple[int, int], str]] = {
    "binary garbage": (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", (1, 1), "invalid UTF-8 byte 0x89"),
    "garbage after text": (
        b"func.func @main() {\n  \xff\xfe\n}\n",
        (2, 3),
        "invalid UTF-8 byte 0xff",
    ),
    "NUL byte": (b"func.func @main() {\x00}\n", (1, 20), "NUL character"),
    "plain text": (b"hello world\n", (1, 1), "Operation hello is not registered"),
    "misspelt op": (
        b"func.func @main(%a: tensor<4xf32>) {\n  %0 = nn.rleu %a : tensor<4xf32>\n  func.return\n}\n",
        (2, 8),
        "did you mean 'nn.relu'",
    ),
    "unknown op": (
        b"func.func @main(%a: tensor<4xf32>) {\n  %0 = nn.frobnicate %a : tensor<4xf32>\n  func.return\n}\n",
        (2, 8),
        "Operation nn.frobnicate is not registered",
    ),
    "unknown dialect": (
        b"func.func @main(%a: tensor<4xf32>) {\n  %0 = tosa.add %a, %a : tensor<4xf32>\n  func.return\n}\n",
        (2, 8),
        "Operation tosa.add is not registered (no dialect 'tosa' is registered",
    ),
    "operand type mismatch": (
        b"func.func @main(%a: tensor<4xf32>) {\n  %0 = nn.relu %a : tensor<5xf32>\n  func.return\n}\n",
        (2, 16),
        "type tensor<5xf32>",
    ),
    "undefined value": (
        b"func.func @main(%a: tensor<4xf32>) {\n  %0 = nn.relu %b : tensor<4xf32>\n  func.return\n}\n",
        (2, 16),
        "use of undefined value '%b'",
    ),
    "verifier: shapes": (
        b"func.func @main(%a: tensor<4xf32>, %b: tensor<5xf32>) {\n"
        b"  %0 = nn.add %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>\n  func.return\n}\n",
        (2, 3),
        "'nn.add' op operand shapes 4, 5 are not broadcast-compatible",
    ),
    "verifier: dtype": (
        b"func.func @main(%a: tensor<4xi32>) {\n  %0 = nn.sigmoid %a : tensor<4xi32>\n  func.return\n}\n",
        (2, 3),
        "element type i32 is not supported",
    ),
    "verifier: nested in a region": (
        b'func.func @main(%a: tensor<4xf32>) {\n  %r = byoc.region "c" -> (tensor<4xf32>) {\n'
        b"    %0 = nn.softmax %a {axis = 5 : i64} : tensor<4xf32>\n"
        b"    byoc.yield %0 : tensor<4xf32>\n  }\n  func.return\n}\n",
        (3, 5),
        "axis 5 is out of range",
    ),
    "verifier: func return types": (
        b"func.func @main(%a: tensor<4xf32>) -> tensor<5xf32> {\n  func.return %a : tensor<4xf32>\n}\n",
        (2, 3),
        "'func.return' op",
    ),
    "unterminated region": (
        b"func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = nn.relu %a : tensor<4xf32>\n",
        (3, 1),
        "unexpected end of input: expected '}'",
    ),
    "unbalanced brace": (b"}\n", (1, 1), ""),
    "truncated op": (b"func.func @main(%a: tensor<4xf32>) {\n  %0 = nn.add %a,\n}\n", (3, 1), ""),
    "bad attribute": (
        b"func.func @main(%a: tensor<4xf32>) {\n  %0 = nn.softmax %a {axis = } : tensor<4xf32>\n  func.return\n}\n",
        (2, 30),
        "",
    ),
    "bad type": (b"func.func @main(%a: tensor<4xfoo>) {\n  func.return\n}\n", (1, 30), ""),
    "bad constant payload": (
        b'%0 = nn.constant dense<"0xABC"> : tensor<1xf32>\n',
        (1, 18),
        "malformed hex payload",
    ),
    "elided constant": (
        b"%0 = nn.constant dense_resource<__elided__> : tensor<64xf32>\n",
        (1, 18),
        "cannot be read back",
    ),
    "lexer error on the first token": (b"// a comment\n\n  #\n", (3, 3), "after '#'"),
    "unterminated string literal": (b'\n  "' + b"a" * 40 + b"\n", (2, 3), "is not closed"),
    "redefined value": (
        b"func.func @main(%a: tensor<4xf32>) {\n  %0 = nn.relu %a : tensor<4xf32>\n"
        b"  %0 = nn.relu %a : tensor<4xf32>\n  func.return\n}\n",
        (3, 3),
        "",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_a_located_error(case: str, tmp_path: Path) -> None:
    data, (line, col), fragment = BAD_INPUTS[case]
    path = tmp_path / "input.mlir"
    path.write_bytes(data)
    result = byoc_opt(str(path))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    m = LOCATED.search(result.stderr)
    assert m is not None, result.stderr
    assert m["file"] == str(path)
    assert (int(m["line"]), int(m["col"])) == (line, col), result.stderr
    assert fragment in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("case", ["unknown op", "verifier: shapes", "unterminated region"])
def test_located_error_shows_the_line_and_a_caret(case: str, tmp_path: Path) -> None:
    data, (line, col), _ = BAD_INPUTS[case]
    path = tmp_path / "input.mlir"
    path.write_bytes(data)
    lines = byoc_opt(str(path)).stderr.splitlines()
    head = next(i for i, text in enumerate(lines) if ": error: " in text)
    source = data.decode().split("\n")[line - 1]
    if source.strip():
        assert lines[head + 1] == source
        assert lines[head + 2] == " " * (col - 1) + "^"


def test_errors_from_stdin_are_named_stdin() -> None:
    result = byoc_opt(stdin=b"func.func @main() {\n  %0 = nn.nope\n}\n")
    assert result.returncode == 1
    assert result.stderr.startswith("<stdin>:2:8: error: Operation nn.nope is not registered")


def test_empty_input_is_an_empty_module(tmp_path: Path) -> None:
    """As in MLIR, an empty file (or one of comments only) is a valid empty module."""
    for text in ("", "\n\n", "// just a comment\n"):
        path = tmp_path / "empty.mlir"
        path.write_text(text)
        result = byoc_opt(str(path))
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "builtin.module {\n}"


@pytest.mark.parametrize(
    ("args", "column", "fragment"),
    [
        (["-p", "frobnicate"], 1, "unknown pass 'frobnicate'"),
        (["-p", "cse,parition"], 5, "unknown pass 'parition'; did you mean 'partition'?"),
        (["--pass", "cse", "--pass", "dce{x=1}"], 5, "invalid options for pass 'dce'"),
        (["-p", "byoc{targets=nosuchtarget}"], 1, "invalid options for pass 'byoc'"),
        (["-p", "cse{"], 5, "malformed pass pipeline"),
        (["-p", "cse,,dce"], 5, "malformed pass pipeline"),
    ],
)
def test_bad_pipeline_points_into_it(
    args: list[str], column: int, fragment: str, tmp_path: Path
) -> None:
    path = tmp_path / "ok.mlir"
    path.write_text(GOOD_FUNC)
    result = byoc_opt(str(path), *args)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"<pass-pipeline>:1:{column}: error: ")
    assert fragment in result.stderr


def test_missing_input_file(tmp_path: Path) -> None:
    result = byoc_opt(str(tmp_path / "missing.mlir"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"error: cannot open input file '{tmp_path / 'missing.mlir'}'" in result.stderr


def test_bad_onnx_model_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"\x08\x07 this is not a protobuf")
    result = byoc_opt(str(path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"{path}: error: cannot import the ONNX model")


def test_onnx_model_is_accepted_directly(tmp_path: Path) -> None:
    from onnx import TensorProto, helper, save

    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    path = tmp_path / "model.onnx"
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    result = byoc_opt(str(path))
    assert result.returncode == 0, result.stderr
    assert "nn.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>" in result.stdout
    assert "nn.relu" in result.stdout
    from_stdin = byoc_opt("-f", "onnx", stdin=path.read_bytes())
    assert from_stdin.returncode == 0 and from_stdin.stdout == result.stdout


def test_exit_code_1_for_an_argparse_free_bad_target_spec(tmp_path: Path) -> None:
    path = tmp_path / "ok.mlir"
    path.write_text(GOOD_FUNC)
    result = byoc_opt(str(path), "-t", "{")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "error" in result.stderr


# --------------------------------------------------------------------------
# errors raised by passes and emitters, in-process
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class RejectAddPass(ModulePass):
    """Raise PassError at the first nn.add."""

    name: ClassVar[str] = "reject-add"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, nn.AddOp):
                raise PassError(inner, "'nn.add' is not supported here; run something else first")


@dataclass(frozen=True)
class CrashPass(ModulePass):
    """Fail with an ordinary Python bug."""

    name: ClassVar[str] = "crash"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise KeyError("missing-entry")


@dataclass(frozen=True)
class BreakIRPass(ModulePass):
    """Leave the IR invalid: make relu's result claim a different type."""

    name: ClassVar[str] = "break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, nn.ReluOp):
                inner.result._type = nn.tensor((7,))  # pyright: ignore[reportPrivateUsage]


@dataclass(frozen=True)
class WarnPass(ModulePass):
    """Warn about every relu (a non-fatal diagnostic)."""

    name: ClassVar[str] = "warn-relu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, nn.ReluOp):
                warn(inner, "relu stays on the host")


@dataclass(frozen=True)
class CloneAddPass(ModulePass):
    """Replace each nn.add with a fresh clone, then reject the clone."""

    name: ClassVar[str] = "clone-then-reject"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in list(op.walk()):
            if isinstance(inner, nn.AddOp):
                clone = inner.clone()
                assert inner.parent is not None
                inner.parent.insert_op_before(clone, inner)
                inner.results[0].replace_all_uses_with(clone.results[0])
                inner.detach()
                inner.erase()
                raise PassError(clone, "cloned add rejected")


TEST_PASSES: list[type[ModulePass]] = [
    RejectAddPass,
    CrashPass,
    BreakIRPass,
    WarnPass,
    CloneAddPass,
]

PROGRAM = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.relu %a : tensor<4xf32>
  %1 = nn.add %0, %a : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
"""


def run_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str, text: str = PROGRAM
) -> tuple[int, str, str]:
    path = tmp_path / "prog.mlir"
    path.write_text(text)
    tool = ByocOptMain(args=[str(path), *args])
    for cls in TEST_PASSES:
        tool.register_pass(cls.name, lambda cls=cls: cls)
    code = tool.run()
    out, err = capsys.readouterr()
    return code, out, err


def test_pass_error_is_placed_at_its_op(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_in_process(tmp_path, capsys, "--pass", "reject-add")
    assert code == 1 and out == ""
    first = err.splitlines()
    assert first[0] == (
        f"{tmp_path / 'prog.mlir'}:3:3: error: reject-add: 'nn.add' is not supported here; run something else first"
    )
    assert first[1] == "  %1 = nn.add %0, %a : tensor<4xf32>"
    assert first[2] == "  ^"


def test_pass_error_on_a_clone_keeps_the_source_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_in_process(tmp_path, capsys, "-p", "clone-then-reject")
    assert code == 1
    assert err.startswith(
        f"{tmp_path / 'prog.mlir'}:3:3: error: clone-then-reject: cloned add rejected"
    )


def test_internal_error_in_a_pass_names_the_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_in_process(tmp_path, capsys, "--pass", "crash")
    assert code == 1
    assert "Traceback" not in err
    assert "error: pass 'crash' crashed (internal error): KeyError: 'missing-entry'" in err


@pytest.mark.parametrize("verify", ["only what changed", "--verify-full"])
def test_invalid_ir_after_a_pass_is_reported_with_the_pass(
    verify: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = [verify] if verify.startswith("--") else []
    code, _, err = run_in_process(tmp_path, capsys, "--pass", "break-ir", *flags)
    assert code == 1
    assert f"{tmp_path / 'prog.mlir'}:2:3: error: 'nn.relu' op" in err
    assert "note: the IR does not verify after pass 'break-ir'" in err


@pytest.mark.parametrize(
    ("flags", "incremental"),
    [
        ([], True),
        (["--verify-full"], False),
        (["--verify-diagnostics"], False),
        (["--disable-verify"], True),
    ],
)
def test_verification_after_a_pass_is_full_under_verify_full_and_verify_diagnostics(
    flags: list[str], incremental: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "prog.mlir"
    path.write_text(PROGRAM)
    tool = ByocOptMain(args=[str(path), "-p", "annotate-target{targets=ccompiler}", *flags])
    assert tool.run() == 0
    assert isinstance(tool.chunk.verifier, ChangeVerifier) == incremental
    capsys.readouterr()


def test_warnings_are_printed_and_do_not_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_in_process(tmp_path, capsys, "--pass", "warn-relu")
    assert code == 0
    assert "nn.relu" in out
    assert err.startswith(f"{tmp_path / 'prog.mlir'}:2:3: warning: relu stays on the host")


def test_pass_diagnostics_under_verify_diagnostics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = PROGRAM.replace(
        "  %0 = nn.relu %a : tensor<4xf32>\n",
        "  // expected-warning@+1 {{stays on the host}}\n  %0 = nn.relu %a : tensor<4xf32>\n",
    )
    code, _, err = run_in_process(
        tmp_path, capsys, "--pass", "warn-relu", "--verify-diagnostics", text=text
    )
    assert (code, err) == (0, "")
    rejected = text.replace(
        "  %1 = nn.add",
        "  // expected-error@+1 {{reject-add: 'nn.add' is not supported}}\n  %1 = nn.add",
    )
    code, _, err = run_in_process(
        tmp_path,
        capsys,
        "--pass",
        "warn-relu",
        "--pass",
        "reject-add",
        "--verify-diagnostics",
        text=rejected,
    )
    assert (code, err) == (0, "")


def test_emitter_error_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_in_process(
        tmp_path, capsys, "-t", "dot", text=PROGRAM.replace("@main", "@other")
    )
    assert code == 1 and out == ""
    assert err.startswith(
        f"{tmp_path / 'prog.mlir'}:1:1: error: -t dot: no func.func @main to draw"
    )


# --------------------------------------------------------------------------
# the pieces: expectations, chunks, rendering
# --------------------------------------------------------------------------


def test_expectation_designators() -> None:
    text = "\n".join(
        [
            "op_a",  # 1
            "// expected-error@above {{one}}",  # 2 -> 1
            "// expected-note@above {{two}}",  # 3 -> 1 (skips line 2)
            "// expected-warning@below {{three}}",  # 4 -> 6 (skips line 5)
            "// expected-remark@below {{four}}",  # 5 -> 6
            "op_b",  # 6
            "op_c  // expected-error {{five}}",  # 7 -> 7
            "// expected-error@below {{skip}}",  # 8 -> 11 (skips 9 and 10)
            "// expected-error@-6 {{six}}",  # 9 -> 3
            "// expected-error-re@+1 {{x {{[0-9]+}} y}}",  # 10 -> 11
            "op_d",  # 11
        ]
    )
    found = [(e.severity, e.text, e.line) for e in parse_expectations(SourceBuffer("f", text))]
    assert found == [
        ("error", "one", 1),
        ("note", "two", 1),
        ("warning", "three", 6),
        ("remark", "four", 6),
        ("error", "five", 7),
        ("error", "skip", 11),
        ("error", "six", 3),
        ("error", "x {{[0-9]+}} y", 11),
    ]


def test_expectations_are_read_in_linear_time() -> None:
    """A long line of unclosed `expected-error{{` took time quadratic in its length (10,000 of
    them: about half a minute); the bound is generous and far below that."""
    line = "// " + "expected-error{{" * 10_000
    start = time.perf_counter()
    assert parse_expectations(SourceBuffer("f", line)) == []
    assert parse_expectations(SourceBuffer("f", "// expected-error-re {{" + "{{" * 10_000 + "}}"))
    many = "\n".join(["%0 = nn.nope  // expected-error {{x}}"] * 5_000)
    diagnostics = [Diagnostic("error", "x", "f", n, 1) for n in range(1, 5_001)]
    assert check_expectations(SourceBuffer("f", many), diagnostics) == []
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0, f"{elapsed:.1f} s to read the expectations"


def test_invalid_regex_expectation_is_reported_at_it() -> None:
    source = SourceBuffer("f", "// expected-error-re@+1 {{a{{(}}b}}\nop")
    (problem,) = check_expectations(source, [Diagnostic("error", "a(b", "f", 2, 1)])[1:]
    assert (problem.line, problem.col) == (1, 4)
    assert problem.message.startswith("invalid regular expression in expected-error-re: missing )")


def test_regex_expectation_and_line_offsets() -> None:
    source = SourceBuffer(
        "f", "a\n// expected-error-re@-1 {{cannot {{[a-z]+}} 12 elements}}", line_offset=10
    )
    good = Diagnostic("error", "cannot reshape 12 elements into [5]", "f", 11, 1)
    assert check_expectations(source, [good]) == []
    bad = Diagnostic("error", "cannot reshape 13 elements into [5]", "f", 11, 1)
    problems = [d.message for d in check_expectations(source, [bad])]
    assert problems == [
        "unexpected error: cannot reshape 13 elements into [5]",
        'expected error "cannot {{[a-z]+}} 12 elements" was not produced',
    ]


def test_each_diagnostic_consumes_one_expectation() -> None:
    source = SourceBuffer("f", "x // expected-error {{boom}}\n// expected-error@-1 {{boom}}")
    one = Diagnostic("error", "boom", "f", 1, 1)
    assert [d.message for d in check_expectations(source, [one])] == [
        'expected error "boom" was not produced'
    ]
    assert check_expectations(source, [one, one]) == []


def test_split_input_keeps_file_line_numbers() -> None:
    text = "a\nb\n// -----\nc\n  // ----- indented marker\nd\ne"
    chunks = split_input(text, "f")
    assert [(c.text, c.line_offset) for c in chunks] == [("a\nb", 0), ("c", 3), ("d\ne", 5)]
    assert chunks[2].line_col(2) == (7, 1)
    assert chunks[2].line_text(7) == "e"
    assert chunks[2].line_text(3) is None


# first token of the chunk -> (line, col) in the chunk, a fragment of the message
FIRST_TOKEN_ERRORS: dict[str, tuple[tuple[int, int], str]] = {
    "@": ((1, 1), "Unexpected end of file after @"),
    "@ x": ((1, 1), "@ identifier expected"),
    "  #": ((1, 3), "expected an identifier after '#'"),
    "%": ((1, 1), "expected an identifier after '%'"),
    "\n^": ((2, 1), "expected an identifier after '^'"),
    "!\n": ((1, 1), "expected an identifier after '!'"),
    "..": ((1, 1), "Expected three consecutive '.'"),
    '"abc': ((1, 1), "string literal is not closed before the end of the input"),
    '"abc\n"': ((1, 1), "string literal is not closed before the end of the line"),
    '@"abc': ((1, 2), "string literal is not closed"),
    '"ab \\q"': ((1, 5), "invalid escape in string literal: '\\q'"),
    '"ab \\': ((1, 5), "invalid escape in string literal: '\\' at the end of the input"),
    "$": ((1, 1), "Unexpected character: $"),
}


@pytest.mark.parametrize("text", sorted(FIRST_TOKEN_ERRORS))
def test_lexer_error_on_the_first_token_is_placed_in_its_chunk(text: str) -> None:
    """xDSL lexes the first token while making the parser: that error is placed like any
    other, at its line of the whole file (issue 14, item 7)."""
    (line, col), fragment = FIRST_TOKEN_ERRORS[text]
    with pytest.raises(SourceError) as info:
        parse_source(Context(), SourceBuffer("f.mlir", "// c\n" + text, line_offset=10))
    (error,) = info.value.diagnostics
    assert (error.file, error.line, error.col) == ("f.mlir", line + 11, col)
    assert fragment in error.message


def test_lexer_errors_in_chunks_do_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = "func.func @{}() {{\n  func.return\n}}\n"
    chunks = [good.format("a"), "%", good.format("b"), '  "abc', good.format("c")]
    text = "\n// -----\n".join(chunks)
    code, out, err = run_in_process(tmp_path, capsys, "--split-input-file", text=text)
    assert code == 1
    assert [c.count("func.func") for c in out.split("// -----")] == [1, 0, 1, 0, 1]
    path = tmp_path / "prog.mlir"
    assert re.findall(r"^(.*?):(\d+):(\d+): error: ", err, re.MULTILINE) == [
        (str(path), "6", "1"),
        (str(path), "13", "3"),
    ]
    assert "internal error" not in err


def test_render_aligns_the_caret_under_tabs() -> None:
    d = Diagnostic("error", "m", "f", 3, 4, "\tab")
    assert d.render() == "f:3:4: error: m\n\tab\n\t  ^"
    assert Diagnostic("warning", "w", "f").render() == "f: warning: w"


def test_warn_outside_a_driver_is_a_python_warning() -> None:
    with pytest.warns(UserWarning, match="warning: relu stays"):
        warn(None, "relu stays on the host")


def test_help_loads_no_heavy_module() -> None:
    """`byoc-opt --help` must start fast: numpy, onnx, cffi and the passes stay unloaded."""
    code = (
        "import sys\n"
        "from byoc.tools.byoc_opt import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('numpy', 'onnx', 'onnxruntime', 'cffi', 'byoc.passes.partition', 'byoc.dialects.nn')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"
    assert "--verify-diagnostics" in result.stdout


def test_a_bug_in_the_driver_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: ByocOptMain, chunk: object) -> object:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(ByocOptMain, "process_chunk", broken)
    code, _, err = run_in_process(tmp_path, capsys)
    assert code == 1
    assert err.startswith(
        "byoc-opt: error: internal error: ZeroDivisionError: division by zero (at "
    )
    assert len(err.strip().splitlines()) == 1


def test_onnx_input_without_the_frontend_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "byoc.frontend.onnx", None)  # importing it now fails
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07")
    tool = ByocOptMain(args=[str(model)])
    assert tool.run() == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"{model}: error: cannot read ONNX models: the ONNX frontend failed to load"
    )
    assert "pip install 'byoc[onnx]'" in err


def test_onnx_input_without_the_onnx_package_names_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now fails as if not installed
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07")
    assert ByocOptMain(args=[str(model)]).run() == 1
    assert capsys.readouterr().err == (
        f"{model}: error: reading ONNX models needs the 'onnx' package "
        "(pip install 'byoc[onnx]')\n"
    )
