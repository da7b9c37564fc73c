"""`memex forget`: what a forgotten session leaves behind (nothing), and what keeps it forgotten."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corpus import CODEX_SHORT, GEMINI, HILLVIEW, SLAY
from memex.archive.copies import archive_root
from memex.config import Config
from memex.store.db import connect

SLAY_ID = SLAY.stem


@pytest.fixture
def indexed(run, tmp_path: Path) -> Path:
    """The HillviewCap sessions, the slay session, a Codex rollout and the Gemini chats, indexed."""
    projects = tmp_path / "claude-projects"
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    (projects / "-Users-chloe-c-slay").mkdir()
    shutil.copy(SLAY, projects / "-Users-chloe-c-slay" / SLAY.name)
    codex = tmp_path / "codex-sessions" / "2025" / "11" / "13"
    codex.mkdir(parents=True)
    shutil.copy(CODEX_SHORT, codex / CODEX_SHORT.name)
    shutil.copytree(GEMINI, tmp_path / "gemini-tmp")
    assert run("index").exit_code == 0
    return projects


def _counts(config: Config, session_id: str) -> dict[str, int]:
    """What the store holds of a session, table by table."""
    conn = connect(config.db_path)
    turn_ids = "SELECT id FROM turns WHERE session_id = :s"
    chunk_ids = f"SELECT id FROM chunks WHERE turn_id IN ({turn_ids})"
    mirror_ids = "SELECT id FROM mirror_records WHERE session_id = :s"
    queries = {
        "sessions": "SELECT count(*) FROM sessions WHERE session_id = :s",
        "subagents": "SELECT count(*) FROM subagent_sessions WHERE session_id = :s",
        "entries": "SELECT count(*) FROM entries WHERE session_id = :s",
        "turns": f"SELECT count(*) FROM ({turn_ids})",
        "chunks": f"SELECT count(*) FROM ({chunk_ids})",
        "mentions": "SELECT count(*) FROM file_mentions WHERE session_id = :s",
        "mirrors": f"SELECT count(*) FROM ({mirror_ids})",
        "segments": f"SELECT count(*) FROM mirror_segments WHERE mirror_id IN ({mirror_ids})",
        "vectors": f"SELECT count(*) FROM vectors WHERE (level = 'turn' AND owner_id IN ({turn_ids})) "
        f"OR (level = 'chunk' AND owner_id IN ({chunk_ids})) OR (level = 'session' AND owner_id IN ({mirror_ids}))",
        "archive": "SELECT count(*) FROM archive_streams WHERE session_id = :s",
    }
    try:
        return {name: conn.execute(sql, {"s": session_id}).fetchone()[0] for name, sql in queries.items()}
    finally:
        conn.close()


@pytest.mark.model
def test_forget_removes_everything_and_reindexing_does_not_bring_it_back(run, config: Config, indexed: Path) -> None:
    assert run("embed").exit_code == 0
    before = _counts(config, SLAY_ID)
    assert all(before[k] for k in ("sessions", "turns", "chunks", "mirrors", "vectors", "archive")), before
    other = _counts(config, "155715ec-f4e9-47ea-859c-2e4cfcceab6f")
    assert any(hit["session_id"] == SLAY_ID for hit in json.loads(run("search", "slay", "--json").stdout))
    result = run("forget", SLAY_ID[:8], "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["sessions"] == 1 and report["forgotten"][0]["session_id"] == SLAY_ID
    assert report["archive_files"] == 1
    assert set(_counts(config, SLAY_ID).values()) == {0}
    assert not (archive_root(config) / "claude" / SLAY_ID).exists()
    assert _counts(config, "155715ec-f4e9-47ea-859c-2e4cfcceab6f") == other  # nothing else went
    # The transcript is still on disk: indexing again (incremental, or forced by a changed file) skips it.
    transcript = indexed / "-Users-chloe-c-slay" / SLAY.name
    with open(transcript, "ab") as handle:
        handle.write(b"\n")
    assert run("index").exit_code == 0
    assert set(_counts(config, SLAY_ID).values()) == {0}
    hits = json.loads(run("search", "slay", "--json").stdout)
    assert all(hit["session_id"] != SLAY_ID for hit in hits)
    shown = run("show", SLAY_ID[:8])
    assert shown.exit_code == 2 and "no session matches" in shown.stderr


def test_criteria_combine(run, config: Config, indexed: Path) -> None:
    listed = json.loads(run("sessions", "list", "--json", "--limit", "100").stdout)
    codex = [s["session_id"] for s in listed if s["agent"] == "codex"]
    result = run("forget", "--agent", "codex", "--yes", "--json")
    assert sorted(s["session_id"] for s in json.loads(result.stdout)["forgotten"]) == sorted(codex)
    cutoff = "2025-12-17T01:47"  # HillviewCap sessions started 01:40 and 01:45 on that day, the others later
    result = run("forget", "--project", "Personal_AI_Infrastructure", "--before", cutoff, "--yes", "--json")
    forgotten = json.loads(result.stdout)["forgotten"]
    assert {s["session_id"][:8] for s in forgotten} == {"e8c742ee", "5eac5945"}
    left = {s["session_id"][:8] for s in json.loads(run("sessions", "list", "--json", "--limit", "100").stdout)}
    assert "155715ec" in left and "e8c742ee" not in left and not any(s in left for s in (c[:8] for c in codex))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say what to forget"),
        (["--before", "yesterday-ish"], "yesterday-ish"),
        # Out of range it was read as no date at all: every session was forgotten.
        (["--before", "999999999999999999d", "--yes"], "before the year 1"),
        (["nosuchsession"], "no session matches"),
        ([SLAY_ID[:8]], "needs confirmation: add --yes"),  # not a terminal, no --yes
    ],
)
def test_mistakes_are_one_line_and_forget_nothing(run, config: Config, indexed: Path, args, message) -> None:
    before = _counts(config, SLAY_ID)
    result = run("forget", *args)
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert _counts(config, SLAY_ID) == before


def test_nothing_matching_is_said(run, indexed: Path) -> None:
    result = run("forget", "--before", "2000-01-01", "--yes")
    assert result.exit_code == 0 and "nothing forgotten" in result.stderr


def _on_terminal(home: Path, env_from: Config, args: list[str], answer: bytes) -> tuple[int, str]:
    """Run `memex forget` with a real terminal as its stdin and stderr, typing `answer`."""
    main, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMEX_")}
    env.update(MEMEX_HOME=str(home), MEMEX_COMPUTER=env_from.computer, MEMEX_REDIS_URL="", MEMEX_INDEX_EMBEDS="0")
    process = subprocess.Popen(
        [sys.executable, "-m", "memex", "forget", *args],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=secondary,
        env=env,
    )
    os.close(secondary)
    seen = b""
    while b"[y/N]" not in seen:
        chunk = os.read(main, 4096)
        assert chunk, seen
        seen += chunk
    os.write(main, answer)
    process.stdout.read()  # type: ignore[union-attr]
    code = process.wait(timeout=60)
    try:
        while chunk := os.read(main, 4096):
            seen += chunk
    except OSError:
        pass
    os.close(main)
    return code, seen.decode(errors="replace")


@pytest.mark.subprocess
def test_a_terminal_is_asked_first(run, config: Config, home: Path, indexed: Path) -> None:
    code, screen = _on_terminal(home, config, [SLAY_ID[:8]], b"n\n")
    assert code == 2 and SLAY_ID[:8] in screen and "nothing forgotten" in screen
    assert _counts(config, SLAY_ID)["sessions"] == 1
    code, screen = _on_terminal(home, config, [SLAY_ID[:8]], b"y\n")
    assert code == 0, screen
    assert _counts(config, SLAY_ID)["sessions"] == 0


def test_without_redis_forgetting_promises_no_telling(run, indexed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # redis_url = "" shares with no computer: "Not told to your other computers yet: …; the daemon tells them
    # when it can" followed every forget, and no daemon ever could.
    monkeypatch.setenv("MEMEX_REDIS_URL", "")
    result = run("forget", SLAY_ID[:8], "--yes")
    assert result.exit_code == 0 and "Forgot 1 session" in result.stdout
    assert "other computers" not in result.stderr + result.stdout
