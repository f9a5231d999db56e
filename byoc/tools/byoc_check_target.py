"""byoc-check-target: run the conformance kit on a target and print its table.

    byoc-check-target graphref
    byoc-check-target myaccel --load-plugin ./myaccel.py --dtypes f32 --only nn.relu

Exit status 0 when every cell passes, 1 on any failure or build error, and on a bad
argument or an unknown target (one error line, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    from byoc.conformance.cases import DEFAULT_DTYPES, ELEMENT_TYPES

    p = argparse.ArgumentParser(
        prog="byoc-check-target", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    p.add_argument("target", help="the target's name (byoc-opt --list-targets lists them)")
    p.add_argument(
        "--dtypes",
        default=",".join(DEFAULT_DTYPES),
        help=f"element types to try, comma-separated (of {', '.join(ELEMENT_TYPES)})",
    )
    p.add_argument(
        "--only", default="", help="comma-separated ops or composites to check (default: all)"
    )
    p.add_argument("--max-cases", type=int, default=6, help="cases per cell (default 6)")
    p.add_argument(
        "--threads", default="1,2", help="thread counts each case runs with (default 1,2)"
    )
    p.add_argument(
        "--load-plugin",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="load the targets of a module or .py file first (repeatable)",
    )
    return p.parse_args(argv)


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{message} ...")
        sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        from byoc.conformance import check_target
        from byoc.conformance.cases import ELEMENT_TYPES
        from byoc.targets import get_target, load_plugin

        for spec in args.load_plugin:
            load_plugin(spec)
        dtypes = tuple(d for d in args.dtypes.split(",") if d)
        unknown = [d for d in dtypes if d not in ELEMENT_TYPES]
        if unknown:
            raise ValueError(f"unknown element type {unknown[0]!r} (known: {', '.join(ELEMENT_TYPES)})")
        try:
            threads = tuple(int(t) for t in args.threads.split(",") if t)
        except ValueError:
            raise ValueError(f"--threads {args.threads!r}: expected counts like 1,2") from None
        get_target(args.target)
        report = check_target(
            args.target,
            dtypes=dtypes,
            threads=threads,
            max_cases=args.max_cases,
            only=tuple(o for o in args.only.split(",") if o),
            progress=_progress,
        )
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - every failure is one error line
        from byoc.diagnostics import describe_exception

        print(f"byoc-check-target: error: {describe_exception(e)}", file=sys.stderr)
        return 1
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    sys.stdout.write(report.table())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
