"""The measurement cache: seconds per (region, target, machine, threads, byoc version).

    cache = MeasurementCache(default_cache_path())
    key = cache.key(digest, "dnnl", threads=1)
    cache.get(key)                    # seconds, or None
    cache.put(key, 1.2e-4, kind="nn.conv2d", flops=..., bytes=...)
    cache.save()                      # merged with what other processes wrote, atomically

One JSON file (`<cache dir>/placement.json`, the cache dir of the compiled libraries:
`$BYOC_CACHE_DIR`, else `$XDG_CACHE_HOME/byoc`, else `~/.cache/byoc`). A key is the SHA-256
of the region's canonical form (`regions.canonical_text`), the target, the machine (CPU
model and ISA flags), the thread count and byoc's version, so a change of any of them is a
miss. `save` re-reads the file, adds this process's entries and replaces the file by an
atomic rename, under an exclusive lock of `placement.json.lock`: concurrent writers
(threads, processes, builds on one machine) never leave a torn file and keep each other's
entries; two writes of one key keep the last (both are measurements of it).
Each entry also keeps what the cost model fits on (`cost_model.py`): the target, the
unit kind, its FLOPs and bytes, and the machine/threads/version fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

FORMAT = 1
"""The file's format; a file of another format is read as empty (and replaced on save)."""


@lru_cache(maxsize=1)
def machine_fingerprint() -> str:
    """The CPU model and its ISA flags (from /proc/cpuinfo where there is one)."""
    model, flags = platform.processor() or platform.machine(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() in ("flags", "Features"):
                flags = " ".join(sorted(value.split()))
                break
    except OSError:
        pass
    return f"{model} | {platform.machine()} | {hashlib.sha256(flags.encode()).hexdigest()[:16]}"


def byoc_version() -> str:
    from byoc import __version__

    return __version__


def default_cache_path() -> Path:
    from byoc.runtime.toolchain import cache_dir

    return cache_dir() / "placement.json"


@dataclass
class MeasurementCache:
    """Measured seconds on disk (module doc). `path=None` keeps them in memory only."""

    path: Path | None
    machine: str = field(default_factory=machine_fingerprint)
    version: str = field(default_factory=byoc_version)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    _new: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])

    def __post_init__(self) -> None:
        if self.path is not None:
            self.path = Path(self.path)
            self.entries = _read(self.path)

    def fingerprint(self, threads: int) -> str:
        return f"{self.machine} | threads={threads} | byoc {self.version}"

    def key(self, digest: str, target: str, threads: int) -> str:
        text = json.dumps([digest, target, self.fingerprint(threads)])
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str) -> float | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        seconds = entry.get("seconds")
        return float(seconds) if isinstance(seconds, int | float) else None

    def put(self, key: str, seconds: float, **info: Any) -> None:
        entry = {"seconds": float(seconds), **info}
        self.entries[key] = entry
        self._new[key] = entry

    def save(self) -> None:
        """Merge this process's new entries into the file, by an atomic rename."""
        if self.path is None or not self._new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path.with_name(self.path.name + ".lock")):
            merged = _read(self.path)
            merged.update(self._new)
            fd, tmp = tempfile.mkstemp(prefix=".placement-", suffix=".json", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump({"format": FORMAT, "entries": merged}, f)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        self.entries = {**merged, **self.entries}
        self._new.clear()

    def samples(self, threads: int) -> list[dict[str, Any]]:
        """The entries of this machine, thread count and version that describe one unit."""
        fp = self.fingerprint(threads)
        return [e for e in self.entries.values() if e.get("fingerprint") == fp and "kind" in e]


@contextmanager
def _locked(lock: Path) -> Iterator[None]:
    """An exclusive lock on `lock` (flock) for the read-merge-write of `save`, so two
    writers do not drop each other's entries; without fcntl, only the rename protects."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, dict)}


__all__ = ["MeasurementCache", "byoc_version", "default_cache_path", "machine_fingerprint"]
