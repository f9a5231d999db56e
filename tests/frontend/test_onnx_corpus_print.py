"""The printed IR of every corpus model's import, against a list of digests.

`byoc.import_onnx` on each model of benchmarks/corpus.py (its static benchmark shapes and
bound inputs) must print (`str(module)`: every constant's payload in full) to the text
whose SHA-256 `onnx_corpus_print.sha256` lists. A change to the importer that is meant to
leave its output alone (a faster path to the same IR) is checked by this test; a change
that is meant to alter the IR rewrites the list, and the diff of the list names the
models it altered:

    python tests/frontend/test_onnx_corpus_print.py --write

Slow: the models are large and printing their weights as hex takes seconds.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
from test_onnx_corpus import corpus
from xdsl.printer import Printer

import byoc

DIGESTS = Path(__file__).with_name("onnx_corpus_print.sha256")


class _HashStream:
    """A text stream that keeps only the SHA-256 of what is written to it."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def write(self, text: str) -> int:
        self.hash.update(text.encode())
        return len(text)

    def flush(self) -> None:
        pass


def printed_digest(name: str) -> str:
    """The SHA-256 of the imported module of corpus model `name`, printed as `str` prints it."""
    module = byoc.import_onnx(
        str(corpus.model_path(name)),
        input_shapes=corpus.input_shapes(name),
        bind_inputs=corpus.bind_inputs(name),
    )
    stream = _HashStream()
    Printer(stream=stream).print_op(module)
    return stream.hash.hexdigest()


def recorded() -> dict[str, str]:
    lines = DIGESTS.read_text().splitlines()
    return {name: digest for digest, name in (line.split() for line in lines if line.strip())}


def test_every_corpus_model_has_a_digest() -> None:
    assert sorted(recorded()) == sorted(corpus.CORPUS)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(corpus.CORPUS))
def test_corpus_import_prints_as_recorded(name: str) -> None:
    try:
        corpus.model_path(name)
    except corpus.NotInstalledError as e:
        pytest.fail(str(e))
    assert printed_digest(name) == recorded()[name], (
        f"{name}: the imported module prints differently; if that is intended, run "
        "python tests/frontend/test_onnx_corpus_print.py --write"
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/frontend/test_onnx_corpus_print.py --write")
    DIGESTS.write_text("".join(f"{printed_digest(n)}  {n}\n" for n in corpus.CORPUS))
    print(DIGESTS.read_text(), end="")
