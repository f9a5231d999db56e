"""Diagnostics that point at the source: `file:line:col: error: message`.

Passes and emitters report a problem with an op by raising

    raise PassError(op, "'nn.conv2d' is tagged for 'cblas' but ...; run merge-composite first")
    raise EmitError(op, "cannot emit type tensor<?xf32>")

and `byoc-opt` prints it at the op's location, followed by the offending
source line and a caret (as MLIR's SourceMgr diagnostics do):

    model.mlir:4:3: error: partition: 'nn.conv2d' is tagged for 'cblas' but ...
      %3 = nn.conv2d %x, %w : (...) -> ...
      ^

xDSL does not record where an op was parsed, so `LocatingParser` keeps a side
table op -> offset while parsing; `materialize_locations` copies it into each
op's `location` (a `FileLineColLoc`) so ops that passes clone keep it.
Warnings and remarks go through `emit`, which a driver collects with
`collect_diagnostics()`; outside a driver they become Python warnings.
"""

from __future__ import annotations

import bisect
import contextlib
import difflib
import re
import warnings
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import IO, Any, Protocol, Self

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import MultipleSpansParseError, ParseError, VerifyException
from xdsl.utils.frontend import Frontend
from xdsl.utils.mlir_lexer import MLIRTokenKind

from byoc.utils import xdsl_lexer

xdsl_lexer.install()  # no input makes the parser below take exponential time

SEVERITIES = ("error", "warning", "note", "remark")


class OpError(Exception):
    """An error about one op; drivers print it at the op's source location."""

    def __init__(self, op: Operation | None, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


class PassError(OpError):
    """Raised by a pass: `PassError(op, message)`; byoc-opt prefixes the pass name."""


class EmitError(OpError):
    """Raised by a `-t` emitter that cannot print an op."""


@dataclass(frozen=True)
class Diagnostic:
    """One message, with its source position when known."""

    severity: str
    message: str
    file: str
    line: int | None = None
    """1-based line in the whole file, or None when no position is known."""
    col: int | None = None
    """1-based column (code points)."""
    source_line: str | None = None
    """The text of `line`, shown under the message with a caret."""

    def render(self) -> str:
        if self.line is None:
            head = f"{self.file}: {self.severity}: {self.message}"
        else:
            head = f"{self.file}:{self.line}:{self.col or 1}: {self.severity}: {self.message}"
        if self.source_line is None or not self.source_line.strip():
            return head
        prefix = self.source_line[: max((self.col or 1) - 1, 0)]
        caret = "".join("\t" if c == "\t" else " " for c in prefix) + "^"
        return f"{head}\n{self.source_line}\n{caret}"


@dataclass
class SourceBuffer:
    """A text (a whole file, or one `// -----` chunk of it) and how to locate offsets in it."""

    name: str
    text: str
    line_offset: int = 0
    """Lines of the file before this chunk."""
    _line_starts: list[int] = field(default_factory=list[int], repr=False)

    def _starts(self) -> list[int]:
        if not self._line_starts:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos != -1:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._line_starts = starts
        return self._line_starts

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line in the whole file, column) of an offset into `text`."""
        starts = self._starts()
        index = bisect.bisect_right(starts, offset) - 1
        return index + 1 + self.line_offset, offset - starts[index] + 1

    def line_text(self, line: int) -> str | None:
        """The text of a 1-based line of the whole file, if it lies in this buffer."""
        starts = self._starts()
        index = line - 1 - self.line_offset
        if not 0 <= index < len(starts):
            return None
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(self.text)
        line_text = self.text[starts[index] : end].rstrip("\r")
        if not line_text.isprintable():  # shown on a terminal: no control characters
            line_text = "".join(c if c.isprintable() or c == "\t" else "?" for c in line_text)
        return line_text

    def at(self, offset: int, message: str, severity: str = "error") -> Diagnostic:
        line, col = self.line_col(offset)
        return Diagnostic(severity, message, self.name, line, col, self.line_text(line))

    def at_line(self, line: int, col: int, message: str, severity: str = "error") -> Diagnostic:
        return Diagnostic(severity, message, self.name, line, col, self.line_text(line))


class SourceError(Exception):
    """Bad input: one or more diagnostics, the first an error."""

    def __init__(self, diagnostics: Sequence[Diagnostic]):
        super().__init__("\n".join(d.render() for d in diagnostics))
        self.diagnostics = list(diagnostics)


# --------------------------------------------------------------------------
# Parsing with op locations
# --------------------------------------------------------------------------


class LocatingParser(Parser):
    """xDSL's parser, recording where each op starts (offset of its first token)."""

    def __init__(self, ctx: Context, text: str, name: str = "<unknown>"):
        super().__init__(ctx, text, name)
        self.text = text
        self.op_offsets: dict[Operation, int] = {}
        self.forward_uses: dict[str, int] = {}
        """SSA name -> offset of its first use before any definition."""

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        self.op_offsets[op] = start
        return op

    def parse_type(self) -> Attribute:
        """As xDSL's, but a tensor type whose dims or byte size do not fit int64 is an error
        at the type (xDSL takes any integer as a dim)."""
        start = self._current_token.span.start
        ty = super().parse_type()
        if isinstance(ty, TensorType):
            from byoc.dialects.nn.types import check_shape

            try:
                check_shape(ty)
            except VerifyException as e:
                self.raise_error(str(e), start, self._current_token.span.start)
        return ty

    def resolve_operand(self, operand: UnresolvedOperand, type: Any) -> Any:
        if operand.operand_name not in self.ssa_values:
            self.forward_uses.setdefault(operand.operand_name, operand.span.start)
        return super().resolve_operand(operand, type)

    def _get_op_by_name(self, name: str) -> type[Operation]:
        """As xDSL's, but an unknown op is reported at its name, with the closest names."""
        op_type = self.ctx.get_optional_op(name, dialect_stack=self._parser_state.dialect_stack)
        if op_type is not None:
            return op_type
        end = self._current_token.span.start
        start = self.text.rfind(name, 0, end)
        if start == -1:
            start = end
        dialect_name, dot, _ = name.partition(".")
        hint = ""
        if dot:
            dialect = self.ctx.get_optional_dialect(dialect_name)
            if dialect is None:
                known = ", ".join(sorted(self.ctx.registered_dialect_names))
                hint = f" (no dialect '{dialect_name}' is registered; dialects: {known})"
            else:
                names = [op.name for op in dialect.operations]
                close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
                if close:
                    hint = f"; did you mean {', '.join(repr(c) for c in close)}?"
        self.raise_error(f"Operation {name} is not registered{hint}", start, start + len(name))


@dataclass
class ParsedSource:
    """A parsed module and where its ops came from."""

    module: ModuleOp
    source: SourceBuffer
    op_offsets: dict[Operation, int]
    textual: bool = True
    """False for inputs with no text to point into (an ONNX model)."""

    @classmethod
    def of_module(cls, module: ModuleOp, name: str, *, textual: bool) -> Self:
        """`module`, read from `name` by a frontend that records no op positions: a
        diagnostic goes to the op's FileLineColLoc, else to the input's first line when it
        is `textual`, else to the file alone."""
        return cls(module, SourceBuffer(name, ""), {}, textual)

    def locate(self, op: Operation | None) -> tuple[int, int] | None:
        """(line, col) of `op`: where it was parsed, its FileLineColLoc, or its parent's."""
        while op is not None:
            offset = self.op_offsets.get(op)
            if offset is not None:
                return self.source.line_col(offset)
            loc = op.location
            if isinstance(loc, FileLineColLoc) and loc.filename.data == self.source.name:
                return loc.line.data, loc.column.data
            op = op.parent_op()
        if self.textual:  # the implicit module, or an op no parsed op encloses
            return self.source.line_offset + 1, 1
        return None

    def diagnostic(self, op: Operation | None, message: str, severity: str = "error") -> Diagnostic:
        where = self.locate(op)
        if where is None:
            return Diagnostic(severity, message, self.source.name)
        return self.source.at_line(where[0], where[1], message, severity)

    def at_start(self, message: str, severity: str = "error") -> Diagnostic:
        """A diagnostic about the whole input: at its first line, if it is text."""
        if not self.source.text:
            return Diagnostic(severity, message, self.source.name)
        return Diagnostic(severity, message, self.source.name, self.source.line_offset + 1, 1)


@dataclass(frozen=True)
class LocatingFrontend(Frontend):
    """An xDSL `Frontend` that also tells where each op came from, for located diagnostics."""

    @abstractmethod
    def parse_source(
        self, ctx: Context, data: bytes, name: str, line_offset: int = 0
    ) -> ParsedSource:
        """Parse `data`, lines `line_offset + 1`... of file `name`; a failure is a `SourceError`."""

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "input") -> ModuleOp:
        return self.parse_source(ctx, input.read(), input_name).module


def parse_error_diagnostic(error: ParseError) -> Diagnostic:
    """A `ParseError` of any xDSL parser or frontend, at its span."""
    span = error.span
    content = span.input.content
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
    location = span.get_location()
    start = text.rfind("\n", 0, span.start) + 1
    end = text.find("\n", span.start)
    source_line = text[start : end if end != -1 else len(text)].rstrip("\r")
    return Diagnostic(
        "error", error.msg, span.input.name, location.line, location.col, source_line
    )


def _parse_error_offset(error: ParseError, fallback: int) -> int:
    span = getattr(error, "span", None)
    start = getattr(span, "start", None)
    return start if isinstance(start, int) else fallback


def decode_source(data: bytes, name: str) -> str:
    """UTF-8 text of an input file; binary input is an error at the first bad byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        good = data[: e.start].decode("utf-8")
        buffer = SourceBuffer(name, good + "\n")
        line, col = buffer.line_col(len(good))
        raise SourceError(
            [
                Diagnostic(
                    "error",
                    f"invalid UTF-8 byte 0x{data[e.start]:02x}: the input is not MLIR text "
                    "(an ONNX model needs the .onnx extension or `-f onnx`)",
                    name,
                    line,
                    col,
                )
            ]
        ) from None
    if "\x00" in text:
        offset = text.index("\x00")
        raise SourceError(
            [SourceBuffer(name, text).at(offset, "NUL character: the input is not MLIR text")]
        )
    return text


def parse_source(ctx: Context, source: SourceBuffer, implicit_module: bool = True) -> ParsedSource:
    """Parse `source.text` into a module; any failure is a `SourceError` with its location."""
    try:
        # xDSL lexes the first token here: a lexer error on it is an error of the input too
        parser = LocatingParser(ctx, source.text, source.name)
    except ParseError as e:
        offset, message = _lexer_problem(e, source.text)
        raise SourceError([source.at(offset, message)]) from None
    except Exception as e:  # noqa: BLE001 - reported at the start of the input, never raised
        raise SourceError([source.at(0, describe_exception(e))]) from None
    try:
        if implicit_module and parser._current_token.kind is MLIRTokenKind.EOF:
            # only blanks and comments: an empty module, as in MLIR
            return ParsedSource(ModuleOp([]), source, {})
        module = parser.parse_module(implicit_module)
    except ParseError as e:
        offset, message = _lexer_problem(e, source.text, parser.pos)
        found = [source.at(offset, message)]
        undefined = [n for n in parser.forward_ssa_references if n in parser.forward_uses]
        if message.startswith("values used but not defined") and undefined:
            # xDSL notices at the end of the input; point at each first use instead
            found = [
                source.at(parser.forward_uses[n], f"use of undefined value '%{n}'")
                for n in undefined
            ]
        elif parser._current_token.kind is MLIRTokenKind.EOF:
            unclosed = _unclosed_brace(source.text)
            if unclosed is not None:
                found = [
                    source.at(
                        _parse_error_offset(e, parser.pos),
                        f"unexpected end of input: expected '}}' ({message})",
                    ),
                    source.at(unclosed, "to close the region opened here", "note"),
                ]
        if isinstance(e, MultipleSpansParseError):
            for span, note in e.refs:
                found.append(source.at(span.start, note or "see here", "note"))
        raise SourceError(found) from None
    except RecursionError:
        raise SourceError([source.at(parser.pos, "ops are nested too deeply to parse")]) from None
    except Exception as e:  # a custom parser or attribute builder failed without a ParseError
        raise SourceError([source.at(parser.pos, describe_exception(e))]) from None
    return ParsedSource(module, source, parser.op_offsets)


_HEX = "0123456789abcdefABCDEF"


def _lexer_problem(error: ParseError, text: str, fallback: int = 0) -> tuple[int, str]:
    """Where a parse error is and what it says; xDSL's lexer messages said more plainly."""
    message = (getattr(error, "msg", None) or str(error)).strip()
    start = _parse_error_offset(error, fallback)
    if not 0 <= start < len(text):
        return start, message
    if message.startswith("Expected suffix identifier after"):  # xDSL forgot the f-string
        return start, (
            f"expected an identifier after '{text[start]}' (digits, or a letter or one of "
            "'$._-' followed by letters, digits and '$._-')"
        )
    if message.startswith("End of file reached before closing string literal"):
        problem = _string_literal_problem(text, start)
        if problem is not None:
            return problem
    return start, message


def _string_literal_problem(text: str, start: int) -> tuple[int, str] | None:
    """Where and why the string literal opening at `start` does not lex (one linear scan)."""
    if text[start] != '"':
        return None
    i, n = start + 1, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return None
        if c in "\n\v\f":
            return start, "string literal is not closed before the end of the line"
        if c == "\\":
            nxt = text[i + 1 : i + 3]
            if nxt[:1] and nxt[0] in '"nt\\':
                i += 2
                continue
            if len(nxt) == 2 and nxt[0] in _HEX and nxt[1] in _HEX:
                i += 3
                continue
            if not nxt:
                shown = "'\\' at the end of the input"
            elif nxt[0].isprintable():
                shown = f"'\\{nxt[0]}'"
            else:
                shown = f"'\\' followed by {nxt[0]!r}"
            return i, (
                f"invalid escape in string literal: {shown} "
                '(allowed: \\n \\t \\\\ \\" and two hex digits)'
            )
        i += 1
    return start, "string literal is not closed before the end of the input"


def _unclosed_brace(text: str) -> int | None:
    """Offset of the innermost `{` never closed (strings and `//` comments skipped)."""
    stack: list[int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            i = text.find("\n", i)
            if i == -1:
                break
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "{":
            stack.append(i)
        elif c == "}" and stack:
            stack.pop()
        i += 1
    return stack[-1] if stack else None


def describe_exception(error: BaseException) -> str:
    text = str(error).strip()
    if isinstance(error, ParseError | ValueError) or type(error).__name__.endswith("Exception"):
        return text or type(error).__name__
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# --------------------------------------------------------------------------
# Verification that names the failing op
# --------------------------------------------------------------------------


def _first_failure(op: Operation) -> tuple[Operation, str] | None:
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                failure = _first_failure(child)
                if failure is not None:
                    return failure
            if (
                block.first_op is None
                and len(region.blocks) == 1
                and not op.has_trait(NoTerminator)
            ):
                return (
                    op,
                    "contains an empty block in a single-block region that expects a terminator",
                )
    try:
        op.verify(verify_nested_ops=False)
    except Exception as e:  # verify_ of any dialect: report, never crash
        return op, describe_exception(e)
    return None


class ModuleVerifier(Protocol):
    """Verifies a whole module, raising as `ModuleOp.verify` does
    (`byoc.dialects.verify.ChangeVerifier`: only what changed since its last run)."""

    def verify(self, op: Operation) -> None: ...


def verify_module(
    parsed: ParsedSource, module: ModuleOp | None = None, verifier: ModuleVerifier | None = None
) -> Diagnostic | None:
    """Verify the module; the first failing op as a located diagnostic, or None.

    The fast path is xDSL's own `verify()`, or `verifier`'s; only on failure is
    the module walked again, op by op, to find which op failed.
    """
    module = parsed.module if module is None else module
    try:
        if verifier is None:
            module.verify()
        else:
            verifier.verify(module)
        return None
    except Exception as error:
        failure = _first_failure(module)
        if failure is None:
            return parsed.diagnostic(module, describe_exception(error))
    op, message = failure
    message = message.removeprefix(f"'{op.name}' ")  # the prefix below already names it
    return parsed.diagnostic(op, f"'{op.name}' op {message}")


def materialize_locations(parsed: ParsedSource) -> None:
    """Store each parsed op's position as its `FileLineColLoc`, so clones made by passes keep it."""
    filename = StringAttr(parsed.source.name)
    ints: dict[int, IntAttr] = {}

    def int_attr(v: int) -> IntAttr:
        attr = ints.get(v)
        if attr is None:
            attr = ints[v] = IntAttr(v)
        return attr

    for op, offset in parsed.op_offsets.items():
        if isinstance(op.location, FileLineColLoc):
            continue
        line, col = parsed.source.line_col(offset)
        op.location = FileLineColLoc(filename, int_attr(line), int_attr(col))


# --------------------------------------------------------------------------
# Warnings and remarks from passes
# --------------------------------------------------------------------------

_SINK: ContextVar[list[tuple[str, Operation | None, str]] | None] = ContextVar(
    "byoc_diagnostics", default=None
)


def emit(severity: str, op: Operation | None, message: str) -> None:
    """Report a non-fatal diagnostic ("warning", "remark" or "note") about `op`."""
    if severity not in SEVERITIES:
        raise ValueError(f"severity '{severity}' is not one of {', '.join(SEVERITIES)}")
    sink = _SINK.get()
    if sink is None:
        where = f"'{op.name}': " if op is not None else ""
        warnings.warn(f"{severity}: {where}{message}", stacklevel=2)
    else:
        sink.append((severity, op, message))


def warn(op: Operation | None, message: str) -> None:
    emit("warning", op, message)


@contextlib.contextmanager
def collect_diagnostics() -> Iterator[list[tuple[str, Operation | None, str]]]:
    """Collect `emit`ted diagnostics (severity, op, message) instead of warning."""
    collected: list[tuple[str, Operation | None, str]] = []
    token = _SINK.set(collected)
    try:
        yield collected
    finally:
        _SINK.reset(token)


# --------------------------------------------------------------------------
# --verify-diagnostics: MLIR's `// expected-error@+1 {{...}}` comments
# --------------------------------------------------------------------------

_EXPECTED_HEAD = re.compile(
    r"expected-(error|warning|note|remark)(-re)?(?:@([+-]\d+|above|below))?\s*\{\{"
)


def _expectation_in(line: str) -> tuple[str, str | None, str | None, str, int] | None:
    """(severity, "-re" or None, designator or None, text, column offset) of the
    `expected-<severity>[...] {{text}}` on the line (text ends at its last `}}`), or None.

    The same as one regex ending in `\\{\\{(.*)\\}\\}`, but linear in the line's length: that
    regex backtracks over the rest of the line from every `expected-`, quadratic in it."""
    m = _EXPECTED_HEAD.search(line)
    if m is None:
        return None
    end = line.rfind("}}")
    if end < m.end():
        return None  # no later `expected-` can close either: they start further right
    return m.group(1), m.group(2), m.group(3), line[m.end() : end], m.start()


@dataclass
class Expectation:
    severity: str
    text: str
    regex: re.Pattern[str] | None
    line: int
    """The line the diagnostic is expected on."""
    where: tuple[int, int]
    """(line, col) of the comment itself."""
    matched: bool = False
    invalid: str | None = None
    """Why the `-re` text is not a regular expression; such an expectation matches nothing."""

    def matches(self, d: Diagnostic) -> bool:
        if d.severity != self.severity or d.line != self.line or self.invalid is not None:
            return False
        if self.regex is not None:
            return self.regex.search(d.message) is not None
        return self.text in d.message


def _regex_of(text: str) -> re.Pattern[str]:
    """MLIR's `-re` syntax: literal text with `{{regex}}` fragments (`re.error` if one is bad).

    Split by hand, in linear time: `re.split(r"\\{\\{(.*?)\\}\\}")` rescans the rest of the
    text from every unclosed `{{`."""
    pattern: list[str] = []
    start = 0
    while (open_ := text.find("{{", start)) != -1:
        close = text.find("}}", open_ + 2)
        if close == -1:
            break
        pattern += [re.escape(text[start:open_]), f"(?:{text[open_ + 2 : close]})"]
        start = close + 2
    pattern.append(re.escape(text[start:]))
    return re.compile("".join(pattern))


def parse_expectations(source: SourceBuffer) -> list[Expectation]:
    """Every `expected-<severity>[@+N|@-N|@above|@below] {{text}}` in the buffer."""
    lines = source.text.split("\n")
    found = [_expectation_in(line) for line in lines]
    designated = [m is not None for m in found]
    out: list[Expectation] = []
    for index, m in enumerate(found):
        if m is None:
            continue
        severity, is_re, at, text, column = m
        target = index
        if at == "above":
            target = index - 1
            while target >= 0 and designated[target]:
                target -= 1
        elif at == "below":
            target = index + 1
            while target < len(lines) and designated[target]:
                target += 1
        elif at is not None:
            target = index + int(at)
        regex: re.Pattern[str] | None = None
        invalid: str | None = None
        if is_re:
            try:
                regex = _regex_of(text)
            except re.error as e:
                invalid = str(e)
        out.append(
            Expectation(
                severity,
                text,
                regex,
                target + 1 + source.line_offset,
                (index + 1 + source.line_offset, column + 1),
                invalid=invalid,
            )
        )
    return out


def check_expectations(source: SourceBuffer, produced: Sequence[Diagnostic]) -> list[Diagnostic]:
    """Match produced diagnostics against the buffer's expectations; the mismatches, as errors."""
    expectations = parse_expectations(source)
    by_place: dict[tuple[str, int], list[Expectation]] = {}
    for e in expectations:  # only these can match: linear in diagnostics + expectations
        by_place.setdefault((e.severity, e.line), []).append(e)
    problems: list[Diagnostic] = []
    for d in produced:
        for e in by_place.get((d.severity, d.line), []) if d.line is not None else []:
            if not e.matched and e.matches(d):
                e.matched = True
                break
        else:
            shown = Diagnostic(
                "error",
                f"unexpected {d.severity}: {d.message}",
                d.file,
                d.line,
                d.col,
                d.source_line,
            )
            problems.append(shown)
    for e in expectations:
        line, col = e.where
        if e.invalid is not None:
            message = f"invalid regular expression in expected-{e.severity}-re: {e.invalid}"
            problems.append(source.at_line(line, col, message))
        elif not e.matched:
            problems.append(
                source.at_line(line, col, f'expected {e.severity} "{e.text}" was not produced')
            )
    return problems


def split_input(text: str, name: str) -> list[SourceBuffer]:
    """Split at lines starting with `// -----` (MLIR's `--split-input-file`)."""
    lines = text.split("\n")
    chunks: list[SourceBuffer] = []
    start = 0
    for index, line in enumerate(lines):
        if line.lstrip().startswith("// -----"):
            chunks.append(SourceBuffer(name, "\n".join(lines[start:index]), start))
            start = index + 1
    chunks.append(SourceBuffer(name, "\n".join(lines[start:]), start))
    return chunks
