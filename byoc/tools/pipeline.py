"""The pass pipeline of the command line: `-p 'a{x=1},b'` and `--pass` text parsed into
passes, with each error located in that text, and the `--list-passes` listing."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping

from xdsl.passes import ModulePass

from byoc.utils.lazy import LazyClass

PIPELINE_NAME = "<pass-pipeline>"
"""The file name diagnostics about `-p`/`--pass` use; the pipeline text is its only line."""


GENERIC_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "canonicalize": LazyClass("xdsl.transforms.canonicalize", "CanonicalizePass", ModulePass),
    "cse": LazyClass(
        "xdsl.transforms.common_subexpression_elimination",
        "CommonSubexpressionElimination",
        ModulePass,
    ),
    "dce": LazyClass("xdsl.transforms.dead_code_elimination", "DeadCodeElimination", ModulePass),
}
"""xDSL's generic passes that byoc-opt also offers."""

_GENERIC_DOCS = {
    "canonicalize": "Apply the canonicalization patterns of every loaded dialect (xDSL).",
    "cse": "Eliminate common subexpressions: identical pure ops are merged (xDSL).",
    "dce": "Remove pure ops whose results are unused (xDSL).",
}


def parse_pipeline_text(
    text: str, available: Mapping[str, Callable[[], type[ModulePass]]]
) -> tuple[ModulePass, ...]:
    """The passes of a pipeline; a bad one is a `SourceError` pointing into `text`."""
    from xdsl.utils.arg_spec import ArgSpecParseError, parse_pipeline

    from byoc.diagnostics import SourceBuffer, SourceError

    source = SourceBuffer(PIPELINE_NAME, text)
    if not text:
        return ()
    try:
        specs = list(parse_pipeline(text))
    except ArgSpecParseError as e:
        message = str(e)
        m = re.search(r":1:(\d+)\n", message)
        col = int(m.group(1)) if m else 1
        detail = message.rstrip().splitlines()[-1].strip() if message.strip() else "malformed"
        raise SourceError([source.at(col - 1, f"malformed pass pipeline: {detail}")]) from None
    starts = _pass_name_offsets(text)
    passes: list[ModulePass] = []
    for index, spec in enumerate(specs):
        offset = starts[index] if index < len(starts) else 0
        factory = available.get(spec.name)
        if factory is None:
            close = difflib.get_close_matches(spec.name, list(available), n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise SourceError(
                [source.at(offset, f"unknown pass '{spec.name}'{hint} (see --list-passes)")]
            )
        try:
            cls = factory()
        except Exception as e:
            raise SourceError(
                [source.at(offset, f"pass '{spec.name}' is unavailable: {type(e).__name__}: {e}")]
            ) from None
        try:
            passes.append(cls.from_pass_spec(spec))
        except Exception as e:
            options = _option_summary(cls)
            raise SourceError(
                [
                    source.at(
                        offset,
                        f"invalid options for pass '{spec.name}': {e}"
                        + (f" (options: {options})" if options else " (it takes no options)"),
                    )
                ]
            ) from None
    return tuple(passes)


def describe_passes(passes: Mapping[str, Callable[[], type[ModulePass]]]) -> str:
    """The `--list-passes` text: each pass, the first line of its docstring, its options."""
    lines = ["Passes (use as --pass NAME or -p 'NAME{option=value}'):"]
    for name, factory in passes.items():
        lines.extend(_describe_pass(name, factory))
    return "\n".join(lines) + "\n"


def _pass_name_offsets(text: str) -> list[int]:
    """Offsets of each top-level pass name in a (well-formed) pipeline string."""
    from xdsl.utils.arg_spec import PipelineLexer, SpecTokenKind

    lexer = PipelineLexer(text)
    depth = 0
    expect_name = True
    out: list[int] = []
    while True:
        token = lexer.lex()
        kind = token.kind
        if kind is SpecTokenKind.EOF:
            return out
        if kind is SpecTokenKind.L_BRACE:
            depth += 1
        elif kind is SpecTokenKind.R_BRACE:
            depth -= 1
        elif kind is SpecTokenKind.COMMA and depth == 0:
            expect_name = True
        elif kind is SpecTokenKind.IDENT and depth == 0 and expect_name:
            out.append(token.span.start)
            expect_name = False


def _field_docs(cls: type) -> dict[str, str]:
    """Docstrings written under dataclass fields (`x: int = 1` then `\"\"\"doc\"\"\"`)."""
    import ast
    import inspect

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            tree = ast.parse(inspect.getsource(klass).lstrip())
        except (OSError, TypeError, SyntaxError, IndentationError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, nxt in zip(body, body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


def _option_summary(cls: type[ModulePass]) -> str:
    from xdsl.passes import get_pass_option_infos

    try:
        return ", ".join(
            f"{o.name.replace('_', '-')}: {o.expected_type.strip(chr(39))}"
            for o in get_pass_option_infos(cls)
        )
    except Exception:
        return ""


def _describe_pass(name: str, factory: Callable[[], type[ModulePass]]) -> list[str]:
    try:
        cls = factory()
    except Exception as e:
        return [f"  {name:<24} (unavailable: {type(e).__name__}: {e})"]
    doc = (cls.__doc__ or "").strip()
    if not doc or doc.startswith(cls.__name__ + "("):  # none, or the dataclass signature
        first = _GENERIC_DOCS.get(name, "")
    else:
        first = doc.splitlines()[0].strip()
    lines = [f"  {name:<24} {first}".rstrip()]
    from xdsl.passes import get_pass_option_infos

    try:
        infos = get_pass_option_infos(cls)
    except Exception:
        infos = ()
    docs = _field_docs(cls) if infos else {}
    for info in infos:
        default = f" = {info.default_value}" if info.default_value is not None else ""
        option = f"{info.name.replace('_', '-')}: {info.expected_type.strip(chr(39))}{default}"
        doc_text = docs.get(info.name, "")
        lines.append(f"      {option}" + (f"  -- {doc_text}" if doc_text else ""))
    return lines
