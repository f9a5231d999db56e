"""The errors of the PyTorch importer, and where in the user's Python an FX node came from."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?\n(?P<code>[^\n]*)?')


@dataclass(frozen=True)
class SourceLocation:
    """A line of the user's Python source: the innermost frame of an FX node's stack trace."""

    file: str
    line: int
    function: str = ""
    code: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def location_of(stack_trace: str | None, library_dirs: Sequence[str] = ()) -> SourceLocation | None:
    """The innermost frame of `node.meta["stack_trace"]` outside `library_dirs` (PyTorch's
    own modules: `nn.Conv2d.forward` calls the op, the user's line called the module)."""
    if not stack_trace:
        return None
    frames = list(_FRAME.finditer(stack_trace))
    if not frames:
        return None
    outside = [f for f in frames if not any(f["file"].startswith(d) for d in library_dirs)]
    last = (outside or frames)[-1]
    return SourceLocation(
        last["file"], int(last["line"]), last["func"] or "", (last["code"] or "").strip()
    )


@dataclass(frozen=True)
class Problem:
    """One FX node the importer could not convert."""

    op: str
    """The ATen overload (`aten.foo.default`) or the FX target."""
    message: str
    location: SourceLocation | None
    node: str = ""
    """The FX node's name."""

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        code = f"\n      {self.location.code}" if self.location and self.location.code else ""
        return f"{where}{self.op} (node '{self.node}'): {self.message}{code}"


class TorchImportError(Exception):
    """The exported program cannot be imported: one message listing every node that failed
    (an op without a converter, an argument outside what nn can express), each at its
    Python source line."""

    def __init__(self, problems: Sequence[Problem] | str) -> None:
        self.problems: list[Problem] = [] if isinstance(problems, str) else list(problems)
        if isinstance(problems, str):
            message = problems
        else:
            n = len(self.problems)
            head = f"cannot import the exported program: {n} node{'s' if n != 1 else ''} failed"
            message = head + "".join(f"\n  {p}" for p in self.problems)
        super().__init__(message)

    @property
    def unconverted_ops(self) -> list[str]:
        """The distinct ops that failed, in graph order."""
        return list(dict.fromkeys(p.op for p in self.problems))


class UnsupportedTorchError(Exception):
    """Raised by a converter: this call is outside what the nn dialect expresses (the
    importer adds the node and its source line)."""
