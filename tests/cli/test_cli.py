"""The memex CLI end to end, in-process against a real temporary store."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from corpus import CODEX, GEMINI, LIVE_CODEX, MISC, SLAY, USAGE_ONLY
from mirrortools import store_received_mirror
from transcripts import ClaudeSession, simple_turn, text, tool_use

SID = "aaaaaaaa-1111-2222-3333-444444444444"
SID2 = "aaaabbbb-1111-2222-3333-444444444444"


@pytest.fixture
def corpus(tmp_path: Path, projects: Path) -> Path:
    """Real sessions plus generated ones (Chinese prompt, code identifiers, a PR, a subagent)."""
    root = projects
    shutil.copy(SLAY, root / SLAY.name)
    shop = root / "-home-dev-shop"
    session = ClaudeSession(shop / f"{SID}.jsonl", SID, cwd="/home/dev/shop")
    session.write(session.prompt("the parse_config_file helper crashes on src/memex/config_loader.py"))
    session.write(
        session.assistant(
            text("Fixed parse_config_file: it now handles empty files."),
            tool_use(
                "t1", "Edit", file_path="/home/dev/shop/src/memex/config_loader.py", old_string="a", new_string="b"
            ),
        )
    )
    session.write(session.prompt("怎么删除一个 git worktree？我想清理掉旧的工作树"))
    session.write(session.assistant(text("用 git worktree remove <path> 删除。")))
    session.write(session.pr_link(321))
    # A real transcript used as this session's subagent.
    sub = shop / SID / "subagents" / "agent-a77.jsonl"
    sub.parent.mkdir(parents=True)
    shutil.copy(MISC / "representative_messages.jsonl", sub)
    other = ClaudeSession(shop / f"{SID2}.jsonl", SID2, cwd="/home/dev/shop")
    simple_turn(other, "unrelated question about caching", "use functools.cache")
    return root


def as_json(result) -> object:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_index_summary(run, corpus: Path) -> None:
    summary = as_json(run("index", str(corpus), "--json"))
    assert summary["files"] == 20 and summary["subagents"] == 9 and summary["sessions"] == 11
    assert summary["bad_lines"] == 0 and summary["turns"] > 0
    again = as_json(run("index", str(corpus), "--json"))
    assert again["files_changed"] == 0 and again["turns"] == 0


def test_index_summary_counts_the_turns_it_stored(run, projects: Path) -> None:
    # Real files: eight Claude Code 2.0 "Warmup" sidechains (not stored) and assistant records holding only
    # token usage (no turn to store). The summary says what the store received.
    usage_only = projects / "-home-dev-usage" / "chat.jsonl"
    usage_only.parent.mkdir()
    shutil.copy(USAGE_ONLY, usage_only)
    summary = as_json(run("index", str(projects), "--json"))
    stats = as_json(run("stats", "--json"))
    assert summary["turns"] == stats["turns"] == 4
    shown = as_json(run("show", "session-alpha", "--turns", "--json"))
    assert shown["turns"] == []


def test_index_prints_a_table(run, corpus: Path) -> None:
    result = run("index", str(corpus))
    assert result.exit_code == 0
    assert "subagents" in result.stdout and "bad lines skipped" in result.stdout


def test_index_default_folder_from_config(run, corpus: Path, home: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_CLAUDE_DIR", str(corpus))
    assert as_json(run("index", "--json"))["sessions"] == 11


def test_sessions_list(run, corpus: Path) -> None:
    run("index", str(corpus))
    sessions = as_json(run("sessions", "list", "--json", "--limit", "50"))
    starts = [s["started_at"] for s in sessions if s["started_at"]]
    assert starts == sorted(starts, reverse=True)
    assert sessions[0]["session_id"] == SLAY.stem  # 2026-05, the newest
    shop = as_json(run("sessions", "list", "--json", "--project", "shop"))
    assert {s["session_id"] for s in shop} == {SID, SID2}
    by_path = as_json(run("sessions", "list", "--json", "--project", "/home/dev/shop"))
    assert {s["session_id"] for s in by_path} == {SID, SID2}
    with_pr = as_json(run("sessions", "list", "--json", "--pr", "321"))
    assert [s["session_id"] for s in with_pr] == [SID] and with_pr[0]["prs"] == [321]
    assert with_pr[0]["subagents"] == 1
    recent = as_json(run("sessions", "list", "--json", "--since", "2026-01-01"))
    assert SLAY.stem in {s["session_id"] for s in recent}
    assert all(s["started_at"] >= "2026-01-01" for s in recent)
    assert len(as_json(run("sessions", "list", "--json", "--limit", "2"))) == 2
    # A folder and below: the root folder holds every project (it matched none), a trailing slash is the folder.
    everything = {s["session_id"] for s in sessions if s["project_dir"]}
    assert {s["session_id"] for s in as_json(run("sessions", "list", "--json", "--limit", "50", "--project", "/"))} == (
        everything
    )
    by_slash = as_json(run("sessions", "list", "--json", "--project", "/home/dev/shop/"))
    assert {s["session_id"] for s in by_slash} == {SID, SID2}
    table = run("sessions", "list")
    assert "aaaaaaaa" in table.stdout and "PR #321" in table.stdout


def test_show_turns_by_prefix_marks_subagents(run, corpus: Path) -> None:
    run("index", str(corpus))
    result = run("show", "aaaaaaaa", "--turns")
    assert result.exit_code == 0
    assert "[Subagent: a77]" in result.stdout
    assert "parse_config_file" in result.stdout and "Python decorators" in result.stdout
    assert "Tools: Edit ×1" in result.stdout
    data = as_json(run("show", "aaaaaaaa", "--turns", "--json"))
    assert data["session"]["session_id"] == SID
    assert {t["agent_id"] for t in data["turns"]} == {"", "a77"}


def test_show_renders_the_conversation_by_default(run, corpus: Path) -> None:
    run("index", str(corpus))
    result = run("show", "aaaaaaaa")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "the parse_config_file helper crashes on src/memex/config_loader.py"
    assert "1 subagent (--turns shows them)" in lines[1] and "PR #321" in lines[1]
    speakers = [line.split(" · ")[0] for line in lines if line.startswith(("User ·", "Assistant ·"))]
    assert speakers == ["User", "Assistant", "User", "Assistant"]
    assert "Fixed parse_config_file: it now handles empty files." in result.stdout
    assert "Tools:" not in result.stdout and "Python decorators" not in result.stdout  # no tools, no subagents
    data = as_json(run("show", "aaaaaaaa", "--json"))
    assert data["session"]["session_id"] == SID and data["mirror"]["computer"] == "testbox"
    assert [m["role"] for m in data["mirror"]["messages"]] == ["user", "assistant", "user", "assistant"]
    assert data["mirror"]["messages"][2]["text"] == "怎么删除一个 git worktree？我想清理掉旧的工作树"
    assert data["mirror"]["metadata"]["prs"] == [321]


def test_show_errors_are_one_line(run, corpus: Path) -> None:
    run("index", str(corpus))
    ambiguous = run("show", "aaaa")
    assert ambiguous.exit_code == 2
    assert ambiguous.stderr.strip().count("\n") == 0 and "several sessions" in ambiguous.stderr
    unknown = run("show", "zzzz")
    assert unknown.exit_code == 2 and "no session matches" in unknown.stderr


def test_show_raw_prints_the_transcript(run, corpus: Path) -> None:
    run("index", str(corpus))
    result = run("show", SLAY.stem, "--raw")
    assert result.exit_code == 0 and result.stdout_bytes == SLAY.read_bytes()
    for other in ("--json", "--turns"):  # the file has no other shape: said, not silently ignored
        refused = run("show", SLAY.stem, "--raw", other)
        assert refused.exit_code == 2 and refused.stdout == "" and other in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1


def test_search_code_identifiers_and_paths(run, corpus: Path) -> None:
    run("index", str(corpus))
    hits = as_json(run("search", "parse_config_file", "--json"))
    assert hits[0]["session_id"] == SID
    assert "handles empty files" in hits[0]["full_text"]  # the full turn text, not just the chunk
    paths = as_json(run("search", "src/memex/config_loader.py", "--json"))
    assert paths and paths[0]["session_id"] == SID
    # `config` alone is a word of the identifier, not a match for a different one.
    assert not as_json(run("search", "parse_config_files", "--json"))


def test_search_results_mark_the_matched_words(run, corpus: Path) -> None:
    run("index", str(corpus))
    first = as_json(run("search", "parse_config_file", "--json"))[0]
    assert first["spans"] and all(
        first["matched_chunk"][start:end].lower() == "parse_config_file" for start, end in first["spans"]
    )
    assert "parse_config_file" in run("search", "parse_config_file").stdout


def test_search_chinese(run, corpus: Path) -> None:
    run("index", str(corpus))
    for query in ("工作树", "删除", "清理 worktree"):
        hits = as_json(run("search", query, "--json"))
        assert hits and "工作树" in hits[0]["full_text"], query


def test_search_filters(run, corpus: Path) -> None:
    run("index", str(corpus))
    by_file = as_json(run("search", "parse_config_file", "--file", "src/memex/config_loader.py", "--json"))
    assert [h["session_id"] for h in by_file] == [SID]
    assert not as_json(run("search", "parse_config_file", "--file", "other.py", "--json"))
    assert not as_json(run("search", "parse_config_file", "--project", "slay", "--json"))
    assert as_json(run("search", "decorators", "--session", "aaaaaaaa", "--json"))[0]["agent_id"] == "a77"
    assert not as_json(run("search", "decorators", "--until", "2020-01-01", "--json"))
    assert as_json(run("search", "caching", "--limit", "1", "--json"))[0]["session_id"] == SID2


def test_search_file_by_absolute_or_relative_path(run, corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run("index", str(corpus))
    # Stored relative to the project (/home/dev/shop): found by its absolute path from anywhere…
    for project, expected in (("/home/dev/shop", [SID]), ("/home/dev/blog", [])):
        hits = as_json(run("search", "parse_config_file", "--file", f"{project}/src/memex/config_loader.py", "--json"))
        assert [h["session_id"] for h in hits] == expected
    # …by a path relative to the current folder inside the project, and by its tail.
    monkeypatch.chdir(corpus)
    assert as_json(run("search", "parse_config_file", "--file", "memex/config_loader.py", "--json"))
    assert as_json(run("search", "parse_config_file", "--file", "config_loader.py", "--json"))


def test_search_terminal_output(run, corpus: Path) -> None:
    run("index", str(corpus))
    result = run("search", "decorators")
    assert result.exit_code == 0 and "[Subagent: a77]" in result.stdout


def test_stats(run, corpus: Path) -> None:
    run("index", str(corpus))
    stats = as_json(run("stats", "--json"))
    assert stats["sessions"] == 11 and stats["subagent_sessions"] == 9
    assert stats["chunks"] >= stats["turns"] > 0 and stats["pr_links"] == 1 and stats["database_bytes"] > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (("search", "x", "--since", "someday"), "cannot read 'someday' as a date"),
        (("search", "x", "--since", "99999999999w"), "before the year 1"),
        (("sessions", "list", "--limit", "0"), "Invalid value"),
        (("index", "/definitely/not/here"), "does not exist"),
        (("search", "   "), "query is empty"),
        (("search", "x", "--pr", "abc"), "is not a valid integer"),
        # Past SQLite's integers these were an OverflowError's traceback.
        (("search", "x", "--pr", "99999999999999999999"), "Invalid value for '--pr'"),
        (("search", "x", "--limit", "99999999999999999999"), "Invalid value for '--limit'"),
        (("sessions", "list", "--limit", "99999999999999999999"), "Invalid value for '--limit'"),
        (("hooks", "status", "--runs", "99999999999999999999"), "Invalid value for '--runs'"),
        (("sessions", "list", "--agent", "hologram"), "Invalid value for '--agent'"),
        (("show",), "Missing argument 'SESSION'"),
        (("show", "zzzz"), "no session matches 'zzzz'"),
        (("search", "decorators", "--session", "zzzz"), "no session matches 'zzzz'"),
        (("search", "decorators", "--session", "aaaa"), "matches several sessions"),
        (("sessions", "lst"), "No such command 'lst'"),
        (("--bogus",), "No such option '--bogus'"),
    ],
)
def test_user_errors_exit_non_zero_with_one_line(run, corpus: Path, args, message) -> None:
    run("index", str(corpus))
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.startswith("memex: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""


def test_index_over_an_old_schema_rebuilds_from_the_transcripts(run, corpus: Path, home: Path) -> None:
    home.mkdir(parents=True)
    old = sqlite3.connect(home / "memex.db")
    old.execute("CREATE TABLE conversations (id TEXT, body TEXT)")  # a layout from before migrations
    old.commit()
    old.close()
    result = run("index", str(corpus), "--json")
    assert result.exit_code == 0 and "incompatible schema" in result.stderr and "memex.db.bak" in result.stderr
    assert json.loads(result.stdout)["sessions"] == 11
    assert as_json(run("stats", "--json"))["sessions"] == 11


def test_reading_before_indexing(run) -> None:
    result = run("search", "anything")
    assert result.exit_code == 2 and "run `memex index` first" in result.stderr


@pytest.fixture
def agents_home(tmp_path: Path, home: Path) -> Path:
    """The three agents' default folders (as the `home` fixture points them), holding real transcripts."""
    shutil.copytree(CODEX, tmp_path / "codex-sessions")
    shutil.copytree(GEMINI, tmp_path / "gemini-tmp")
    claude_dir = tmp_path / "claude-projects" / "-Users-chloe-c-slay"
    claude_dir.mkdir(parents=True)
    shutil.copy(SLAY, claude_dir / SLAY.name)
    return tmp_path


def test_index_every_agents_default_folder(run, agents_home: Path) -> None:
    summary = as_json(run("index", "--json"))
    assert summary["sessions"] == 6 and summary["subagents"] == 1 and summary["mirrors"] == 6
    stats = as_json(run("stats", "--json"))
    assert stats["sessions_by_agent"] == {"claude": 1, "codex": 3, "gemini": 2} and stats["mirrors"] == 6


def test_agent_option_everywhere(run, agents_home: Path) -> None:
    assert as_json(run("index", "--agent", "codex", "--json"))["sessions"] == 3
    assert {s["agent"] for s in as_json(run("sessions", "list", "--json"))} == {"codex"}
    run("index")
    gemini_sessions = as_json(run("sessions", "list", "--agent", "gemini", "--json"))
    assert {s["session_id"][:8] for s in gemini_sessions} == {"ef567890", "abcd1234"}
    hits = as_json(run("search", "pagination", "--agent", "gemini", "--json"))
    assert hits and {h["agent"] for h in hits} == {"gemini"}
    assert not as_json(run("search", "pagination", "--agent", "codex", "--json"))
    shown = as_json(run("show", "ef56", "--agent", "gemini", "--json"))
    assert shown["session"]["agent"] == "gemini"
    wrong = run("show", "ef56", "--agent", "codex")
    assert wrong.exit_code == 2 and "no codex session matches 'ef56'" in wrong.stderr
    bad = run("sessions", "list", "--agent", "hologram")
    assert bad.exit_code == 2 and "Invalid value" in bad.stderr


def test_warmup_subagents_are_not_announced(run, projects: Path) -> None:
    """Claude Code 2.0 primed two subagents with "Warmup" at the start of every session; their turns are not
    kept. Counted, every such session listed "+2 subagents", and `show` of one whose transcript holds only
    summaries sent the user to `--turns` ("2 subagents (--turns shows them)"), which showed nothing."""
    run("index", str(projects))
    listed = run("sessions", "list", "--agent", "claude", "--no-pager").stdout
    assert "subagents" not in listed
    assert all(s["subagents"] == 0 for s in as_json(run("sessions", "list", "--json")))
    summaries_only = "d3d4e0f8-bcb2-4597-8d7e-3fbcb2d9402b"
    shown = run("show", summaries_only, "--no-pager").stdout
    assert "--turns" not in shown and "(no conversation and no turns)" in shown
    assert as_json(run("show", summaries_only, "--json"))["session"]["subagents"] == []
    told = run("export", summaries_only).stderr
    assert "no conversation to export" in told and "tool work" not in told
    worked = as_json(run("show", "155715ec", "--json"))["session"]
    assert worked["turns"] == 3 and worked["subagents"] == []


def test_a_subagents_id_given_as_a_session_says_whose_it_is(run) -> None:
    """Search results label a subagent's turns with its id (`[Subagent: 01a209d0-fa7c-…]`), and Codex
    writes a spawned agent's rollout as a thread of its own: given to `show`, `search --session` or
    `find-related`, that id matched no session, said without a word of where it is."""
    run("index", str(LIVE_CODEX))
    child, parent = "01a209d0-fa7c-7962-b6c3-548f6f302da0", "01a209d0-f96a-7271-b275-d9f0c96d0cf5"
    hits = as_json(run("search", "SUBAGENT-TASK list the files", "--json"))
    assert hits[0]["agent_id"] == child and hits[0]["session_id"] == parent
    for args in (("show", child[:13]), ("search", "files", "--session", child), ("find-related", "sessions", child)):
        told = run(*args)
        assert told.exit_code == 2 and "Traceback" not in told.output, args
        said = f"no session matches {args[-1]!r}: it is subagent {child} of session {parent}, shown with its turns"
        assert said in told.stderr, args
    assert run("show", "01a209d0-zzzz").stderr.strip() == "memex: error: no session matches '01a209d0-zzzz'"


def test_show_a_codex_and_a_gemini_conversation(run, agents_home: Path) -> None:
    run("index")
    codex = run("show", "019a7ae6")
    assert codex.exit_code == 0 and codex.stdout.count("\nUser · ") == 6
    assert "<environment_context>" not in codex.stdout and "Searching for note in repo" not in codex.stdout
    gemini = run("show", "ef567890")
    assert "Add validated page/limit pagination to GET /items" in gemini.stdout.splitlines()[0]
    assert "顺便给分页参数加上校验" in gemini.stdout and "cursor-based" not in gemini.stdout
    turns = run("show", "ef567890", "--turns")
    assert "[Subagent: k3x9q2]" in turns.stdout and "Tools: replace ×1" in turns.stdout


def test_search_merges_mirror_hits_per_session(run, conn, agents_home: Path) -> None:
    run("index")
    hits = as_json(run("search", "Decimal", "--json"))
    assert all({"source", "computer", "session_id", "full_text", "matched_chunk"} <= set(h) for h in hits)
    # Turns of the session matched: its mirror hit only strengthens them, it is not a second result.
    assert [h["source"] for h in hits if h["session_id"].startswith("abcd1234")] == ["turn"] * len(hits)
    # Words spread over the first and last turns: the session's conversation holds both; it adds its weight
    # to the session's turns (found by any word) and is not listed again.
    spread = as_json(run("search", "cent", "3e9a1f2", "--json"))
    assert {(h["session_id"][:8], h["source"]) for h in spread} == {("abcd1234", "turn")}


def test_a_session_known_only_by_its_mirror_is_found(run, conn, agents_home: Path) -> None:
    run("index")
    store_received_mirror(
        conn,
        "remote-0001",
        "laptop",
        "/home/ana/kitchen",
        "Tune the sourdough proofing timer",
        "the proofing timer fires too early",
        "Raised PROOF_MINUTES to 90.",
    )
    (hit,) = as_json(run("search", "proofing timer", "--json"))
    assert (hit["source"], hit["computer"], hit["session_id"]) == ("mirror", "laptop", "remote-0001")
    assert "proofing timer" in hit["matched_chunk"] and hit["full_text"].startswith("User: the proofing")
    (prefix,) = as_json(run("search", "proofi*", "--json"))  # a prefix, as in turns
    assert prefix["session_id"] == "remote-0001"
    assert [prefix["matched_chunk"][s:e] for s, e in prefix["spans"]] == ["proofing"]
    assert as_json(run("search", "proofing", "--project", "kitchen", "--json"))
    assert not as_json(run("search", "proofing", "--agent", "claude", "--json"))
    assert not as_json(run("search", "proofing", "--file", "timer.py", "--json"))  # mirrors record no files
    terminal = run("search", "proofing")
    assert "[conversation from laptop]" in terminal.stdout
    shown = run("show", "remote-0001")
    assert shown.exit_code == 0 and "on laptop" in shown.stdout and "Raised PROOF_MINUTES to 90." in shown.stdout
    assert [m["text"] for m in as_json(run("show", "remote", "--json"))["mirror"]["messages"]] == [
        "the proofing timer fires too early",
        "Raised PROOF_MINUTES to 90.",
    ]
    turns = run("show", "remote-0001", "--turns")
    assert turns.exit_code == 2 and "ran on laptop" in turns.stderr


def test_a_time_copied_from_the_json_output_is_a_date(run, tmp_path: Path) -> None:
    """`--json` prints times as ISO 8601 UTC with a `Z` (`2026-11-23T19:09:43.217Z`); given back to
    `--since`, `--until` or `forget --before`, such a time was refused ("cannot read … as a date"): the
    value was lowercased before it was read, and Python reads no `z`."""
    run("index", str(LIVE_CODEX))
    listed = as_json(run("sessions", "list", "--json"))
    assert isinstance(listed, list) and len(listed) == 3
    started = sorted(row["started_at"] for row in listed)
    assert all(moment.endswith("Z") for moment in started)
    since = as_json(run("sessions", "list", "--since", started[1], "--json"))
    assert isinstance(since, list) and sorted(row["started_at"] for row in since) == started[1:]
    until = as_json(run("sessions", "list", "--until", started[1], "--json"))
    assert isinstance(until, list) and sorted(row["started_at"] for row in until) == started[:2]
    bare = as_json(run("sessions", "list", "--since", started[1][:16] + "z", "--json"))  # minutes, lower z
    assert isinstance(bare, list) and len(bare) >= 2
    forget = run("forget", "--before", started[1], "--yes", "--json")
    assert forget.exit_code == 0, forget.stderr
    assert as_json(forget)["sessions"] == 1  # type: ignore[index]


def test_only_a_recent_unfinished_turn_reads_in_progress(run, tmp_path: Path) -> None:
    """A session's last turn (its end not yet seen) is "in progress" while it was active within hours; the
    last turn of a session left a year ago is not (it was, on every session ever indexed)."""
    from datetime import UTC, datetime, timedelta

    from transcripts import Clock

    folder = tmp_path / "agents" / "-home-dev-shop"
    for session_id, start in (
        ("old00000-0000-4000-8000-000000000000", datetime(2025, 3, 1, tzinfo=UTC)),
        ("new00000-0000-4000-8000-000000000000", datetime.now(UTC) - timedelta(minutes=30)),
    ):
        session = ClaudeSession(folder / f"{session_id}.jsonl", session_id, clock=Clock(start))
        simple_turn(session, "rename the cache module", "Renamed it.")
        simple_turn(session, "now run the tests", "Running them.")
    run("index", str(folder.parent))
    old, new = (run("show", prefix, "--turns").stdout for prefix in ("old0", "new0"))
    assert "turn 2" in old and "in progress" not in old
    assert new.count("in progress") == 1 and "in progress" in new.split("turn 2")[1]
