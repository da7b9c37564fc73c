"""`memex index` writing to no terminal (a hook, a script, cron) runs without click or rich
(`memex.cli.lean`): it indexes what changed, prints what the click command prints, and ends as it does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli import index_json
from transcripts import ClaudeSession, retry_projects, simple_turn

pytestmark = [pytest.mark.subprocess]

FILES = 6
# A new `memex ARGS…` process listing, on stderr, the modules it imported (`-X importtime`: also when the
# process ends with `os._exit`).
ENTRY = "from memex.cli.entry import main; main()"


@pytest.fixture
def sessions(run, home: Path, tmp_path: Path) -> list[ClaudeSession]:
    """FILES Claude sessions in the default folder, indexed; the first has a subagent."""
    found = retry_projects(tmp_path / "claude-projects", FILES)
    subagent = found[0].path.with_suffix("") / "subagents" / "agent-a1.jsonl"
    agent = ClaudeSession(subagent, found[0].session_id, agent_id="a1")
    simple_turn(agent, "look for the retry loop", "found it in client.py")
    assert index_json(run, "--all")["files_changed"] == FILES + 1
    return found


def memex(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """A new `memex ARGS…` process writing to pipes, and the modules it imported."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines = result.stderr.splitlines()
    modules = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}
    result.stderr = "\n".join(line for line in lines if not line.startswith("import time:"))
    return result, modules


def cli_only(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in ("click", "rich") or m.startswith("memex.cli.app"))


def without_seconds(summary: str) -> list[str]:
    """The summary's lines but its time, spaces collapsed: the time's width (0.1, 0.123) sets the values'
    column, so two runs' alignments differ when it is the widest value."""
    return [" ".join(line.split()) for line in summary.splitlines() if not line.strip().startswith("seconds")]


def test_a_full_walk_finds_the_grown_and_the_new_transcript_without_the_cli(
    sessions: list[ClaudeSession], tmp_path: Path, run
) -> None:
    simple_turn(sessions[2], "the retry loop again", "now with a backoff")
    new_id = "0000aaaa-0000-4000-8000-000000000001"
    new = ClaudeSession(sessions[3].path.with_name(f"{new_id}.jsonl"), new_id)
    simple_turn(new, "a new session", "about the cache")
    result, modules = memex("index", "--no-embed", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["files"], report["files_changed"], report["sessions"]) == (FILES + 2, 2, FILES + 1)
    assert report["subagents"] == 1
    assert cli_only(modules) == [] and "memex.cli.lean" in modules
    assert "tempfile" not in modules  # imported only to restore an archived copy
    again = index_json(run, "--all")  # what the lean run wrote is the store's: nothing left to read
    assert (again["files"], again["files_changed"]) == (FILES + 2, 0)
    for words, session in (("backoff", sessions[2]), ("cache", new)):
        hits = json.loads(run("search", "--mode", "lexical", words, "--json").stdout)
        assert [hit["session_id"] for hit in hits] == [session.session_id]


def test_its_summary_is_the_click_commands(sessions: list[ClaudeSession], run) -> None:
    simple_turn(sessions[1], "one more prompt", "one more answer")
    lean, modules = memex("index", "--no-embed")
    assert lean.returncode == 0 and lean.stderr == ""
    assert cli_only(modules) == []
    simple_turn(sessions[1], "and another prompt", "and another answer")
    clicked = run("index", "--no-embed")
    assert clicked.exit_code == 0
    assert without_seconds(lean.stdout) == without_seconds(clicked.stdout)
    assert "changed 1" in without_seconds(lean.stdout)
    assert len({len(line) for line in lean.stdout.splitlines()}) == 1  # a table: every line as wide


def test_what_else_it_prints_is_printed_as_click_prints_it(sessions: list[ClaudeSession], run) -> None:
    """A file that cannot be read: its failure on stderr, exit status 1 (the CLI is imported for it)."""
    broken = sessions[4].path.with_name("0000bbbb-0000-4000-8000-000000000002.jsonl")
    os.symlink(broken.with_name("nowhere"), broken)  # named like a transcript, a link to nothing
    lean, _ = memex("index", "--no-embed")
    clicked = run("index", "--no-embed")
    assert lean.returncode == clicked.exit_code == 1
    assert lean.stderr.strip() == clicked.stderr.strip() and "broken symbolic link" in lean.stderr
    assert without_seconds(lean.stdout) == without_seconds(clicked.stdout)


def test_a_memex_error_is_one_line_as_from_click(sessions: list[ClaudeSession], run, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_INDEX_WORKERS", "0")  # out of its range: a configuration error
    lean, modules = memex("index", "--no-embed")
    clicked = run("index", "--no-embed")
    assert lean.returncode == clicked.exit_code != 0
    assert lean.stderr.strip() == clicked.stderr.strip() and lean.stderr.startswith("memex: error: ")
    assert "click" in modules  # imported to say it as click does


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["index", "--no-embed", "--agent", "claude"], {}),  # an option the lean run does not take
        (["index", "--workers", "1", "--no-embed"], {}),
        (["index", "--no-embed"], {"FORCE_COLOR": "1"}),  # rich would draw to the pipe as to a terminal
        (["index", "--no-embed"], {"TTY_COMPATIBLE": "1"}),
    ],
)
def test_other_command_lines_go_through_click(
    sessions: list[ClaudeSession], args: list[str], env: dict[str, str]
) -> None:
    result, modules = memex(*args, env=env)
    assert result.returncode == 0, result.stderr
    assert "click" in modules and "memex index" in result.stdout


@pytest.mark.parametrize("args", [("index", "--no-embed"), ("index", "--no-embed", "--json"), ("sessions", "list")])
def test_a_closed_standard_output_loses_the_output_not_the_work(
    sessions: list[ClaudeSession], args: tuple[str, ...]
) -> None:
    """`memex … >&-`: Python gives no stdout; the command still runs (the grown transcript is indexed) and
    ends with its status, not an AttributeError's traceback."""
    simple_turn(sessions[1], "and the timeout?", "raised it to 30 s")
    result = subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    again = memex("index", "--no-embed", "--json")[0]
    assert json.loads(again.stdout)["files_changed"] == (0 if args[0] == "index" else 1)


def test_closed_standard_streams_get_their_own_descriptors_back() -> None:
    """With stdin and stderr closed (`0<&- 2>&-`), each is opened on the null device in its own descriptor:
    the next file memex opens (the store) is not descriptor 0 or 2, where C code's writes would land in it."""

    def close_stdin_and_stderr() -> None:
        os.close(0)
        os.close(2)

    probe = (
        "import os, sys; from memex.cli.entry import _closed_streams_to_nowhere as reopen; reopen(); "
        "print(sys.stdin.fileno(), sys.stderr.fileno(), os.open(os.devnull, os.O_RDONLY)); print('x', file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, preexec_fn=close_stdin_and_stderr
    )
    assert result.returncode == 0
    stdin, stderr, next_file = map(int, result.stdout.split())
    assert (stdin, stderr) == (0, 2) and next_file > 2
