"""`memex find-related sessions|turns` end to end: the JSON contract, the default session, one-line errors."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from memex.cli.render import step_progress
from memex.related.resources import COMPUTING_CENTROIDS, EMBEDDING_PATHS, LOADING_MODEL
from transcripts import ClaudeSession, Clock, files_turn, simple_turn

CART = "aaaaaaaa-0000-0000-0000-000000000001"
CART_AGAIN = "bbbbbbbb-0000-0000-0000-000000000002"
AUTH = "dddddddd-0000-0000-0000-000000000004"
IDLE = "eeeeeeee-0000-0000-0000-000000000005"


@pytest.fixture
def shop(tmp_path: Path, run) -> Path:
    """A real project folder with three indexed sessions (the auth one the most recent) and one that touched
    no file; returns the project folder."""
    project = tmp_path / "shop"
    (project / "src").mkdir(parents=True)
    folder = tmp_path / "projects" / "-shop"
    clock = Clock()  # one for all four: each session starts after the one written before it

    def session(sid: str) -> ClaudeSession:
        return ClaudeSession(folder / f"{sid}.jsonl", sid, cwd=str(project), clock=clock)

    simple_turn(session(IDLE), "what is this project about?", "A shop.")
    files_turn(session(CART), "the total is wrong", reads=("src/cart/discount.py",), edits=("src/cart/total.py",))
    files_turn(session(CART_AGAIN), "discounts stack", reads=("src/cart/total.py",), edits=("src/cart/discount.py",))
    files_turn(session(AUTH), "login loops", edits=("src/auth/login.py",))
    assert run("index", str(tmp_path / "projects")).exit_code == 0
    return project


def as_json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_sessions_json(run, shop: Path) -> None:
    found = as_json(run("find-related", "sessions", "aaaaaaaa", "--json"))
    assert found["session"]["session_id"] == CART and found["warnings"] == []
    first = found["results"][0]
    assert first["session_id"] == CART_AGAIN and first["shared_files"] == ["src/cart/discount.py", "src/cart/total.py"]
    assert set(first) >= {"agent", "project_dir", "title", "started_at", "score", "file_count", "files", "shared_count"}
    # Each result explains its score: the shared part, the similarity, the files with their sessions.
    assert first["shared_score"] == 1.0 and 0 < first["similarity"] <= 1
    assert first["score"] == pytest.approx(0.7 * first["shared_score"] + 0.3 * first["similarity"], abs=2e-4)
    assert first["shared"] == [
        {"path": "src/cart/discount.py", "sessions": 2},
        {"path": "src/cart/total.py", "sessions": 2},
    ]
    other = found["results"][1]
    assert (other["session_id"], other["shared_count"], other["shared_score"], other["shared"]) == (AUTH, 0, 0.0, [])
    only = as_json(run("find-related", "sessions", CART, "--min-shared", "1", "--json"))["results"]
    assert [hit["session_id"] for hit in only] == [CART_AGAIN]
    assert as_json(run("find-related", "turns", CART, "--min-shared", "3", "--json"))["results"] == []
    assert CART not in {hit["session_id"] for hit in found["results"]}
    assert IDLE not in {hit["session_id"] for hit in found["results"]}  # no file: nothing to compare
    assert len(as_json(run("find-related", "sessions", CART, "--limit", "1", "--json"))["results"]) == 1
    assert as_json(run("find-related", "sessions", CART, "--agent", "codex", "--json"))["results"] == []
    assert as_json(run("find-related", "sessions", CART, "--project", "blog", "--json"))["results"] == []


def test_default_session_is_the_latest_of_the_current_project(run, shop: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(shop / "src")  # a folder inside the project
    found = as_json(run("find-related", "sessions", "--json"))
    assert found["session"]["session_id"] == AUTH
    assert AUTH not in {hit["session_id"] for hit in found["results"]}


def test_turns_json_and_the_fewer_than_window_warning(run, shop: Path) -> None:
    found = as_json(run("find-related", "turns", CART, "--window", "2", "--json"))
    assert found["window"] == 2 and len(found["query_turns"]) == 1
    assert found["warnings"] == [
        "session aaaaaaaa has only 1 turn that touched files (fewer than the window of 2): all of them are used"
    ]
    first = found["results"][0]
    assert first["session_id"] == CART_AGAIN and first["turns"][0]["prompt"] == "discounts stack"
    turn_keys = {"turn_id", "agent_id", "subagent_name", "subagent_description", "line_index", "started_at", "prompt"}
    assert set(first["turns"][0]) == turn_keys
    # On a terminal-less run the warning goes to stderr, the results to stdout.
    result = run("find-related", "turns", CART, "--window", "2")
    assert result.exit_code == 0 and "fewer than the window of 2" in result.stderr
    assert "bbbbbbbb" in result.stdout and "discounts stack" in result.stdout
    assert "shared (2): src/cart/discount.py (2 sessions), src/cart/total.py (2 sessions)" in result.stdout
    assert re.search(r"score 0\.\d{3} = 0\.70 × shared 1\.00 \+ 0\.30 × similarity 0\.\d{3}", result.stdout)


def test_terminal_output_and_quiet_progress(run, shop: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run("find-related", "sessions", CART)  # the first: paths embedded, a bar were stderr a terminal
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Related to aaaaaaaa") and "2 files" in lines[0]
    assert lines[1] == "the total is wrong"  # its title
    assert [line[:11] for line in lines if line[:1].isdigit()] == ["1. bbbbbbbb", "2. dddddddd"]
    assert "shared (2): src/cart/discount.py (2 sessions), src/cart/total.py (2 sessions)" in result.stdout
    assert re.search(r"score 0\.\d{3} = 0\.70 × shared 1\.00 \+ 0\.30 × similarity 0\.\d{3}", result.stdout)
    assert "no file in common; nearest by name: src/auth/login.py" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (("find-related", "sessions", "zzzz"), "no session matches 'zzzz'"),
        (("find-related", "turns", "eeeeeeee"), "session eeeeeeee touched no files"),
        (("find-related", "turns", "aaaa", "--window", "0"), "Invalid value for '--window'"),
        (("find-related", "nearby"), "No such command 'nearby'"),
    ],
)
def test_user_errors_are_one_line(run, shop: Path, args, message) -> None:
    result = run(*args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("memex: error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_no_session_in_this_project(run, shop: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "blog"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = run("find-related", "sessions")
    assert result.exit_code == 2 and "no indexed session of this project" in result.stderr
    assert result.stderr.count("\n") == 1


def test_before_indexing(run) -> None:
    result = run("find-related", "sessions", "abc")
    assert result.exit_code == 2 and "run `memex index` first" in result.stderr


def test_each_step_shows_on_a_terminal_from_its_start() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, color_system=None)
    with step_progress(console) as update:
        update(LOADING_MODEL, 0, None)  # nothing to count yet: the bar pulses
        assert LOADING_MODEL in out.getvalue() and EMBEDDING_PATHS not in out.getvalue()
        update(EMBEDDING_PATHS, 0, 120)
        update(EMBEDDING_PATHS, 60, 120)
        update(COMPUTING_CENTROIDS, 0, 4)
    shown = out.getvalue()
    assert shown.index(LOADING_MODEL) < shown.index(EMBEDDING_PATHS) < shown.index(COMPUTING_CENTROIDS)
    assert "0/120" in shown
    quiet = io.StringIO()
    with step_progress(Console(file=quiet)) as update:  # not a terminal: nothing at all
        update(LOADING_MODEL, 0, None)
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("kind", ["sessions", "turns"])
def test_a_session_of_another_computer_says_its_files_are_there(run, shop: Path, home: Path, kind: str) -> None:
    """A session known here by its mirror: its files are not known here, which is not 'touched no files'."""
    from memex.store.db import connect
    from mirrortools import store_received_mirror

    remote = "0c0c0c0c-1111-2222-3333-444444444444"
    conn = connect(home / "memex.db")
    store_received_mirror(conn, remote, "laptop", str(shop), "the checkout bug", "why?", "rounding")
    conn.close()
    result = run("find-related", kind, remote[:8])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "ran on laptop" in result.stderr and "touched no files" not in result.stderr
