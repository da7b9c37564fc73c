"""Merging memex's hooks into Claude Code's `settings.json`, and taking them out again.

memex's handlers are recognised by their command (`… memex hook <Event>`), so `uninstall` removes exactly
them and nothing the user wrote. Writing keeps a timestamped backup beside the file and replaces it
atomically (a symlinked settings file, as dotfile managers make, is written through its link). Installing
twice writes once: a file that already holds the right handlers is not touched.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memex.config import Config
from memex.errors import UserError

SCOPES = ("user", "project", "local")
# The events memex handles, the matcher each is registered with, and which timeout applies.
EVENTS: list[tuple[str, str | None, str]] = [
    ("UserPromptSubmit", None, "hook_timeout_s"),
    ("Stop", None, "hook_ingest_timeout_s"),
    ("SubagentStop", None, "hook_ingest_timeout_s"),
    ("SessionEnd", None, "hook_ingest_timeout_s"),
    ("PreCompact", None, "hook_ingest_timeout_s"),
    ("SessionStart", "compact", "hook_timeout_s"),
    ("PreToolUse", "Read|Edit|MultiEdit|Write|NotebookEdit", "hook_timeout_s"),
    ("SubagentStart", None, "hook_timeout_s"),
]
_MEMEX_COMMAND = re.compile(r"""(?:^|[\s/\\'"])memex(?:\.exe)?['"]?\s+hook\s+([A-Za-z]+)\s*$""")
# Backups of one settings file kept beside it (older ones are removed).
KEEP_BACKUPS = 5
BACKUP_MARK = ".memex-backup-"


def settings_path(scope: str, project_dir: Path | None = None) -> Path:
    """The settings file of a scope: the user's (`$CLAUDE_CONFIG_DIR` or `~/.claude`), or the project's."""
    if scope == "user":
        return Path(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude").expanduser() / "settings.json"
    root = (project_dir or Path.cwd()).resolve()
    return root / ".claude" / ("settings.json" if scope == "project" else "settings.local.json")


def memex_command() -> str:
    """How Claude Code should call this memex, by an absolute path that works outside any venv."""
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name in ("memex", "memex.exe") and os.path.isfile(argv0):
        return shlex.quote(os.path.abspath(argv0))
    found = shutil.which("memex")
    if found:
        return shlex.quote(os.path.abspath(found))
    return f"{shlex.quote(sys.executable)} -m memex"


def is_memex_handler(handler: Any) -> bool:
    """True for a handler memex installed (recognised by its command)."""
    return (
        isinstance(handler, dict)
        and handler.get("type", "command") == "command"
        and isinstance(handler.get("command"), str)
        and _MEMEX_COMMAND.search(handler["command"]) is not None
    )


def handlers_for(config: Config, command: str) -> dict[str, dict[str, Any]]:
    """The matcher group memex installs for each event."""
    groups = {}
    for event, matcher, timeout in EVENTS:
        group: dict[str, Any] = {}
        if matcher:
            group["matcher"] = matcher
        group["hooks"] = [
            {"type": "command", "command": f"{command} hook {event}", "timeout": getattr(config, timeout)}
        ]
        groups[event] = group
    return groups


PLUGIN_FLAG = "--plugin"


def plugin_hooks(config: Config) -> dict[str, Any]:
    """The plugin's `hooks/hooks.json`: the handlers `install` writes, calling `memex` from PATH and marked
    `--plugin` so that they stand aside where settings hooks answer the same event (no double recall)."""
    groups = handlers_for(config, "memex")
    for group in groups.values():
        for handler in group["hooks"]:
            handler["command"] += f" {PLUGIN_FLAG}"
    return {
        "description": "memex: ingest on Stop, recall on every prompt (stand aside for settings hooks).",
        "hooks": {event: [group] for event, group in groups.items()},
    }


def answered_in_settings(event: str, project_dir: Path | None) -> Path | None:
    """The settings file (user, project or local) whose memex handlers already answer `event`, if any:
    the plugin's handler for that event then does nothing. Unreadable files count as holding none."""
    for scope in SCOPES:
        path = settings_path(scope, project_dir)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and event in installed(data):
            return path
    return None


def plugin_enabled(settings: dict[str, Any]) -> bool:
    """Whether a settings file enables a plugin named memex (from any marketplace)."""
    enabled = settings.get("enabledPlugins")
    return isinstance(enabled, dict) and any(str(name).split("@")[0] == "memex" and on for name, on in enabled.items())


def _strip_memex(settings: dict[str, Any]) -> dict[str, int]:
    """Remove memex's handlers in place; returns, per event, the index of the first group that held one."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return {}
    positions: dict[str, int] = {}
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept.append(group)
                continue
            ours = [h for h in group["hooks"] if is_memex_handler(h)]
            if not ours:
                kept.append(group)
                continue
            positions.setdefault(event, len(kept))
            rest = [h for h in group["hooks"] if not is_memex_handler(h)]
            if rest:
                kept.append({**group, "hooks": rest})
        if event in positions and not kept:
            del hooks[event]
        else:
            hooks[event] = kept
    if positions and not hooks:
        del settings["hooks"]
    return positions


def merged(settings: dict[str, Any], groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """`settings` with memex's groups in place of any memex handlers it held (other content untouched)."""
    result = json.loads(json.dumps(settings))
    positions = _strip_memex(result)
    hooks = result.get("hooks")
    if hooks is None:
        hooks = result["hooks"] = {}
    if not isinstance(hooks, dict):
        raise UserError('the settings file\'s "hooks" is not an object; fix it by hand first')
    for event, group in groups.items():
        existing = hooks.get(event)
        if existing is None:
            existing = hooks[event] = []
        if not isinstance(existing, list):
            raise UserError(f'the settings file\'s "hooks.{event}" is not a list; fix it by hand first')
        existing.insert(positions.get(event, len(existing)), group)
    return result


def removed(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` without memex's handlers."""
    result = json.loads(json.dumps(settings))
    _strip_memex(result)
    return result


def installed(settings: dict[str, Any]) -> dict[str, list[str]]:
    """The memex commands registered per event."""
    found: dict[str, list[str]] = {}
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler in handlers if isinstance(handlers, list) else []:  # another tool's null is no list
                if is_memex_handler(handler):
                    found.setdefault(event, []).append(handler["command"])
    return found


@dataclass
class SettingsFile:
    """A settings file as read: its parsed content and how it was indented."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    exists: bool = False
    indent: int = 2

    @classmethod
    def read(cls, path: Path) -> SettingsFile:
        target = path.resolve() if path.is_symlink() else path
        try:
            if not stat.S_ISREG(target.stat().st_mode):  # a device or a folder: /dev/zero never ends
                raise UserError(f"{path} is not a regular file; memex leaves it alone")
            text = target.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return cls(target)
        except UnicodeDecodeError as exc:
            reason = f"{exc.reason} at byte {exc.start}"
            raise UserError(f"{path} is not UTF-8 text ({reason}); memex leaves it alone") from None
        except OSError as exc:
            raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
        if not text.strip():
            return cls(target, {}, True)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UserError(f"{path} is not valid JSON ({exc}); memex leaves it alone") from None
        if not isinstance(data, dict):
            raise UserError(f"{path} does not hold a JSON object; memex leaves it alone")
        indent = re.search(r"^( +)\S", text, re.MULTILINE)
        return cls(target, data, True, len(indent.group(1)) if indent else 2)

    def write(self, data: dict[str, Any]) -> Path | None:
        """Back up the current file (if any), then replace it atomically; returns the backup's path
        (UserError when the folder cannot be written)."""
        try:
            return self._write(data)
        except OSError as exc:
            raise UserError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def _write(self, data: dict[str, Any]) -> Path | None:
        backup = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.exists:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            backup = self.path.with_name(f"{self.path.name}{BACKUP_MARK}{stamp}")
            for again in itertools.count(2):  # a second write within the second keeps the first's backup
                if not backup.exists():
                    break
                backup = self.path.with_name(f"{self.path.name}{BACKUP_MARK}{stamp}-{again}")
            shutil.copy2(self.path, backup)
            self._prune_backups()
        text = json.dumps(data, indent=self.indent, ensure_ascii=False) + "\n"
        handle, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            if self.exists:
                os.chmod(temp, self.path.stat().st_mode & 0o777)
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        self.data, self.exists = data, True
        return backup

    def _prune_backups(self) -> None:
        backups = sorted(self.path.parent.glob(f"{self.path.name}{BACKUP_MARK}*"))
        for old in backups[:-KEEP_BACKUPS]:
            old.unlink(missing_ok=True)


@dataclass
class Change:
    """What install or uninstall did to one settings file."""

    path: Path
    changed: bool
    backup: Path | None
    events: list[str]


def install(config: Config, path: Path, command: str | None = None) -> Change:
    """Merge memex's hooks into the settings file at `path` (idempotent)."""
    settings = SettingsFile.read(path)
    groups = handlers_for(config, command or memex_command())
    wanted = merged(settings.data, groups)
    if settings.exists and wanted == settings.data:
        return Change(settings.path, False, None, list(groups))
    backup = settings.write(wanted)
    return Change(settings.path, True, backup, list(groups))


def uninstall(path: Path) -> Change:
    """Remove memex's hooks (and only them) from the settings file at `path`."""
    settings = SettingsFile.read(path)
    events = list(installed(settings.data))
    if not events:
        return Change(settings.path, False, None, [])
    backup = settings.write(removed(settings.data))
    return Change(settings.path, True, backup, events)
