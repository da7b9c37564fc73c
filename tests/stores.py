"""Stores indexed once per test module and copied into each test's MEMEX_HOME: a test pays for a file copy,
not for an index run, and may still change its copy (forget, embed) without touching its neighbours'."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from memex import Memex
from memex.config import load_config


def index_once(root: Path, build: Callable[[Path], Sequence[Path]], *, embed: bool = False) -> Path:
    """Write transcripts with `build(root)` (it returns the files or folders to index), index them into a
    MEMEX_HOME under `root` (computer `testbox`; `embed`: with every vector computed) and return that home."""
    paths = build(root)
    home = root / "indexed-home"
    config = load_config({"MEMEX_HOME": str(home), "MEMEX_COMPUTER": "testbox", "MEMEX_INDEX_EMBEDS": "0"})
    with Memex.open(config) as memex:
        found = memex.discover(paths)
        report = memex.index(found)
        assert not report.failed and not found.refused, (report.failed, found.refused)
        if embed:
            memex.embed()
    return home


def copy_store(indexed_home: Path, home: Path) -> None:
    """Give `home` (a test's empty MEMEX_HOME) its own copy of the indexed store and archive."""
    shutil.copytree(indexed_home, home, dirs_exist_ok=True)
