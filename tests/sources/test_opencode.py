"""OpenCode 1.18.33 (real database, `tests/fixtures/live/opencode-1.18.33/opencode.db`): sessions in SQLite,
a child session as a subagent, read through SQLite with a live writer's WAL, per-session change detection."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from agent_cli import index_json, mirror, search_sessions, sessions, turns
from corpus import LIVE_OPENCODE_DB
from memex.sources import ADAPTERS, opencode, sqlite_read
from memex.sources.model import Entry

TASK = "ses_df5b8911dffeh9yqWAIu13Rgtv"
CHILD = "ses_df5b887ffffefMvoSh05pvcEgB"
READ = "ses_df5c216e4ffekZPgmhm5dbCpVD"


def copy(tmp_path: Path) -> Path:
    database = tmp_path / "opencode" / "opencode.db"
    database.parent.mkdir()
    shutil.copy(LIVE_OPENCODE_DB, database)
    return database


def good(database: Path, session: str) -> list[Entry]:
    path = sqlite_read.synthetic(database, session)
    return [e for _, e in opencode.read_entries(path) if isinstance(e, Entry)]


def test_every_session_is_a_transcript_and_the_child_a_subagent(tmp_path: Path) -> None:
    database = copy(tmp_path)
    found = opencode.discover([database.parent])
    assert [(t.session_id, t.subagent_id) for t in found][-1] == (TASK, CHILD)
    assert len(found) == 4 and all(t.aliases == (database,) for t in found)
    child = found[-1]
    assert (child.agent_type, child.description) == ("general", "List project files (@general subagent)")
    assert [t.subagent_id for t in opencode.subagent_transcripts(sqlite_read.synthetic(database, TASK))] == [CHILD]
    for name, other in ADAPTERS.items():
        if name != "opencode":
            assert other.discover([database]) == [], name


def test_messages_tools_and_the_subagents_report(tmp_path: Path) -> None:
    database = copy(tmp_path)
    entries = good(database, READ)
    assert entries[0].cwd == "/home/dev/proj" and entries[0].version == "1.18.33"
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "MOCK-READ README.md then list the folder",
        "Thanks. Now summarise what you found in one line.",
    ]
    tools = [b.tool for e in entries for b in e.blocks if b.tool]
    assert [(t.name, t.input.get("filePath"), t.input.get("command")) for t in tools] == [
        ("read", "/home/dev/proj/README.md", None),
        ("bash", None, "ls"),
    ]
    task = good(database, TASK)
    assert 'Subagent "List project files" reported: Subagent report: the folder holds notes.md' in "\n".join(
        e.text for e in task
    )


def test_index_show_search_end_to_end(run, tmp_path: Path) -> None:
    database = copy(tmp_path)
    report = index_json(run, database)
    assert (report["sessions"], report["subagents"], report["bad_lines"], report["refused"]) == (3, 1, 0, [])
    listed = sessions(run, "opencode")
    assert listed[TASK]["subagents"] == 1 and listed[TASK]["project_dir"] == "/home/dev/proj"
    assert listed[TASK]["title"] == "Mock session title"  # the title OpenCode generated
    assert [t["agent_id"] for t in turns(run, TASK)] == ["", CHILD]
    assert "Files: README.md" in turns(run, READ)[0]["tool_summary"]
    assert 'Subagent "List project files" reported' in mirror(run, TASK)
    assert search_sessions(run, "summarise what you found", "opencode") == [READ]
    assert index_json(run, database)["files_changed"] == 0


def _add_message(conn: sqlite3.Connection, session: str, number: int, text: str) -> None:
    stamp = 1795469000000 + number
    data = json.dumps({"role": "user", "time": {"created": stamp}, "agent": "build"})
    conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)", (f"msg_new{number}", session, stamp, stamp, data))
    part = json.dumps({"type": "text", "text": text})
    conn.execute(
        "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
        (f"prt_new{number}", f"msg_new{number}", session, stamp, stamp, part),
    )
    conn.execute("UPDATE session SET time_updated = ? WHERE id = ?", (stamp, session))


def test_a_running_agents_wal_is_read_and_only_the_changed_session_is_read_again(run, tmp_path: Path) -> None:
    database = copy(tmp_path)
    agent = sqlite3.connect(database, isolation_level=None)  # OpenCode, running: WAL, never checkpointed
    agent.execute("PRAGMA journal_mode = WAL")
    agent.execute("PRAGMA wal_autocheckpoint = 0")
    index_json(run, database)
    _add_message(agent, READ, 1, "zebra stripes in the WAL only")
    assert Path(f"{database}-wal").stat().st_size > 0
    report = index_json(run, database)
    assert report["files_changed"] == 1  # that session alone
    assert search_sessions(run, "zebra stripes", "opencode") == [READ]
    _add_message(agent, READ, 2, "the agent writes on while memex reads")  # memex held no lock
    agent.close()


def test_xdg_data_home_moves_the_default_database(tmp_path: Path) -> None:
    from memex.config import load_config
    from memex.ingest.indexer import default_roots

    config = load_config({"MEMEX_HOME": str(tmp_path / "m")})
    roots = default_roots(config, ["opencode"], env={"XDG_DATA_HOME": str(tmp_path / "data")})
    assert roots["opencode"] == [tmp_path / "data" / "opencode" / "opencode.db"]


def test_show_raw_prints_the_sessions_records(run, tmp_path: Path) -> None:
    index_json(run, copy(tmp_path))
    result = run("show", READ, "--raw")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[0]["session"]["id"] == READ
    assert [r["message"]["role"] for r in records[1:]][:2] == ["user", "assistant"]
    assert any(p.get("tool") == "read" for r in records[1:] for p in r["parts"])
