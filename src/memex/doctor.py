"""`memex doctor`: one look at everything memex depends on, each check with what to do about it.

Checks: the store (opens, schema, integrity), the Claude Code hooks, the warm server, the daemon, Redis
and what waits to be published, the archive (copies missing or damaged), disk use, local sessions left
under an old computer name, agent folder settings naming no folder, an embedding model memex does not
know, and the agents' own cleanup: Claude Code deletes transcripts older than `cleanupPeriodDays` (30 by
default), so a transcript about to go that memex has no full copy of is named.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memex.config import Config

# Claude Code's default `cleanupPeriodDays`.
CLAUDE_CLEANUP_DAYS = 30
# A transcript this close to its agent's cleanup is "about to be deleted".
CLEANUP_WARNING_DAYS = 7
# Below this much free space where MEMEX_HOME lives, the store and the archive may not grow.
MIN_FREE_BYTES = 1 << 30


@dataclass
class Check:
    """One line of the doctor's report: `ok`, `info`, `warn` or `fail`, what was found, what to do."""

    name: str
    status: str
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).stat().st_size
    return total


def _mib(size: int) -> str:
    return f"{size / 1_048_576:.1f} MiB"


def check_store(config: Config) -> tuple[Check, sqlite3.Connection | None]:
    from memex.errors import MemexError
    from memex.store.db import connect_readonly, integrity, store_writable
    from memex.store.queries import session_count

    if not config.db_path.exists():
        return Check("store", "fail", f"no database at {config.db_path}", "run `memex index`"), None
    try:
        conn = connect_readonly(config.db_path, config.busy_timeout_ms)
        verdict = integrity(conn)
        sessions = session_count(conn)
    except (MemexError, sqlite3.DatabaseError) as exc:
        return Check("store", "fail", str(exc), "move the database aside and run `memex index` to rebuild it"), None
    if verdict != "ok":
        return Check("store", "fail", f"integrity check: {verdict}", "rebuild: move it aside, `memex index`"), conn
    detail = f"{config.db_path} ({_mib(_size(config.db_path))}, {sessions} sessions)"
    if not store_writable(config.db_path):
        # Reads work, but the hooks, `memex index` and the daemon cannot add a session: say so here.
        return Check(
            "store",
            "warn",
            f"{detail} is read-only: searches read it, but no hook, `memex index` or daemon can add sessions",
            f"make {config.home} writable by this user (its permissions, or the mount)",
        ), conn
    return Check("store", "ok", detail), conn


def check_hooks() -> Check:
    from memex.hooks import installer

    path = installer.settings_path("user")
    try:
        events = installer.installed(installer.SettingsFile.read(path).data)
    except Exception as exc:
        return Check("hooks", "warn", f"{path} cannot be read: {exc}", "fix the file, then `memex hooks install`")
    if "Stop" in events and "UserPromptSubmit" in events:
        missing = sorted({program for commands in events.values() for program in _missing_programs(commands)})
        if missing:
            return Check(
                "hooks",
                "warn",
                f"installed in {path}, but they run {', '.join(missing)}, which is not there any more",
                "`memex hooks install` (points them at this memex)",
            )
        # Installed by an earlier memex: an event added since (SessionEnd) is not handled.
        absent = [event for event, _, _ in installer.EVENTS if event not in events]
        if absent:
            return Check(
                "hooks",
                "warn",
                f"installed in {path}, but not for {', '.join(absent)} (added since they were installed)",
                "`memex hooks install` (adds them)",
            )
        return Check("hooks", "ok", f"installed in {path} ({', '.join(sorted(events))})")
    return Check("hooks", "warn", f"not installed in {path}", "`memex hooks install` (recall and live indexing)")


def _missing_programs(commands: list[str]) -> list[str]:
    """The programs these hook commands start that cannot be found (a venv or checkout moved or deleted
    since `memex hooks install` wrote their absolute path): Claude Code then fails every hook quietly."""
    missing = []
    for command in commands:
        try:
            program = shlex.split(command)[0]
        except (ValueError, IndexError):
            continue
        if shutil.which(program) is None:
            missing.append(program)
    return missing


def check_warm(config: Config) -> Check:
    from memex.hooks import warm

    live = warm.servers(config.home)
    if not live:
        return Check("warm server", "info", "not running (a prompt starts it when hooks are installed)")
    pid = live.pop(warm.server_key(config), None)
    shown = [f"pid {pid}"] if pid else ["none for these settings"]
    if live:  # started by hooks run with other MEMEX_* settings (another shell, another agent)
        shown.append(f"{len(live)} for other settings (pid {', '.join(map(str, live.values()))})")
    return Check("warm server", "ok", f"running ({'; '.join(shown)})")


def check_daemon(config: Config) -> Check:
    from memex.pids import live_pid
    from memex.signals import PID_FILE

    pid = live_pid(config.home / PID_FILE)
    if pid is None:
        return Check("daemon", "info", "not running", "`memex daemon` shares mirrors and keeps the index live")
    return Check("daemon", "ok", f"running (pid {pid})")


def check_redis(config: Config, conn: sqlite3.Connection | None) -> Check:
    if not config.redis_url:
        return Check("redis", "info", "redis_url is empty: this computer shares with no other")
    import redis

    from memex.store.archive import publication_backlog
    from memex.sync.link import connect_redis, display_url

    waiting, unsent = publication_backlog(conn) if conn else (0, 0)
    backlog = f"; {waiting} mirrors and {unsent} forgettings wait to be published" if waiting or unsent else ""
    client = None
    try:
        client = connect_redis(config.redis_url, 1.5)
        client.ping()
    except redis.RedisError as exc:  # unreachable (ConnectionError, TimeoutError) or refusing
        return Check("redis", "warn", f"{display_url(config.redis_url)} unreachable ({exc}){backlog}")
    finally:
        if client is not None:
            client.close()
    return Check("redis", "ok", f"{display_url(config.redis_url)} answers{backlog}")


def _claude_cleanup_days() -> int:
    from memex.hooks import installer

    try:
        data = json.loads(installer.settings_path("user").read_text(encoding="utf-8"))
        days = data.get("cleanupPeriodDays", CLAUDE_CLEANUP_DAYS)
        return int(days) if isinstance(days, (int, float)) and not isinstance(days, bool) else CLAUDE_CLEANUP_DAYS
    except (OSError, ValueError, AttributeError):
        return CLAUDE_CLEANUP_DAYS


def at_risk(config: Config, conn: sqlite3.Connection | None, now: float | None = None) -> tuple[int, list[Path]]:
    """Claude Code's cleanup period, and the transcripts it deletes within `CLEANUP_WARNING_DAYS` (or has
    overdue) of which memex has no full copy."""
    from memex.sources.locations import agent_roots

    days = _claude_cleanup_days()
    now = time.time() if now is None else now
    limit = now - (days - CLEANUP_WARNING_DAYS) * 86_400
    archived: dict[str, int] = {}
    if conn is not None and config.archive_enabled:
        from memex.store.archive import archived_sizes

        archived = archived_sizes(conn)
    risky = []
    for root in agent_roots(config, "claude"):
        if not root.is_dir():
            continue
        for path in root.rglob("*.jsonl"):
            with contextlib.suppress(OSError):
                stat = path.stat()
                copied = max(archived.get(str(path), -1), archived.get(str(path.resolve()), -1))
                if stat.st_mtime < limit and copied < stat.st_size:
                    risky.append(path)
    return days, sorted(risky)


def check_cleanup(config: Config, conn: sqlite3.Connection | None) -> Check:
    days, risky = at_risk(config, conn)
    if not risky:
        return Check("agent cleanup", "ok", f"Claude Code deletes transcripts after {days} days; memex has copies")
    fix = "`memex index` copies them" if config.archive_enabled else "set archive_enabled = 1, then `memex index`"
    shown = ", ".join(p.name for p in risky[:3]) + (" …" if len(risky) > 3 else "")
    return Check(
        "agent cleanup",
        "warn",
        f"{len(risky)} Claude Code transcripts go within {CLEANUP_WARNING_DAYS} days (cleanupPeriodDays {days}) "
        f"and memex has no full copy: {shown}",
        fix,
    )


def check_archive(config: Config, conn: sqlite3.Connection | None) -> Check:
    from memex.archive.copies import archive_root
    from memex.archive.reader import lost_copies, source_exists
    from memex.store.archive import archive_statistics, pending_sources

    if conn is None:
        return Check("archive", "info", "no store yet")
    stats = archive_statistics(conn)
    root = archive_root(config)
    damaged = [row.archive_path for row in lost_copies(conn, root)]
    # A pending transcript deleted before it was copied cannot be: it is no work for `memex index`.
    uncopied = sum(source_exists(agent, path) for agent, path in pending_sources(conn))
    detail = (
        f"{stats['archived_transcripts']} transcripts, {_mib(stats['archive_bytes'])} for "
        f"{_mib(stats['archived_transcript_bytes'])} (ratio {stats['archive_ratio'] or '—'}), "
        f"{stats['archived_originals_gone']} kept after their agent deleted them"
    )
    if damaged:
        return Check(
            "archive",
            "fail",
            f"{detail}; {len(damaged)} copies missing or cut short: {damaged[0]}",
            "`memex index --check-archive` copies again those whose transcript is still on disk",
        )
    if not config.archive_enabled:
        return Check("archive", "warn", f"turned off (archive_enabled = 0); {detail}", "set archive_enabled = 1")
    if uncopied:
        return Check(
            "archive", "warn", f"{detail}; {uncopied} transcripts have no up-to-date copy yet", "`memex index`"
        )
    return Check("archive", "ok", detail)


def check_disk(config: Config) -> Check:
    used = _size(config.home) if config.home.exists() else 0
    free = shutil.disk_usage(config.home if config.home.exists() else config.home.parent).free
    detail = f"MEMEX_HOME {config.home} uses {_mib(used)}; {free / 1_073_741_824:.1f} GiB free"
    if free < MIN_FREE_BYTES:
        return Check("disk", "warn", detail, "free some space: the store and the archive grow with every session")
    return Check("disk", "ok", detail)


def check_computer_name(config: Config, conn: sqlite3.Connection | None) -> Check:
    from memex.store.computers import stranded

    old = stranded(conn, config.computer) if conn is not None else {}
    if old:
        names = ", ".join(f"{name} ({count})" for name, count in old.items())
        return Check("computer", "warn", f"sessions stored under an earlier name: {names}", "`memex index` moves them")
    return Check("computer", "ok", f"this computer is {config.computer!r}")


def check_agent_folders(config: Config) -> Check:
    from memex.sources.locations import missing_settings

    missing = missing_settings(config)
    if missing:
        named = ", ".join(f"{name} = {path}" for name, path in missing)
        return Check("agent folders", "warn", f"set to folders that do not exist: {named}", "fix or remove the setting")
    return Check("agent folders", "ok", "every agent folder set by hand exists (the others are the agents' own)")


def check_embed_model(config: Config) -> Check:
    """The embedding model setting names a model memex has (it is not loaded: that takes a while)."""
    from memex.embed.model import EmbedderUnavailable, backend_of

    try:
        backend_of(config)
    except EmbedderUnavailable as exc:
        fix = "fix the setting (or remove it for the default): until then search and recall go by words only"
        return Check("embedding", "warn", str(exc), fix)
    return Check("embedding", "ok", f"embed_model {config.embed_model!r}")


def diagnose(config: Config) -> list[Check]:
    """Every check, in the order the report shows them."""
    store, conn = check_store(config)
    try:
        return [
            store,
            check_hooks(),
            check_warm(config),
            check_daemon(config),
            check_redis(config, conn),
            check_archive(config, conn),
            check_cleanup(config, conn),
            check_disk(config),
            check_computer_name(config, conn),
            check_agent_folders(config),
            check_embed_model(config),
        ]
    finally:
        if conn is not None:
            conn.close()
