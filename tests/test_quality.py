"""The code base stays ruff clean (lint rules in pyproject.toml), and its doors hold no SQL."""

from __future__ import annotations

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


# The doors parse their input, call `Memex` and render: the SQL they need lives in `memex/store/`.
DOORS = ["src/memex/cli", "src/memex/hooks", "src/memex/sync/api.py", "src/memex/api.py"]


def test_doors_hold_no_sql() -> None:
    files = [p for door in DOORS for p in ([ROOT / door] if door.endswith(".py") else (ROOT / door).rglob("*.py"))]
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if ".execute(" in line
    ]
    assert files and offenders == []
