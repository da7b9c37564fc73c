"""Query latency where people wait: the daemon's /v1/search, the warm server's prompt recall and a new
`memex search` process, each hybrid (words + meaning) on a 100k-turn store, with and without CPU hogs.

    uv run python bench/query_latency.py                          # 100k turns, 30 queries, 10 cold runs
    uv run python bench/query_latency.py --turns 20000 --queries 15 --cold 5
    uv run python bench/query_latency.py --setup now --hogs 0   # the defaults alone, nothing beside them
    uv run python bench/query_latency.py --asked questions      # short questions instead of prompts

The store is the synthetic 100k-turn store of bench/search.py (built on first use, cached in
bench/.cache/search). Two set-ups are measured, each in processes of their own:

- before: the query embedded on every core with OpenMP's threads spinning while they wait
  (`MEMEX_EMBED_QUERY_THREADS=0 OMP_WAIT_POLICY=active`, what memex did before issue 14), and numpy's
  BLAS on every core (`OPENBLAS_NUM_THREADS`);
- now: the defaults (two threads for a query, waiting threads sleep, one BLAS thread).

Bytecode of src/ and the virtualenv is compiled first (as bench/cold_start.py does).
"hog" rows run one busy loop per core beside the measurement (as when a build or a test suite runs).
The queries are real prompts of ../shared/data's Claude Code sessions (median 30 tokens), or with
`--asked questions` LoCoMo's questions (median 14 tokens: what a person types into a search box).
Latency is wall time seen by the client: an HTTP request to a running daemon API, a request to a running
warm server, and a whole `memex search --json` process (start-up included).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import memex  # noqa: F401 - first: its default of one BLAS thread must be set when numpy loads

# isort: split
import numpy as np
import orjson
from rich.console import Console
from rich.table import Table

from cold_start import precompile
from memex.config import load_config
from memex.hooks.warm import ask
from retrieval import LOCOMO
from search import CACHE, build_store, real_texts, restamp, vocabulary

MEMEX = Path(sys.executable).with_name("memex")
TOKEN = "bench-token-" + "q" * 24
SETUPS = {
    "before (every core, spinning)": {
        "MEMEX_EMBED_QUERY_THREADS": "0",
        "OMP_WAIT_POLICY": "active",
        "OPENBLAS_NUM_THREADS": str(os.cpu_count() or 1),
    },
    "now (the defaults)": {},
}
console = Console()


def environment(home: Path, setup: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    return {
        **env,
        **setup,
        "MEMEX_HOME": str(home),
        "MEMEX_COMPUTER": "bench",
        "MEMEX_REDIS_URL": "",
        "MEMEX_API_ADDRESS": "127.0.0.1:0",
        "MEMEX_API_TOKEN": TOKEN,
        "MEMEX_INDEX_EMBEDS": "0",
        "MEMEX_WARM_IDLE_SECONDS": "0",
        "MEMEX_WARM_READ_TIMEOUT_MS": "60000",
        "MEMEX_WARM_CONNECT_TIMEOUT_MS": "5000",
        "MEMEX_CLAUDE_DIR": str(home / "no-claude"),
        "MEMEX_CODEX_DIR": str(home / "no-codex"),
        "MEMEX_GEMINI_DIR": str(home / "no-gemini"),
    }


def serve_api() -> None:
    """The API process: a daemon serving the store of MEMEX_HOME; prints its port, stops when stdin closes."""
    from memex.sync.daemon import Daemon

    daemon = Daemon(load_config(), serve_api=True)
    daemon.start(index=False)
    assert daemon.api is not None
    print(daemon.api.port, flush=True)
    sys.stdin.read()
    daemon.close()


@contextlib.contextmanager
def hogs(count: int) -> Iterator[None]:
    """`count` busy loops in processes of their own for the duration of the block."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.5 if procs else 0)
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentiles(measured: tuple[list[float], float]) -> str:
    """p50 / p95 wall ms, then CPU ms per query; a negative time is a request that gave up at its
    deadline after that many ms."""
    values, cpu = measured
    ordered = sorted(abs(v) for v in values)
    p95 = ordered[max(0, round(len(ordered) * 0.95) - 1)]
    gave_up = sum(v < 0 for v in values)
    text = f"{statistics.median(ordered):.0f} / {p95:.0f} ({cpu:.0f} CPU)"
    return text + (f", {gave_up} gave up" if gave_up else "")


def api_latencies(env: dict[str, str], prompts: list[str], hog_count: int) -> tuple[list[float], float]:
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve-api"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())

        def search(text: str) -> float:
            started = time.perf_counter()
            client = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            client.request("GET", f"/v1/search?q={quote(text)}", headers={"Authorization": f"Bearer {TOKEN}"})
            response = client.getresponse()
            body = response.read()
            client.close()
            assert response.status == 200, (response.status, body[:200])
            return (time.perf_counter() - started) * 1000

        search(prompts[0])  # warm: model loaded, vectors mapped
        with hogs(hog_count):
            before = cpu_seconds(server.pid)
            times = [search(text) for text in prompts]
            return times, (cpu_seconds(server.pid) - before) / len(prompts) * 1000
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(60)


def recall_latencies(env: dict[str, str], prompts: list[str], hog_count: int) -> tuple[list[float], float]:
    config = load_config(env)
    server = subprocess.Popen([sys.executable, "-m", "memex", "hooks", "serve"], env=env, stdout=subprocess.DEVNULL)
    try:
        stamp = None  # the server's code version (source files edited meanwhile must not make it stale)
        for _ in range(300):
            pong = ask(config, "ping", {}).answer
            if pong:
                stamp = pong["stamp"]
                break
            time.sleep(0.05)

        def recall(text: str) -> float:
            payload = {"prompt": text, "session_id": "bench-0000001", "project_dir": "/home/bench/p1"}
            started = time.perf_counter()
            reply = ask(config, "recall", payload, stamp)
            elapsed = (time.perf_counter() - started) * 1000
            if reply.answer is None and "interrupted" in reply.reason:
                return -elapsed  # gave up at the recall's deadline (hook_query_deadline_ms): nothing injected
            assert reply.answer is not None, reply.reason
            return elapsed

        recall(prompts[0])
        with hogs(hog_count):
            before = cpu_seconds(server.pid)
            times = [recall(text) for text in prompts]
            return times, (cpu_seconds(server.pid) - before) / len(prompts) * 1000
    finally:
        ask(config, "shutdown", {})
        server.wait(60)


def cold_latencies(env: dict[str, str], prompts: list[str], hog_count: int) -> tuple[list[float], float]:
    subprocess.run([str(MEMEX), "search", prompts[0], "--json"], env=env, capture_output=True, check=True)
    times, cpu = [], 0.0
    with hogs(hog_count):
        for text in prompts:
            started = time.perf_counter()
            proc = subprocess.Popen([str(MEMEX), "search", text, "--json"], env=env, stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
            times.append((time.perf_counter() - started) * 1000)
            cpu += usage.ru_utime + usage.ru_stime
    return times, cpu / len(prompts) * 1000


def base_vectors(passages: list[str]) -> np.ndarray:
    """The real passage vectors the synthetic ones are mixed from (shared with bench/search.py)."""
    base_file = CACHE / "base-vectors.f32"
    if not base_file.exists():
        from memex.embed.model import load_embedder

        console.print("embedding 400 real passages for the synthetic vectors …", style="dim")
        embedder = load_embedder(load_config({"MEMEX_HOME": str(CACHE / "model")}))
        base = embedder.embed_passages(random.Random(1).sample(passages, min(400, len(passages))))
        base_file.parent.mkdir(parents=True, exist_ok=True)
        base.astype("<f4").tofile(base_file)
    return np.fromfile(base_file, dtype="<f4").reshape(-1, 384)


def store_and_queries(turns: int, asked: str, count: int) -> tuple[Path, list[str]]:
    """The bench store of `turns` turns (built once, its vectors re-stamped after a recipe change) and `count`
    queries drawn from real prompts, or LoCoMo's questions when `asked` is "questions"."""
    passages, prompts = real_texts()
    home = CACHE / f"store-{turns}"
    if (home / "memex.db").exists():
        restamp(load_config({"MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"}))
    else:
        build_store(home, turns, 3, base_vectors(passages), vocabulary())
    if asked == "questions":
        prompts = [qa["question"] for conversation in orjson.loads(LOCOMO.read_bytes()) for qa in conversation["qa"]]
    return home, random.Random(2).sample(prompts, min(count, len(prompts)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=30, help="queries per warm measurement")
    parser.add_argument("--cold", type=int, default=10, help="`memex search` processes per measurement")
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2, help="busy loops in the hog rows (0: none)")
    parser.add_argument("--setup", choices=("all", "before", "now"), default="all", help="which set-ups to measure")
    parser.add_argument("--asked", choices=("prompts", "questions"), default="prompts", help="what the queries are")
    parser.add_argument("--serve-api", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_api:
        serve_api()
        return
    precompile()  # as an installed package is: no process compiles its imports
    home, chosen = store_and_queries(args.turns, args.asked, args.queries)
    load = os.getloadavg()[0]
    table = Table(
        title=f"Hybrid query latency, {args.turns:,} turns, {args.asked} asked: wall ms p50 / p95 "
        "(server or process CPU ms per query); "
        f"2 cores, load average {load:.1f} at the start"
    )
    for column in ("set-up", "beside it", "warm /v1/search", "warm prompt recall", "`memex search` (new process)"):
        table.add_column(column, justify="left" if column in ("set-up", "beside it") else "right")
    for name, setup in SETUPS.items():
        if args.setup != "all" and not name.startswith(args.setup):
            continue
        env = environment(home, setup)
        for hog_count in dict.fromkeys((0, args.hogs)):
            console.print(f"{name}, {hog_count} hogs …", style="dim")
            api = api_latencies(env, chosen, hog_count)
            recall = recall_latencies(env, chosen, hog_count)
            cold = cold_latencies(env, chosen[: args.cold], hog_count)
            beside = f"{hog_count} busy loops" if hog_count else "nothing"
            table.add_row(name, beside, percentiles(api), percentiles(recall), percentiles(cold))
    console.print(table)


if __name__ == "__main__":
    main()
