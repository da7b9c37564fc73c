"""Redaction benchmark: how fast secrets are found in real transcript text.

    uv run python bench/redact.py

Text: every Claude Code, Codex and Gemini transcript of the test fixtures and of ../shared/data, read
whole (raw JSONL, the hardest case: long lines without a space, base64 blobs), then the same text cut
into mirror-sized messages of 2,000 characters (what publishing a mirror redacts).
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memex.redact import secret_spans

ROOT = Path(__file__).resolve().parents[1]
SHARED = next(
    (p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()), ROOT.parent / "shared" / "data"
)


def main() -> None:
    files = sorted([*(ROOT / "tests" / "fixtures").rglob("*.json*"), *SHARED.rglob("*.json*")])
    texts = [f.read_text(errors="replace") for f in files]
    messages = [t[i : i + 2_000] for t in texts for i in range(0, len(t), 2_000)]
    table = Table(title=f"redaction over {len(files)} transcripts")
    for column in ("text", "MB", "seconds", "MB/s", "secrets found"):
        table.add_column(column, justify="right")
    for name, pieces in (("whole files", texts), ("2,000-character messages", messages)):
        size = sum(map(len, pieces)) / 1e6
        started = time.perf_counter()
        found = sum(len(secret_spans(p)) for p in pieces)
        seconds = time.perf_counter() - started
        table.add_row(name, f"{size:.1f}", f"{seconds:.2f}", f"{size / seconds:.1f}", str(found))
    Console().print(table)


if __name__ == "__main__":
    main()
