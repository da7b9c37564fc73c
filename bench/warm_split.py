"""Where a warm query's wall time goes: the daemon's `/v1/search` and the warm server's prompt recall,
each served in this process over the 100k-turn store of bench/query_latency.py, with a timer around each
phase (the functions are wrapped here, nothing in memex is changed).

    uv run python bench/warm_split.py                        # 30 real prompts, 2 rounds
    uv run python bench/warm_split.py --asked questions      # LoCoMo's questions instead
    uv run python bench/warm_split.py --queries 20 --rounds 3

`/v1/search` is asked over HTTP of a real `ApiServer` (uvicorn, Starlette, the worker threads, the pool of
read-only connections); recall over the Unix socket of a real `WarmServer`. Each request is followed by
the same work called directly on a worker thread of this process (no HTTP, no socket), so "served" minus
"direct" is what serving costs. Phases are medians over the requests (they need not add up to the whole:
each median is of its own); "beside" phases run on another thread than the one answering.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import os
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import memex  # noqa: F401 - first: its default of one BLAS thread must be set when numpy loads

# isort: split
import orjson
from rich.console import Console
from rich.table import Table

import memex.background as background
import memex.context.answers as answers
import memex.embed.model as model
import memex.search.hybrid as hybrid
import memex.sync.api as sync_api
import memex.sync.outbound as outbound
import memex.sync.server as server_module
from memex.api import Memex
from memex.config import load_config
from memex.hooks import warm
from memex.store.db import connect_existing, connect_readonly
from memex.store.queries import Filters
from query_latency import TOKEN, environment, store_and_queries

console = Console()
# Phase name -> [(start, end)] of the current request (perf_counter seconds).
_spans: dict[str, list[tuple[float, float]]] = defaultdict(list)


def _timed(owner: Any, name: str, phase: str) -> None:
    """Wrap `owner.name` so each call records a span under `phase`."""
    function = getattr(owner, name)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _spans[phase].append((started, time.perf_counter()))

    setattr(owner, name, wrapper)


def _instrument() -> None:
    for owner, name, phase in (
        (hybrid, "hybrid_search", "hybrid_search"),
        (hybrid, "_embedded_and_scanned", "embedding + scans (beside)"),
        (hybrid, "embedded_query", "embedding (beside)"),
        (hybrid, "search_chunks", "words: FTS5"),
        (hybrid, "word_coverage", "words: coverage"),
        (hybrid, "search_mirrors", "words: mirrors"),
        (hybrid, "_semantic_lists", "candidates, re-rank, rows alive"),
        (hybrid, "_places", "places (sessions, positions)"),
        (hybrid, "_lend_to_neighbours", "neighbours"),
        (hybrid, "_render", "render (rows, highlights)"),
        (outbound, "redacted_hit", "redaction"),
        (sync_api, "search", "worker: whole search"),
        (background.Background, "result", "waiting for the other thread"),
        (answers, "recall_answer", "recall_answer"),
        (answers, "recall", "lexical recall"),
        (answers, "recall_query_vector", "start the embedding"),
        (answers, "semantic_recall", "by meaning (after the words)"),
        (answers, "render_recall", "render"),
        (warm.WarmServer, "answer", "server: answer"),
    ):
        _timed(owner, name, phase)
    _timed(model, "embedded_query", "embedding (beside)")  # recall imports it when it embeds
    original = server_module._RequireToken.__call__

    async def call(self: Any, scope: Any, receive: Any, send: Any) -> None:
        started = time.perf_counter()

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                _spans["app: request in -> worker"].append((started, _first("worker: whole search")))
                _spans["worker -> response starts"].append((_last("worker: whole search"), time.perf_counter()))
            await send(message)

        await original(self, scope, receive, sending)

    server_module._RequireToken.__call__ = call  # type: ignore[method-assign]


def _first(phase: str) -> float:
    return _spans[phase][0][0] if _spans[phase] else float("nan")


def _last(phase: str) -> float:
    return _spans[phase][-1][1] if _spans[phase] else float("nan")


def _request(work: Callable[[], None]) -> tuple[float, dict[str, float]]:
    """Wall ms of `work()`, and each phase's ms in it (summed over its calls)."""
    _spans.clear()
    started = time.perf_counter()
    work()
    ended = time.perf_counter()
    wall = (ended - started) * 1000
    phases = {phase: sum(end - start for start, end in spans) * 1000 for phase, spans in _spans.items()}
    if "app: request in -> worker" in phases:  # before the app: connecting, sending, uvicorn's parsing
        phases["client -> app"] = (_spans["app: request in -> worker"][0][0] - started) * 1000
    if "server: answer" in phases:  # around the warm server's answer: the socket, the hop, JSON both ways
        phases["client -> server's answer"] = (_first("server: answer") - started) * 1000
        phases["answer -> client"] = (ended - _last("server: answer")) * 1000
    return wall, phases


def _served_and_direct(
    served: Callable[[str], None], direct: Callable[[str], None], chosen: list[str], rounds: int
) -> tuple[list[tuple[float, dict[str, float]]], list[float]]:
    """Each query served then called directly, `rounds` times, after three of each to warm up (the model
    loaded, the vectors mapped): the served requests' phases and the direct calls' walls."""
    for text in chosen[:3]:
        served(text)
        direct(text)
    rows, direct_walls = [], []
    for _ in range(rounds):
        for text in chosen:
            rows.append(_request(functools.partial(served, text)))
            direct_walls.append(_request(functools.partial(direct, text))[0])
    return rows, direct_walls


def _table(title: str, served: list[tuple[float, dict[str, float]]], direct: list[float], rounds: int) -> Table:
    table = Table(title=title)
    table.add_column("phase")
    table.add_column("p50 ms", justify="right")
    table.add_column("mean ms", justify="right")
    walls = [wall for wall, _ in served]
    table.add_row("served, whole (client's wall)", f"{statistics.median(walls):.1f}", f"{statistics.mean(walls):.1f}")
    table.add_row("direct call, whole", f"{statistics.median(direct):.1f}", f"{statistics.mean(direct):.1f}")
    queries = len(direct) // rounds
    fastest = [min(direct[i::queries]) for i in range(queries)]  # each query's fastest round
    table.add_row("direct call, fastest round of each", f"{statistics.median(fastest):.1f}", "")
    names = dict.fromkeys(name for _, phases in served for name in phases)
    for name in names:
        values = [phases.get(name, 0.0) for _, phases in served]
        table.add_row(f"  {name}", f"{statistics.median(values):.2f}", f"{statistics.mean(values):.2f}")
    return table


def search_split(config: Any, chosen: list[str], rounds: int) -> Table:
    server = server_module.ApiServer(config, TOKEN, "127.0.0.1:0")
    server.start()
    conn = connect_readonly(config.db_path, config.busy_timeout_ms)
    pool = ThreadPoolExecutor(1, thread_name_prefix="direct")  # a worker thread, as the API's

    def served(text: str) -> None:
        client = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        client.request("GET", f"/v1/search?q={quote(text)}", headers={"Authorization": f"Bearer {TOKEN}"})
        response = client.getresponse()
        response.read()
        client.close()
        assert response.status == 200

    def direct(text: str) -> None:
        pool.submit(lambda: orjson.dumps(Memex(config, conn).computer_search(text, Filters(), 10).to_json())).result()

    try:
        rows, direct_walls = _served_and_direct(served, direct, chosen, rounds)
    finally:
        server.stop()
        pool.shutdown()
        conn.close()
    return _table("warm /v1/search", rows, direct_walls, rounds)


def recall_split(config: Any, chosen: list[str], rounds: int) -> Table:
    server = warm.WarmServer(config, idle_seconds=0)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    while warm.ask(config, "ping", {}).answer is None:
        time.sleep(0.02)
    conn = connect_existing(config.db_path, config.hook_read_busy_timeout_ms)
    pool = ThreadPoolExecutor(1, thread_name_prefix="direct")
    payload = {"session_id": "bench-0000001", "project_dir": "/home/bench/p1"}

    def served(text: str) -> None:
        reply = warm.ask(config, "recall", {**payload, "prompt": text}, server.stamp)
        assert reply.answer is not None, reply.reason

    def direct(text: str) -> None:
        recall = functools.partial(Memex(config, conn).recall, text, semantic=True, **payload)
        pool.submit(lambda: recall().to_json()).result()

    try:
        rows, direct_walls = _served_and_direct(served, direct, chosen, rounds)
    finally:
        warm.ask(config, "shutdown", {})
        thread.join(10)
        pool.shutdown()
        conn.close()
    return _table("warm prompt recall", rows, direct_walls, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--asked", choices=("prompts", "questions"), default="prompts")
    args = parser.parse_args()
    home, chosen = store_and_queries(args.turns, args.asked, args.queries)
    env = environment(home, {})
    os.environ.update(env)  # the model's threads are read from the environment when it loads
    config = load_config(env)
    _instrument()
    load = os.getloadavg()[0]
    console.print(search_split(config, chosen, args.rounds))
    console.print(recall_split(config, chosen, args.rounds))
    asked = f"{len(chosen)} {args.asked} × {args.rounds}"
    loads = f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    console.print(f"{args.turns:,} turns, {asked}; {loads}")


if __name__ == "__main__":
    main()
