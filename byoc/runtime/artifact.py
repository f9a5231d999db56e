"""The single-file artifact format: sections of bytes under a checksummed JSON header.

`Executable.export_library(path)` and `load_module(path)` (in `executable.py`)
decide what goes in the header and the sections; this module only writes and
validates the container.

Layout (all integers little-endian):

    magic    8 bytes  b"BYOCART\\x00"
    version  u32      FORMAT_VERSION
    hlen     u64      length of the header
    header   hlen     JSON (UTF-8): plan, partitions, components (kind and
                      sections of each), sections
    hsum     32 bytes sha256 of the header
    payload           the sections, back to back

Each section (a constant, a compiled library, an ExampleJSON graph, ...) is
listed in the header with its offset, size and sha256, and sections with the
same content are stored once — a weight bound into a partition and also used
on the host is written once (TVM users saw model size double, apache/tvm#7564).
Reading checks every checksum and the section table (sections back to back
from offset 0, integer sizes, no recursion error on a deep header); the
loader then checks every other field before using it. A truncated, corrupted,
foreign or newer file is rejected with an `ArtifactError` saying which.
Loading never recompiles and has no pickle, but it dlopens the C library the
artifact holds, which runs its code: the checksums catch damage, not tampering.
Writing goes through a temporary of its own, renamed over the path when
complete (concurrent writers to one path do not share a temporary).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

MAGIC = b"BYOCART\x00"
FORMAT_VERSION = 2
"""2: each component records its kind. Version 1 files are still read."""
_PREFIX = struct.Struct("<8sIQ")


class ArtifactError(ValueError):
    """The file is not a byoc artifact this version can read; the message says why."""


class ArtifactWriter:
    """Collects sections (stored once per content) and writes the file."""

    def __init__(self) -> None:
        self.sections: list[dict[str, Any]] = []
        self.chunks: list[bytes] = []
        self.offset = 0
        self.by_digest: dict[str, int] = {}

    def add(self, data: bytes) -> int:
        """The index of a section holding `data`."""
        digest = hashlib.sha256(data).hexdigest()
        index = self.by_digest.get(digest)
        if index is not None:
            return index
        index = len(self.sections)
        self.sections.append({"offset": self.offset, "size": len(data), "sha256": digest})
        self.chunks.append(data)
        self.offset += len(data)
        self.by_digest[digest] = index
        return index

    def write(self, path: str | Path, header: dict[str, Any]) -> None:
        """Write `header` (plus the format fields and the section table) and the sections."""
        header = {
            **header,
            "format": "byoc-artifact",
            "version": FORMAT_VERSION,
            "sections": self.sections,
        }
        hbytes = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
        path = Path(path)
        # a temporary of our own (concurrent exports to one path do not share one), renamed
        # over `path` once complete: a reader sees the old file or the new one, never a part
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        tmp = Path(name)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_PREFIX.pack(MAGIC, FORMAT_VERSION, len(hbytes)))
                f.write(hbytes)
                f.write(hashlib.sha256(hbytes).digest())
                for chunk in self.chunks:
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def read_artifact(path: str | Path) -> tuple[dict[str, Any], list[bytes]]:
    """Validate the file and return its header and sections."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read ({exc.strerror})") from exc
    if len(data) < _PREFIX.size:
        raise ArtifactError(f"{path}: not a byoc artifact (file is {len(data)} bytes, truncated)")
    magic, version, hlen = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise ArtifactError(f"{path}: not a byoc artifact (bad magic {magic!r})")
    if version > FORMAT_VERSION:
        raise ArtifactError(
            f"{path}: artifact format version {version} is newer than this byoc reads "
            f"({FORMAT_VERSION}); upgrade byoc"
        )
    if version < 1:
        raise ArtifactError(f"{path}: invalid artifact format version {version}")
    start = _PREFIX.size
    end = start + hlen
    if end + 32 > len(data):
        raise ArtifactError(f"{path}: truncated artifact (header runs past the end of the file)")
    hbytes = data[start:end]
    if hashlib.sha256(hbytes).digest() != data[end : end + 32]:
        raise ArtifactError(f"{path}: corrupted artifact (header checksum mismatch)")
    try:
        # NaN and Infinity may stand where a float is meant (a kernel attribute such as a
        # NaN clip bound); every offset, size, index and count is checked to be an int
        header = json.loads(hbytes)
    except (ValueError, RecursionError) as exc:
        raise ArtifactError(f"{path}: corrupted artifact header ({exc})") from exc
    base = end + 32
    if not isinstance(header, dict) or not isinstance(header.get("sections"), list):
        raise ArtifactError(f"{path}: corrupted artifact header (no section table)")
    sections: list[bytes] = []
    offset = 0
    for i, sec in enumerate(header["sections"]):
        if not isinstance(sec, dict):
            raise ArtifactError(f"{path}: corrupted artifact header (section {i} is not an object)")
        size, at, digest = sec.get("size"), sec.get("offset"), sec.get("sha256")
        if type(size) is not int or size < 0 or at != offset or type(at) is not int:
            raise ArtifactError(
                f"{path}: corrupted artifact header (section {i}: offset {brief(at)}, "
                f"size {brief(size)}; sections are back to back from offset 0)"
            )
        if not isinstance(digest, str):
            raise ArtifactError(f"{path}: corrupted artifact header (section {i} has no sha256)")
        lo = base + offset
        hi = lo + size
        if hi > len(data):
            raise ArtifactError(f"{path}: truncated artifact (section {i} runs past the end)")
        blob = data[lo:hi]
        if hashlib.sha256(blob).hexdigest() != digest:
            raise ArtifactError(f"{path}: corrupted artifact (checksum mismatch in section {i})")
        sections.append(blob)
        offset += size
    expected_size = base + offset
    if len(data) != expected_size:
        raise ArtifactError(
            f"{path}: corrupted artifact ({len(data) - expected_size:+d} bytes after the last section)"
        )
    return header, sections


def brief(value: Any) -> str:
    """A short description of a header value for a message (no repr of a deep structure)."""
    if value is None or isinstance(value, bool | int | float | str):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {type(value).__name__}"


@lru_cache(maxsize=1)
def _umask() -> int:
    """The process umask (an export gets the permissions a plain `open` would give it)."""
    try:  # Linux: read it without changing it (os.umask would race with other threads)
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask
