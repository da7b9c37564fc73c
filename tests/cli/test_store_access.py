"""MEMEX_HOME is checked with one clear line; a store this process cannot write serves every read
command; the store's files are the user's alone (0600).

A read-only store is made two real ways, each running the real `memex` executable:
- `mount`: MEMEX_HOME bind-mounted read-only in a private mount namespace (`unshare --user --mount`),
  so every write fails with EROFS whoever the process is: the "read-only mount" of the issue;
- `permissions`: the folder and its files without write permission (chmod a-w), like another user's
  store. The tests run as root, which ignores permissions, so the command runs with the capabilities
  that bypass them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) dropped from its bounding set (`setpriv`):
  root is then held to the mode bits like any user.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.store.db import connect
from transcripts import ClaudeSession, simple_turn, tool_use

pytestmark = [pytest.mark.subprocess]

MEMEX = str(Path(sys.executable).parent / "memex")
FIRST = "a0a0a0a0-1111-2222-3333-444444444444"
SECOND = "b0b0b0b0-1111-2222-3333-444444444444"


def _works(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=30).returncode == 0
    except OSError:
        return False


MOUNT = ["unshare", "--user", "--map-root-user", "--mount"]
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", "--"]


def read_only_command(method: str, home: Path, args: list[str]) -> list[str]:
    """The command line that runs `memex ARGS` with `home` read-only (see the module's docstring)."""
    if method == "mount":
        if not _works([*MOUNT, "sh", "-c", 'mount --bind -o ro "$0" "$0"', str(home)]):
            pytest.skip("no private mount namespace here (unshare --user --mount)")
        script = 'mount --bind -o ro "$0" "$0" && exec "$@"'
        return [*MOUNT, "sh", "-c", script, str(home), MEMEX, *args]
    if os.geteuid() == 0:
        if not _works([*NO_DAC, "true"]):
            pytest.skip("cannot drop CAP_DAC_OVERRIDE here (setpriv)")
        return [*NO_DAC, MEMEX, *args]
    return [MEMEX, *args]


@pytest.fixture
def store(run, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An indexed and embedded store whose vector cache is out of date (vectors were added after the
    last search), closed cleanly (no -wal or -shm left), shared with no Redis."""
    monkeypatch.setenv("MEMEX_REDIS_URL", "")
    projects = tmp_path / "projects" / "-home-dev-shop"
    first = ClaudeSession(projects / f"{FIRST}.jsonl", FIRST)
    simple_turn(first, "the checkout total is wrong when a discount applies", "Fixed the rounding", edit="cart.py")
    assert run("index", str(projects.parent)).exit_code == 0
    assert run("embed").exit_code == 0
    assert run("search", "checkout discount").exit_code == 0  # writes the vector cache
    second = ClaudeSession(projects / f"{SECOND}.jsonl", SECOND)
    question = "怎么删除一个 git worktree？我想清理掉旧的工作树"
    simple_turn(second, question, "用 git worktree remove 删除。", edit="cart.py")
    assert run("index", str(projects.parent)).exit_code == 0
    assert run("embed").exit_code == 0
    assert run("find-related", "sessions", FIRST[:8]).exit_code == 0  # the centroids are computed
    conn = connect(home / "memex.db")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert not Path(f"{home}/memex.db-shm").exists() and not Path(f"{home}/memex.db-wal").exists()
    yield home
    _set_writable(home, True)


def _set_writable(home: Path, writable: bool) -> None:
    for path in [home, *home.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _snapshot(home: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(home.rglob("*"))}


@pytest.mark.parametrize("method", ["mount", "permissions"])
def test_every_read_command_works_on_a_read_only_store(store: Path, method: str) -> None:
    if method == "permissions":
        _set_writable(store, False)
    before = _snapshot(store)

    def memex(*args: str) -> subprocess.CompletedProcess[str]:
        command = read_only_command(method, store, list(args))
        return subprocess.run(command, capture_output=True, text=True, timeout=120, env=os.environ)

    def ok(*args: str) -> str:
        result = memex(*args)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        return result.stdout

    # Search by meaning reads the vectors added since the cache was written (kept in memory).
    found = json.loads(ok("search", "how do I remove a git worktree", "--mode", "semantic", "--json"))
    assert SECOND in [hit["session_id"] for hit in found]
    hybrid = json.loads(ok("search", "checkout discount", "--json"))
    assert hybrid[0]["session_id"] == FIRST and "semantic unavailable" not in json.dumps(hybrid)
    assert "worktree" in ok("show", SECOND[:8])
    assert "Fixed the rounding" in ok("show", FIRST[:8], "--turns")
    assert FIRST[:8] in ok("sessions", "list")
    assert json.loads(ok("stats", "--json"))["sessions"] == 2
    ok("computers")
    assert SECOND[:8] in ok("find-related", "sessions", FIRST[:8])  # its centroids were computed before

    # Commands that write say so in one line.
    for args in (["index", str(store)], ["embed"]):
        refused = memex(*args)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr == (
            f"memex: error: MEMEX_HOME {store} is read-only: this command writes to the store (search, show, "
            "sessions, stats and computers read it as it is)\n"
        )
    assert _snapshot(store) == before  # nothing was written


def test_find_related_on_a_read_only_store_says_what_it_needs(run, home: Path, tmp_path: Path) -> None:
    projects = tmp_path / "projects" / "-home-dev-shop"
    for session_id in (FIRST, SECOND):
        session = ClaudeSession(projects / f"{session_id}.jsonl", session_id)
        session.write(session.prompt("edit the cart"))
        session.write(session.assistant(tool_use("t", "Read", file_path="/home/dev/shop/a.py")))
    assert run("index", str(projects.parent)).exit_code == 0
    command = read_only_command("mount", home, ["find-related", "sessions", FIRST[:8]])
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == (
        f"memex: error: MEMEX_HOME {home} is read-only and find-related must first store the vectors of new "
        "file paths and sessions there: run it once where the store can be written\n"
    )


@pytest.mark.parametrize("command", [["sessions", "list"], ["search", "x"], ["index"], ["stats"], ["embed"]])
def test_memex_home_that_is_a_file(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command) -> None:
    home = tmp_path / "not-a-folder"
    home.write_text("")
    monkeypatch.setenv("MEMEX_HOME", str(home))
    result = run(*command)
    assert result.exit_code == 2
    assert result.stderr == f"memex: error: MEMEX_HOME {home} is not a folder: point MEMEX_HOME at a folder\n"


def test_memex_home_that_cannot_be_created(tmp_path: Path) -> None:
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(0o555)
    home = parent / "memex"
    env = {**os.environ, "MEMEX_HOME": str(home), "MEMEX_INDEX_EMBEDS": "0"}
    command = [*NO_DAC, MEMEX, "index", str(tmp_path)] if os.geteuid() == 0 else [MEMEX, "index", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    parent.chmod(0o755)
    assert result.returncode == 2
    assert result.stderr == f"memex: error: cannot create MEMEX_HOME {home}: Permission denied\n"


def test_store_files_are_private(run, home: Path, tmp_path: Path) -> None:
    projects = tmp_path / "projects" / "-home-dev-shop"
    simple_turn(ClaudeSession(projects / f"{FIRST}.jsonl", FIRST), "token rotation", "rotated")
    assert run("index", str(projects.parent)).exit_code == 0
    assert run("embed").exit_code == 0
    assert run("search", "token rotation").exit_code == 0
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    conn = connect(home / "memex.db")  # held open: its -wal and -shm exist
    try:
        for suffix in ("", "-wal", "-shm"):
            assert stat.S_IMODE(Path(f"{home}/memex.db{suffix}").stat().st_mode) == 0o600, suffix
    finally:
        conn.close()
    cache = [p for p in (home / "vectors").rglob("*") if p.is_file()]
    assert cache and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in cache if "anchors" not in p.name)
    assert stat.S_IMODE((home / "embed.lock").stat().st_mode) == 0o600


def test_a_store_left_readable_by_others_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "memex.db"
    sqlite3.connect(path).close()
    path.chmod(0o644)
    connect(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_unwritable_store_is_not_created_by_readers(run, home: Path) -> None:
    result = run("sessions", "list")
    assert result.exit_code == 2 and "no memex database" in result.stderr
    assert not home.exists()


@pytest.mark.parametrize("method", ["mount", "permissions"])
def test_doctor_says_when_the_store_cannot_be_written(store: Path, method: str) -> None:
    """A read-only MEMEX_HOME serves searches, but no hook, `memex index` or daemon can add a session:
    the doctor names it rather than reporting the store ok."""
    if method == "permissions":
        _set_writable(store, False)
    command = read_only_command(method, store, ["doctor", "--json"])
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=os.environ)
    assert "Traceback" not in result.stderr
    checks = {check["name"]: check for check in json.loads(result.stdout)["checks"]}
    assert checks["store"]["status"] == "warn", checks["store"]
    assert "read-only" in checks["store"]["detail"] and "2 sessions" in checks["store"]["detail"]
    assert checks["store"]["fix"]
    # Writable again, the store is ok.
    _set_writable(store, True)
    result = subprocess.run([MEMEX, "doctor", "--json"], capture_output=True, text=True, timeout=120, env=os.environ)
    assert {c["name"]: c for c in json.loads(result.stdout)["checks"]}["store"]["status"] == "ok"
