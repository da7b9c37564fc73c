"""find-related benchmark: latency of `find-related sessions` and `turns` on 10k sessions / 500k turns.

    uv run python bench/related.py                      # 10,000 sessions, 500,000 turns, 3,000 distinct paths
    uv run python bench/related.py --sessions 1000 --turns-per-session 50 --paths 500    # a quicker run
    uv run python bench/related.py --keep /tmp/rb       # build the store once, reuse it on the next run

The rows are synthesised directly in SQLite: ingesting 500k turns through the pipeline takes minutes and
is measured by bench/ingest.py. Sessions are spread over projects; each project works on a slice of a
path vocabulary, each session on a focus inside its project, and each turn touches 0–4 files (reads,
edits, shell, plus Grep scopes and file-history snapshots, which find-related ignores), with a tenth of
the turns in subagents. The vocabulary is the file paths found in the real transcripts of
../shared/data (Claude Code and Codex), extended to --paths by recombining their folders and file names.
The path vectors are computed by the real model, and that cost is measured: the first find-related on a
store pays it once.

Measures: embedding the paths; the cold refresh (every centroid computed and stored: what the first
find-related of a store pays once its paths are embedded); find-related sessions and turns with centroids
cached (p50/p95 over random sessions, in-process and as a `memex` process) and cold (the first call,
refresh included); and the call after one session gained a turn (the watermark recomputes that session).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memex.config import load_config
from memex.related import refresh_patterns, related_sessions, related_turns
from memex.related.resources import counts, embed_resources
from memex.store.db import connect, transaction
from memex.store.queries import Filters

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
MEMEX = Path(sys.executable).parent / "memex"
SESSIONS_PER_PROJECT = 50
PROJECT_PATHS = 150  # paths one project works on
FOCUS_PATHS = 12  # paths one session concentrates on
_PATH = re.compile(r"(?<![\w\\/.-])((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_-][A-Za-z0-9_.-]*\.[A-Za-z]{1,5})\b")
TOOLS = (("Read", 50), ("Edit", 25), ("shell", 10), ("Grep", 8), ("file_history_snapshot", 7))


def vocabulary(size: int, rng: random.Random) -> list[str]:
    """`size` distinct relative paths: those of the real transcripts, then recombinations of their parts."""
    found: set[str] = set()
    roots = [SHARED / "claude", SHARED / "codex"] if SHARED.is_dir() else [FIXTURES]
    for root in roots:
        for path in root.rglob("*.json*"):
            for match in _PATH.finditer(path.read_text(encoding="utf-8", errors="replace")):
                candidate = match.group(1)
                if len(candidate) <= 120 and ".." not in candidate and counts(candidate):
                    found.add(candidate)
    real = sorted(found)
    rng.shuffle(real)
    if len(real) >= size:
        return real[:size]
    folders = sorted({p.rsplit("/", 1)[0] for p in real})
    names = sorted({p.rsplit("/", 1)[1] for p in real})
    paths = list(real)
    seen = set(paths)
    while len(paths) < size:
        candidate = f"{rng.choice(folders)}/{rng.choice(names)}"
        if candidate not in seen:
            seen.add(candidate)
            paths.append(candidate)
    return paths


def stamp(minute: int) -> str:
    day, rest = divmod(minute, 1440)
    return f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T{rest // 60:02d}:{rest % 60:02d}:00.000Z"


def build_store(home: Path, sessions: int, turns_per_session: int, paths: list[str], rng: random.Random) -> float:
    """Sessions, turns and file mentions written straight into a new store; seconds taken."""
    started = time.perf_counter()
    conn = connect(home / "memex.db")
    tools = [name for name, weight in TOOLS for _ in range(weight)]
    projects = max(1, sessions // SESSIONS_PER_PROJECT)
    slices = [rng.sample(paths, min(PROJECT_PATHS, len(paths))) for _ in range(projects)]
    turn_id = 0
    minute = 0
    for first in range(0, sessions, 500):
        session_rows, turn_rows, mention_rows = [], [], []
        for number in range(first, min(first + 500, sessions)):
            project = number % projects
            session_id = f"{number:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
            focus = rng.sample(slices[project], FOCUS_PATHS)
            minute += rng.randint(30, 600)
            start = minute
            for line in range(turns_per_session):
                turn_id += 1
                minute += rng.randint(1, 5)
                agent_id = f"a{number:x}" if rng.random() < 0.1 else ""
                turn_rows.append((turn_id, session_id, agent_id, line * 10, line * 10 + 9, "prompt", "", stamp(minute)))
                for _ in range(rng.choice((0, 0, 0, 1, 1, 2, 2, 3, 4))):
                    pool = focus if rng.random() < 0.8 else slices[project]
                    mention_rows.append((turn_id, session_id, rng.choice(pool), rng.choice(tools)))
            session_rows.append(
                (
                    session_id,
                    "claude",
                    "bench",
                    f"/home/dev/project-{project}",
                    stamp(start),
                    stamp(minute),
                    stamp(minute),
                )
            )
        with transaction(conn):
            conn.executemany(
                "INSERT INTO sessions (session_id, agent, computer, project_dir, started_at, ended_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                session_rows,
            )
            conn.executemany(
                "INSERT INTO turns (id, session_id, agent_id, line_index, end_line_index, kind, full_text, started_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                turn_rows,
            )
            conn.executemany(
                "INSERT INTO file_mentions (turn_id, session_id, file_path, tool_name) VALUES (?, ?, ?, ?)",
                mention_rows,
            )
    conn.close()
    return time.perf_counter() - started


def reset_patterns(conn) -> None:
    with transaction(conn):
        for table in ("turn_access_patterns", "session_access_patterns", "access_pattern_state"):
            conn.execute(f"DELETE FROM {table}")


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, round(len(ordered) * 0.95) - 1)]


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions (default 10,000)")
    parser.add_argument("--turns-per-session", type=int, default=50, help="turns per session (default 50)")
    parser.add_argument("--paths", type=int, default=3_000, help="distinct file paths (default 3,000)")
    parser.add_argument("--runs", type=int, default=40, help="queries per cached measure (default 40)")
    parser.add_argument("--cold-runs", type=int, default=2, help="runs of each cold measure (default 2)")
    parser.add_argument("--keep", type=Path, help="build the store in this folder and keep it (reused if present)")
    args = parser.parse_args()
    console = Console(width=150)
    rng = random.Random(7)
    temp = None
    if args.keep:
        home = args.keep
        home.mkdir(parents=True, exist_ok=True)
    else:
        temp = tempfile.TemporaryDirectory(prefix="memex-related-bench-")
        home = Path(temp.name)
    os.environ["MEMEX_HOME"] = str(home)
    config = load_config()
    build_seconds = embed_seconds = None
    rows = []
    try:
        if not config.db_path.exists():
            paths = vocabulary(args.paths, rng)
            console.print(f"writing {args.sessions:,} sessions × {args.turns_per_session} turns …", style="dim")
            build_seconds = build_store(home, args.sessions, args.turns_per_session, paths, rng)
            conn = connect(config.db_path)
            console.print(f"embedding {len(paths):,} paths with {config.embed_model} …", style="dim")
            started = time.perf_counter()
            embedded = embed_resources(conn, config, paths)
            embed_seconds = time.perf_counter() - started
        else:
            console.print(f"reusing the store in {home}", style="dim")
            conn = connect(config.db_path)
            embedded = conn.execute("SELECT count(*) FROM resource_embeddings").fetchone()[0]
        turns = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        sessions = [r[0] for r in conn.execute("SELECT session_id FROM sessions ORDER BY session_id")]
        mentions = conn.execute("SELECT count(*) FROM file_mentions").fetchone()[0]
        queries = random.Random(11).sample(sessions, min(args.runs, len(sessions)))

        console.print("cold refresh: every centroid …", style="dim")
        refreshes = []
        for _ in range(args.cold_runs):
            reset_patterns(conn)
            report = refresh_patterns(conn, config)
            refreshes.append(report.seconds * 1000)
        pattern_bytes = sum(
            conn.execute(f"SELECT coalesce(sum(length(embedding)), 0) FROM {table}").fetchone()[0]
            for table in ("turn_access_patterns", "session_access_patterns")
        )
        centroid_turns = conn.execute("SELECT count(*) FROM turn_access_patterns").fetchone()[0]
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cold_sessions, cold_turns = [], []
        for _ in range(args.cold_runs):
            reset_patterns(conn)
            cold_sessions.append(timed(lambda: related_sessions(conn, config, queries[0], Filters(), 10)))
            reset_patterns(conn)
            cold_turns.append(timed(lambda: related_turns(conn, config, queries[0], Filters(), 10, 3)))

        console.print("cached …", style="dim")
        cached_sessions = [timed(lambda q=q: related_sessions(conn, config, q, Filters(), 10)) for q in queries]
        cached_turns = [timed(lambda q=q: related_turns(conn, config, q, Filters(), 10, 3)) for q in queries]
        project = conn.execute("SELECT project_dir FROM sessions WHERE session_id = ?", (queries[0],)).fetchone()[0]
        in_project = [
            timed(lambda q=q: related_sessions(conn, config, q, Filters(project=project), 10)) for q in queries[:10]
        ]
        env = {**os.environ, "MEMEX_HOME": str(home)}
        startup = []
        for _ in range(10):
            started = time.perf_counter()
            subprocess.run([str(MEMEX), "--version"], env=env, check=True, capture_output=True)
            startup.append((time.perf_counter() - started) * 1000)
        process = []
        for q in queries[:10]:
            started = time.perf_counter()
            subprocess.run(
                [str(MEMEX), "find-related", "sessions", q, "--json"], env=env, check=True, capture_output=True
            )
            process.append((time.perf_counter() - started) * 1000)

        console.print("after one session gained a turn …", style="dim")
        incremental = []
        top = conn.execute("SELECT max(id) FROM turns").fetchone()[0]
        paths_known = [r[0] for r in conn.execute("SELECT resource FROM resource_embeddings LIMIT 50")]
        for n, q in enumerate(queries[:10]):
            with transaction(conn):  # what a Stop hook writes: one more turn touching two files
                turn_id = top + 1 + n
                conn.execute(
                    "INSERT INTO turns (id, session_id, line_index, end_line_index, kind, full_text, started_at) "
                    "VALUES (?, ?, ?, ?, 'prompt', '', ?)",
                    (turn_id, q, 10_000_000 + turn_id, 10_000_000 + turn_id, stamp(10_000_000 + n)),
                )
                conn.executemany(
                    "INSERT INTO file_mentions (turn_id, session_id, file_path, tool_name) VALUES (?, ?, ?, 'Edit')",
                    [(turn_id, q, p) for p in random.Random(n).sample(paths_known, 2)],
                )
            incremental.append(timed(lambda q=q: related_sessions(conn, config, q, Filters(), 10)))
        conn.close()
    finally:
        if temp is not None:
            temp.cleanup()

    table = Table(
        title=f"memex find-related — {len(sessions):,} sessions, {turns:,} turns, {mentions:,} file mentions, "
        f"{embedded:,} distinct paths"
    )
    table.add_column("measure")
    table.add_column("p50", justify="right")
    table.add_column("p95", justify="right")
    table.add_column("runs", justify="right")
    table.add_column("notes")

    def row(label: str, values: list[float], note: str = "") -> None:
        p50, p95 = percentiles(values)
        table.add_row(label, f"{p50:,.0f} ms", f"{p95:,.0f} ms", str(len(values)), note)
        rows.append((label, p50, p95))

    row("sessions, centroids cached", cached_sessions, "top 10 of all sessions, shared files listed")
    row("sessions, cached, --project", in_project, "one project's 50 sessions")
    row("sessions, cached, `memex` process", process, "start-up and imports included")
    row("`memex --version` process", startup, "start-up alone, for comparison")
    row("turns --window 3, cached", cached_turns, f"stage 1: {config.related_candidate_sessions} sessions")
    row("sessions after its session gained a turn", incremental, "the watermark recomputes one session")
    row("sessions, cold (no centroid yet)", cold_sessions, "refresh of every centroid included")
    row("turns --window 3, cold", cold_turns, "refresh of every centroid included")
    row("refresh alone, cold", refreshes, f"{turns:,} turns; peak RSS {peak_mb:,.0f} MB")
    console.print(table)
    if embed_seconds is not None:
        console.print(
            f"embedding {embedded:,} paths: {embed_seconds:.1f} s ({embedded / embed_seconds:.0f} paths/s), "
            "paid once by the first find-related on a store (the cache is shared by all sessions)"
        )
    if build_seconds is not None:
        console.print(f"store written in {build_seconds:.0f} s", style="dim")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    console.print(
        f"{centroid_turns:,} turn centroids (turns that touched a file that counts); their float32 vectors and the "
        f"sessions' take {pattern_bytes / 1_048_576:,.0f} MB in the database; {os.cpu_count()} CPUs, "
        f"load average {load}; python {sys.version.split()[0]}",
        style="dim",
    )


if __name__ == "__main__":
    main()
