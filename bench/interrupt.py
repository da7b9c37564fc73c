"""Ctrl-C benchmark: how long `memex embed` and `memex index` take to stop once interrupted.

    uv run python bench/interrupt.py               # 5 runs of each
    uv run python bench/interrupt.py --runs 10

The real `memex` executable runs in a process group of its own; once it has stored some work (vectors for
embed, sessions for index) the whole group gets SIGINT, as a terminal sends it. The time is from the
signal to the process's exit; the exit status and the last line of stderr are checked.

Transcripts: the Claude Code and Codex transcripts of ../shared/data (embed), and 400 generated sessions
of 12 turns (index, 2 workers).
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from transcripts import ClaudeSession, simple_turn

# ../shared/data beside the repository (or beside the folder of its worktrees).
SHARED = next(
    (p / "shared" / "data" for p in Path(__file__).resolve().parents if (p / "shared" / "data").is_dir()),
    Path(__file__).resolve().parents[2] / "shared" / "data",
)
MEMEX = str(Path(sys.executable).parent / "memex")


def count(home: Path, sql: str) -> int:
    try:
        conn = sqlite3.connect(f"file:{home / 'memex.db'}?mode=ro", uri=True)
        try:
            return conn.execute(sql).fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0


def interrupt(args: list[str], env: dict[str, str], ready: Callable[[], bool]) -> tuple[float, int, str]:
    """(seconds from SIGINT to exit, exit status, last stderr line) of `memex ARGS` interrupted once ready."""
    process = subprocess.Popen(
        [MEMEX, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while not ready() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.02)
    started = time.perf_counter()
    os.killpg(process.pid, signal.SIGINT)
    process.wait()
    elapsed = time.perf_counter() - started
    assert process.stderr is not None
    lines = process.stderr.read().strip().splitlines()
    return elapsed, process.returncode, lines[-1] if lines else ""


def generated(root: Path) -> Path:
    for i in range(400):
        session_id = f"{i:08d}-1111-2222-3333-444444444444"
        session = ClaudeSession(root / "-home-dev-shop" / f"{session_id}.jsonl", session_id)
        for t in range(12):
            simple_turn(session, f"question {t} about the cart total and the discount rule {i}", f"answer {t} " * 30)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        base = {**os.environ, "MEMEX_INDEX_EMBEDS": "0", "MEMEX_REDIS_URL": "", "MEMEX_COMPUTER": "bench"}
        corpus = generated(root / "projects")
        for name, args, ready_sql, setup in (
            ("embed", ["embed"], "SELECT count(*) FROM vectors", [str(SHARED / "claude"), str(SHARED / "codex")]),
            ("index", ["index", "--workers", "2", str(corpus)], "SELECT count(*) FROM sessions", None),
        ):
            times, statuses, last = [], set(), ""
            for run in range(options.runs):
                home = root / f"{name}-{run}"
                env = {**base, "MEMEX_HOME": str(home)}
                if setup:
                    subprocess.run([MEMEX, "index", *setup], env=env, capture_output=True, check=True)
                elapsed, status, last = interrupt(args, env, lambda h=home, q=ready_sql: count(h, q) > 0)
                times.append(elapsed)
                statuses.add(status)
            rows.append((name, statistics.median(times), max(times), sorted(statuses), last))
    table = Table(title=f"Ctrl-C to exit ({options.runs} runs each; load average {os.getloadavg()[0]:.1f})")
    for column in ("command", "median s", "max s", "exit", "says"):
        table.add_column(column)
    for name, median, worst, statuses, last in rows:
        table.add_row(name, f"{median:.2f}", f"{worst:.2f}", ",".join(map(str, statuses)), last)
    Console().print(table)


if __name__ == "__main__":
    main()
