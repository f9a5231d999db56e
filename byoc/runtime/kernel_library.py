"""The kernel library: the kernels of the runtime headers, compiled once per machine.

    entries = parse_aux_info(text)               # the kernels the headers define (gcc -aux-info)
    library_source(entries)                      # the library's one translation unit
    glue_source(model_source, entries)           # a model's C, calling the library; or None

Compiling the kernels of `byoc_kernels.h` (at -O2 with AVX2 clones) is nearly all of a
cold build, and none of it depends on the model. The kernel library is one object (`byoc_kernels_*.o` in the cache, built by
`byoc.runtime.toolchain.kernel_library`) holding the runtime (`byoc_runtime.h` built with
`BYOC_KERNEL_LIBRARY`: its state and out-of-line functions) and one out-of-line wrapper
per kernel, `byoc_k_<name>` calling the header's `byoc_<name>`. A model's C is rewritten
into a glue unit (`BYOC_GLUE`): the kernel headers' includes become prototypes of the
wrappers it calls, plus `#define byoc_<name> byoc_k_<name>`, so the generated text is
unchanged. The model library is the glue unit linked with the object: one shared object
per model, as before (its own runtime state, loadable anywhere with no cache).

The kernels are found, not listed: gcc's `-aux-info` output of the library unit names
every function with its parameter types and names. Every `static` function of a kernel
header whose name does not end in `_` (the headers' mark of a helper) and whose
parameters are plain C types gets a wrapper, so a kernel added to any header the
umbrella headers include is in the library with no change here. A model whose C uses a
name of the kernel headers that has no wrapper (a macro, a helper) is compiled as one
unit, as before (`glue_source` returns None): slower to build, never wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

KERNEL_HEADERS = ("byoc_kernels.h", "byoc_qkernels.h")
"""The umbrella headers whose kernels the library holds; a model's C including only these
(and byoc_runtime.h) can be split."""
RUNTIME_HEADERS_OF_GLUE = ("byoc_runtime.h", "dlpack.h", "byoc_math.h")
"""What a glue unit still includes: the runtime's inline helpers, macros and declarations,
and the inline scalar functions of fused loops (byoc_math.h)."""
INLINE_HEADERS = ("byoc_kernels_layout.h", "byoc_kernels_reduce.h")
"""Kernel families a glue unit still compiles itself, specialised by each call site's sizes:
transposes, pads, copies, reductions and softmax (with the headers they include). They are
short memory-bound loops whose trip counts and strides, known at the call site, measurably
speed them up (attacut's transposes, block copies and max-reduction: 0.53 ms a run inlined,
0.65 ms through the library), and these headers parse in milliseconds (no intrinsics)."""
WRAPPER_PREFIX = "byoc_k_"
GLUE_FORMAT = 2
"""The version of the glue rewriting, part of a glue library's cache key: a change to what
`glue_source` or `split_units` produce must not find libraries built the old way."""

_PLAIN_TYPE_WORDS = frozenset(
    "const volatile restrict void char short int long unsigned signed float double _Bool bool "
    "size_t ptrdiff_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t "
    "intptr_t uintptr_t DLTensor DLDataType DLDevice".split()
)
_AUX_LINE = re.compile(
    r"^/\* (?P<file>[^:]+):\d+:NF \*/ static (?P<result>.*?)\b(?P<name>byoc_\w+) "
    r"\((?P<params>.*)\); /\* \((?P<args>[^)]*)\)"
)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_NAME = re.compile(r"\b(?:byoc|BYOC)_\w+")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"(?P<name>[^"]+)"\s*$')


@dataclass(frozen=True)
class KernelEntry:
    """One kernel of the headers, as gcc's -aux-info describes it."""

    name: str
    """Its name in the headers (`byoc_conv2d_f32`)."""
    result: str
    """The result type, as C text (`void`, `int`, `void *`)."""
    params: str
    """The parameters with their names (`const float *x, float *y, int64_t n`), or `void`."""
    args: str
    """The parameter names, comma-separated (`x, y, n`)."""

    @property
    def wrapper(self) -> str:
        """The library's external name of the kernel."""
        return WRAPPER_PREFIX + self.name.removeprefix("byoc_")

    def declaration(self) -> str:
        return f"BYOC_HIDDEN_ {self.result.strip()} {self.wrapper}({self.params});"

    def definition(self) -> str:
        call = f"{self.name}({self.args})"
        body = f"{call};" if self.result.strip() == "void" else f"return {call};"
        return f"BYOC_HIDDEN_ {self.result.strip()} {self.wrapper}({self.params}) {{ {body} }}"


def probe_source() -> str:
    """The kernel library's unit without its wrappers: what -aux-info reads."""
    includes = "".join(f'#include "{h}"\n' for h in KERNEL_HEADERS)
    return (
        "/* byoc's kernel library (byoc/runtime/kernel_library.py): the runtime and every\n"
        " * kernel of the headers, compiled once per machine and linked into each model. */\n"
        '#define BYOC_KERNEL_LIBRARY 1\n#include "byoc_runtime.h"\n' + includes
    )


def parse_aux_info(text: str) -> list[KernelEntry]:
    """The kernels among the functions `gcc -aux-info` lists: static functions defined in a
    kernel header (not byoc_runtime.h or dlpack.h), named without a trailing `_`, whose
    parameters are plain C types (anything else could not be declared in a glue unit)."""
    entries: dict[str, KernelEntry] = {}
    for line in text.splitlines():
        m = _AUX_LINE.match(line)
        if m is None:
            continue
        header = Path(m["file"]).name
        name = m["name"]
        if not header.startswith("byoc_") or header in RUNTIME_HEADERS_OF_GLUE:
            continue
        if name.endswith("_") or name.startswith(WRAPPER_PREFIX) or "..." in m["params"]:
            continue
        words = set(_IDENT.findall(m["params"])) | set(_IDENT.findall(m["result"]))
        arg_names = {a.strip() for a in m["args"].split(",") if a.strip()}
        if not (words - arg_names) <= _PLAIN_TYPE_WORDS:
            continue
        params = m["params"].strip() or "void"
        entries[name] = KernelEntry(name, m["result"], params, m["args"].strip())
    return [entries[n] for n in sorted(entries)]


def library_source(entries: list[KernelEntry]) -> str:
    """The kernel library's unit: the runtime, the kernel headers, one wrapper per kernel."""
    return probe_source() + "\n" + "\n".join(e.definition() for e in entries) + "\n"


def entries_to_json(entries: list[KernelEntry]) -> bytes:
    return json.dumps([asdict(e) for e in entries], sort_keys=True).encode()


def entries_from_json(data: bytes) -> list[KernelEntry]:
    """The entries `entries_to_json` wrote; a ValueError for anything else."""
    try:
        raw = json.loads(data.decode())
        return [
            KernelEntry(str(r["name"]), str(r["result"]), str(r["params"]), str(r["args"]))
            for r in raw
        ]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise ValueError(f"not a kernel list: {e}") from None


def inline_headers(include_dir: Path) -> frozenset[str]:
    """`INLINE_HEADERS` and the kernel headers they include, transitively."""
    seen: set[str] = set()
    todo = list(INLINE_HEADERS)
    while todo:
        name = todo.pop()
        if name in seen or name in RUNTIME_HEADERS_OF_GLUE:
            continue
        seen.add(name)
        for line in (include_dir / name).read_text().splitlines():
            m = _INCLUDE.match(line)
            if m is not None:
                todo.append(m["name"])
    return frozenset(seen)


def kernel_header_names(include_dir: Path) -> tuple[frozenset[str], frozenset[str]]:
    """(the `byoc_`/`BYOC_` names only the kernel headers mention — what a glue unit cannot
    use unless it is wrapped —, those of them the `INLINE_HEADERS` family mentions, which a
    glue unit including those headers compiles itself)."""
    kernel: set[str] = set()
    runtime: set[str] = set()
    inline: set[str] = set()
    inlined = inline_headers(include_dir)
    for header in sorted(include_dir.glob("*.h")):
        found = _NAME.findall(header.read_text())
        (runtime if header.name in RUNTIME_HEADERS_OF_GLUE else kernel).update(found)
        if header.name in inlined:
            inline.update(found)
    return frozenset(kernel - runtime), frozenset(inline - runtime)


def may_split(source: str) -> bool:
    """Whether `source` includes a kernel umbrella header and no header but those, the
    runtime's and the profiling one: the sources `glue_source` may turn into glue units."""
    included = {m["name"] for m in map(_INCLUDE.match, source.splitlines()) if m is not None}
    return bool(included & set(KERNEL_HEADERS)) and included <= {
        *KERNEL_HEADERS,
        *RUNTIME_HEADERS_OF_GLUE,
        "byoc_profile.h",
    }


def glue_source(
    source: str,
    entries: list[KernelEntry],
    kernel_names: frozenset[str],
    inline_names: frozenset[str] = frozenset(),
) -> str | None:
    """`source` (a model's generated C) as a glue unit calling the kernel library, or None
    when it cannot be one: it includes a header other than the runtime and the kernel
    umbrellas, or uses a name of the kernel headers that the library does not wrap
    (`kernel_names`, `inline_names`: `kernel_header_names(...)`). Names of the inline
    families are compiled in the unit, which then includes `INLINE_HEADERS`."""
    lines = source.splitlines()
    kernel_lines: list[int] = []
    for i, line in enumerate(lines):
        m = _INCLUDE.match(line)
        if m is None:
            continue
        if m["name"] in KERNEL_HEADERS:
            kernel_lines.append(i)
        elif m["name"] not in RUNTIME_HEADERS_OF_GLUE and m["name"] != "byoc_profile.h":
            return None
    if not kernel_lines:
        return None
    by_name = {e.name: e for e in entries if e.name not in inline_names}
    used: set[str] = set()
    inline = False
    body = "\n".join(line for i, line in enumerate(lines) if i not in kernel_lines)
    for name in set(_NAME.findall(body)):
        if name in by_name:
            used.add(name)
        elif name in inline_names:
            inline = True
        elif name in kernel_names and not _profiling_name(name):
            return None
    prelude = [
        f"{by_name[n].declaration()}\n#define {n} {by_name[n].wrapper}" for n in sorted(used)
    ]
    out = ["#define BYOC_GLUE 1 /* linked with byoc's kernel library (kernel_library.py) */"]
    prelude.insert(0, '#include "byoc_runtime.h"')
    if inline:
        prelude[1:1] = [f'#include "{h}"' for h in INLINE_HEADERS]
    for i, line in enumerate(lines):
        if i == kernel_lines[0]:
            out.extend(prelude)
        elif i not in kernel_lines:
            out.append(line)
    return "\n".join(out) + "\n"


def _profiling_name(name: str) -> bool:
    """A name of the profiling block (`#ifdef BYOC_PROFILE_KERNELS`), compiled only by
    profiling builds, which are never split."""
    return name.startswith("BYOC_PROFILE") or name.startswith("byoc_profile")


_FUNCTION = re.compile(
    r"^static (?:inline )?(?P<result>[\w\s*]+?)\b(?P<name>byoc_[px]_\w+)\((?P<params>.*)\) \{$"
)
_OWN_NAME = re.compile(r"\bbyoc_[px]_\w+")
_DATA_LINE = re.compile(r"^\s+[-+0-9.,efEx ]*$")


MIN_UNIT_BYTES = 16384
"""Code a unit of its own must get at least: below, a second gcc process and the link cost
more than they save."""


def split_units(glue: str, units: int, min_unit: int = MIN_UNIT_BYTES) -> list[str]:
    """`glue` as up to `units` translation units to compile at once, the first holding
    everything but the functions moved out (listed there as prototypes); each further unit
    gets `min_unit` bytes of code or more.

    A function can move when it is one of the source's top-level `static` functions (the
    code of one partition step: a fused loop, a kernel call) and names nothing else the
    source defines (constants, other functions): it needs only the prelude (the runtime and
    the kernels' prototypes), which every unit repeats. Moved functions become hidden
    (one library, no exported name). The largest go first to the unit with the least code;
    the lines of constant data count for nothing (gcc reads them much faster than code)."""
    lines = glue.splitlines()
    prelude_end = next(
        (i for i, line in enumerate(lines) if line.startswith(("static ", "BYOC_EXPORT"))), None
    )
    if units < 2 or prelude_end is None:
        return [glue]
    movable: list[tuple[int, int, re.Match[str]]] = []
    i = prelude_end
    while i < len(lines):
        m = _FUNCTION.match(lines[i])
        if m is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == "}"), None)
        if end is None:
            return [glue]
        body = "\n".join(lines[i + 1 : end])
        if set(_OWN_NAME.findall(body)) <= {m["name"]}:
            movable.append((i, end, m))
        i = end + 1

    def size(f: tuple[int, int, re.Match[str]]) -> int:
        return sum(len(lines[k]) for k in range(f[0], f[1] + 1))

    moved_lines = {k for f in movable for k in range(f[0], f[1] + 1)}
    code = sum(len(line) for k, line in enumerate(lines[prelude_end:], prelude_end)
               if k not in moved_lines and not _DATA_LINE.match(line))  # fmt: skip
    units = min(units, 1 + sum(size(f) for f in movable) // max(min_unit, 1))
    if units < 2:
        return [glue]
    loads = [code] + [0] * (units - 1)
    placed: dict[int, int] = {}
    for f in sorted(movable, key=size, reverse=True):
        unit = loads.index(min(loads))
        loads[unit] += size(f)
        placed[f[0]] = unit
    parts: list[list[str]] = [[] for _ in range(units)]
    main: list[str] = []
    i = 0
    by_start = {f[0]: f for f in movable}
    while i < len(lines):
        f = by_start.get(i)
        if f is None or placed[i] == 0:
            main.append(lines[i])
            i += 1
            continue
        start, end, m = f
        signature = f"BYOC_HIDDEN_ {m['result'].strip()} {m['name']}({m['params']})"
        main.append(signature + ";")
        parts[placed[i]].extend(
            [signature + ";", signature + " {", *lines[start + 1 : end + 1], ""]
        )
        i = end + 1
    head = lines[:prelude_end]
    return ["\n".join(main) + "\n"] + ["\n".join(head + p) + "\n" for p in parts[1:] if p]
