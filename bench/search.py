"""Semantic search benchmark: embedding throughput, vector search at scale, hybrid search latency.

    uv run python bench/search.py                       # everything (first run builds ~1.6M vectors: minutes)
    uv run python bench/search.py --skip-embed          # only the scale part
    uv run python bench/search.py --turns 20000 --chunks 100000   # a quicker run

1. Embedding: the real Claude Code and Codex transcripts of ../shared/data are indexed, then `memex embed`'s
   worker drains the queue; the table gives the wall time and texts per second per level.
2. Scale: a synthetic store of `--turns` turns (100k by default) and one of `--chunks` chunks (1M), written
   straight into SQLite (ingest has its own benchmark). Their text is drawn from the words of the real
   transcripts; their vectors are made from real ones: a few hundred real passages are embedded, and each
   synthetic vector mixes two of them with noise, so the vectors cluster as real ones do (uniform random
   vectors would make the 1-bit stage look better or worse than it is). Queries are real prompts.
   For each store: vector search per level, exact and two-stage (1-bit codes then exact re-rank), with the
   two-stage recall@10 against exact; and hybrid search end to end in-process (warm: the process has
   searched before) and as a new `memex search` process (cold start included).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from corpus import SHARED, claude_messages
from memex.config import Config, load_config
from memex.context.answers import recall_answer
from memex.embed.model import load_embedder
from memex.embed.worker import drain, worker_lock
from memex.ingest.indexer import discover, index_transcripts
from memex.search.hybrid import hybrid_search
from memex.search.vector import VectorIndex
from memex.store.db import connect, transaction
from memex.store.queries import Filters

CACHE = Path(__file__).resolve().parent / ".cache" / "search"
MEMEX = Path(sys.executable).with_name("memex")
TURNS_PER_SESSION = 50
PROJECTS = 20
console = Console()


def real_texts() -> tuple[list[str], list[str]]:
    """(passages, prompts) from the real transcripts: assistant/user text, and the users' prompts."""
    passages, prompts = [], []
    for kind, content in claude_messages():
        if isinstance(content, str) and 20 < len(content) < 400 and kind == "user":
            prompts.append(content)
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "text" and len(block.get("text", "")) > 80:
                    passages.append(block["text"][:600])
    return list(dict.fromkeys(passages)), list(dict.fromkeys(prompts))


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, round(len(ordered) * 0.95) - 1)]


# --- 1. embedding throughput ------------------------------------------------------------------------------


def bench_embedding(work: Path) -> Table:
    home = work / "embed-home"
    config = load_config({"MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"})
    conn = connect(config.db_path)
    index_transcripts(conn, config, discover({"claude": [SHARED / "claude"], "codex": [SHARED / "codex"]}))
    jobs = dict(conn.execute("SELECT level, count(*) FROM embed_jobs GROUP BY level").fetchall())
    started = time.perf_counter()
    load_embedder(config)
    load_seconds = time.perf_counter() - started
    timings: dict[str, float] = {}
    with worker_lock(config.home):
        last = [time.perf_counter()]
        seen: dict[str, int] = {}

        def on_batch(report, jobs_in_batch) -> None:  # type: ignore[no-untyped-def]
            now = time.perf_counter()
            level = next((lvl for lvl, n in report.by_level.items() if n != seen.get(lvl, 0)), None)
            if level:
                timings[level] = timings.get(level, 0.0) + now - last[0]
            seen.update(report.by_level)
            last[0] = now

        report = drain(conn, config, on_batch=on_batch)
    table = Table(
        title=f"memex embed on the shared corpus (model {config.embed_model}, loaded in {load_seconds * 1000:.0f} ms)"
    )
    for column in ("level", "texts", "seconds", "texts/s"):
        table.add_column(column, justify="right" if column != "level" else "left")
    for level in ("session", "turn", "chunk"):
        count = report.by_level.get(level, 0)
        seconds = timings.get(level, 0.0)
        table.add_row(level, str(count), f"{seconds:.1f}", f"{count / seconds:.1f}" if seconds else "—")
    table.add_row("all", str(report.embedded), f"{report.seconds:.1f}", f"{report.per_second:.1f}")
    conn.close()
    assert sum(jobs.values()) == report.embedded + report.reused, (jobs, report)
    return table


# --- 2. scale ---------------------------------------------------------------------------------------------


def vocabulary() -> list[str]:
    passages, _ = real_texts()
    return [w.lower() for p in passages for w in re.findall(r"[A-Za-z][A-Za-z_]{2,20}", p)]


def synthetic_vectors(base: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` unit vectors, each two real vectors mixed with noise."""
    a = base[rng.integers(0, len(base), count)]
    b = base[rng.integers(0, len(base), count)]
    noise = rng.standard_normal((count, base.shape[1])).astype(np.float32) / np.sqrt(base.shape[1])
    mixed = a + 0.6 * b + 0.8 * noise
    return (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype("<f4")


def restamp(config: Config) -> None:
    """A store built before the embedding recipe's version changed: its synthetic vectors read no text, so
    they are stamped with the current `model_version` (searches ignore vectors of another version) and the
    vector cache beside the database is rebuilt from them on first use."""
    conn = connect(config.db_path)
    stale = conn.execute("SELECT 1 FROM vectors WHERE model_version != ? LIMIT 1", (config.model_version,)).fetchone()
    if stale:
        console.print(f"stamping the vectors of {config.home} with {config.model_version} …", style="dim")
        with transaction(conn):
            conn.execute("UPDATE vectors SET model_version = ?", (config.model_version,))
        shutil.rmtree(config.home / "vectors", ignore_errors=True)
    conn.close()


def build_store(home: Path, turns: int, chunks_per_turn: int, base: np.ndarray, words: list[str]) -> None:
    """Sessions, turns, chunks (with FTS) and vectors at every level, straight into SQLite."""
    config = load_config({"MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"})
    if config.db_path.exists():
        restamp(config)
        return
    conn = connect(config.db_path)
    rng = random.Random(3)
    vectors_rng = np.random.default_rng(5)
    sessions = max(1, turns // TURNS_PER_SESSION)
    stamp = "2026-05-01T10:00:00.000Z"
    model, version = config.embed_model, config.model_version
    console.print(f"building {turns:,} turns × {chunks_per_turn} chunks in {home} …", style="dim")
    started = time.perf_counter()
    for first in range(0, sessions, 200):
        with transaction(conn):
            for s in range(first, min(sessions, first + 200)):
                session_id = f"bench-{s:07d}"
                conn.execute(
                    "INSERT INTO sessions (session_id, agent, computer, project_dir, title, started_at, updated_at) "
                    "VALUES (?, 'claude', 'bench', ?, ?, ?, ?)",
                    (session_id, f"/home/bench/p{s % PROJECTS}", " ".join(rng.choices(words, k=6)), stamp, stamp),
                )
                for n in range(TURNS_PER_SESSION):
                    body = " ".join(rng.choices(words, k=60 * chunks_per_turn))
                    turn_id = conn.execute(
                        "INSERT INTO turns (session_id, line_index, end_line_index, kind, prompt_text, full_text, "
                        "started_at) VALUES (?, ?, ?, 'prompt', ?, ?, ?)",
                        (session_id, n * 2, n * 2 + 1, body[:80], body, stamp),
                    ).lastrowid
                    words_per_chunk = len(body.split()) // chunks_per_turn
                    pieces = body.split()
                    for c in range(chunks_per_turn):
                        content = " ".join(pieces[c * words_per_chunk : (c + 1) * words_per_chunk])
                        conn.execute(
                            "INSERT INTO chunks (turn_id, chunk_index, content) VALUES (?, ?, ?)", (turn_id, c, content)
                        )
        print(f"\r  {min(sessions, first + 200) * TURNS_PER_SESSION:,} turns", end="", flush=True)
    print()
    conn.execute("DELETE FROM embed_jobs")  # the vectors come next, synthetic
    for level, sql in (("chunk", "SELECT id FROM chunks"), ("turn", "SELECT id FROM turns")):
        owners = [r[0] for r in conn.execute(sql)]
        for first in range(0, len(owners), 50_000):
            batch = owners[first : first + 50_000]
            matrix = synthetic_vectors(base, len(batch), vectors_rng)
            with transaction(conn):
                conn.executemany(
                    "INSERT INTO vectors (level, owner_id, model_name, model_version, text_hash, embedding, "
                    "created_at) VALUES (?, ?, ?, ?, '', ?, ?)",
                    [(level, owner, model, version, matrix[i].tobytes(), stamp) for i, owner in enumerate(batch)],
                )
            print(f"\r  {level} vectors {first + len(batch):,}", end="", flush=True)
        print()
    conn.close()
    console.print(f"built in {time.perf_counter() - started:.0f} s", style="dim")


def bench_scale(home: Path, label: str, queries: np.ndarray, prompts: list[str]) -> list[list[str]]:
    config = load_config({"MEMEX_HOME": str(home), "MEMEX_COMPUTER": "bench"})
    conn = connect(config.db_path)
    rows: list[list[str]] = []
    counts = dict(conn.execute("SELECT level, count(*) FROM vectors GROUP BY level").fetchall())
    for level in ("turn", "chunk"):
        exact = VectorIndex(load_config({"MEMEX_HOME": str(home), "MEMEX_SEARCH_BINARY_ABOVE": str(10**9)}), level, 384)
        binary = VectorIndex(load_config({"MEMEX_HOME": str(home), "MEMEX_SEARCH_BINARY_ABOVE": "0"}), level, 384)
        started = time.perf_counter()
        exact.sync(conn)
        sync_seconds = time.perf_counter() - started
        exact.search(conn, queries[0], 10)
        binary.search(conn, queries[0], 10)
        times = {"exact": [], "binary": []}
        overlap = []
        for query in queries:
            t0 = time.perf_counter()
            truth = {n.owner_id for n in exact.search(conn, query, 10)}
            times["exact"].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            found = {n.owner_id for n in binary.search(conn, query, 10)}
            times["binary"].append((time.perf_counter() - t0) * 1000)
            overlap.append(len(truth & found) / 10)
        for kind in ("exact", "binary"):
            p50, p95 = percentiles(times[kind])
            rows.append(
                [
                    label,
                    f"{level} KNN, {kind}",
                    f"{counts.get(level, 0):,}",
                    f"{p50:.0f}",
                    f"{p95:.0f}",
                    f"{statistics.mean(overlap):.3f}" if kind == "binary" else "1",
                    f"cache built in {sync_seconds:.0f} s" if kind == "exact" else "",
                ]
            )
    hybrid_times, project_times = [], []
    hybrid_search(conn, config, prompts[0], Filters())  # warm: model loaded, cache mapped
    for prompt in prompts:
        t0 = time.perf_counter()
        hybrid_search(conn, config, prompt, Filters())
        hybrid_times.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        hybrid_search(conn, config, prompt, Filters(project="p3"))
        project_times.append((time.perf_counter() - t0) * 1000)
    p50, p95 = percentiles(hybrid_times)
    rows.append([label, "hybrid search, warm (in-process)", "", f"{p50:.0f}", f"{p95:.0f}", "", "all levels, RRF"])
    p50, p95 = percentiles(project_times)
    rows.append([label, "hybrid search --project, warm", "", f"{p50:.0f}", f"{p95:.0f}", "", "1 project of 20"])
    recall_times = []
    for prompt in prompts:
        t0 = time.perf_counter()
        recall_answer(conn, config, prompt, "bench-0000001", "/home/bench/p1", semantic=True)
        recall_times.append((time.perf_counter() - t0) * 1000)
    p50, p95 = percentiles(recall_times)
    rows.append([label, "prompt recall, words + meaning (warm server)", "", f"{p50:.0f}", f"{p95:.0f}", "", ""])
    env = {**os.environ, "MEMEX_HOME": str(home)}
    cold = []
    for prompt in prompts[:15]:
        t0 = time.perf_counter()
        subprocess.run([str(MEMEX), "search", prompt, "--json"], env=env, capture_output=True, check=True)
        cold.append((time.perf_counter() - t0) * 1000)
    p50, p95 = percentiles(cold)
    rows.append([label, "`memex search` new process", "", f"{p50:.0f}", f"{p95:.0f}", "", "start-up included"])
    conn.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100_000, help="turns of the first store (3 chunks each)")
    parser.add_argument("--chunks", type=int, default=1_000_000, help="chunks of the second store (3 per turn)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--skip-embed", action="store_true")
    args = parser.parse_args()
    if not args.skip_embed:
        with tempfile.TemporaryDirectory(prefix="memex-bench-embed-") as work:
            console.print(bench_embedding(Path(work)))
    passages, prompts = real_texts()
    config = load_config({"MEMEX_HOME": str(CACHE / "model")})
    embedder = load_embedder(config)
    base_file = CACHE / "base-vectors.f32"
    if base_file.exists():
        base = np.fromfile(base_file, dtype="<f4").reshape(-1, 384)
    else:
        console.print("embedding 400 real passages for the synthetic vectors …", style="dim")
        base = embedder.embed_passages(random.Random(1).sample(passages, min(400, len(passages))))
        base_file.parent.mkdir(parents=True, exist_ok=True)
        base.astype("<f4").tofile(base_file)
    chosen = random.Random(2).sample(prompts, min(args.queries, len(prompts)))
    queries = embedder.embed_queries(chosen)
    words = vocabulary()
    table = Table(title="Search at scale (2-core machine; synthetic stores, real-derived vectors, real prompts)")
    for column in ("store", "what", "vectors", "p50 ms", "p95 ms", "recall@10 vs exact", "note"):
        table.add_column(column, justify="left" if column in ("store", "what", "note") else "right")
    for label, turns in ((f"{args.turns:,} turns", args.turns), (f"{args.chunks:,} chunks", args.chunks // 3)):
        home = CACHE / f"store-{turns}"
        build_store(home, turns, 3, base, words)
        for row in bench_scale(home, label, queries, chosen):
            table.add_row(*row)
    console.print(table)


if __name__ == "__main__":
    main()
