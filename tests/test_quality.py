"""The code base stays ruff clean (lint rules in pyproject.toml), and its doors hold no SQL."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_clean() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    result = subprocess.run([ruff, "check", "src", "tests", "bench"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# The doors parse their input, call `Memex` and render: the SQL they need lives in `memex/store/`, as does the
# SQL of the daemon's machinery, of mirrors, of the embedding queue, of transcript progress and of what memex
# injects into an agent's context; find-related's derived tables are written through store/access_patterns.py.
# (Ranking queries, assembled from their algorithm's own SQL fragments, stay beside it: search/,
# mirrors/search.py, related/'s reads of mentions and centroids, embed/texts.py; sources/ read the agents'
# own databases.)
NO_SQL = [
    "src/memex/cli",
    "src/memex/hooks",
    "src/memex/sync",
    "src/memex/api.py",
    "src/memex/mcpserver",
    "src/memex/web",
    "src/memex/context",
    "src/memex/embed/worker.py",
    "src/memex/ingest/state.py",
    "src/memex/mirrors/build.py",
    "src/memex/mirrors/segments.py",
    "src/memex/doctor.py",
]
# A call on an SQLite connection (Redis pipelines have an `execute()` too).
SQL_CALL = re.compile(r"\bconn\w*\.execute\w*\(|\.execute(many|script)\(")


def test_sql_lives_in_the_store() -> None:
    files = [p for door in NO_SQL for p in ([ROOT / door] if door.endswith(".py") else (ROOT / door).rglob("*.py"))]
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if SQL_CALL.search(line)
    ]
    assert files and offenders == []
