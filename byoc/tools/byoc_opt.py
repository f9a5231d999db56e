"""byoc-opt: xDSL's opt driver with byoc's dialects, passes and output formats."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xdsl.xdsl_opt_main import xDSLOptMain


class ByocOptMain(xDSLOptMain):
    def register_all_dialects(self) -> None:
        from byoc.dialects import ALL_DIALECTS

        for name, factory in ALL_DIALECTS.items():
            self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        def get_mlir():
            from xdsl.frontend.mlir import MLIRFrontend

            return MLIRFrontend

        self.available_frontends["mlir"] = get_mlir

    def register_all_passes(self) -> None:
        from byoc.passes import ALL_PASSES

        for name, factory in ALL_PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        def get_mlir():
            from xdsl.targets.mlir import MLIRTarget

            return MLIRTarget

        self.available_targets["mlir"] = get_mlir
        from byoc.lowering import ALL_EMITTERS

        for name, factory in ALL_EMITTERS.items():
            # legacy-style target: (module, stream) -> None, imported on use
            def emit(module, stream, _factory=factory):  # type: ignore[no-untyped-def]
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
            help="append a pass (repeatable; options as name{opt=v})",
        )

    def setup_pipeline(self) -> None:
        extra = getattr(self.args, "extra_passes", [])
        if extra:
            specs = [s for s in [self.args.passes, *extra] if s]
            self.args.passes = ",".join(specs)
        super().setup_pipeline()


def main(argv: Sequence[str] | None = None) -> int:
    ByocOptMain(description="byoc modular optimizer driver", args=argv).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
