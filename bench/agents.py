"""The agents of issue 15: ingest throughput per agent, and OpenCode's per-session change detection at scale.

    uv run python bench/agents.py      # every agent's live fixtures ×50; an OpenCode database of 2,000 sessions
    uv run python bench/agents.py --copies 10 --sessions 500    # a quicker run

Per agent, the real files of `tests/fixtures/live/` (and the SpecStory export) are replicated `--copies` times
(each copy in a folder of its own, so every file is a new transcript) and indexed in one process, as
`memex index FOLDER` does: files, sessions, MB, seconds, MB/s. Then an OpenCode database is filled with
`--sessions` copies of the real sessions (new ids, the real messages and parts) and measured three ways:
the first index, a run with nothing changed (every session's fingerprint is read in one query), and a run
after one session gained a message (only that session is read again).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memex.config import load_config
from memex.ingest.indexer import discover, index_transcripts
from memex.store.db import connect

ROOT = Path(__file__).resolve().parent.parent
LIVE = ROOT / "tests" / "fixtures" / "live"
# agent -> what of the fixtures is its (copied whole into each replica folder).
SOURCES = {
    "copilot": [LIVE / "copilot-1.0.102"],
    "qwen": [LIVE / "qwen-code-0.24.4"],
    "pi": [LIVE / "pi-0.73.1"],
    "kimi": [LIVE / "kimi-code-2.1.0", LIVE / "kimi-cli-1.52.0"],
    "cline": [LIVE / "cline-3.0.65"],
    "aider": [LIVE / "aider-0.86.2"],
    "cursor": [ROOT / "tests" / "fixtures" / "cursor"],
    "opencode": [LIVE / "opencode-1.18.33"],
}


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _replicate(agent: str, target: Path, copies: int) -> None:
    for copy in range(copies):
        for source in SOURCES[agent]:
            shutil.copytree(source, target / f"copy-{copy}" / source.name)


def _index(home: Path, agent: str, root: Path) -> tuple[int, int, float]:
    config = load_config({"MEMEX_HOME": str(home), "MEMEX_INDEX_EMBEDS": "0"})
    conn = connect(config.db_path)
    started = time.perf_counter()
    transcripts = discover({agent: [root]})
    report = index_transcripts(conn, config, transcripts)
    seconds = time.perf_counter() - started
    conn.close()
    return report.files, len(report.sessions), seconds


def throughput(copies: int, table: Table, scratch: Path) -> None:
    for agent in SOURCES:
        root = scratch / agent
        _replicate(agent, root, copies)
        files, sessions, seconds = _index(scratch / f"home-{agent}", agent, root)
        megabytes = _size(root) / 1_048_576
        table.add_row(
            agent, str(files), str(sessions), f"{megabytes:.1f}", f"{seconds:.2f}", f"{megabytes / seconds:.1f}"
        )


def _fill(database: Path, sessions: int) -> str:
    """Copy the real sessions (with their messages and parts) until the database holds `sessions`."""
    conn = sqlite3.connect(database)
    conn.execute("PRAGMA journal_mode = WAL")
    originals = [row[0] for row in conn.execute("SELECT id FROM session WHERE parent_id IS NULL")]
    columns = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in ("session", "message", "part")}
    made = len(originals)
    while made < sessions:
        for original in originals:
            new = f"{original}_{made}"
            cols = columns["session"]
            conn.execute(
                f"INSERT INTO session ({','.join(cols)}) SELECT {','.join('?' if c == 'id' else c for c in cols)} "
                "FROM session WHERE id = ?",
                (new, original),
            )
            for table in ("message", "part"):
                cols = columns[table]
                picked = ",".join(
                    "id || ?"
                    if c == "id"
                    else ("message_id || ?" if c == "message_id" else ("?" if c == "session_id" else c))
                    for c in cols
                )
                args = [f"_{made}"] + ([f"_{made}"] if table == "part" else []) + [new, original]
                conn.execute(
                    f"INSERT INTO {table} ({','.join(cols)}) SELECT {picked} FROM {table} WHERE session_id = ?", args
                )
            made += 1
            if made >= sessions:
                break
    conn.commit()
    conn.close()
    return f"{originals[0]}_{len(originals)}"


def opencode_scale(sessions: int, table: Table, scratch: Path) -> None:
    database = scratch / "oc" / "opencode.db"
    database.parent.mkdir()
    shutil.copy(LIVE / "opencode-1.18.33" / "opencode.db", database)
    changed = _fill(database, sessions)
    home = scratch / "home-oc"
    for label in ("first index", "nothing changed", "one session changed"):
        if label == "one session changed":
            conn = sqlite3.connect(database)
            stamp = int(time.time() * 1000)
            data = json.dumps({"role": "user", "time": {"created": stamp}})
            conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", ("msg_bench", changed, stamp, stamp, data))
            part = json.dumps({"type": "text", "text": "one more question"})
            conn.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", ("prt_bench", "msg_bench", changed, stamp, stamp, part)
            )
            conn.commit()
            conn.close()
        config = load_config({"MEMEX_HOME": str(home), "MEMEX_INDEX_EMBEDS": "0"})
        conn = connect(config.db_path)
        started = time.perf_counter()
        report = index_transcripts(conn, config, discover({"opencode": [database]}))
        seconds = time.perf_counter() - started
        conn.close()
        table.add_row(label, str(report.files), str(report.files_changed), f"{seconds:.2f}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=50)
    parser.add_argument("--sessions", type=int, default=2000)
    args = parser.parse_args(argv)
    console = Console()
    with tempfile.TemporaryDirectory(prefix="memex-bench-agents-") as name:
        scratch = Path(name)
        speed = Table(title=f"ingest per agent (live fixtures ×{args.copies}, one process)")
        for column in ("agent", "files", "sessions", "MB", "seconds", "MB/s"):
            speed.add_column(column, justify="left" if column == "agent" else "right")
        throughput(args.copies, speed, scratch)
        console.print(speed)
        scale = Table(title=f"OpenCode database of {args.sessions:,} sessions: per-session change detection")
        for column in ("run", "sessions seen", "sessions read", "seconds"):
            scale.add_column(column, justify="left" if column == "run" else "right")
        opencode_scale(args.sessions, scale, scratch)
        console.print(scale)


if __name__ == "__main__":
    main(sys.argv[1:])
