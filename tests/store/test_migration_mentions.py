"""Migration 14: scoped npm packages recorded as @-mentioned files by earlier versions are removed, the
paths a prompt @-mentioned are kept (as today's ingest reads them), and find-related computes the sessions
that lost one again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memex.config import load_config
from memex.ingest.mentions import SOURCE_FOLDERS
from memex.store.db import connect
from transcripts import ClaudeSession, simple_turn

SESSION = "5e55a0e1-0000-4000-8000-0000000000b1"
# What versions before 14 recorded for `npm i -D @biomejs/biome @types/node` and pasted knip output; a
# scope named as a source folder with a version is a package too.
PACKAGES = ["biomejs/biome", "types/node", "prisma/client", "app/cli"]
# @-mentions that stay: a file, a folder (its `/` dropped when stored), a capital, a dot (a dotted name may
# be a file), three parts, and in each usual source folder, `@src/util` (though the prompt speaks of npm).
IN_FOLDERS = [f"{folder}/util" for folder in sorted(SOURCE_FOLDERS)]
PATHS = ["src/app.ts", "docs", "src/utils", "components/Button", "scope/name.js", "src/lib/util", "README.md"]
PATHS += IN_FOLDERS
PROMPT = (
    "look at @src/app.ts, @docs/, @src/utils/, @components/Button, @scope/name.js, @src/lib/util and "
    f"@README.md, {' '.join('@' + path for path in IN_FOLDERS)}, then npm i -D @biomejs/biome @types/node "
    "@prisma/client @app/cli@2"
)


def test_version_13_package_mentions_go_and_paths_stay(run, home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "claude-projects" / "-home-dev-shop"
    session = ClaudeSession(folder / f"{SESSION}.jsonl", SESSION)
    simple_turn(session, PROMPT, "done")
    simple_turn(session, "run @bin/setup first", "ok")  # no word of packages: a script without extension
    assert run("index", str(folder.parent)).exit_code == 0
    path = load_config().db_path
    old = sqlite3.connect(path)
    turn_id, recorded = old.execute(
        "SELECT min(turn_id), group_concat(file_path) FROM file_mentions WHERE tool_name = 'at_mention'"
    ).fetchone()
    assert sorted(recorded.split(",")) == sorted([*PATHS, "bin/setup"])  # today's ingest leaves packages out
    script_turn = old.execute("SELECT turn_id FROM file_mentions WHERE file_path = 'bin/setup'").fetchone()[0]
    old.execute("DELETE FROM file_mentions")
    old.executemany(  # what version 13 had recorded
        "INSERT INTO file_mentions (turn_id, session_id, file_path, tool_name) VALUES (?, ?, ?, 'at_mention')",
        [*((turn_id, SESSION, p) for p in PACKAGES + PATHS), (script_turn, SESSION, "bin/setup")],
    )
    old.execute(
        "INSERT INTO session_access_patterns (session_id, model_version, turns, files, max_turn_id, computed_at) "
        "VALUES (?, 'v', 1, 9, ?, '2026-11-01T00:00:00Z')",
        (SESSION, turn_id),
    )
    old.execute("PRAGMA user_version = 13")
    old.commit()
    old.close()

    conn = connect(path)  # migrates
    try:
        kept = [r[0] for r in conn.execute("SELECT file_path FROM file_mentions ORDER BY id")]
        stale = conn.execute("SELECT stale FROM session_access_patterns WHERE session_id = ?", (SESSION,)).fetchone()
    finally:
        conn.close()
    assert kept == [*PATHS, "bin/setup"] and stale[0] == 1
