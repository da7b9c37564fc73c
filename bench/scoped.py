"""Tool output and role search: what indexing tool output costs, and how long the searches take.

    uv run python bench/scoped.py [--copies 10] [--repeat 30]

The real transcripts of ../shared/data (every agent) are indexed `--copies` times (each copy under its own
session ids: a store that many times larger), without vectors. The table gives the store's size, what the
tool outputs add (their stored text and full-text index) and how much of their text the bound keeps,
then the latency (in-process, warm, median of `--repeat`) of `memex search --in tools`, `--role user`,
`--role assistant` and a lexical conversation search for a few real queries.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from corpus import SHARED
from memex.api import Memex
from memex.config import load_config
from memex.store.queries import Filters

QUERIES = ["error failed", "permission denied", "tests pass", "settings.json hooks", "No such file or directory"]
AGENT_FOLDERS = ("claude", "codex", "live", "cursor", "aider")


def _copy(target: Path, copies: int) -> list[Path]:
    """`copies` copies of the shared transcripts; ids in file names and contents are made unique per copy."""
    roots = []
    for n in range(copies):
        root = target / f"copy{n}"
        for folder in AGENT_FOLDERS:
            shutil.copytree(SHARED / folder, root / folder, dirs_exist_ok=True)
        if n:
            for path in root.rglob("*.jsonl"):
                text = path.read_text(encoding="utf-8", errors="replace")
                path.write_text(text.replace('"sessionId":"', f'"sessionId":"c{n}-'), encoding="utf-8")
                path.rename(path.with_name(f"c{n}-{path.name}"))
        roots.extend(root / folder for folder in AGENT_FOLDERS)
    return roots


def _bytes(conn: sqlite3.Connection, prefix: str) -> int:
    return int(
        conn.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE ?", (prefix + "%",)).fetchone()[0]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as folder:
        os.environ.update(MEMEX_HOME=f"{folder}/home", MEMEX_INDEX_EMBEDS="0", MEMEX_ARCHIVE_ENABLED="0")
        roots = _copy(Path(folder) / "data", args.copies)
        config = load_config()
        with Memex(config) as memex:
            started = time.perf_counter()
            found = memex.discover(paths=roots)
            report = memex.index(found)
            seconds = time.perf_counter() - started
        conn = sqlite3.connect(config.db_path)
        outputs, stored, whole = conn.execute(
            "SELECT count(*), sum(length(text)), sum(chars) FROM tool_outputs"
        ).fetchone()
        size = Path(config.db_path).stat().st_size
        table = Table(title=f"store: ../shared/data × {args.copies}")
        table.add_column("measure")
        table.add_column("value", justify="right")
        table.add_row("sessions / turns", f"{len(report.sessions)} / {report.turns}")
        table.add_row("index time (no vectors)", f"{seconds:.1f} s")
        table.add_row("database", f"{size / 1_048_576:.1f} MiB")
        table.add_row("tool outputs", f"{outputs}")
        table.add_row("their text kept by the bound", f"{stored / max(whole, 1):.1%} of {whole / 1_048_576:.1f} MiB")
        table.add_row("tool_outputs table + its FTS", f"{(_bytes(conn, 'tool_outputs')) / 1_048_576:.1f} MiB")
        table.add_row("entries_fts (role search)", f"{_bytes(conn, 'entries_fts') / 1_048_576:.1f} MiB")
        table.add_row("chunks_fts (for comparison)", f"{_bytes(conn, 'chunks_fts') / 1_048_576:.1f} MiB")
        conn.close()
        console.print(table)
        latency = Table(title=f"search latency, warm, median of {args.repeat} (ms)")
        latency.add_column("query")
        kinds = {
            "--in tools": {"scope": "tools"},
            "--role user": {"role": "user"},
            "--role assistant": {"role": "assistant"},
            "lexical (conversation)": {"mode": "lexical"},
        }
        for name in kinds:
            latency.add_column(name, justify="right")
        with Memex(config, readonly=True) as memex:
            for query in QUERIES:
                cells = []
                for options in kinds.values():
                    memex.search(query, Filters(), **options)  # type: ignore[arg-type]
                    times = []
                    for _ in range(args.repeat):
                        start = time.perf_counter()
                        hits = memex.search(query, Filters(), **options)  # type: ignore[arg-type]
                        times.append((time.perf_counter() - start) * 1000)
                    cells.append(f"{statistics.median(times):.1f} ({len(hits.hits)})")
                latency.add_row(query, *cells)
        console.print(latency)
        console.print("(in parentheses: results returned, at most 10)")


if __name__ == "__main__":
    main()
