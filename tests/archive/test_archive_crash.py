"""A process killed (SIGKILL) while it appends to an archive leaves a readable copy the next run completes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpus import MISC, SLAY
from memex.archive.copies import Stream, archive_root, keep_copy
from memex.archive.reader import ArchiveReader
from memex.config import Config
from memex.store.archive import archive_row
from memex.store.db import connect

pytestmark = [pytest.mark.subprocess]

_APPEND = """
import sys
from pathlib import Path
from memex.archive.copies import Stream, keep_copy
from memex.config import load_config
from memex.store.db import connect
config = load_config()
conn = connect(config.db_path)
print("ready", flush=True)
keep_copy(conn, config, Stream("claude", "s", "", Path(sys.argv[1])))
"""


@pytest.mark.parametrize("delay", [0.05, 0.3, 1.0])
def test_killed_mid_append(config: Config, tmp_path: Path, delay: float) -> None:
    block = (MISC / "large-conversation.jsonl").read_bytes()
    source = tmp_path / "s.jsonl"
    source.write_bytes(block)
    conn = connect(config.db_path)
    keep_copy(conn, config, Stream("claude", "s", "", source))
    copy = archive_root(config) / archive_row(conn, "s", "").archive_path  # type: ignore[union-attr]
    with open(source, "ab") as handle:  # the session grows by 30 MB: several pieces to compress
        for _ in range(22):
            handle.write(block)
    env = {**os.environ, "MEMEX_HOME": str(config.home)}
    process = subprocess.Popen([sys.executable, "-c", _APPEND, str(source)], stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None and process.stdout.readline().strip() == b"ready"
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    with ArchiveReader(copy) as reader:  # readable: a prefix of the transcript, whatever was cut
        kept = reader.read()
    assert source.read_bytes().startswith(kept) and len(kept) >= len(block)
    report = keep_copy(conn, config, Stream("claude", "s", "", source))
    assert report.raw_bytes == source.stat().st_size
    with ArchiveReader(copy) as reader:
        assert reader.read() == source.read_bytes()
    conn.close()


_KILLED_BEFORE_COPY = """
import os, signal, sys
import memex.archive.copies
from memex.cli.entry import main

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # the transcript's ingest has committed; its copy is next

memex.archive.copies.keep_copy = killed
sys.argv = ["memex", "index"]
main()
"""


def test_killed_between_indexing_and_copying_the_next_index_makes_the_copy(run, config: Config, tmp_path: Path) -> None:
    """The ingest commits before the copy is written: a kill between the two left the transcript indexed,
    so never read again, and never copied (doctor asked for a `memex index` that did nothing)."""
    transcript = tmp_path / "claude-projects" / "-home-dev-shop" / SLAY.name
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(SLAY.read_bytes())
    killed = subprocess.run([sys.executable, "-c", _KILLED_BEFORE_COPY], env=dict(os.environ), capture_output=True)
    assert killed.returncode == -signal.SIGKILL
    conn = connect(config.db_path)
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1
    assert archive_row(conn, SLAY.stem, "") is None
    assert "1 transcripts have no up-to-date copy yet" in run("doctor").stdout
    assert run("index").exit_code == 0
    row = archive_row(conn, SLAY.stem, "")
    assert row is not None and row.raw_bytes == SLAY.stat().st_size
    with ArchiveReader(archive_root(config) / row.archive_path) as reader:
        assert reader.read() == SLAY.read_bytes()
    assert "no up-to-date copy" not in run("doctor").stdout
    assert conn.execute("SELECT count(*) FROM archive_pending").fetchone()[0] == 0
    conn.close()
