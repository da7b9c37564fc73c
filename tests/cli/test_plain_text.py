"""What a user or an agent wrote is printed as text: never read as Rich markup or emoji codes, in every
command, on stdout and stderr (a prompt holding `[/]` used to crash `memex sessions list`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transcripts import ClaudeSession, text, tool_use

SID = "5e55e55e-1111-2222-3333-444444444444"
OTHER = "5e55e55f-1111-2222-3333-444444444444"
PROMPT = "fix [/] and [bold]this[/bold] in [red]x :smile: [link=http://evil]here[/link]"
FOLDER = "-home-dev-[red]shop[/]"
PROJECT = "/home/dev/[red]shop[x]"


@pytest.fixture
def marked(tmp_path: Path) -> Path:
    """Two sessions whose prompt, title, project and file paths look like markup; one bad line."""
    root = tmp_path / "projects"
    for session_id in (SID, OTHER):
        session = ClaudeSession(root / FOLDER / f"{session_id}.jsonl", session_id, cwd=PROJECT)
        session.write(session.custom_title(f"title [/] [bold]{session_id[:8]}"))
        session.write(session.prompt(PROMPT))
        session.write(
            session.assistant(
                text("done [/] :rocket:"),
                tool_use("t1", "Edit", file_path=f"{PROJECT}/src/[x]/a.py", old_string="a", new_string="b"),
                tool_use("t2", "Read", file_path=f"{PROJECT}/src/cart:smile:.py"),
            )
        )
        session.write(session.prompt("thanks [/]"))
    with (root / FOLDER / f"{SID}.jsonl").open("a") as handle:
        handle.write("{not json [/]\n")
    return root


def ok(result) -> str:
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.stderr and "MarkupError" not in result.stderr
    return result.stdout


def test_every_command_prints_markup_like_text_as_it_is(run, marked: Path) -> None:
    indexed = run("index", str(marked))
    ok(indexed)
    assert f"warning: {marked / FOLDER / SID}.jsonl:5: skipped" in indexed.stderr

    listing = ok(run("sessions", "list"))
    assert f"title [/] [bold]{SID[:8]}" in listing and "[red]shop[x]" in listing

    found = ok(run("search", "fix", "--mode", "lexical"))
    assert "[bold]this[/bold]" in found and ":smile:" in found and "[link=http://evil]here[/link]" in found
    assert "[red]shop[x]" in found
    assert "[bold]this[/bold]" in ok(run("search", "fix", "--mode", "lexical", "--full"))

    shown = ok(run("show", SID[:8]))
    assert PROMPT in shown and "done [/] :rocket:" in shown and "thanks [/]" in shown
    turns = ok(run("show", SID[:8], "--turns"))
    assert PROMPT in turns and "src/[x]/a.py" in turns

    ok(run("stats"))
    ok(run("computers"))


def test_find_related_prints_paths_as_they_are(run, marked: Path) -> None:
    ok(run("index", str(marked)))
    related = run("find-related", "sessions", SID[:8])
    assert "src/cart:smile:.py" in ok(related) and "[red]shop[x]" in related.stdout
    assert f"title [/] [bold]{OTHER[:8]}" in related.stdout
    turns = run("find-related", "turns", SID[:8], "--window", "5")
    assert "[bold]this[/bold]" in ok(turns) and "warning:" in turns.stderr


def test_json_output_is_unchanged(run, marked: Path) -> None:
    ok(run("index", str(marked)))
    listing = json.loads(ok(run("sessions", "list", "--json")))
    assert {s["title"] for s in listing} == {f"title [/] [bold]{SID[:8]}", f"title [/] [bold]{OTHER[:8]}"}
