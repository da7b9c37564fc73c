"""`memex index` over the agents' default folders sieves the files the store holds at their size and time:
they are stat'ed once and never opened, resolved or classified; every other change is still found (a file
rewritten at the same size, a new file in a new folder, a new subagent, a deleted file, a folder reached
through a link, Codex rollouts as well as Claude transcripts)."""

from __future__ import annotations

import builtins
import io
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli import index_json
from corpus import CODEX
from memex.store.db import connect
from transcripts import ClaudeSession, retry_projects, simple_turn

FILES = 12


def _corpus(root: Path) -> list[ClaudeSession]:
    """FILES Claude sessions in three project folders; the first one has a subagent."""
    sessions = retry_projects(root, FILES)
    first = sessions[0]
    agent = ClaudeSession(first.path.with_suffix("") / "subagents" / "agent-a1.jsonl", first.session_id, agent_id="a1")
    simple_turn(agent, "look for the retry loop", "found it in client.py")
    agent.path.with_suffix(".meta.json").write_text('{"agentType": "Explore", "description": "find it"}')
    return sessions


class Opened:
    """Records the files (not folders) opened and the paths resolved while it is installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: list[str] = []
        self.resolved: list[str] = []
        real_open, real_io_open, real_stat, real_realpath = os.open, io.open, os.stat, os.path.realpath

        def is_file(path: object) -> bool:
            try:
                return isinstance(path, (str, os.PathLike)) and stat.S_ISREG(real_stat(path).st_mode)
            except OSError:
                return False

        def os_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
            if is_file(path):
                self.files.append(os.fspath(path))
            return real_open(path, *args, **kwargs)

        def io_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
            if is_file(path):
                self.files.append(os.fspath(path))
            return real_io_open(path, *args, **kwargs)

        def realpath(path, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.resolved.append(os.fspath(path))
            return real_realpath(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", os_open)
        monkeypatch.setattr(io, "open", io_open)
        monkeypatch.setattr(builtins, "open", io_open)
        monkeypatch.setattr(os.path, "realpath", realpath)

    def transcripts(self, root: Path) -> list[str]:
        return [path for path in self.files if path.startswith(str(root))]


@pytest.fixture
def claude_root(home: Path, tmp_path: Path) -> Path:
    return tmp_path / "claude-projects"  # the default folder the `home` fixture points memex to


def test_unchanged_transcripts_are_neither_opened_nor_resolved(run, claude_root: Path, monkeypatch) -> None:
    _corpus(claude_root)
    first = index_json(run, "--all")
    assert (first["files"], first["files_changed"], first["subagents"]) == (FILES + 1, FILES + 1, 1)

    opened = Opened(monkeypatch)
    again = index_json(run, "--all")
    monkeypatch.undo()
    assert (again["files"], again["files_changed"]) == (FILES + 1, 0)
    assert (again["sessions"], again["subagents"]) == (FILES, 1)  # counted from the store, not read
    assert opened.transcripts(claude_root) == []  # not a transcript, not a subagent's meta.json
    assert not [path for path in opened.resolved if path.startswith(str(claude_root)) and path != str(claude_root)]


def test_every_change_is_still_found(run, claude_root: Path, tmp_path: Path) -> None:
    sessions = _corpus(claude_root)
    index_json(run, "--all")

    same_size = sessions[3].path  # rewritten at the same size, one nanosecond later
    before = same_size.stat()
    same_size.write_text(same_size.read_text().replace("retry", "RETRY"))
    os.utime(same_size, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    simple_turn(sessions[5], "one more prompt", "one more answer")  # grew
    same_time = sessions[6].path  # grew, its time set back to what the store holds
    before = same_time.stat()
    simple_turn(sessions[6], "a prompt written within the same tick", "an answer too")
    os.utime(same_time, ns=(before.st_atime_ns, before.st_mtime_ns))
    fresh = ClaudeSession(claude_root / "-home-dev-new" / "99999999-1111-2222-3333-444444444444.jsonl", "99999999")
    simple_turn(fresh, "a prompt in a new project", "an answer there")  # a new file in a new folder
    subagent = ClaudeSession(
        sessions[7].path.with_suffix("") / "subagents" / "agent-b2.jsonl", sessions[7].session_id, agent_id="b2"
    )
    simple_turn(subagent, "a task for a new subagent", "done")  # a new subagent of an unchanged session
    gone = sessions[9].path
    gone.unlink()  # deleted by its agent (its archived copy stays)

    report = index_json(run, "--all")
    assert report["files"] == FILES + 1 - 1 + 2
    assert report["files_changed"] == 5 and report["turns"] >= 5
    assert report["subagents"] == 2
    conn = connect(Path(os.environ["MEMEX_HOME"]) / "memex.db")
    try:
        text = conn.execute("SELECT group_concat(full_text) FROM turns WHERE session_id = ?", (sessions[3].session_id,))
        assert "RETRY" in text.fetchone()[0]
        gone_at = conn.execute(
            "SELECT source_gone_at FROM archive_streams WHERE session_id = ? AND agent_id = ''",
            (sessions[9].session_id,),
        ).fetchone()[0]
        assert gone_at is not None  # noticed as gone; the session stays
        assert conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sessions[9].session_id,)).fetchone()
    finally:
        conn.close()
    assert index_json(run, "--all")["files_changed"] == 0


def test_a_default_folder_reached_through_a_link_is_sieved(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    real = tmp_path / "real-projects"
    _corpus(real)
    link = tmp_path / "linked-projects"
    link.symlink_to(real, target_is_directory=True)
    monkeypatch.setenv("MEMEX_CLAUDE_DIR", str(link))
    assert index_json(run, "--all")["files_changed"] == FILES + 1
    opened = Opened(monkeypatch)
    again = index_json(run, "--all")
    assert (again["files"], again["files_changed"]) == (FILES + 1, 0)
    assert opened.transcripts(real) == []


def test_unchanged_codex_rollouts_are_not_opened(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    sessions = tmp_path / "codex-sessions"  # the default folder the `home` fixture points memex to
    shutil.copytree(CODEX, sessions)
    first = index_json(run, "--all")
    assert first["files_changed"] >= 3
    opened = Opened(monkeypatch)
    again = index_json(run, "--all")
    assert (again["files"], again["files_changed"]) == (first["files"], 0)
    assert opened.transcripts(sessions) == []


@pytest.mark.subprocess
def test_an_unchanged_transcript_costs_one_stat_system_call(run, claude_root: Path) -> None:
    """Counted by strace in a new `memex index` process: per unchanged transcript one stat-family call
    naming it (relative to its folder), and no open, readlink or other stat."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    sessions = _corpus(claude_root)
    index_json(run, "--all")
    traced = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=%file,%desc", "-o", "/dev/stderr", sys.executable, "-c",
         "from memex.cli.entry import main; main()", "index", "--no-embed"],
        capture_output=True, text=True, env=os.environ,
    )  # fmt: skip
    if "PTRACE" in traced.stderr.upper() and traced.returncode != 0:
        pytest.skip("this system does not allow tracing")
    assert traced.returncode == 0, traced.stderr[-2000:]
    opened = [line for line in traced.stderr.splitlines() if "open" in line and str(claude_root) in line]
    assert all("O_DIRECTORY" in line for line in opened), opened  # folders listed, no file opened
    for session in sessions:
        name = session.path.name
        calls = [line for line in traced.stderr.splitlines() if name in line]
        kinds = [re.sub(r"^\[pid\s+\d+\]\s*|^\d+\s+", "", line).split("(", 1)[0] for line in calls]
        assert len(kinds) == 1 and "stat" in kinds[0], calls
