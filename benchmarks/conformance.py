"""Regenerate docs/conformance.md: the ONNX node tests and light models through byoc.

    python benchmarks/conformance.py               # through byoc.build; writes docs/conformance.md
    python benchmarks/conformance.py --reference   # the same cases on the numpy reference
    python benchmarks/conformance.py --no-models   # node tests only (the light models take minutes)

The harness (case selection, comparison, the markdown) is `tests/support/onnx_harness.py`,
which the tests use too.
"""

from __future__ import annotations

import collections
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.onnx_harness import (  # noqa: E402
    DEFAULT_TARGETS,
    BuildExecute,
    CaseResult,
    Execute,
    ModelResult,
    light_models,
    load_node_cases,
    reference_execute,
    render_markdown,
    render_models_markdown,
    run_cases,
    run_light_model,
    select_cases,
    unconverted_ops,
)


def write_report(
    path: str,
    command: str,
    execute: Execute = reference_execute,
    executor: str = "the numpy reference (`byoc.run_reference`)",
    models: bool = True,
    model_execute: Execute | None = None,
) -> tuple[list[CaseResult], list[ModelResult]]:
    """Run the node tests (one `execute` per case) and the light models; write the markdown."""
    start = time.perf_counter()
    cases = load_node_cases()
    results = run_cases(select_cases(cases), execute)
    seconds = time.perf_counter() - start
    text = render_markdown(
        results,
        total_cases=len(cases),
        executor=executor,
        command=command,
        seconds=seconds,
        unconverted=[ops for c in cases if (ops := unconverted_ops(c))],
    )
    model_execute = model_execute or execute
    model_results = (
        [run_light_model(name, model_execute) for name in light_models()] if models else []
    )
    if model_results:
        head, sep, rest = text.partition("\n## Per op\n")
        built = isinstance(model_execute, BuildExecute)
        text = head + "\n" + render_models_markdown(model_results, built) + sep + rest
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return results, model_results


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-o", "--output", default="docs/conformance.md", help="where to write the table"
    )
    parser.add_argument(
        "--no-models", action="store_true", help="skip the light_* models (a few minutes)"
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="run on the numpy reference instead of byoc.build (ccompiler, examplejson)",
    )
    args = parser.parse_args(argv)
    command = "python benchmarks/conformance.py" + (" --reference" if args.reference else "")
    if args.reference:
        results, models = write_report(args.output, command, models=not args.no_models)
    else:
        targets = ", ".join(f'"{t}"' for t in DEFAULT_TARGETS)
        results, models = write_report(
            args.output,
            command,
            BuildExecute(DEFAULT_TARGETS),
            f"`byoc.build(module, targets=[{targets}])` then `run`, one build per case",
            models=not args.no_models,
            model_execute=BuildExecute(("ccompiler",)),
        )
    count = collections.Counter(r.status for r in results)
    print(
        f"{len(results)} cases: {count['passed']} passed, {count['failed']} failed, "
        f"{count['skipped']} skipped -> {args.output}"
    )
    for r in results:
        if r.status == "failed":
            print(f"FAILED {r.name}: {r.reason}")
    for m in models:
        print(
            f"{m.name}: {'passed' if m.passed else 'FAILED'} (vs stored {m.stored_error:.1e}, "
            f"vs onnxruntime {m.onnxruntime_error:.1e} relative)"
            + (f"; host ops that a target takes: {', '.join(m.misplaced)}" if m.misplaced else "")
        )
    return 1 if count["failed"] or not all(m.passed for m in models) else 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
