"""Embedding vectors as float32 blobs, the form sqlite-vec reads and stores."""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

Vector = Sequence[float] | bytes

FLOAT_BYTES = 4


class VectorError(ValueError):
    """A vector has the wrong size or no direction."""


def to_blob(vector: Vector, dims: int) -> bytes:
    """A float32 blob of exactly `dims` values; refuses zero and non-finite vectors."""
    if isinstance(vector, bytes | bytearray | memoryview):
        blob = bytes(vector)
        if len(blob) != dims * FLOAT_BYTES:
            raise VectorError(f"vector blob has {len(blob) // FLOAT_BYTES} floats, expected {dims}")
        values = array("f")
        values.frombytes(blob)
    else:
        if len(vector) != dims:
            raise VectorError(f"vector has {len(vector)} values, expected {dims}")
        values = array("f", vector)
        blob = values.tobytes()
    try:
        total = math.fsum(values)
    except (OverflowError, ValueError):  # inf - inf, or an overflow: not a usable vector
        total = math.nan
    if not math.isfinite(total) or not any(values):
        raise VectorError("vector is zero or not finite: it has no direction to compare")
    return blob


def from_blob(blob: bytes) -> list[float]:
    values = array("f")
    values.frombytes(blob)
    return values.tolist()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


# Thresholds of the level code, in units of the vector's root-mean-square component: the
# quartiles of a normal distribution, so each of the four levels holds about as many values.
LEVEL_THRESHOLDS = (0.6745, 0.0, -0.6745)


def level_code(blob: bytes) -> bytes:
    """A 3-bit thermometer code per dimension (bits: above +t, above 0, above -t).

    The Hamming distance between two codes is the L1 distance between the vectors quantized to
    four levels, a far closer estimate of their angle than the sign bits alone: it lets a scan
    of 3 bits per dimension propose the candidates that the exact float32 comparison orders.
    """
    values = array("f")
    values.frombytes(blob)
    rms = math.sqrt(math.fsum(v * v for v in values) / max(len(values), 1))
    size = (len(values) + 7) // 8
    pad = "0" * (size * 8 - len(values))
    code = bytearray()
    for threshold in LEVEL_THRESHOLDS:
        limit = threshold * rms
        bits = "".join(["1" if v > limit else "0" for v in values]) + pad
        code += int(bits, 2).to_bytes(size, "big")
    return bytes(code)
