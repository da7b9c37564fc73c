"""Mirrors: what a session's conversation-only text keeps and drops, and how it is stored."""

from __future__ import annotations

from pathlib import Path

from corpus import CODEX_ABORTED, GEMINI, GEMINI_JSONL, GEMINI_LEGACY, SLAY
from memex.config import Config
from memex.ingest.indexer import discover, index_transcripts
from memex.ingest.pipeline import ingest_transcript
from memex.mirrors import build as mirrors
from memex.mirrors.build import build_mirror, get_mirror, store_mirror
from memex.mirrors.model import Mirror
from memex.sources import claude, codex, gemini
from transcripts import ClaudeSession, simple_turn, text, thinking, tool_use

SID = "11111111-2222-3333-4444-555555555555"


def mirror_of(conn, session_id: str = SID) -> Mirror:
    mirror = get_mirror(conn, session_id)
    assert mirror is not None
    return mirror


def claude_session(tmp_path: Path) -> ClaudeSession:
    return ClaudeSession(tmp_path / f"{SID}.jsonl", SID)


def ingest(conn, config: Config, session: ClaudeSession):
    return ingest_transcript(conn, config, claude.classify(session.path))


def test_drops_thinking(conn, config: Config, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    session.write(session.prompt("why is the cache cold?"))
    session.write(session.assistant(thinking("secret chain of thought about eviction"), message_id="m1"))
    session.write(session.assistant(text("Because the TTL is 0."), message_id="m1"))
    ingest(conn, config, session)
    mirror = mirror_of(conn)
    assert mirror.conversation_text == "User: why is the cache cold?\n\nAssistant: Because the TTL is 0."
    assert "chain of thought" not in mirror.conversation_text


def test_drops_tool_calls_and_results(conn, config: Config, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    session.write(session.prompt("show me config.py"))
    session.write(session.assistant(text("Reading it."), tool_use("t1", "Read", file_path="/home/dev/shop/config.py")))
    session.write(session.tool_result("t1", "SECRET_TOOL_OUTPUT = 42"))
    session.write(session.assistant(text("It sets one constant.")))
    ingest(conn, config, session)
    mirror = mirror_of(conn)
    assert "SECRET_TOOL_OUTPUT" not in mirror.conversation_text and "/home/dev/shop" not in mirror.conversation_text
    # The output is indexed here, for `memex search --in tools`, and stays out of the mirror and its index.
    stored = conn.execute("SELECT tool_name, text FROM tool_outputs").fetchall()
    assert [tuple(r) for r in stored] == [("Read", "SECRET_TOOL_OUTPUT = 42")]
    assert (
        conn.execute("SELECT count(*) FROM mirrors_fts WHERE mirrors_fts MATCH 'SECRET_TOOL_OUTPUT'").fetchone()[0] == 0
    )
    # The assistant's lines between two prompts are one message.
    assert [(m["role"], m["text"]) for m in mirror.messages()] == [
        ("user", "show me config.py"),
        ("assistant", "Reading it.\n\nIt sets one constant."),
    ]


def test_drops_system_reminders_meta_and_empty_text(conn, config: Config, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    session.write(session.prompt("fix the login bug<system-reminder>the date is 2026-03-01</system-reminder>"))
    session.write(session.prompt("<local-command-stdout>build ok</local-command-stdout>"))  # harness output
    session.write(session.assistant(text("   ")))
    session.write(session.assistant(text("Fixed.")))
    ingest(conn, config, session)
    assert mirror_of(conn).conversation_text == "User: fix the login bug\n\nAssistant: Fixed."


def test_repeated_blocks_of_one_response_once(conn, config: Config, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    session.write(session.prompt("hello"))
    session.write(session.assistant(text("Hi there."), message_id="m1"))
    session.write(session.assistant(text("Hi there."), tool_use("t", "Bash", command="ls"), message_id="m1"))
    ingest(conn, config, session)
    assert mirror_of(conn).conversation_text == "User: hello\n\nAssistant: Hi there."


def test_compaction_summary_is_kept_and_subagents_are_not(conn, config: Config, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    sub = ClaudeSession(tmp_path / SID / "subagents" / "agent-s1.jsonl", SID, agent_id="s1")
    simple_turn(session, "add a cart", "cart added")
    session.write(session.compact_boundary(), session.compact_summary("We added a cart."))
    simple_turn(session, "now the checkout", "checkout done")
    simple_turn(sub, "explore the flamingo module", "flamingos found")
    for transcript in claude.discover([tmp_path]):
        ingest_transcript(conn, config, transcript)
    mirror = mirror_of(conn)
    assert [m["role"] for m in mirror.messages()] == ["user", "assistant", "summary", "user", "assistant"]
    assert "Compaction summary: This session is being continued" in mirror.conversation_text
    assert "flamingo" not in mirror.conversation_text


def test_session_metadata(conn, config: Config) -> None:
    ingest_transcript(conn, config, claude.classify(SLAY))
    mirror = mirror_of(conn, SLAY.stem)
    assert (mirror.agent, mirror.computer, mirror.project) == ("claude", "testbox", "/Users/chloe/c/slay")
    assert mirror.title == "Set up dotfiles configuration"
    assert mirror.timestamp_start == "2026-05-03T00:20:03.895Z" and mirror.timestamp_end >= mirror.timestamp_start
    for message in mirror.messages():  # the spans point at the text itself
        assert message["text"] and message["text"] == message["text"].strip()


def test_codex_mirror_counts_the_prompt_once_and_drops_reasoning(conn, config: Config) -> None:
    ingest_transcript(conn, config, codex.classify(CODEX_ABORTED))
    mirror = mirror_of(conn, "019a7ae6-1945-7c63-98f2-210adb922af9")
    roles = [m["role"] for m in mirror.messages()]
    assert roles.count("user") == 6 and roles.count("assistant") == 5
    assert (
        "# AGENTS.md instructions" not in mirror.conversation_text
        and "<environment_context>" not in mirror.conversation_text
    )
    assert "**Searching for note in repo**" not in mirror.conversation_text  # a reasoning summary


def test_gemini_mirror_drops_thoughts_notices_and_context(conn, config: Config) -> None:
    index_transcripts(conn, config, discover({"gemini": [GEMINI]}))
    legacy = mirror_of(conn, "abcd1234-7f3e-4c21-9b8a-5d6e0f1a2b3c")
    assert [m["role"] for m in legacy.messages()][:3] == ["user", "assistant", "user"]
    assert "429" not in legacy.conversation_text and "Automatically switching" not in legacy.conversation_text
    assert legacy.title == "Fix cart total rounding with Decimal and add a regression test"
    current = mirror_of(conn, "ef567890-3c4d-4e5f-8a9b-0c1d2e3f4a5b")
    assert "<session_context>" not in current.conversation_text and "cursor-based" not in current.conversation_text
    assert current.project == "/Users/bob/code/inventory-api"


def test_rerun_never_duplicates_and_skips_an_unchanged_mirror(conn, config: Config, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    simple_turn(session, "first question about walruses", "first answer")
    assert ingest(conn, config, session).mirror_written
    stamp = conn.execute("SELECT updated_at FROM mirrors").fetchone()[0]
    assert not mirrors.refresh_mirror(conn, SID)  # same content: nothing written
    session.write(session.progress())  # the file changes, the conversation does not
    report = ingest(conn, config, session)
    assert report.status == "appended" and not report.mirror_written
    assert conn.execute("SELECT updated_at FROM mirrors").fetchone()[0] == stamp
    simple_turn(session, "second question about narwhals", "second answer")
    assert ingest(conn, config, session).mirror_written
    assert conn.execute("SELECT count(*) FROM mirrors").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM mirrors_fts WHERE mirrors_fts MATCH 'narwhals'").fetchone()[0] == 1
    conn.execute("INSERT INTO mirrors_fts(mirrors_fts) VALUES ('integrity-check')")


def test_a_session_that_lost_its_conversation_loses_its_mirror(conn, config: Config, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    simple_turn(session, "about pelicans", "pelicans answered")
    ingest(conn, config, session)
    session.path.write_text("")
    assert ingest(conn, config, session).mirror_written
    assert conn.execute("SELECT count(*) FROM mirrors").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM mirrors_fts WHERE mirrors_fts MATCH 'pelicans'").fetchone()[0] == 0


def test_sessions_indexed_before_mirrors_get_one(conn, config: Config, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    simple_turn(session, "about herons", "herons answered")
    ingest(conn, config, session)
    conn.execute("DELETE FROM mirrors")  # as in a database made before the mirrors migration
    report = index_transcripts(conn, config, claude.discover([tmp_path]))
    assert report.files_changed == 0 and report.mirrors == 1
    assert mirror_of(conn).conversation_text.startswith("User: about herons")


def test_remote_mirrors_live_beside_local_ones(conn, config: Config, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    simple_turn(session, "about herons", "herons answered")
    ingest(conn, config, session)
    local = build_mirror(conn, SID)
    remote = Mirror(**{**local.as_dict(), "computer": "laptop", "conversation_text": "User: remote words"})
    assert store_mirror(conn, remote) and not store_mirror(conn, remote)
    assert conn.execute("SELECT count(*) FROM mirrors WHERE session_id = ?", (SID,)).fetchone()[0] == 2
    assert get_mirror(conn, SID, "testbox").computer == "testbox"
    assert get_mirror(conn, SID, "laptop").computer == "laptop"


def test_huge_messages_and_mirrors_are_cut(conn, config: Config, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(mirrors, "MAX_MIRROR_CHARS", 300_000)
    session = claude_session(tmp_path)
    session.write(session.prompt("paste: " + "log line\n" * 10_000))
    session.write(session.assistant(text("That log is long.")))
    for n in range(40):
        simple_turn(session, f"question {n} " + "words " * 2_000, f"answer {n}")
    ingest(conn, config, session)
    mirror = mirror_of(conn)
    messages = mirror.messages()
    assert len(messages[0]["text"]) <= mirrors.MAX_MESSAGE_CHARS + 30 and "cut by memex" in messages[0]["text"]
    assert len(mirror.conversation_text) <= 300_000 + 1_000
    assert messages[-1]["text"] == "answer 39" and any("messages cut by memex" in m["text"] for m in messages)


def test_gemini_rewind_reaches_the_mirror(conn, config: Config, tmp_path: Path) -> None:
    chats = tmp_path / "p" / "chats"
    chats.mkdir(parents=True)
    path = chats / GEMINI_JSONL.name
    lines = GEMINI_JSONL.read_bytes().splitlines(keepends=True)
    rewind = next(i for i, line in enumerate(lines) if b"$rewindTo" in line)
    path.write_bytes(b"".join(lines[:rewind]))
    ingest_transcript(conn, config, gemini.classify(path))
    assert "cursor-based" in mirror_of(conn, "ef567890-3c4d-4e5f-8a9b-0c1d2e3f4a5b").conversation_text
    path.write_bytes(b"".join(lines))
    ingest_transcript(conn, config, gemini.classify(path))
    assert "cursor-based" not in mirror_of(conn, "ef567890-3c4d-4e5f-8a9b-0c1d2e3f4a5b").conversation_text
    assert GEMINI_LEGACY.exists()
