"""What the terminal shows: titles as plain text, local times with their zone (`--utc` for UTC), and long
output through a pager as git does (never in a pipe, with --no-pager, or for JSON)."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from agent_cli import index_json
from corpus import (
    CODEX,
    CODEX_PARTIAL,
    CODEX_SHORT,
    LIVE_CLINE,
    LIVE_CODEX,
    LIVE_OPENCODE_DB,
    LIVE_PI,
    MISC,
    USAGE_ONLY,
)
from memex.cli.main import cli
from memex.cli.pager import DEFAULT_PAGER, pager_command
from memex.textutil import display_time, plain_title, short_id
from memex.web.render import short_time as web_time

CODEX_ID = "019a802a-aab1-7c31-9831-d2510c7a74a2"
MEMEX = Path(sys.executable).parent / "memex"


# --- titles as plain text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, plain",
    [
        # Titles memex stored from real Codex rollouts (tests/fixtures/codex), and the prompt they came from.
        (
            "## User Input ```text Create a spec which will implement the orchestrator architecture defined by d…",
            "User Input Create a spec which will implement the orchestrator architecture defined by d…",
        ),
        (
            "## User Input ```text ``` You **MUST** consider the user input before proceeding (if not empty). ##…",
            "User Input You MUST consider the user input before proceeding (if not empty). …",
        ),
        (
            "\n## User Input\n\n```text\n\n```\n\nYou **MUST** consider it.\n\n## Outline\n\n1. **Setup**: Run "
            "`.specify/scripts/check.sh --json` from repo root",
            "User Input You MUST consider it. Outline 1. Setup: Run .specify/scripts/check.sh --json from repo root",
        ),
        # Claude Code's slash-command prompt, as a title.
        (
            "<command-message>init is analyzing your codebase…</command-message> <command-name>/init</command-name>",
            "init is analyzing your codebase… /init",
        ),
        (
            "see [the docs](https://x.dev/a) and ![the logo](logo.png), <https://x.dev>",
            "see the docs and the logo, https://x.dev",
        ),
        ("> quoted\n- a *bullet* with _emphasis_ and ~~no~~ ***both***", "quoted a bullet with emphasis and no both"),
        ("# Heading\n\n`code` and ``a ` tick``", "Heading code and a ` tick"),
        (r"escaped \*stars\* stay", "escaped *stars* stay"),
        # Text that only looks like marks stays as it is.
        ("fix __init__.py, snake_case_name, a * b * c, 2*3*4", "fix __init__.py, snake_case_name, a * b * c, 2*3*4"),
        ("Vec<String> in C# for issue #123", "Vec<String> in C# for issue #123"),
        ("why does <script>alert(1)</script> break?", "why does <script>alert(1)</script> break?"),
        ("a <b>bold</b> <details>word</details>", "a bold word"),
        ("/add **", "/add **"),
        ("title [/] [bold]x", "title [/] [bold]x"),
    ],
)
def test_plain_title(raw: str, plain: str) -> None:
    assert plain_title(raw) == plain


def test_titles_are_plain_from_ingest_and_on_display(run, home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "codex" / "2025" / "11" / "13"
    folder.mkdir(parents=True)
    shutil.copy(CODEX_SHORT, folder)
    assert run("index", str(tmp_path / "codex")).exit_code == 0
    # Derived at ingest: the first prompt's Markdown is gone from the stored title (JSON shows it stored).
    (listed,) = json.loads(run("sessions", "list", "--json").stdout)
    assert listed["title"].startswith("User Input You MUST consider the user input before proceeding")
    assert not {"#", "*", "`"} & set(listed["title"])
    # A title stored by an older memex, or received from another computer, is made plain when shown.
    with sqlite3.connect(home / "memex.db") as db:
        db.execute("UPDATE sessions SET title = ?", ("## Fix **the** `cart` [total](http://x.dev)",))
    assert json.loads(run("sessions", "list", "--json").stdout)[0]["title"].startswith("## Fix")  # stored as is
    listing = run("sessions", "list").stdout
    assert "Fix the cart total" in listing and "**" not in listing
    assert run("show", CODEX_ID[:8]).stdout.splitlines()[0] == "Fix the cart total"
    found = run("search", "consider", "--mode", "lexical").stdout
    assert "   Fix the cart total" in found.splitlines()


# --- local time with its zone, or UTC ---------------------------------------------------------------------


@pytest.fixture
def paris(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    "zone, summer, winter",
    [
        ("Europe/Paris", "2026-07-01 02:20 CEST", "2026-01-01 01:20 CET"),
        ("Asia/Kolkata", "2026-07-01 05:50 IST", "2026-01-01 05:50 IST"),
        ("America/Sao_Paulo", "2026-06-30 21:20 -0300", "2025-12-31 21:20 -0300"),  # no abbreviation: the offset
    ],
)
def test_display_time_in_a_zone(zone: str, summer: str, winter: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        assert display_time("2026-07-01T00:20:03.895Z") == web_time("2026-07-01T00:20:03.895Z") == summer
        assert display_time("2026-01-01T00:20:00.000Z") == winter
        assert display_time("2026-07-01T00:20:03.895Z", utc=True) == "2026-07-01 00:20 UTC"
        assert display_time(None) == "—" and display_time("not a time") == "not a time"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_times_are_local_with_their_zone_or_utc(run, home: Path, tmp_path: Path, paris: None) -> None:
    folder = tmp_path / "codex" / "2025" / "11" / "13"
    folder.mkdir(parents=True)
    shutil.copy(CODEX_SHORT, folder)
    assert run("index", str(tmp_path / "codex")).exit_code == 0
    (listed,) = json.loads(run("sessions", "list", "--json").stdout)
    started = listed["started_at"]
    assert started.endswith("Z")  # JSON: ISO UTC, whatever the zone
    moment = datetime.fromisoformat(started)
    local = moment.astimezone(ZoneInfo("Europe/Paris")).strftime("%Y-%m-%d %H:%M") + " CET"  # November
    utc = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M") + " UTC"
    assert local != utc.replace("UTC", "CET")
    for args in (("sessions", "list"), ("show", CODEX_ID[:8]), ("search", "consider", "--mode", "lexical")):
        assert local in run(*args).stdout, args
        assert utc in run(*args, "--utc").stdout, args
        assert utc in run("--utc", *args).stdout, args  # before the command too, as a global option
        assert local not in run(*args, "--utc").stdout
    assert json.loads(run("sessions", "list", "--json", "--utc").stdout)[0]["started_at"] == started


# --- the pager --------------------------------------------------------------------------------------------


def test_which_pager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert pager_command({"MEMEX_PAGER": "most", "PAGER": "more"}) == "most"
    assert pager_command({"PAGER": "more -s"}) == "more -s"
    assert pager_command({"MEMEX_PAGER": "", "PAGER": "more"}) is None  # set but empty: no pager
    assert pager_command({"PAGER": "cat"}) is None
    tools = tmp_path / "bin"
    tools.mkdir()
    monkeypatch.setenv("PATH", str(tools))
    assert pager_command({}) is None  # no less installed: printed as it is
    (tools / "less").write_text("#!/bin/sh\ncat\n")
    (tools / "less").chmod(0o755)
    assert pager_command({}) == DEFAULT_PAGER == "less -FRX"


class Terminal(io.StringIO):
    """A stdout that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Terminal, Path]]:
    """memex's stdout is a terminal of 10 lines; the pager writes what it is given to a file."""
    screen = Terminal()
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("LINES", "10")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("MEMEX_PAGER", f"cat > '{paged}'")
    monkeypatch.setenv("PAGER", "false")  # never reached: MEMEX_PAGER comes first
    yield screen, paged


def memex_on(terminal: tuple[Terminal, Path], *args: str) -> tuple[str, str]:
    """Run memex in this process with the fake terminal; (what reached the screen, what the pager got)."""
    screen, paged = terminal
    screen.seek(0)
    screen.truncate()
    paged.unlink(missing_ok=True)
    real, sys.stdout = sys.stdout, screen  # pytest sets its own between the fixtures and the test
    try:
        cli.main(list(args), prog_name="memex", standalone_mode=False)
    finally:
        sys.stdout = real
    return screen.getvalue(), paged.read_text() if paged.exists() else ""


def test_long_output_on_a_terminal_goes_through_the_pager(run, home: Path, tmp_path: Path, terminal) -> None:
    folder = tmp_path / "codex" / "2025" / "11" / "13"
    folder.mkdir(parents=True)
    shutil.copy(CODEX_SHORT, folder)
    assert run("index", str(tmp_path / "codex")).exit_code == 0
    screen, paged = memex_on(terminal, "show", CODEX_ID[:8])
    assert screen == "" and paged.count("\n") > 10 and "User Input" in paged.splitlines()[0]
    assert "\x1b[" in paged  # rendered for a terminal: colours, for less -R
    # Output that fits the screen is printed as it is.
    screen, paged = memex_on(terminal, "sessions", "list")
    assert paged == "" and "User Input" in screen and screen.count("\n") < 10
    # Never with --no-pager (after the command or before it), nor for JSON.
    for args in (("show", CODEX_ID[:8], "--no-pager"), ("--no-pager", "show", CODEX_ID[:8])):
        screen, paged = memex_on(terminal, *args)
        assert paged == "" and screen.count("\n") > 10
    screen, paged = memex_on(terminal, "show", CODEX_ID[:8], "--json")
    assert paged == "" and json.loads(screen)["session"]["session_id"] == CODEX_ID
    # A pager that cannot start: the text is printed as it is.
    os.environ["MEMEX_PAGER"] = "no-such-pager-here"
    screen, paged = memex_on(terminal, "show", CODEX_ID[:8])
    assert paged == "" and screen.count("\n") > 10


@pytest.mark.subprocess
def test_the_pager_on_a_real_pseudo_terminal(run, home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "codex" / "2025" / "11" / "13"
    folder.mkdir(parents=True)
    shutil.copy(CODEX_SHORT, folder)
    assert run("index", str(tmp_path / "codex")).exit_code == 0
    paged = tmp_path / "paged.txt"
    env = {**os.environ, "MEMEX_PAGER": f"cat > '{paged}'"}
    env.pop("LINES", None)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 12, 100, 0, 0))  # 12 rows, 100 columns
    screen: list[bytes] = []
    reader = threading.Thread(target=drain, args=(master, screen), daemon=True)
    reader.start()

    def show(*args: str) -> None:
        done = subprocess.run(
            [str(MEMEX), "show", CODEX_ID[:8], *args], stdout=slave, stderr=subprocess.PIPE, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr

    try:
        show()
        assert "User Input" in paged.read_text() and paged.read_text().count("\n") > 12
        paged.unlink()
        show("--no-pager")
        assert not paged.exists()
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    assert b"User Input" in b"".join(screen)  # --no-pager: straight to the terminal


def drain(fd: int, into: list[bytes]) -> None:
    """Read a pseudo-terminal's output until it closes (a full one would block the writer)."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        into.append(chunk)


# --- session ids ------------------------------------------------------------------------------------------


def test_sessions_started_a_minute_apart_show_ids_that_find_them(run, tmp_path: Path) -> None:
    """Codex and Pi name a session with a UUID version 7, OpenCode and Cline with an id that begins with the
    time: two sessions started in the same minute share their first 8 characters (both Pi sessions listed
    as `01a20a43`, and `memex show 01a20a43` refused the id as ambiguous). Each shows as its time to the
    millisecond, in the list, in search results and in errors, and that short form finds it."""
    opencode = tmp_path / "opencode" / "opencode.db"
    opencode.parent.mkdir()
    shutil.copy(LIVE_OPENCODE_DB, opencode)
    index_json(run, LIVE_CODEX, LIVE_PI, LIVE_CLINE, opencode)
    listed = run("sessions", "list", "--limit", "100", "--json")
    ids = [row["session_id"] for row in json.loads(listed.stdout)]
    assert len({i[:8] for i in ids}) < len(ids) == 11  # several share their first 8 characters
    table = run("sessions", "list", "--limit", "100", "--no-pager")
    shown = [line.split()[0] for line in table.stdout.splitlines()[1:] if line.strip()]
    assert sorted(shown) == sorted(short_id(i) for i in ids) and len(set(shown)) == len(ids)
    assert {"01a20a43-cfe2", "01a209d0-6a09", "ses_df5c216e", "1795468326054"} <= set(shown)
    for short, full in zip(shown, ids, strict=True):
        shown_json = run("show", short, "--json")
        assert shown_json.exit_code == 0, shown_json.output
        assert json.loads(shown_json.stdout)["session"]["session_id"] == full
    assert short_id("4ce12a22-1823-4a68-9398-6db5561d9ada") == "4ce12a22"  # a random UUID: its first group


def test_a_long_title_never_cuts_the_session_id(run) -> None:
    """A table wider than the screen (160 columns in a pipe) gives up width: the title's, never the id's
    (the MoonMind rollouts' long titles cut `019a802a-aab1` to `019a802a-a…`, which finds nothing; so
    were `specstory-…` and `aider-43a3…`)."""
    index_json(run, CODEX)
    ids = [row["session_id"] for row in json.loads(run("sessions", "list", "--json").stdout)]
    table = run("sessions", "list", "--no-pager").stdout
    shown = [line.split()[0] for line in table.splitlines()[1:] if line.strip()]
    assert shown == [short_id(i) for i in ids] and "019a802a-aab1" in shown


ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("columns", [80, 100, 120, 160])
def test_a_long_title_never_hides_the_agent_or_the_turns(run, tmp_path: Path, terminal, columns: int) -> None:
    """On a terminal of 80 to 160 columns (and in a pipe, 160), a table made too wide by long titles (the
    MoonMind rollouts') was narrowed column by column alike: `opencode` showed as `openc…`, and below 160
    columns the agent and turns columns were left out whole. The title gives up its width first."""
    opencode = tmp_path / "opencode" / "opencode.db"
    opencode.parent.mkdir()
    shutil.copy(LIVE_OPENCODE_DB, opencode)
    index_json(run, CODEX, LIVE_CLINE, opencode)
    os.environ["COLUMNS"] = str(columns)
    screen, _ = memex_on(terminal, "sessions", "list", "--no-pager")
    piped = run("sessions", "list", "--no-pager").stdout
    for table, width in ((ANSI.sub("", screen), columns), (piped, 160)):
        lines = table.splitlines()
        assert lines[0].split() == ["session", "started", "agent", "project", "turns", "title"], table
        assert all(len(line) <= width for line in lines)
        rows = [line.split() for line in lines[1:] if line.strip()]
        agents = {row[4] for row in rows}  # id, date, time, zone, agent
        assert agents == {"codex", "cline", "opencode"}, table
        assert any(row[0] == "019a802a-aab1" and row[6] == "1" for row in rows), table  # its one turn
        # A title cut to its room keeps what follows it: the subagents, the PRs, the computer.
        parent = [line.rstrip() for line in lines if "1795468856782" in line]
        assert width < 100 or all(line.endswith("(+1 subagent)") for line in parent), table


def test_sessions_named_alike_show_ids_that_find_them(run, tmp_path: Path) -> None:
    """Sessions whose ids are names rather than UUIDs (`session-alpha` in ccusage's Codex and Claude Code
    fixtures, `short-conversation` and `medium-conversation` in episodic-memory's) all showed as their
    first 8 characters, `session-` and `medium-c`: three rows alike, and `memex show session-` refused the
    id as ambiguous. Such an id is shown whole."""
    index_json(run, CODEX_PARTIAL, USAGE_ONLY, MISC)
    ids = [row["session_id"] for row in json.loads(run("sessions", "list", "--limit", "100", "--json").stdout)]
    assert len({i[:8] for i in ids}) < len(ids)  # several share their first 8 characters
    table = run("sessions", "list", "--limit", "100", "--no-pager")
    shown = [line.split()[0] for line in table.stdout.splitlines()[1:] if line.strip()]
    assert len(shown) == len(ids) and len(set(shown)) == len(ids), table.stdout
    for short, full in zip(shown, ids, strict=True):
        found = run("show", short, "--json")
        assert found.exit_code == 0, found.stderr
        assert json.loads(found.stdout)["session"]["session_id"] == full


@pytest.mark.parametrize("columns", [80, 120])
def test_a_wide_title_cut_to_its_room_keeps_its_notes(run, tmp_path: Path, terminal, columns: int) -> None:
    """A title of wide characters (CJK: two cells each) was cut by its character count, so it still
    overflowed its room and the table cut off what follows it (the PR here): it is cut by cells."""
    from memex.cli.render import cell_width
    from transcripts import ClaudeSession, simple_turn

    session = ClaudeSession(tmp_path / "p" / "-home-dev-shop" / "s.jsonl", "c0c00000-0000-4000-8000-000000000000")
    prompt = "設定ファイルの読み込みが失敗する問題を調査して修正し、テストを追加してください"
    simple_turn(session, prompt * 2, "直しました。")
    session.write(session.pr_link(7))
    index_json(run, tmp_path / "p")
    os.environ["COLUMNS"] = str(columns)
    screen, _ = memex_on(terminal, "sessions", "list", "--no-pager")
    (line,) = [line.rstrip() for line in ANSI.sub("", screen).splitlines() if "c0c00000" in line]
    assert line.endswith("(PR #7)") and "…" in line, line
    assert cell_width(line) <= columns
