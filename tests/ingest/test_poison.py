"""Poison inputs, each placed among good transcripts: `memex index` reports the file that cannot be indexed
(path and reason, exit status 1) or skips and counts the line that cannot be read, and indexes every
other file. Cases that could hang or exhaust memory when broken run `memex index` in a child process,
with a time limit and a memory limit."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from corpus import CODEX_SHORT, GEMINI_JSONL, MISC, SLAY
from memex.sources.jsonl import read_jsonl
from transcripts import ClaudeSession, text

pytestmark = [pytest.mark.subprocess]

TINY_SID = "67a8478e-78dc-44ab-82ea-f65c8ead85f6"  # the first line's sessionId of misc/tiny-conversation.jsonl
GOOD = {SLAY.stem, TINY_SID, "019a802a-aab1-7c31-9831-d2510c7a74a2", "ef567890-3c4d-4e5f-8a9b-0c1d2e3f4a5b"}
POISON_SID = "99999999-1111-2222-3333-444444444444"
# A broken reader must fail the test, not the machine.
CHILD_TIMEOUT_S = 120
CHILD_MEMORY_BYTES = 3 * 1024**3


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Good transcripts of the three agents in one folder, as `memex index PATH` is given it."""
    root = tmp_path / "corpus"
    claude = root / "claude" / "-p"
    claude.mkdir(parents=True)
    shutil.copy(SLAY, claude / SLAY.name)
    shutil.copy(MISC / "tiny-conversation.jsonl", claude / "tiny-conversation.jsonl")
    (root / "codex").mkdir()
    shutil.copy(CODEX_SHORT, root / "codex" / CODEX_SHORT.name)
    chats = root / "gemini" / "inventory-api" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(GEMINI_JSONL, chats / GEMINI_JSONL.name)
    return root


def sessions(home: Path) -> set[str]:
    conn = sqlite3.connect(home / "memex.db")
    try:
        return {row[0] for row in conn.execute("SELECT session_id FROM sessions")}
    finally:
        conn.close()


def index(run, *paths: Path) -> tuple[int, dict]:
    result = run("index", *map(str, paths), "--json")
    return result.exit_code, json.loads(result.stdout)


def failed_paths(summary: dict) -> dict[str, str]:
    return {item["path"]: item["reason"] for item in summary["failed"]}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))


def index_in_child(home: Path, *paths: Path, without_root_reads: bool = False) -> tuple[int, dict, str]:
    """`memex index PATHS --json` in a child process, bounded in time and memory; with `without_root_reads`
    it runs without the capability that lets root read any file (so file permissions apply)."""
    command = [sys.executable, "-c", "from memex.cli.main import main; main()", "index", *map(str, paths), "--json"]
    if without_root_reads and os.geteuid() == 0:
        drop = "-dac_override,-dac_read_search"
        command = ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}", *command]
    env = {**os.environ, "MEMEX_HOME": str(home), "MEMEX_INDEX_EMBEDS": "0", "MEMEX_INDEX_WORKERS": "1"}
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S, preexec_fn=_limit_memory
    )
    return done.returncode, json.loads(done.stdout), done.stderr


# --- lines that cannot be stored: skipped and counted, the file and the others indexed ----------------


@pytest.mark.parametrize("number", [18446744073709551615, "99999999999999999999", "²", -3, 0])
def test_a_pr_number_out_of_range_is_a_bad_line(run, home: Path, corpus: Path, number) -> None:
    session = ClaudeSession(corpus / "claude" / "-p" / f"{POISON_SID}.jsonl", POISON_SID)
    session.write(session.prompt("open a pull request for the cart fix"), session.assistant(text("Opened.")))
    session.write({**session.pr_link(7), "prNumber": number}, session.pr_link(8))
    code, summary = index(run, corpus)
    assert code == 0 and summary["bad_lines"] == 1 and summary["failed"] == []
    assert sessions(home) == GOOD | {POISON_SID}
    conn = sqlite3.connect(home / "memex.db")
    assert [row[0] for row in conn.execute("SELECT pr_number FROM pr_links")] == [8]


def test_a_codex_event_of_an_unhashable_type(run, home: Path, corpus: Path) -> None:
    rollout = corpus / "codex" / CODEX_SHORT.name
    with rollout.open("ab") as handle:
        handle.write(b'{"timestamp":"2025-11-14T03:00:00.000Z","type":"event_msg","payload":{"type":{}}}\n')
    code, summary = index(run, corpus)
    assert code == 0 and summary["failed"] == []
    assert sessions(home) == GOOD


def test_a_gemini_chat_whose_directories_is_not_a_list(run, home: Path, corpus: Path) -> None:
    chat = corpus / "gemini" / "inventory-api" / "chats" / GEMINI_JSONL.name
    with chat.open("ab") as handle:
        handle.write(b'{"$set":{"directories":true}}\n')
    code, summary = index(run, corpus)
    assert code == 0 and summary["failed"] == []
    assert sessions(home) == GOOD


def test_a_lone_surrogate_and_a_byte_order_mark_are_decoded(run, home: Path, corpus: Path) -> None:
    path = corpus / "claude" / "-p" / f"{POISON_SID}.jsonl"
    session = ClaudeSession(path, POISON_SID)
    # Node writes a string cut inside an emoji with its lone surrogate escaped: "\ud83d".
    lines = [session.prompt("the emoji was cut: \ud83d and the rest"), session.assistant(text("Fixed the \udc00 cut."))]
    encoded = [json.dumps(line).encode() for line in lines]
    assert b"\\ud83d" in encoded[0] and b"\\udc00" in encoded[1]
    path.write_bytes(b"\xef\xbb\xbf" + b"\n".join(encoded) + b"\n")  # and a byte-order mark first
    code, summary = index(run, corpus)
    assert code == 0 and summary["bad_lines"] == 0
    conn = sqlite3.connect(home / "memex.db")
    prompt, answer = conn.execute(
        "SELECT prompt_text, full_text FROM turns WHERE session_id = ?", (POISON_SID,)
    ).fetchone()
    assert prompt == "the emoji was cut: \ufffd and the rest" and "Fixed the \ufffd cut." in answer


def test_a_line_over_the_cap_is_skipped_and_counted(run, home: Path, corpus: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_MAX_LINE_BYTES", "65536")
    path = corpus / "claude" / "-p" / f"{POISON_SID}.jsonl"
    session = ClaudeSession(path, POISON_SID)
    session.write(session.prompt("before the long line"), session.assistant(text("ok")))
    session.write(session.prompt("x" * 300_000), session.assistant(text("a reply to the long line")))
    session.write(session.prompt("after the long line"), session.assistant(text("still here")))
    code, summary = index(run, corpus)
    assert code == 0 and summary["failed"] == []
    assert any(w.startswith(f"{path}:3: skipped (line of 300,") for w in summary["warnings"])
    conn = sqlite3.connect(home / "memex.db")
    assert conn.execute("SELECT bad_lines FROM sessions WHERE session_id = ?", (POISON_SID,)).fetchone()[0] == 1
    prompts = [r[0] for r in conn.execute("SELECT prompt_text FROM turns WHERE session_id = ?", (POISON_SID,))]
    assert prompts == ["before the long line", "after the long line"]
    assert sessions(home) == GOOD | {POISON_SID}


def test_a_long_line_is_streamed_past(tmp_path: Path) -> None:
    """The reader never asks for more than the cap at once, whatever the line's length."""
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"a":1}\n' + b'{"b":"' + b"y" * 1_000_000 + b'"}\n' + b'{"c":3}\n')
    lines = list(read_jsonl(path, max_line_bytes=65_536))
    assert [line.data for line in lines] == [{"a": 1}, None, {"c": 3}]
    assert "1,000,009 bytes is over max_line_bytes" in (lines[1].error or "")
    assert lines[2].start == lines[1].end == 8 + 1_000_009
    # Still being written: a long last line without its newline is left for the next run.
    with path.open("ab") as handle:
        handle.write(b'{"d":"' + b"z" * 100_000)
    assert [line.data for line in read_jsonl(path, max_line_bytes=65_536)][-1] == {"c": 3}


@pytest.mark.parametrize("cap", [65_536, 3 * 1024 * 1024])  # below and above the size read at a time
def test_the_cap_is_exact(tmp_path: Path, cap: int) -> None:
    path = tmp_path / "edge.jsonl"
    at_cap, over_cap = '{"a":"' + "x" * (cap - 8) + '"}', '{"b":"' + "y" * (cap - 7) + '"}'
    assert (len(at_cap), len(over_cap)) == (cap, cap + 1)
    path.write_text(f"{at_cap}\n{over_cap}\n{at_cap}")  # the last line complete, without its newline
    lines = list(read_jsonl(path, max_line_bytes=cap))
    assert [sorted(line.data) if line.data else line.error for line in lines] == [
        ["a"],
        f"line of {cap + 2:,} bytes is over max_line_bytes ({cap:,})",
        ["a"],
    ]
    assert [(line.start, line.end) for line in lines] == [
        (0, cap + 1),
        (cap + 1, 2 * cap + 3),
        (2 * cap + 3, 3 * cap + 3),
    ]


def test_the_line_cap_setting_is_checked(run, corpus: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_MAX_LINE_BYTES", "100")
    result = run("index", str(corpus))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "memex: error: MEMEX_MAX_LINE_BYTES: max_line_bytes must be at least 65536, got '100'"
    ]


# --- files that cannot be read: reported, exit status 1, the others indexed ----------------------------


def test_a_folder_named_like_a_transcript_is_searched_not_read(run, home: Path, corpus: Path) -> None:
    folder = corpus / "claude" / "-p" / "x.jsonl"
    folder.mkdir()
    code, summary = index(run, corpus)
    assert code == 0 and summary["failed"] == [] and sessions(home) == GOOD


def test_a_symlink_loop(run, home: Path, corpus: Path) -> None:
    folder = corpus / "claude" / "-p"
    (folder / "a.jsonl").symlink_to(folder / "b.jsonl")
    (folder / "b.jsonl").symlink_to(folder / "a.jsonl")
    code, summary = index(run, corpus)
    assert code == 1
    assert failed_paths(summary) == {
        str(folder / "a.jsonl"): "symbolic link loop",
        str(folder / "b.jsonl"): "symbolic link loop",
    }
    assert sessions(home) == GOOD


def test_a_broken_symlink_is_reported(run, home: Path, corpus: Path) -> None:
    link = corpus / "claude" / "-p" / f"{POISON_SID}.jsonl"
    link.symlink_to(corpus / "gone.jsonl")
    code, summary = index(run, corpus)
    assert code == 1 and failed_paths(summary) == {str(link): "broken symbolic link"}
    assert sessions(home) == GOOD


def test_an_unreadable_file(home: Path, corpus: Path) -> None:
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be made to apply")
    path = corpus / "claude" / "-p" / f"{POISON_SID}.jsonl"
    shutil.copy(SLAY, path)
    path.chmod(0)
    code, summary, stderr = index_in_child(home, corpus, without_root_reads=True)
    assert code == 1, stderr
    assert failed_paths(summary) == {str(path): "cannot be read: Permission denied"}
    assert sessions(home) == GOOD
    assert "1 file could not be indexed" in stderr and f"{path}: cannot be read: Permission denied" in stderr


def test_a_fifo_does_not_hang(home: Path, corpus: Path) -> None:
    fifo = corpus / "claude" / "-p" / f"{POISON_SID}.jsonl"
    os.mkfifo(fifo)
    code, summary, stderr = index_in_child(home, corpus)
    assert code == 1, stderr
    assert failed_paths(summary) == {str(fifo): "not a regular file (a FIFO)"}
    assert sessions(home) == GOOD


def test_a_symlink_to_dev_zero_is_not_read(home: Path, corpus: Path) -> None:
    link = corpus / "claude" / "-p" / "zero.jsonl"
    link.symlink_to("/dev/zero")
    code, summary, stderr = index_in_child(home, corpus)
    assert code == 1, stderr
    assert failed_paths(summary) == {str(link): "not a regular file (a character device)"}
    assert sessions(home) == GOOD


def test_a_fifo_given_by_hand(home: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    code, summary, _ = index_in_child(home, fifo, SLAY)
    assert code == 1 and failed_paths(summary) == {str(fifo): "not a regular file (a FIFO)"}
    assert sessions(home) == {SLAY.stem}


def test_a_gemini_chat_document_over_the_cap_fails_alone(run, home: Path, corpus: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_MAX_LINE_BYTES", "65536")
    chat = corpus / "gemini" / "inventory-api" / "chats" / "session-2026-03-03T10-00-aaaa0000.json"
    message = {"id": "m1", "timestamp": "2026-03-03T10:00:01Z", "type": "user", "content": "q" * 100_000}
    chat.write_text(json.dumps({"sessionId": "big", "projectHash": "0" * 64, "messages": [message]}))
    code, summary = index(run, corpus)
    assert code == 1
    size = chat.stat().st_size
    assert failed_paths(summary) == {
        str(chat): f"ChatTooLarge: a chat document of {size:,} bytes is over max_line_bytes (65,536)"
    }
    assert sessions(home) == GOOD


# --- files that are no transcript --------------------------------------------------------------------


def test_a_file_that_is_no_transcript_is_refused(run, home: Path, tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n")
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"todo": "buy milk"}\n')
    result = run("index", str(hosts), str(notes), str(SLAY), "--json")
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    reason = "not a transcript of claude or codex or gemini"
    assert summary["refused"] == [{"path": str(hosts), "reason": reason}, {"path": str(notes), "reason": reason}]
    assert sessions(home) == {SLAY.stem}
    assert f"warning: {hosts}: {reason}; not indexed" in result.stderr


@pytest.mark.skipif(not Path("/etc/hosts").is_file(), reason="no /etc/hosts here")
def test_etc_hosts_creates_no_session(run, home: Path) -> None:
    result = run("index", "/etc/hosts")
    assert result.exit_code == 1 and "/etc/hosts: not a transcript" in result.stderr
    assert sessions(home) == set()


def test_the_human_summary_names_the_failed_files(run, home: Path, corpus: Path) -> None:
    folder = corpus / "claude" / "-p"
    (folder / "a.jsonl").symlink_to(folder / "a.jsonl")
    result = run("index", str(corpus))
    assert result.exit_code == 1
    assert "failed files" in result.stdout
    assert f"1 file could not be indexed:\n  {folder / 'a.jsonl'}: symbolic link loop" in result.stderr
    assert sessions(home) == GOOD


def test_a_locked_store_is_one_line(run, home: Path, corpus: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_BUSY_TIMEOUT_MS", "50")
    run("index", str(SLAY))  # the store exists
    holder = sqlite3.connect(home / "memex.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds it
    try:
        result = run("index", str(corpus))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith(f"memex: error: cannot write to {home / 'memex.db'}: ")
    assert "database is locked" in result.stderr
