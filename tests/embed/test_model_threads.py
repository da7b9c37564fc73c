"""The embedding model's threads: a query runs on its own (small) OpenMP team, a batch of passages on the
worker's, and neither waits for the other."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from memex.config import load_config
from memex.embed.model import E5SmallQ4, load_embedder


@pytest.fixture(autouse=True)
def _restore_openmp_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a model sets OpenMP's variables in this process; later tests' subprocesses must not see them."""
    for name in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY"):
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)


# A query long enough (over E5SmallQ4.SHORT_QUERY_TOKENS) to run on the configured team.
LONG_QUERY = "why did the nightly migration of the sessions table fail after the redis upgrade on the build machine"


def _team_size(model: E5SmallQ4) -> np.ndarray:
    """What OpenMP would give a parallel region started in the calling thread."""
    get = model._model._lib.omp_get_max_threads
    get.restype = ctypes.c_int
    return np.array([[float(get())]], dtype=np.float32)


def test_query_and_passage_each_run_on_their_own_thread_count() -> None:
    model = E5SmallQ4("test", threads=3, query_threads=1)
    assert model._run("query", lambda items: _team_size(model), ["q"])[0, 0] == 1
    assert model._run("passage", lambda items: _team_size(model), ["p"])[0, 0] == 3
    assert model._run("query", lambda items: _team_size(model), ["q"])[0, 0] == 1


def test_zero_threads_means_every_core() -> None:
    model = E5SmallQ4("test", threads=0, query_threads=0)
    assert model._run("query", lambda items: _team_size(model), [LONG_QUERY])[0, 0] == (os.cpu_count() or 1)


@pytest.mark.parametrize(("setting", "team"), [(None, 2), ("1", 1), ("3", 3)])
def test_a_query_runs_on_the_configured_thread_count(tmp_path: Path, setting: str | None, team: int) -> None:
    """Two by default (measured faster than one on 2 cores, idle or busy), else `embed_query_threads`."""
    env = {"MEMEX_HOME": str(tmp_path)} | ({"MEMEX_EMBED_QUERY_THREADS": setting} if setting else {})
    model = load_embedder(load_config(env))
    assert isinstance(model, E5SmallQ4)
    assert model._model.token_count(LONG_QUERY, True) > model.SHORT_QUERY_TOKENS
    assert model._run("query", lambda items: _team_size(model), [LONG_QUERY])[0, 0] == team


@pytest.mark.parametrize("query_threads", [0, 2, 3])
def test_a_short_query_runs_on_one_thread(query_threads: int) -> None:
    """A search phrase is embedded sooner by one thread than by a team; a batch of queries keeps the team."""
    model = E5SmallQ4("test", threads=1, query_threads=query_threads)
    team = query_threads or (os.cpu_count() or 1)
    assert model._run("query", lambda items: _team_size(model), ["flaky retry test"])[0, 0] == 1
    assert model._run("query", lambda items: _team_size(model), ["a", "b"])[0, 0] == team
    assert model._run("query", lambda items: _team_size(model), [LONG_QUERY])[0, 0] == team


def test_a_query_does_not_wait_for_a_batch_of_passages() -> None:
    model = E5SmallQ4("test", threads=1, query_threads=1)
    entered, release = threading.Event(), threading.Event()

    def slow_batch(items: list[str]) -> np.ndarray:
        entered.set()
        release.wait()
        return np.zeros((len(items), 384), dtype=np.float32)

    batch = threading.Thread(target=model._run, args=("passage", slow_batch, ["a", "b"]))
    batch.start()
    try:
        assert entered.wait(30)
        vector = model.embed_queries(["where is the sticky header fixed"])  # the batch still holds its lock
        assert vector.shape == (1, 384) and abs(float(np.linalg.norm(vector[0])) - 1) < 1e-3
    finally:
        release.set()
        batch.join()


def test_the_real_model_gives_the_same_vector_on_any_thread_count(tmp_path: Path) -> None:
    one = load_embedder(load_config({"MEMEX_HOME": str(tmp_path), "MEMEX_EMBED_QUERY_THREADS": "1"}))
    every = load_embedder(load_config({"MEMEX_HOME": str(tmp_path), "MEMEX_EMBED_QUERY_THREADS": "0"}))
    text = ["how did we fix the flaky redis test"]
    assert np.allclose(one.embed_queries(text), every.embed_queries(text), atol=1e-5)


def _variable_seen(probe: str, name: str, chosen: str | None) -> str:
    """The value of environment variable `name` that `probe` prints in a new process, started with `name`
    unset (`chosen` None) or set to `chosen` by the user."""
    env = {k: v for k, v in os.environ.items() if k != name}
    if chosen is not None:
        env[name] = chosen
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True).stdout


def test_waiting_threads_sleep_unless_the_user_chose_otherwise() -> None:
    probe = "from memex.embed.model import E5SmallQ4; import os; E5SmallQ4('t'); print(os.environ['OMP_WAIT_POLICY'])"
    assert _variable_seen(probe, "OMP_WAIT_POLICY", None) == "passive\n"
    assert _variable_seen(probe, "OMP_WAIT_POLICY", "active") == "active\n"


def test_numpy_runs_one_blas_thread_unless_the_user_chose_otherwise() -> None:
    """Set when memex is imported, before numpy loads (numpy reads it once): the BLAS team spun after
    each of a search's matrix-vector products."""
    probe = "import memex, numpy, os; print(os.environ['OPENBLAS_NUM_THREADS'])"
    assert _variable_seen(probe, "OPENBLAS_NUM_THREADS", None) == "1\n"
    assert _variable_seen(probe, "OPENBLAS_NUM_THREADS", "3") == "3\n"


def test_background_work_starts_at_once_and_hands_back_its_value_or_error() -> None:
    """The query is embedded while the caller searches by words: the work runs before anyone waits."""
    from memex.background import Background

    started = threading.Event()
    release = threading.Event()

    def work() -> int:
        started.set()
        release.wait(10)
        return 42

    pending = Background(work)
    assert started.wait(10)  # running, and nobody has asked for its result yet
    release.set()
    assert pending.result() == 42 and pending.result() == 42

    def broken() -> int:
        raise ValueError("no model")

    with pytest.raises(ValueError, match="no model"):
        Background(broken).result()
