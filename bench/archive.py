"""The archive's size on the real transcripts of ../shared/data, copied whole and grown turn by turn.

    uv run python bench/archive.py               # every Claude Code, Codex and Gemini transcript there
    uv run python bench/archive.py --lines 4     # grow each transcript 4 lines at a time (default 8)

For each agent: the transcripts' bytes, the archive's bytes when each is copied at once (`whole`), and
when each is copied as an agent writes it (an append every `--lines` lines, the way a session grows turn
by turn: pieces appended, small ones merged now and then), with the time per append.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memex.archive.copies import Stream, archive_root, keep_copy
from memex.config import load_config
from memex.store.db import connect

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
AGENTS = {"claude": "*.jsonl", "codex": "*.jsonl", "gemini": "*.json*"}


def _transcripts(agent: str) -> list[Path]:
    folder = DATA / agent
    return sorted(p for p in folder.rglob(AGENTS[agent]) if p.is_file() and p.stat().st_size) if folder.is_dir() else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=8, help="lines per append when growing a transcript")
    args = parser.parse_args()
    table = Table(title=f"archive of ../shared/data (growing: an append every {args.lines} lines)")
    for column in ("agent", "files", "transcripts", "whole", "ratio", "grown", "ratio", "appends", "ms/append"):
        table.add_column(column, justify="right")
    totals = [0, 0, 0, 0, 0, 0.0]
    with tempfile.TemporaryDirectory() as folder:
        config = load_config({"MEMEX_HOME": str(Path(folder) / "home")})
        conn = connect(config.db_path)
        for agent in AGENTS:
            files = _transcripts(agent)
            raw = whole = grown = appends = 0
            seconds = 0.0
            for number, path in enumerate(files):
                data = path.read_bytes()
                raw += len(data)
                keep_copy(conn, config, Stream(agent, f"w{agent}{number}", "", path))
                growing = Path(folder) / "grow" / f"{agent}{number}{path.suffix}"
                growing.parent.mkdir(parents=True, exist_ok=True)
                growing.write_bytes(b"")
                lines = data.splitlines(keepends=True)
                stream = Stream(agent, f"g{agent}{number}", "", growing)
                for start in range(0, len(lines), args.lines):
                    with open(growing, "ab") as handle:
                        handle.write(b"".join(lines[start : start + args.lines]))
                    began = time.perf_counter()
                    keep_copy(conn, config, stream)
                    seconds += time.perf_counter() - began
                    appends += 1
            root = archive_root(config) / agent
            whole = sum(p.stat().st_size for p in root.glob("w*/*.zst"))
            grown = sum(p.stat().st_size for p in root.glob("g*/*.zst"))
            table.add_row(
                agent,
                str(len(files)),
                f"{raw / 1_048_576:.2f} MiB",
                f"{whole / 1_048_576:.2f} MiB",
                f"{raw / whole:.2f}" if whole else "—",
                f"{grown / 1_048_576:.2f} MiB",
                f"{raw / grown:.2f}" if grown else "—",
                str(appends),
                f"{1000 * seconds / appends:.1f}" if appends else "—",
            )
            for index, value in enumerate((len(files), raw, whole, grown, appends, seconds)):
                totals[index] += value
        conn.close()
    files, raw, whole, grown, appends, seconds = totals
    table.add_row(
        "all",
        str(int(files)),
        f"{raw / 1_048_576:.2f} MiB",
        f"{whole / 1_048_576:.2f} MiB",
        f"{raw / whole:.2f}",
        f"{grown / 1_048_576:.2f} MiB",
        f"{raw / grown:.2f}",
        str(int(appends)),
        f"{1000 * seconds / appends:.1f}",
    )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
