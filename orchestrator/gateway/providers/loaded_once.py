"""A local model's weights, loaded on first use and then kept for the life of the process."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class LoadedOnce(Generic[T]):
    """What `load` returns, computed by the first caller; callers meanwhile wait for it. A load
    that raises is tried again by the next caller."""

    def __init__(self, load: Callable[[], T]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._value: T | None = None

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._load()
            return self._value

    @property
    def loaded(self) -> bool:
        return self._value is not None
