"""Regenerate `schema.sql`, the snapshot of the schema the migrations produce."""

from __future__ import annotations

import tempfile
from pathlib import Path

from memex.store.db import connect, dump_schema

SNAPSHOT = Path(__file__).with_name("schema.sql")
HEADER = (
    "-- Snapshot of the schema the migrations produce (tests/store/test_db.py keeps it in step).\n"
    "-- Regenerate: uv run python -m memex.store.snapshot\n"
)


def current_schema() -> str:
    """The schema a fresh database gets from the migrations."""
    with tempfile.TemporaryDirectory() as folder:
        conn = connect(Path(folder) / "snapshot.db")
        try:
            return dump_schema(conn)
        finally:
            conn.close()


if __name__ == "__main__":
    SNAPSHOT.write_text(HEADER + current_schema(), encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
