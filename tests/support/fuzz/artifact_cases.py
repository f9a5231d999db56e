"""Mutated `.byoc` artifacts (run in the fuzz worker, see fuzz_harness).

Three modes, each seeded:

- `bytes`: flip, insert, delete bytes or truncate the file. The checksums catch it:
  `load_module` must raise `ArtifactError`.
- `header`: one field of the JSON header replaced by a value of another type or size
  (`{}`, `[]`, `None`, `-1`, `2**63`, `5e8`, NaN, a string, deep nesting) or deleted, and
  the header checksum recomputed: a crafted file. It must be rejected with
  `ArtifactError`, or load and run (raising byoc's own errors at worst).
- `section`: one section (a constant, a library, a graph) truncated or replaced, its
  checksum, size and the offsets after it recomputed: same demand.

The reference outputs of the unmutated artifact are stored beside it; a mutated file
that loads and runs must give them or raise byoc's own error.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import struct
from pathlib import Path
from typing import Any

import numpy as np

from support.fuzz.fuzz_harness import mutate_bytes

_PREFIX = struct.Struct("<8sIQ")
REPLACEMENTS: tuple[Any, ...] = (
    None,
    {},
    [],
    -1,
    0,
    1,
    2**31,
    2**63,
    5e8,
    math.nan,
    math.inf,
    "x",
    "",
    True,
    1.5,
    [0],
    {"x": 1},
    [-1, -1],
    ["", [1], "<f4"],
    ["", [2**40], "<f4"],
    ["", [1], "|O"],
)


def build_artifacts(directory: Path) -> list[str]:
    """Export small_cnn for ccompiler, examplejson, and on the host only, with an input and
    the reference outputs of each beside it."""
    import byoc
    from support.fuzz.fuzz_harness import REPO

    source = (REPO / "examples" / "small_cnn.mlir").read_text()
    paths = []
    for name, targets in (("cc", ["ccompiler"]), ("ej", ["examplejson"]), ("host", None)):
        exe = byoc.build(byoc.parse_module(source), targets=targets)
        path = directory / f"{name}.byoc"
        exe.export_library(path)
        rng = np.random.default_rng(0)
        xs = [rng.standard_normal(s.shape).astype(s.dtype) for s in exe.plan.input_specs]
        ys = exe(*xs)
        np.savez(directory / f"{name}.npz", *xs)
        np.savez(directory / f"{name}.out.npz", *ys)
        paths.append(str(path))
    return paths


def split(data: bytes) -> tuple[dict[str, Any], bytes]:
    _, _, hlen = _PREFIX.unpack_from(data)
    start = _PREFIX.size
    return json.loads(data[start : start + hlen]), data[start + hlen + 32 :]


def join(header: Any, payload: bytes, version: int = 2) -> bytes:
    hbytes = (
        header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    )
    return (
        _PREFIX.pack(b"BYOCART\x00", version, len(hbytes))
        + hbytes
        + hashlib.sha256(hbytes).digest()
        + payload
    )


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _deep(n: int) -> Any:
    value: Any = 0
    for _ in range(n):
        value = [value]
    return value


def mutate_header(header: Any, rng: random.Random) -> Any:
    paths = _paths(header)
    path = rng.choice(paths)
    if not path or rng.random() < 0.05:
        return rng.choice([{}, [], None, _deep(500), "x"])
    parent = header
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    r = rng.random()
    if r < 0.15 and isinstance(parent, dict):
        del parent[key]
    elif r < 0.2:
        parent[key] = _deep(rng.choice([50, 500]))
    elif r < 0.3 and isinstance(parent[key], int) and not isinstance(parent[key], bool):
        parent[key] = parent[key] + rng.choice([-1, 1, 2**20])
    else:
        parent[key] = rng.choice(REPLACEMENTS)
    return header


def mutate_section(header: Any, payload: bytes, rng: random.Random) -> tuple[Any, bytes]:
    sections = header["sections"]
    blobs = [payload[s["offset"] : s["offset"] + s["size"]] for s in sections]
    i = rng.randrange(len(blobs))
    blob = blobs[i]
    choice = rng.randrange(4)
    if choice == 0:
        blob = blob[: rng.randint(0, len(blob))]
    elif choice == 1:
        blob = blob[:4]
    elif choice == 2:
        blob = mutate_bytes(blob, rng, rounds=rng.randint(1, 3))
    else:
        blob = blob + blob
    blobs[i] = blob
    offset = 0
    for s, b in zip(sections, blobs, strict=True):
        s.update(offset=offset, size=len(b), sha256=hashlib.sha256(b).hexdigest())
        offset += len(b)
    return header, b"".join(blobs)


def _section_of(header: Any, component: str, blob: str) -> int:
    return int(header["components"][component]["blobs"][blob])


def _replace_section(header: Any, payload: bytes, index: int, blob: bytes) -> tuple[Any, bytes]:
    sections = header["sections"]
    blobs = [payload[s["offset"] : s["offset"] + s["size"]] for s in sections]
    blobs[index] = blob
    offset = 0
    for s, b in zip(sections, blobs, strict=True):
        s.update(offset=offset, size=len(b), sha256=hashlib.sha256(b).hexdigest())
        offset += len(b)
    return header, b"".join(blobs)


def recipe(name: str, header: Any, payload: bytes) -> bytes:
    """The crafted files of issue 14 item 4, by name (checksums valid)."""
    if name == "header-{}":
        return join({}, payload)
    if name == "header-[]":
        return join([], payload)
    if name == "header-deep":
        return join(b"[" * 100000 + b"0" + b"]" * 100000, payload)
    if name == "num_slots-5e8":
        header["plan"]["num_slots"] = 500000000
        return join(header, payload)
    if name == "slot-not-int":
        header["plan"]["input_slots"] = [0.5]
        return join(header, payload)
    if name == "offset-nan":
        header["sections"][0]["offset"] = math.nan
        return join(header, payload)
    if name == "library-truncated":
        i = _section_of(header, "ccompiler", "library")
        lib = payload[header["sections"][i]["offset"] :][: header["sections"][i]["size"]]
        return join(*_replace_section(header, payload, i, lib[: len(lib) // 2]))
    if name.startswith("kernel-attr-"):
        # the first host kernel step with a tuple attribute gets a value of another kind
        step = next(s for s in header["plan"]["steps"] if s["kind"] == "kernel" and s["attrs"])
        key = sorted(step["attrs"])[0]
        if name == "kernel-attr-extra":
            step["attrs"]["no_such_property"] = 1
        else:
            step["attrs"][key] = {"kernel-attr-str": "x", "kernel-attr-list": [[1]]}[name]
        return join(header, payload)
    if name == "step-reads-unwritten-slot":
        step = next(s for s in header["plan"]["steps"] if s["inputs"])
        step["inputs"][0] = max(header["plan"]["output_slots"])
        return join(header, payload)
    if name == "constant-one-element":
        i = _section_of(header, "ccompiler", "constant0")
        return join(*_replace_section(header, payload, i, b"\0\0\0\0"))
    raise KeyError(name)


def mutated_artifact(case: dict[str, Any]) -> bytes:
    data = Path(case["artifact"]).read_bytes()
    if case["mode"] == "recipe":
        return recipe(case["recipe"], *split(data))
    rng = random.Random(case["seed"])
    if case["mode"] == "bytes":
        return mutate_bytes(data, rng)
    header, payload = split(data)
    if case["mode"] == "header":
        return join(mutate_header(header, rng), payload)
    return join(*mutate_section(header, payload, rng))


def _byoc_errors() -> tuple[type[BaseException], ...]:
    from byoc.runtime.c_module import CFunctionError
    from byoc.runtime.examplejson_module import ExampleJsonError
    from byoc.runtime.executable import InputError
    from byoc.runtime.host import PlanError

    return (InputError, PlanError, CFunctionError, ExampleJsonError)


def run_artifact_case(case: dict[str, Any]) -> tuple[str, str]:
    import byoc
    from byoc.runtime.artifact import ArtifactError

    source = Path(case["artifact"])
    data = mutated_artifact(case)
    path = source.with_name(f"mutated-{case['mode']}.byoc")
    path.write_bytes(data)
    try:
        exe = byoc.load_module(path)
    except ArtifactError:
        return "ok-rejected", ""
    except Exception as exc:  # noqa: BLE001
        return "wrong-error", f"load: {type(exc).__name__}: {str(exc)[:300]}"
    with np.load(source.with_suffix(".npz")) as f:
        xs = [f[k] for k in f.files]
    with np.load(source.with_suffix(".out.npz")) as f:
        want = [f[k] for k in f.files]
    try:
        got = exe(*xs)
    except _byoc_errors():
        return "ok-run-error", ""
    except Exception as exc:  # noqa: BLE001
        return "wrong-error", f"run: {type(exc).__name__}: {str(exc)[:300]}"
    same = len(got) == len(want) and all(
        g.shape == w.shape and g.dtype == w.dtype and np.array_equal(g, w, equal_nan=True)
        for g, w in zip(got, want, strict=False)
    )
    if same:
        return "ok", ""
    return ("mismatch" if case["mode"] == "bytes" else "loaded-crafted"), "outputs differ"
