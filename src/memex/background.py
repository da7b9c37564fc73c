"""Work started in a thread of its own, waited for later."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


class Background(Generic[T]):
    """`function()` started in a daemon thread at once; `result()` waits for it and returns its value or
    raises its exception. Work that releases the GIL (the embedding engine through ctypes, SQLite, numpy's
    products) runs beside the caller's on another core: a query is embedded while the search reads the
    index by words."""

    def __init__(self, function: Callable[[], T]) -> None:
        self._outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                self._outcome["value"] = function()
            except BaseException as exc:  # handed to the caller
                self._outcome["error"] = exc

        self._thread = threading.Thread(target=run, name="memex-background", daemon=True)
        self._thread.start()

    def result(self) -> T:
        self._thread.join()
        if "error" in self._outcome:
            raise self._outcome["error"]
        return cast(T, self._outcome["value"])
