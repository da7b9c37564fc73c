"""Re-indexing a folder where nothing (or one file) changed: an unchanged transcript costs one `stat`, no
path resolution, no open, no query of its own; what changed is still found and ingested."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memex.ingest.indexer import discover, index_transcripts
from memex.sources.files import candidates
from transcripts import retry_projects, simple_turn

FILES = 30


class Calls:
    """Counts calls of a few os functions while the block runs (the real functions still run); `open`
    counts the files opened, not the folders a walk lists."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
        self.counts = dict.fromkeys(names, 0)
        self.opened: list[str] = []
        real_stat = os.stat

        def is_folder(path: object) -> bool:
            try:
                return isinstance(path, (str, os.PathLike)) and stat.S_ISDIR(real_stat(path).st_mode)
            except OSError:
                return False

        for name in names:
            module, attribute = (os.path, name.split(".")[1]) if name.startswith("path.") else (os, name)
            real = getattr(module, attribute)

            def counted(*args, _real=real, _name=name, **kwargs):  # type: ignore[no-untyped-def]
                if _name == "open" and is_folder(args[0]):
                    return _real(*args, **kwargs)
                self.counts[_name] += 1
                if _name == "open":
                    self.opened.append(os.fspath(args[0]))
                return _real(*args, **kwargs)

            monkeypatch.setattr(module, attribute, counted)


def test_unchanged_files_cost_no_resolution_open_or_transaction(conn, config, tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "projects"
    sessions = retry_projects(root, FILES)
    first = index_transcripts(conn, config, discover({"claude": [root]}))
    assert (first.files, first.files_changed) == (FILES, FILES)

    simple_turn(sessions[7], "one more prompt about the retry loop", "raised the cap to five")
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    calls = Calls(monkeypatch, "path.realpath", "open", "stat")
    again = index_transcripts(conn, config, discover({"claude": [root]}))
    monkeypatch.undo()
    conn.set_trace_callback(None)

    assert (again.files, again.files_changed) == (FILES, 1) and again.turns >= 1
    assert len(again.sessions) == FILES
    # The root and the one changed file are resolved and opened (a few calls, two of them the archive's
    # append of the new bytes and its check); the 29 others are only stat'ed.
    assert calls.counts["path.realpath"] <= 4
    assert calls.counts["open"] <= 6
    assert calls.counts["stat"] <= FILES + 6  # one per file, a few for the root and the changed file
    # The changed file's and the mirrors' own; the reads of what the store holds (its snapshot) and of the
    # sessions to check for a mirror (the changed one), and the record of that check.
    assert sum(s.startswith("BEGIN") for s in statements) <= 5


def test_a_folder_reached_through_a_link_is_walked_by_its_real_path(conn, config, tmp_path: Path) -> None:
    real = tmp_path / "real-projects"
    retry_projects(real, FILES)
    link = tmp_path / "projects-link"
    link.symlink_to(real, target_is_directory=True)
    found = [path for path, _ in candidates([link], "*.jsonl")]
    assert len(found) == FILES and all(path.is_relative_to(real) for path in found)
    index_transcripts(conn, config, discover({"claude": [link]}))
    both = index_transcripts(conn, config, discover({"claude": [link, real]}))  # one file per session still
    assert (both.files, both.files_changed) == (FILES, 0)


def test_a_file_rewritten_at_the_same_size_and_time_is_the_only_blind_spot_as_before(
    conn, config, tmp_path: Path
) -> None:
    root = tmp_path / "projects"
    sessions = retry_projects(root, FILES)
    index_transcripts(conn, config, discover({"claude": [root]}))
    path = sessions[3].path
    stat = path.stat()
    path.write_text(path.read_text().replace("retry", "RETRY"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # same size, one nanosecond later
    again = index_transcripts(conn, config, discover({"claude": [root]}))
    assert again.files_changed == 1
