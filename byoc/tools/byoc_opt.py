"""byoc-opt: xDSL's opt driver with byoc's dialects, passes and output formats.

    byoc-opt model.mlir --pass merge-composite --pass 'annotate-target{targets=ccompiler}'
    byoc-opt model.onnx -p 'byoc{targets=ccompiler},lower-to-c' -t c -o model.c
    byoc-opt invalid.mlir --split-input-file --verify-diagnostics

Built on `xDSLOptMain` (argument set, pass and target registries), with its
own `run()`: every failure (bad input, verifier error, unknown pass, a pass
that raises) is printed as `file:line:col: error: message` with the source
line and a caret, and the exit code is 1 — never a Python traceback.
Heavy modules (numpy, onnx, the passes) are imported only when used, so
`byoc-opt --help` starts fast.
"""

from __future__ import annotations

import time

_START = time.perf_counter()

import argparse  # noqa: E402
import difflib  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from io import StringIO  # noqa: E402
from typing import IO, TYPE_CHECKING, Any  # noqa: E402

from xdsl.xdsl_opt_main import xDSLOptMain  # noqa: E402

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass

    from byoc.diagnostics import Diagnostic, ParsedSource, SourceBuffer

PIPELINE_NAME = "<pass-pipeline>"
"""The file name diagnostics about `-p`/`--pass` use; the pipeline text is its only line."""

# xDSL's generic passes that byoc-opt also offers: name -> (module, class).
GENERIC_PASSES: dict[str, tuple[str, str]] = {
    "canonicalize": ("xdsl.transforms.canonicalize", "CanonicalizePass"),
    "cse": ("xdsl.transforms.common_subexpression_elimination", "CommonSubexpressionElimination"),
    "dce": ("xdsl.transforms.dead_code_elimination", "DeadCodeElimination"),
}
_GENERIC_DOCS = {
    "canonicalize": "Apply the canonicalization patterns of every loaded dialect (xDSL).",
    "cse": "Eliminate common subexpressions: identical pure ops are merged (xDSL).",
    "dce": "Remove pure ops whose results are unused (xDSL).",
}


def _lazy_class(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def factory() -> type[ModulePass]:
        from importlib import import_module

        return getattr(import_module(module), cls)

    return factory


class _Timing:
    """Wall time per phase, accumulated over chunks, in first-seen order (MLIR's --mlir-timing)."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - start

    def report(self) -> str:
        total = time.perf_counter() - _START
        rows = list(self.phases.items())
        rows.append(("Rest", max(total - sum(self.phases.values()), 0.0)))
        bar = "===" + "-" * 73 + "==="
        lines = [
            bar,
            "                         ... Execution time report ...",
            bar,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for name, seconds in rows:
            pct = 100.0 * seconds / total if total > 0 else 0.0
            lines.append(f"  {seconds:8.4f} ({pct:5.1f}%)  {name}")
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines) + "\n"


class ByocOptMain(xDSLOptMain):
    """The byoc-opt driver. `run()` returns the exit code."""

    def register_all_dialects(self) -> None:
        from byoc.dialects import ALL_DIALECTS

        for name, factory in ALL_DIALECTS.items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        def get_mlir() -> Any:
            from xdsl.frontend.mlir import MLIRFrontend

            return MLIRFrontend

        self.available_frontends["mlir"] = get_mlir

        def get_examplejson():
            from byoc.frontend.examplejson import ExampleJsonFrontend

            return ExampleJsonFrontend

        self.available_frontends["examplejson"] = get_examplejson
        self.available_frontends["onnx"] = _import_onnx

    def register_all_passes(self) -> None:
        from byoc.passes import ALL_PASSES

        for name, factory in ALL_PASSES.items():
            self.register_pass(name, factory)
        for name, (module, cls) in GENERIC_PASSES.items():
            self.register_pass(name, _lazy_class(module, cls))

    def register_all_targets(self) -> None:
        def get_mlir() -> Any:
            from xdsl.targets.mlir import MLIRTarget

            return MLIRTarget

        self.available_targets["mlir"] = get_mlir
        from byoc.lowering import ALL_EMITTERS

        for name, factory in ALL_EMITTERS.items():
            # legacy-style target: (module, stream) -> None, imported on use
            def emit(module: ModuleOp, stream: IO[str], _factory: Any = factory) -> None:
                _factory()(module, stream)

            self.available_targets[name] = emit

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--pass",
            dest="extra_passes",
            action="append",
            default=[],
            metavar="NAME",
            help="append a pass to the pipeline, after -p (repeatable; options as 'name{opt=v}')",
        )
        arg_parser.add_argument(
            "--print-ir-after-all",
            action="store_true",
            help="print the IR to stderr after each pass, under MLIR's "
            "'// -----// IR Dump After ... //----- //' header",
        )
        arg_parser.add_argument(
            "--timing",
            action="store_true",
            help="print a wall-time table per phase and pass to stderr (as --time-passes)",
        )
        arg_parser.add_argument(
            "--list-passes",
            action="store_true",
            help="list the available passes with their options and exit",
        )
        arg_parser.add_argument(
            "--elide-constants",
            type=int,
            metavar="N",
            default=None,
            help="print nn.constant payloads of more than N elements as "
            "dense_resource<__elided__> (for reading only: such text does not parse back)",
        )
        # Re-document the xDSL flags whose behaviour byoc-opt changes.
        helps = {
            "--verify-diagnostics": "check the diagnostics against the input's "
            "'// expected-error@+1 {{...}}' comments (per --split-input-file chunk); "
            "exit 1 listing every unmatched or unexpected one",
            "--parsing-diagnostics": "print parse errors to stdout and exit 0 (xDSL)",
            "--time-passes": "same as --timing",
            "--print-between-passes": "same as --print-ir-after-all",
            "input_file": "path to input file (.mlir text, or an .onnx model); stdin if omitted",
        }
        for action in arg_parser._actions:  # argparse has no public way to edit a help text
            for key, text in helps.items():
                if key in action.option_strings or action.dest == key:
                    action.help = text

    def setup_pipeline(self) -> None:
        """Deferred to `run()`, so a bad pipeline is a diagnostic rather than a traceback."""

    # ------------------------------------------------------------------
    # run
    # ------------------------------------------------------------------

    def run(self) -> int:  # type: ignore[override]
        try:
            return self._run()
        except KeyboardInterrupt:
            print("byoc-opt: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:
            # the reader went away (byoc-opt ... | head): not an error worth a trace
            try:
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115
            except OSError:
                pass
            return 1
        except Exception as e:  # a bug in byoc-opt itself: one line, with where it happened
            import traceback

            from byoc.diagnostics import describe_exception

            frame = traceback.extract_tb(e.__traceback__)[-1]
            print(
                f"byoc-opt: error: internal error: {describe_exception(e)} "
                f"(at {frame.filename}:{frame.lineno}; please report it)",
                file=sys.stderr,
            )
            return 1

    def _run(self) -> int:
        if self.args.list_passes:
            sys.stdout.write(self.list_passes())
            return 0
        if self.args.elide_constants is not None:
            from byoc.dialects import nn

            nn.ELIDE_CONSTANTS_LARGER_THAN[0] = self.args.elide_constants

        self.timing = _Timing()
        self.show_timing = self.args.timing or self.args.time_passes
        self.print_after_all = self.args.print_ir_after_all or self.args.print_between_passes

        from byoc.diagnostics import SourceError

        try:
            self.passes = self.build_pipeline()
        except SourceError as e:
            self.report(e.diagnostics)
            return 1

        name = self.args.input_file or "<stdin>"
        try:
            if self.args.input_file is None:
                data = sys.stdin.buffer.read()
            else:
                with open(self.args.input_file, "rb") as f:
                    data = f.read()
        except OSError as e:
            print(
                f"byoc-opt: error: cannot open input file '{name}': {e.strerror or e}",
                file=sys.stderr,
            )
            return 1

        output = StringIO()
        failed = False
        frontend = self.args.frontend or (
            os.path.splitext(name)[1].lstrip(".") if self.args.input_file else "mlir"
        )
        if frontend == "onnx":
            failed = self.run_onnx(name, data, output)
        elif frontend == "examplejson":
            failed = self.run_examplejson(name, data, output)
        else:
            failed = self.run_text(name, data, output)

        if self.show_timing:
            sys.stderr.write(self.timing.report())
        if failed:
            if self.args.output_file is None:
                sys.stdout.write(output.getvalue())
            return 1
        if self.args.output_file is None:
            sys.stdout.write(output.getvalue())
            sys.stdout.flush()
        else:
            try:
                with open(self.args.output_file, "w") as f:
                    f.write(output.getvalue())
            except OSError as e:
                print(
                    f"byoc-opt: error: cannot write output file '{self.args.output_file}': "
                    f"{e.strerror or e}",
                    file=sys.stderr,
                )
                return 1
        return 0

    def report(self, diagnostics: Sequence[Diagnostic], stream: IO[str] | None = None) -> None:
        stream = sys.stderr if stream is None else stream
        for d in diagnostics:
            stream.write(d.render() + "\n")

    # ------------------------------------------------------------------
    # inputs
    # ------------------------------------------------------------------

    def run_text(self, name: str, data: bytes, output: StringIO) -> bool:
        """Process MLIR text (split into chunks if asked); True if anything failed."""
        from byoc.diagnostics import (
            SourceBuffer,
            SourceError,
            check_expectations,
            decode_source,
            split_input,
        )

        try:
            with self.timing("Parser"):
                text = decode_source(data, name)
        except SourceError as e:
            self.report(e.diagnostics)
            return True
        chunks = (
            split_input(text, name) if self.args.split_input_file else [SourceBuffer(name, text)]
        )
        failed = False
        for i, chunk in enumerate(chunks):
            if i:
                output.write("// -----\n")
            produced, result = self.process_chunk(chunk)
            if result is not None:
                output.write(result)
            if self.args.verify_diagnostics:
                problems = check_expectations(chunk, produced)
                self.report(problems)
                failed |= bool(problems)
            elif self.args.parsing_diagnostics and produced:
                self.report(produced, sys.stdout)
            else:
                self.report(produced)
                failed |= any(d.severity == "error" for d in produced)
        return failed

    def run_onnx(self, name: str, data: bytes, output: StringIO) -> bool:
        from byoc.diagnostics import Diagnostic, ParsedSource, SourceBuffer

        try:
            with self.timing("ONNX import"):
                module = _import_onnx_bytes(name, data, self.args.input_file)
        except _FrontendError as e:
            self.report([Diagnostic("error", str(e), name)])
            return True
        parsed = ParsedSource(module, SourceBuffer(name, ""), {}, textual=False)
        produced, result = self.process_module(parsed)
        if result is not None:
            output.write(result)
        self.report(produced)
        return any(d.severity == "error" for d in produced)

    def run_examplejson(self, name: str, data: bytes, output: StringIO) -> bool:
        """ExampleJSON text in (byoc/dialects/examplejson/text.py); errors are file:line:col."""
        from byoc.diagnostics import Diagnostic, ParsedSource, SourceBuffer
        from byoc.frontend.examplejson import ExampleJsonSyntaxError, read_examplejson

        try:
            with self.timing("Parser"):
                module = read_examplejson(data, name)
        except ExampleJsonSyntaxError as e:
            self.report([Diagnostic("error", e.msg, name, e.line, e.column, e.source_line)])
            return True
        produced, result = self.process_module(ParsedSource(module, SourceBuffer(name, ""), {}))
        if result is not None:
            output.write(result)
        self.report(produced)
        return any(d.severity == "error" for d in produced)

    # ------------------------------------------------------------------
    # one chunk: parse, verify, passes, output
    # ------------------------------------------------------------------

    def process_chunk(self, chunk: SourceBuffer) -> tuple[list[Diagnostic], str | None]:
        """Diagnostics produced by the chunk, and its output text (None if it failed)."""
        from byoc.diagnostics import SourceError, parse_source

        try:
            with self.timing("Parser"):
                parsed = parse_source(self.ctx, chunk, not self.args.no_implicit_module)
        except SourceError as e:
            return e.diagnostics, None
        return self.process_module(parsed)

    def process_module(self, parsed: ParsedSource) -> tuple[list[Diagnostic], str | None]:
        from byoc.diagnostics import (
            Diagnostic,
            OpError,
            collect_diagnostics,
            materialize_locations,
            verify_module,
        )

        module = parsed.module
        produced: list[Diagnostic] = []
        if not self.args.disable_verify:
            with self.timing("Verifier"):
                problem = verify_module(parsed)
            if problem is not None:
                return [problem], None
        if self.passes and parsed.op_offsets:
            with self.timing("Parser"):
                materialize_locations(parsed)

        def chunk_start(message: str, severity: str = "error") -> Diagnostic:
            src = parsed.source
            if not src.text:
                return Diagnostic(severity, message, src.name)
            return Diagnostic(severity, message, src.name, src.line_offset + 1, 1)

        with collect_diagnostics() as emitted:
            for p in self.passes:
                try:
                    with self.timing(p.name):
                        p.apply(self.ctx, module)
                except OpError as e:
                    message = (
                        e.message
                        if e.message.startswith(f"{p.name}:")
                        else f"{p.name}: {e.message}"
                    )
                    produced.append(parsed.diagnostic(e.op, message))
                    break
                except RecursionError:
                    produced.append(chunk_start(f"pass '{p.name}' failed: recursion too deep"))
                    break
                except Exception as e:
                    from byoc.diagnostics import describe_exception

                    kind = (
                        "failed"
                        if type(e).__name__.endswith("Exception")
                        else "crashed (internal error)"
                    )
                    produced.append(chunk_start(f"pass '{p.name}' {kind}: {describe_exception(e)}"))
                    break
                if not self.args.disable_verify:
                    with self.timing("Verifier"):
                        problem = verify_module(parsed)
                    if problem is not None:
                        produced.append(problem)
                        produced.append(
                            chunk_start(f"the IR does not verify after pass '{p.name}'", "note")
                        )
                        break
                if self.print_after_all:
                    self.dump_ir(p, module)
            produced[:0] = [
                parsed.diagnostic(op, message, severity) for severity, op, message in emitted
            ]
        if any(d.severity == "error" for d in produced):
            return produced, None

        try:
            with self.timing("Output"):
                text = self.emit(module)
        except OpError as e:
            produced.append(parsed.diagnostic(e.op, f"-t {self.args.target}: {e.message}"))
            return produced, None
        except Exception as e:
            from byoc.diagnostics import describe_exception

            produced.append(chunk_start(f"-t {self.args.target}: {describe_exception(e)}"))
            return produced, None
        return produced, text

    def dump_ir(self, p: ModulePass, module: ModuleOp) -> None:
        from xdsl.printer import Printer

        stream = StringIO()
        stream.write(f"// -----// IR Dump After {type(p).__name__} ({p.name}) //----- //\n")
        Printer(stream=stream, print_generic_format=self.args.print_op_generic).print_op(module)
        stream.write("\n\n")
        sys.stderr.write(stream.getvalue())

    def emit(self, module: ModuleOp) -> str:
        from xdsl.utils.arg_spec import parse_spec

        out = StringIO()
        spec = parse_spec(self.args.target)
        if spec.name == "mlir":
            from xdsl.targets.mlir import MLIRTarget

            target = MLIRTarget(
                print_generic_format=self.args.print_op_generic,
                print_properties_as_attributes=self.args.print_no_properties,
                print_debuginfo=self.args.print_debuginfo,
                syntax_highlight=self.args.syntax_highlight,
            )
            target.emit(self.ctx, module, out)
        else:
            return self.output_resulting_program(module)
        return out.getvalue()

    # ------------------------------------------------------------------
    # the pass pipeline
    # ------------------------------------------------------------------

    def build_pipeline(self) -> list[ModulePass]:
        """The passes of `-p` then each `--pass`; errors point into the pipeline text."""
        from xdsl.utils.arg_spec import ArgSpecParseError, parse_pipeline

        from byoc.diagnostics import SourceBuffer, SourceError

        text = ",".join(s for s in [self.args.passes, *self.args.extra_passes] if s)
        source = SourceBuffer(PIPELINE_NAME, text)
        if not text:
            return []
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
            factory = self.available_passes.get(spec.name)
            if factory is None:
                close = difflib.get_close_matches(spec.name, list(self.available_passes), n=3)
                hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
                raise SourceError(
                    [source.at(offset, f"unknown pass '{spec.name}'{hint} (see --list-passes)")]
                )
            try:
                cls = factory()
            except Exception as e:
                raise SourceError(
                    [
                        source.at(
                            offset, f"pass '{spec.name}' is unavailable: {type(e).__name__}: {e}"
                        )
                    ]
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
        return passes

    def list_passes(self) -> str:
        from byoc.passes import ALL_PASSES

        lines = ["Passes (use as --pass NAME or -p 'NAME{option=value}'):"]
        for name, factory in self.available_passes.items():
            if name in ALL_PASSES or name in GENERIC_PASSES:
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


# ----------------------------------------------------------------------
# ONNX input
# ----------------------------------------------------------------------


class _FrontendError(Exception):
    pass


def _load_onnx_importer() -> Callable[..., ModuleOp]:
    try:
        from byoc.frontend.onnx import import_model
    except ImportError as e:
        raise _FrontendError(
            f"cannot read ONNX models: the ONNX frontend failed to load ({e}); "
            "install the 'onnx' package (pip install onnx)"
        ) from None
    return import_model


def _import_onnx(stream: IO[bytes]) -> ModuleOp:
    """xDSL legacy frontend entry `(stream) -> module` for `-f onnx` / `.onnx` files."""
    name = getattr(stream, "name", "<stdin>")
    return _import_onnx_bytes(str(name), stream.read(), None)


def _import_onnx_bytes(name: str, data: bytes, path: str | None) -> ModuleOp:
    import_model = _load_onnx_importer()
    try:
        return import_model(path if path is not None else data)
    except _FrontendError:
        raise
    except Exception as e:
        from byoc.diagnostics import describe_exception

        raise _FrontendError(f"cannot import the ONNX model: {describe_exception(e)}") from None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        tool = ByocOptMain(description="byoc modular optimizer driver", args=argv)
    except BaseException as e:  # xDSL's ArgSpecParseError (bad -t/-f spec) is a BaseException
        if isinstance(e, SystemExit | KeyboardInterrupt):
            raise
        first = str(e).strip().splitlines()
        print(f"byoc-opt: error: {first[-1] if first else type(e).__name__}", file=sys.stderr)
        return 1
    return tool.run()


if __name__ == "__main__":
    sys.exit(main())
