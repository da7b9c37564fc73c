"""Sync benchmark: mirrors between computers through a real Redis.

    uv run python bench/sync.py                      # 10,000-mirror backfill, 100 single-mirror runs
    uv run python bench/sync.py --mirrors 2000 --runs 30 --redis-url redis://127.0.0.1:6379/0

Computers are daemons in this process, each with its own MEMEX_HOME (their loops run in threads, with the
real clock), sharing one Redis under a prefix of the run's own (deleted at the end). Mirrors are real: the
conversations of the Claude Code and Codex transcripts in ../shared/data, indexed by memex, then copied
under new session ids up to the requested count.

- single mirror: a new version of one session's mirror on alpha, from the moment alpha publishes it
  (outbox: redaction, compression; XADD) until beta has committed it (beta's loop waits on the stream);
- backfill: alpha publishes N mirrors while beta is online, until beta holds them all (alpha's own
  bookkeeping, its outbox and ledger, may finish after that);
- a computer joining late: its first start with N mirrors in Redis (catch-up from the latest mirrors);
- a computer that was offline: its restart with N entries waiting in the stream for its group.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
import zlib
from pathlib import Path

import redis
from rich.console import Console
from rich.table import Table

from memex.config import Config, load_config
from memex.ingest.indexer import discover, index_transcripts
from memex.mirrors.build import content_hash, store_mirror
from memex.mirrors.model import mirror_from_row
from memex.store.db import connect, transaction
from memex.sync import outbox
from memex.sync.daemon import Daemon
from memex.sync.keys import Keys

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def config_for(root: Path, name: str, url: str, prefix: str) -> Config:
    return load_config(
        {
            "MEMEX_HOME": str(root / name / "home"),
            "MEMEX_COMPUTER": name,
            "MEMEX_CLAUDE_DIR": str(root / name / "claude"),
            "MEMEX_CODEX_DIR": str(root / name / "codex"),
            "MEMEX_GEMINI_DIR": str(root / name / "gemini"),
            "MEMEX_REDIS_URL": url,
            "MEMEX_REDIS_PREFIX": prefix,
            "MEMEX_API_TOKEN": "bench-token-" + "b" * 20,
            "MEMEX_INDEX_WORKERS": "1",
            "MEMEX_STREAM_MAX_ENTRIES": "20000",
        }
    )


def mirror_count(daemon: Daemon, computer: str) -> int:
    """Mirrors of `computer` in a daemon's store (read on a connection of this thread's own)."""
    conn = connect(daemon.config.db_path)
    try:
        return conn.execute("SELECT count(*) FROM mirrors WHERE computer = ?", (computer,)).fetchone()[0]
    finally:
        conn.close()


def seed(daemon: Daemon, count: int) -> tuple[int, float]:
    """Index the shared transcripts into alpha, then copy their mirrors up to `count`; returns the number of
    distinct real mirrors and their mean text size."""
    transcripts = discover({"claude": [SHARED / "claude"], "codex": [SHARED / "codex"]})
    index_transcripts(daemon.conn, daemon.config, transcripts)
    rows = daemon.conn.execute("SELECT * FROM mirrors WHERE computer = ?", (daemon.config.computer,)).fetchall()
    mean = statistics.mean(len(row["conversation_text"]) for row in rows)
    with transaction(daemon.conn):
        for n in range(count - len(rows)):
            copy = mirror_from_row(rows[n % len(rows)])
            copy.session_id = str(uuid.uuid4())
            store_mirror(daemon.conn, copy)
    return len(rows), mean


class Loop(threading.Thread):
    """A daemon's loop in a thread; `changed` is set whenever a pass wrote received mirrors."""

    def __init__(self, daemon: Daemon) -> None:
        super().__init__(daemon=True)
        self.daemon_ = daemon
        self.changed = threading.Event()
        self.stopping = False
        self.last_write = 0.0

    def run(self) -> None:
        while not self.stopping:
            report = self.daemon_.run_once(block_ms=200)
            if report.received:
                self.last_write = time.perf_counter()
                self.changed.set()

    def stop(self) -> None:
        self.stopping = True
        self.join(timeout=10)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def wait_for(condition, timeout: float = 600.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.01)


def single_mirror_latency(alpha: Daemon, beta_loop: Loop, runs: int) -> list[float]:
    """ms from alpha's publication of a new mirror version to beta's commit of it."""
    session = alpha.conn.execute("SELECT * FROM mirrors WHERE computer = 'alpha' LIMIT 1").fetchone()
    link = alpha.link
    assert link is not None and link.client() is not None and link.epoch is not None
    latencies = []
    for run in range(runs):
        mirror = mirror_from_row(session)
        said = f"run {run} of the latency benchmark"
        start = len(mirror.conversation_text) + len("\n\nUser: ")
        mirror.conversation_text += f"\n\nUser: {said}"
        mirror.metadata["messages"].append(["user", start, start + len(said), None])
        mirror.content_hash = content_hash(mirror)
        with transaction(alpha.conn):
            store_mirror(alpha.conn, mirror)
        beta_loop.changed.clear()
        started = time.perf_counter()
        outbox.enqueue(alpha.conn, "alpha", [mirror.session_id])
        outbox.flush(alpha.conn, link.redis, alpha.keys, "alpha", link.epoch, 200, 20_000)
        if not beta_loop.changed.wait(timeout=30):
            raise SystemExit("beta never received the mirror")
        latencies.append((beta_loop.last_write - started) * 1000)
        conn = connect(beta_loop.daemon_.config.db_path)
        text = conn.execute(
            "SELECT conversation_text FROM mirrors WHERE session_id = ? AND computer = 'alpha'", (mirror.session_id,)
        ).fetchone()[0]
        conn.close()
        assert text.endswith(f"run {run} of the latency benchmark"), "beta holds another version"
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    console = Console(stderr=True)
    prefix = f"memex-bench-{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(args.redis_url)
    results: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="memex-bench-sync-") as folder:
        root = Path(folder)
        daemons: list[Daemon] = []
        loops: list[Loop] = []

        def start(name: str) -> Daemon:
            daemon = Daemon(config_for(root, name, args.redis_url, prefix), serve_api=False)
            daemon.start()
            daemons.append(daemon)
            return daemon

        try:
            console.print(f"seeding alpha with {args.mirrors} mirrors…")
            alpha = Daemon(config_for(root, "alpha", args.redis_url, prefix), serve_api=False)
            daemons.append(alpha)
            distinct, mean_chars = seed(alpha, args.mirrors)
            alpha.start()
            beta = start("beta")
            beta.run_once()  # beta joins the stream
            beta_loop = Loop(beta)
            loops.append(beta_loop)
            beta_loop.start()

            console.print(f"single-mirror latency, {args.runs} runs…")
            latencies = single_mirror_latency(alpha, beta_loop, args.runs)
            if os.environ.get("BENCH_DEBUG"):
                print(sorted(round(x, 1) for x in latencies), file=sys.stderr)
            results.append(
                (
                    "propagation A → B, one mirror",
                    f"p50 {statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms",
                    "alpha publishes (redact, compress, XADD) → beta has committed it",
                )
            )

            gamma = start("gamma")  # joins now, then goes offline: the backfill waits for it in the stream
            gamma.run_once()
            gamma.close()
            daemons.remove(gamma)

            console.print("backfill…")
            already = mirror_count(beta, "alpha")
            link = alpha.link
            assert link is not None and link.epoch is not None
            started = time.perf_counter()
            # What alpha's daemon does with sessions it did not see being written: all due at once.
            due = [item.session_id for item in outbox.unpublished(alpha.conn, "alpha", link.epoch)]
            outbox.enqueue(alpha.conn, "alpha", due, alpha.config.sync_batch)
            outbox.flush(alpha.conn, link.redis, alpha.keys, "alpha", link.epoch, alpha.config.sync_batch, 20_000)
            published = time.perf_counter() - started
            wait_for(lambda: mirror_count(beta, "alpha") >= args.mirrors)
            backfill = beta_loop.last_write - started
            beta_loop.stop()
            results.append(
                (
                    f"backfill of {args.mirrors:,} mirrors, A → B",
                    f"{args.mirrors / backfill:,.0f} mirrors/s ({backfill:.1f} s)",
                    f"alpha, until its outbox is empty (select, redact, compress, XADD, bookkeeping): "
                    f"{published:.1f} s; beta had {already} already",
                )
            )

            console.print("late joiner…")
            started = time.perf_counter()
            delta = start("delta")
            while mirror_count(delta, "alpha") < args.mirrors:
                delta.run_once()
            late = time.perf_counter() - started
            results.append(
                (
                    f"late joiner, {args.mirrors:,} mirrors waiting",
                    f"{late:.1f} s ({args.mirrors / late:,.0f} mirrors/s)",
                    f"first start: catch-up from the latest mirrors ({delta.consumer.caught_up:,} read there)",
                )
            )

            console.print("returning computer…")
            started = time.perf_counter()
            gamma = start("gamma")
            while mirror_count(gamma, "alpha") < args.mirrors:
                gamma.run_once()
            returning = time.perf_counter() - started
            results.append(
                (
                    f"returning computer, {args.mirrors:,} entries waiting",
                    f"{returning:.1f} s ({args.mirrors / returning:,.0f} mirrors/s)",
                    f"its consumer group reads them from the stream (catch-up: {gamma.consumer.caught_up})",
                )
            )
            payloads = client.hvals(Keys(prefix).latest("alpha"))[:500]
            packed = statistics.mean(len(p) for p in payloads)
            unpacked = statistics.mean(len(zlib.decompress(p)) for p in payloads)
        finally:
            for loop in loops:
                loop.stop()
            for daemon in daemons:
                daemon.close()
            keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
            if keys:
                client.delete(*keys)

    table = Table(title="memex sync (real Redis, daemons in one process)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_column("what it covers")
    for row in results:
        table.add_row(*row)
    Console().print(table)
    print(
        f"mirrors: {distinct} real conversations (mean {mean_chars:,.0f} characters) copied to {args.mirrors:,}; "
        f"on the wire {packed / 1024:.1f} KiB each (JSON {unpacked / 1024:.1f} KiB, zlib)",
        file=sys.stdout,
    )


if __name__ == "__main__":
    main()
