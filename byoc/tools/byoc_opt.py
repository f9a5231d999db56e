"""byoc-opt: xDSL's opt driver with byoc's dialects, passes, input and output formats.

    byoc-opt model.mlir --pass merge-composite --pass 'annotate-target{targets=ccompiler}'
    byoc-opt model.onnx -p 'byoc{targets=ccompiler},lower-to-c' -t c -o model.c
    byoc-opt invalid.mlir --split-input-file --verify-diagnostics

`ByocOptMain` extends `xDSLOptMain` through its hooks: the registries (dialects,
frontends by file extension, passes, `-t` emitters), the input and output
streams, the per-chunk parse / apply-passes / print steps, and the pass
pipeline's callback (timing, verification and printing between passes).
Every failure (bad input, verifier error, unknown pass, a pass that raises)
is a diagnostic `file:line:col: error: message` with the source line and a
caret, recorded on its `// -----` chunk; the exit code is 1, never a Python
traceback. Heavy modules (numpy, onnx, the passes) are imported only when
used, so `byoc-opt --help` starts fast.
"""

from __future__ import annotations

import time

_START = time.perf_counter()

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from dataclasses import dataclass, field, replace  # noqa: E402
from io import BytesIO, StringIO  # noqa: E402
from typing import IO, TYPE_CHECKING, Any, ClassVar, cast  # noqa: E402

from xdsl.utils.arg_spec import parse_spec  # noqa: E402
from xdsl.xdsl_opt_main import xDSLOptMain  # noqa: E402

from byoc import __version__  # noqa: E402

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.passes import ModulePass, PassPipeline
    from xdsl.utils.frontend import Frontend
    from xdsl.utils.target import Target

    from byoc.diagnostics import Diagnostic, ModuleVerifier, ParsedSource, SourceBuffer


class _Timing:
    """Wall time per phase, accumulated over chunks, in first-seen order (MLIR's --mlir-timing)."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.phases[name] = self.phases.get(name, 0.0) + seconds

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

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


class ToolError(Exception):
    """A failure of the run as a whole (unreadable input, bad `-f`/`-t` options):
    printed as `byoc-opt: error: <message>`."""


class _OutputBuffer(StringIO):
    """`-o`: the output is kept in memory, so a run that fails leaves no file behind.

    xDSL's `run()` closes the output stream; the text stays readable for the driver,
    which writes it to the file once the run succeeded."""

    def close(self) -> None:
        pass


@dataclass
class Chunk:
    """One input (or one `// -----` chunk of it) and the diagnostics it produced."""

    name: str
    data: bytes
    line_offset: int
    """Lines of the file before this chunk."""
    frontend: Frontend
    parsed: ParsedSource | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list["Diagnostic"])
    verifier: ModuleVerifier | None = None
    """Verifies the chunk's module between passes; None: in full, with xDSL's `verify()`."""

    @property
    def failed(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)

    def source(self) -> SourceBuffer:
        """The chunk's text, where `expected-error` comments are looked for."""
        if self.parsed is not None and self.parsed.source.text:
            return self.parsed.source
        from byoc.diagnostics import SourceBuffer

        return SourceBuffer(self.name, self.data.decode("utf-8", "replace"), self.line_offset)


class _ListPasses(argparse.Action):
    """`--list-passes`: print the passes with their options and exit (as `--version` does)."""

    def __init__(self, *args: Any, tool: ByocOptMain, **kwargs: Any) -> None:
        super().__init__(*args, nargs=0, **kwargs)
        self.tool = tool

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        sys.stdout.write(self.tool.list_passes())
        parser.exit()


class ByocOptMain(xDSLOptMain):
    """The byoc-opt driver. `run()` returns the exit code."""

    version_format: ClassVar[str] = f"byoc-opt {__version__} built on xDSL {{xdsl_version}}"

    pipeline: PassPipeline
    emitter: Target
    """The `-t` emitter, made once per run."""
    chunk: Chunk
    """The chunk being processed."""

    def __init__(
        self, description: str = "byoc modular optimizer driver", args: Sequence[str] | None = None
    ) -> None:
        self.timing = _Timing()
        self.failed = False
        self.output: _OutputBuffer | None = None
        self._running: ModulePass | None = None
        """The pass being applied."""
        self._pass_started = 0.0
        super().__init__(description, args)

    # ------------------------------------------------------------------
    # registries
    # ------------------------------------------------------------------

    def register_all_dialects(self) -> None:
        from byoc.dialects import ALL_DIALECTS

        for name, factory in ALL_DIALECTS.items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        from byoc.frontend import ALL_FRONTENDS

        self.available_frontends.update(ALL_FRONTENDS)

    def register_all_passes(self) -> None:
        from byoc.passes import ALL_PASSES
        from byoc.tools.pipeline import GENERIC_PASSES

        self.available_passes.update(ALL_PASSES)
        self.available_passes.update(GENERIC_PASSES)

    def register_all_targets(self) -> None:
        from byoc.lowering.emit import ALL_EMITTERS

        self.available_targets.update(ALL_EMITTERS)

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
            action=_ListPasses,
            tool=self,
            help="list the available passes with their options and exit",
        )
        arg_parser.add_argument(
            "--input-shape",
            action="append",
            default=[],
            metavar="NAME=DxDx...",
            help="give ONNX graph input NAME the static shape DxDx... in place of its "
            "symbolic, '?' or -1 dims (repeatable: one per input)",
        )
        arg_parser.add_argument(
            "--load-plugin",
            action="append",
            default=[],
            metavar="MODULE_OR_FILE",
            help="load the targets of a module or .py file (its 'byoc_targets', or "
            "MODULE:ATTR) before the run (repeatable; docs/plugins.md)",
        )
        arg_parser.add_argument(
            "--list-targets",
            action="store_true",
            help="list every target with its origin (built in, or distribution and version) "
            "and exit",
        )
        arg_parser.add_argument(
            "--verify-full",
            action="store_true",
            help="verify every op with xDSL's verify(), before the first pass and after each, "
            "not only one op per nn signature and then the ops a pass created or changed "
            "(on under --verify-diagnostics)",
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
            "--frontend": f"input format ({', '.join(self.available_frontends)}); default: "
            "the file extension's, MLIR text for any other extension and for stdin",
            "--target": f"output format ({', '.join(self.available_targets)}; default mlir), "
            "with options as a pass's: -t 'dot{function=f}'",
            "input_file": "path to input file (.mlir text, .examplejson, or an .onnx model); "
            "stdin if omitted",
        }
        for action in arg_parser._actions:  # argparse has no public way to edit a help text
            for key, text in helps.items():
                if key in action.option_strings or action.dest == key:
                    action.help = text

    def setup_pipeline(self) -> None:
        """Deferred to `run()`: passes registered after construction are found, and a bad
        pipeline is a diagnostic rather than a traceback."""

    # ------------------------------------------------------------------
    # the run: xDSL's, with the exit code and the failures handled here
    # ------------------------------------------------------------------

    def run(self) -> int:  # type: ignore[override]
        from byoc.diagnostics import SourceError

        try:
            if self.load_plugins():
                return 0
            self.pipeline = self.build_pipeline()
            self.emitter = self.make_emitter()
            super().run()
        except SourceError as e:
            self.report(e.diagnostics)
            return 1
        except ToolError as e:
            print(f"byoc-opt: error: {e}", file=sys.stderr)
            return 1
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
        if self.args.timing or self.args.time_passes:
            sys.stderr.write(self.timing.report())
        if self.failed:
            return 1
        return self.write_output_file()

    def load_plugins(self) -> bool:
        """Load the `--load-plugin` targets; under `--list-targets` print them all and
        return True (the run is done)."""
        from byoc.targets import list_targets, load_plugin
        from byoc.targets.plugins import PluginError

        for spec in self.args.load_plugin:
            try:
                load_plugin(spec)
            except PluginError as e:
                raise ToolError(str(e)) from None
        if not self.args.list_targets:
            return False
        sys.stdout.write(format_target_list(list_targets()))
        return True

    def get_input_name(self) -> str:
        return self.args.input_file or "<stdin>"

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        """The input's chunks with their line offsets, and the frontend to read them.

        The frontend is `-f`'s, else the file extension's; an unknown extension is
        MLIR text. Only MLIR text is split at `// -----` lines (--split-input-file).
        """
        from byoc.diagnostics import decode_source, split_input

        name = self.get_input_name()
        try:
            stream, extension = self.get_input_stream()
            try:
                data = stream.read()
            finally:
                if self.args.input_file is not None:
                    stream.close()
        except OSError as e:
            raise ToolError(f"cannot open input file '{name}': {e.strerror or e}") from None
        if extension not in self.available_frontends:
            extension = "mlir"
        frontend = self.make_frontend(self.args.frontend or extension)
        if not (self.args.split_input_file and frontend.name == "mlir"):
            return [(BytesIO(data), 0)], extension
        with self.timing("Parser"):
            text = decode_source(data, name)
        chunks = split_input(text, name)
        return [(BytesIO(c.text.encode()), c.line_offset) for c in chunks], extension

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        self.output = _OutputBuffer()
        return self.output

    def write_output_file(self) -> int:
        if self.output is None:
            return 0
        try:
            with open(self.args.output_file, "w") as f:
                f.write(self.output.getvalue())
        except OSError as e:
            print(
                f"byoc-opt: error: cannot write output file '{self.args.output_file}': "
                f"{e.strerror or e}",
                file=sys.stderr,
            )
            return 1
        return 0

    def make_frontend(self, key: str) -> Frontend:
        """The frontend of spec `key` (`mlir`, `onnx{...}`), with `--no-implicit-module` or
        `--input-shape` applied; `--input-shape` on input that is not ONNX is an error."""
        from byoc.frontend.mlir import MLIRFrontend
        from byoc.frontend.onnx_frontend import ONNXFrontend, parse_input_shapes

        spec = parse_spec(key)
        factory = cast("Callable[[], type[Frontend]]", self.available_frontends[spec.name])
        try:
            frontend = factory().from_spec(spec)
        except ValueError as e:
            raise ToolError(f"invalid options for -f {spec.name}: {e}") from None
        if isinstance(frontend, MLIRFrontend) and self.args.no_implicit_module:
            frontend = replace(frontend, no_implicit_module=True)
        if self.args.input_shape:
            if frontend.name not in ("onnx", "pt2"):
                raise ToolError(
                    f"--input-shape applies to ONNX and torch.export input (.onnx, .pt2); "
                    f"'{self.get_input_name()}' is read as {frontend.name}"
                )
            try:
                parse_input_shapes(self.args.input_shape)
            except ValueError as e:
                raise ToolError(str(e)) from None
            if isinstance(frontend, ONNXFrontend):
                frontend = replace(frontend, input_shapes=tuple(self.args.input_shape))
            else:  # the .pt2 frontend takes the same NAME=DxDx... strings
                frontend = replace(frontend, input_shape=tuple(self.args.input_shape))  # type: ignore[call-arg]
        return frontend

    def make_emitter(self) -> Target:
        """The emitter of `-t`, with the printing flags applied to `mlir`."""
        from xdsl.targets.mlir import MLIRTarget as XdslMLIRTarget

        from byoc.lowering.emit.mlir import MLIREmitter

        spec = parse_spec(self.args.target)
        factory = cast("Callable[[], type[Target]]", self.available_targets[spec.name])
        try:
            emitter = factory().from_spec(spec)
        except ValueError as e:
            raise ToolError(f"invalid options for -t {spec.name}: {e}") from None
        if isinstance(emitter, XdslMLIRTarget):
            args = self.args
            emitter = replace(
                emitter,
                print_generic_format=emitter.print_generic_format or args.print_op_generic,
                print_properties_as_attributes=emitter.print_properties_as_attributes
                or args.print_no_properties,
                print_debuginfo=emitter.print_debuginfo or args.print_debuginfo,
                syntax_highlight=emitter.syntax_highlight or args.syntax_highlight,
            )
        if isinstance(emitter, MLIREmitter) and self.args.elide_constants is not None:
            emitter = replace(emitter, elide_constants=self.args.elide_constants)
        return emitter

    # ------------------------------------------------------------------
    # one chunk: parse_chunk, apply_passes, output_resulting_program
    # ------------------------------------------------------------------

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        frontend = self.make_frontend(self.args.frontend or file_extension)
        return self.process_chunk(
            Chunk(self.get_input_name(), chunk.read(), start_offset, frontend)
        )

    def process_chunk(self, chunk: Chunk) -> ModuleOp | None:
        """Parse the chunk; its module, or None if it failed (the chunk is then finished)."""
        from xdsl.utils.exceptions import ParseError

        from byoc.diagnostics import (
            Diagnostic,
            LocatingFrontend,
            ParsedSource,
            SourceError,
            describe_exception,
            parse_error_diagnostic,
        )

        self.chunk = chunk
        frontend = chunk.frontend
        try:
            with self.timing("Parser"):
                if isinstance(frontend, LocatingFrontend):
                    chunk.parsed = frontend.parse_source(
                        self.ctx, chunk.data, chunk.name, chunk.line_offset
                    )
                else:
                    module = frontend.parse(self.ctx, BytesIO(chunk.data), chunk.name)
                    chunk.parsed = ParsedSource.of_module(module, chunk.name, textual=True)
        except SourceError as e:
            chunk.diagnostics += e.diagnostics
        except ParseError as e:
            chunk.diagnostics.append(parse_error_diagnostic(e))
        except Exception as e:
            message = f"cannot read the input: {describe_exception(e)}"
            chunk.diagnostics.append(Diagnostic("error", message, chunk.name))
        if chunk.parsed is None:
            self.finish_chunk()
            return None
        if not (self.args.verify_full or self.args.verify_diagnostics):
            from byoc.dialects.verify import ChangeVerifier

            chunk.verifier = ChangeVerifier()
        return chunk.parsed.module

    def apply_passes(self, prog: ModuleOp) -> None:
        """Run the pipeline; a failure becomes a diagnostic of the chunk, at its op."""
        from xdsl.utils.exceptions import ShrinkException

        from byoc.diagnostics import (
            OpError,
            SourceError,
            collect_diagnostics,
            describe_exception,
            materialize_locations,
        )

        parsed = self.chunk.parsed
        assert parsed is not None
        if self.pipeline.passes and parsed.op_offsets:
            with self.timing("Parser"):  # so that ops cloned by passes keep their position
                materialize_locations(parsed)
        errors: list[Diagnostic] = []
        self._running = None
        with collect_diagnostics() as emitted:
            try:
                self.pipeline.apply(self.ctx, prog)
            except ShrinkException:  # xDSL's --shrink: its run() handles it
                raise
            except SourceError as e:  # from between_passes: the IR does not verify
                errors = e.diagnostics
            except Exception as e:
                p = self._running
                if p is None:
                    raise
                self.timing.add(p.name, time.perf_counter() - self._pass_started)
                if isinstance(e, OpError):
                    message = e.message
                    if not message.startswith(f"{p.name}:"):
                        message = f"{p.name}: {message}"
                    errors = [parsed.diagnostic(e.op, message)]
                elif isinstance(e, RecursionError):
                    errors = [parsed.at_start(f"pass '{p.name}' failed: recursion too deep")]
                else:
                    kind = (
                        "failed"
                        if type(e).__name__.endswith("Exception")
                        else "crashed (internal error)"
                    )
                    errors = [parsed.at_start(f"pass '{p.name}' {kind}: {describe_exception(e)}")]
        self.chunk.diagnostics += [
            parsed.diagnostic(op, message, severity) for severity, op, message in emitted
        ]
        self.chunk.diagnostics += errors

    def between_passes(
        self, previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None
    ) -> None:
        """The pipeline's callback, before the first pass and after each: time the pass
        that ran, verify the IR (a `SourceError` stops the pipeline), print it if asked.

        The first verification checks every op (an `nn` op signature once); after a
        pass, only the ops the pass may have changed (`ChangeVerifier`), unless
        --verify-full or --verify-diagnostics asks for xDSL's `verify()` each time."""
        from byoc.diagnostics import SourceError, verify_module

        if previous is not None:
            self.timing.add(previous.name, time.perf_counter() - self._pass_started)
            self._running = None
        parsed = self.chunk.parsed
        assert parsed is not None
        if not self.args.disable_verify:
            with self.timing("Verifier"):
                problem = verify_module(parsed, module, self.chunk.verifier)
            if problem is not None:
                if previous is None:
                    raise SourceError([problem])
                note = f"the IR does not verify after pass '{previous.name}'"
                raise SourceError([problem, parsed.at_start(note, "note")])
        if previous is not None and (
            self.args.print_ir_after_all or self.args.print_between_passes
        ):
            self.dump_ir(previous, module)
        self._running = next_pass
        self._pass_started = time.perf_counter()

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """The chunk's text in the `-t` format, "" if the chunk failed; this finishes it."""
        from byoc.diagnostics import OpError, describe_exception

        chunk = self.chunk
        parsed = chunk.parsed
        assert parsed is not None
        output = StringIO()
        if not chunk.failed:
            try:
                with self.timing("Output"):
                    self.emitter.emit(self.ctx, prog, output)
            except OpError as e:
                message = f"-t {self.args.target}: {e.message}"
                chunk.diagnostics.append(parsed.diagnostic(e.op, message))
            except Exception as e:
                message = f"-t {self.args.target}: {describe_exception(e)}"
                chunk.diagnostics.append(parsed.at_start(message))
        self.finish_chunk()
        return "" if chunk.failed else output.getvalue()

    def finish_chunk(self) -> None:
        """Report the chunk's diagnostics, or under --verify-diagnostics check them against
        its `expected-*` comments and report the mismatches."""
        from byoc.diagnostics import check_expectations

        chunk = self.chunk
        if self.args.verify_diagnostics:
            problems = check_expectations(chunk.source(), chunk.diagnostics)
            self.report(problems)
            self.failed |= bool(problems)
        elif self.args.parsing_diagnostics and chunk.diagnostics:
            self.report(chunk.diagnostics, sys.stdout)
        else:
            self.report(chunk.diagnostics)
            self.failed |= chunk.failed

    def report(self, diagnostics: Sequence[Diagnostic], stream: IO[str] | None = None) -> None:
        stream = sys.stderr if stream is None else stream
        for d in diagnostics:
            stream.write(d.render() + "\n")

    def dump_ir(self, p: ModulePass, module: ModuleOp) -> None:
        from byoc.lowering.emit.mlir import make_printer

        stream = StringIO()
        stream.write(f"// -----// IR Dump After {type(p).__name__} ({p.name}) //----- //\n")
        printer = make_printer(
            stream,
            print_generic_format=self.args.print_op_generic,
            elide_constants_larger_than=self.args.elide_constants,
        )
        printer.print_op(module)
        stream.write("\n\n")
        sys.stderr.write(stream.getvalue())

    # ------------------------------------------------------------------
    # the pass pipeline
    # ------------------------------------------------------------------

    def build_pipeline(self) -> PassPipeline:
        """The passes of `-p` then each `--pass`; errors point into the pipeline text."""
        from xdsl.passes import PassPipeline

        from byoc.tools.pipeline import parse_pipeline_text

        text = ",".join(s for s in [self.args.passes, *self.args.extra_passes] if s)
        passes = parse_pipeline_text(text, self.available_passes)
        return PassPipeline(passes, self.between_passes)

    def list_passes(self) -> str:
        from byoc.passes import ALL_PASSES
        from byoc.tools.pipeline import GENERIC_PASSES, describe_passes

        return describe_passes(
            {
                n: f
                for n, f in self.available_passes.items()
                if n in ALL_PASSES or n in GENERIC_PASSES
            }
        )


def format_target_list(rows: Sequence[tuple[str, str, str]]) -> str:
    """`--list-targets`: one line per target, `name  origin`, and a failed plugin's error
    under its name."""
    width = max((len(name) for name, _, _ in rows), default=0) + 2
    lines: list[str] = []
    for name, origin, status in rows:
        lines.append(f"{name:<{width}}{origin}")
        if status != "ok":
            lines.append(f"{'':<{width}}{status}")
    return "\n".join(lines) + "\n"


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
