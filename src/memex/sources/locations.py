"""Where each agent keeps its sessions by default, and the agents' own variables that move them.

A setting (`copilot_dir`…) left at its default follows the agent's variable when that is set, so memex
finds the sessions wherever the agent itself would write them; a setting given in `config.toml` or as
`MEMEX_<SETTING>` wins over both.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from memex.config import Config
from memex.sources.files import problem

# agent -> its folders: (setting, the agent's variable, the folder under that variable's value).
_AGENT_HOMES: dict[str, list[tuple[str, str | None, str]]] = {
    "claude": [("claude_dir", "CLAUDE_CONFIG_DIR", "projects")],
    "codex": [("codex_dir", "CODEX_HOME", "sessions")],
    "gemini": [("gemini_dir", "GEMINI_CLI_HOME", ".gemini/tmp")],  # that variable names a home, not .gemini
    "copilot": [("copilot_dir", "COPILOT_HOME", "session-state")],
    "qwen": [("qwen_dir", None, "")],
    "pi": [("pi_dir", "PI_CODING_AGENT_DIR", "sessions")],
    "kimi": [("kimi_dir", "KIMI_CODE_HOME", "sessions"), ("kimi_legacy_dir", None, "")],
    "cline": [("cline_dir", None, "")],
    "roo": [],
    "aider": [],
    "cursor": [("cursor_dir", None, ""), ("cursor_state_db", None, "")],
    "opencode": [("opencode_db", "XDG_DATA_HOME", "opencode/opencode.db")],
}
_MACOS_CURSOR_DB = Path("~/Library/Application Support/Cursor/User/globalStorage/state.vscdb")
# Agents that keep histories in project folders (found through the folders memex already knows): Aider's
# `.aider.chat.history.md`, SpecStory's `.specstory/history/` (Cursor chats).
PROJECT_AGENTS = frozenset({"aider", "cursor"})
# Their names in a project folder (kept here, not in the adapters: finding none must not import them).
AIDER_HISTORY = ".aider.chat.history.md"
SPECSTORY_FOLDER = ".specstory"
# Editor extensions keep their tasks in the editor's global storage: `<editor>/User/globalStorage/<extension>`.
_EDITOR_BASES = ("~/.config", "~/Library/Application Support", "~/AppData/Roaming")
_EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
_EXTENSIONS = {"cline": "saoudrizwan.claude-dev", "roo": "rooveterinaryinc.roo-cline"}


def editor_task_folders(extension: str, env: Mapping[str, str]) -> list[Path]:
    """The `tasks` folders of an editor extension, in every VS Code-family editor installed."""
    bases = [Path(base).expanduser() for base in _EDITOR_BASES]
    if env.get("XDG_CONFIG_HOME"):
        bases.insert(0, Path(env["XDG_CONFIG_HOME"]))
    folders = [base / editor / "User" / "globalStorage" / extension / "tasks" for base in bases for editor in _EDITORS]
    return [folder for folder in dict.fromkeys(folders) if folder.is_dir()]


def _setting(config: Config, name: str, variable: str | None, below: str, env: Mapping[str, str]) -> Path:
    value: Path = getattr(config, name)
    default: Path = getattr(Config, name).expanduser()  # the class holds each setting's default
    if variable and value == default and env.get(variable):
        return Path(env[variable]).expanduser() / below
    return value


def missing_settings(config: Config) -> list[tuple[str, Path]]:
    """The agent folder settings moved from their default (in `config.toml` or `MEMEX_<SETTING>`) to a path
    that does not exist: a typo there finds no session and says nothing while indexing."""
    missing = []
    for homes in _AGENT_HOMES.values():
        for name, _, _ in homes:
            value: Path = getattr(config, name)
            if value != getattr(Config, name).expanduser() and not os.path.lexists(value):
                missing.append((name, value))
    return missing


def project_histories(projects: Iterable[str]) -> list[Path]:
    """The Aider history files of the given project folders (each looked up directly, never searched)."""
    found = []
    for project in projects:
        path = Path(project) / AIDER_HISTORY
        if os.path.lexists(path) and problem(path) is None:
            found.append(path)
    return found


def project_exports(projects: Iterable[str]) -> list[Path]:
    """The SpecStory history folders of the given project folders (looked up directly, never searched)."""
    folders = [Path(p) / SPECSTORY_FOLDER / "history" for p in projects]
    return [f for f in folders if f.is_dir()]


def project_roots(agent: str, projects: Iterable[str]) -> list[Path]:
    """Where `agent` keeps histories inside the given project folders (each looked up, never searched)."""
    if agent == "aider":
        return project_histories(projects)
    if agent == "cursor":
        return project_exports(projects)
    return []


def agent_roots(
    config: Config, agent: str, projects: Iterable[str] = (), env: Mapping[str, str] | None = None
) -> list[Path]:
    """The folders (or files) `agent`'s sessions are found under on this computer."""
    env = os.environ if env is None else env
    roots = [_setting(config, *home, env) for home in _AGENT_HOMES[agent]]
    if agent == "aider":  # the folders named in the settings; every known project's (`project_roots`)
        roots += project_histories(p for p in config.aider_dirs.split(os.pathsep) if p.strip())
    if agent == "cursor" and _MACOS_CURSOR_DB.expanduser().is_file():
        roots.append(_MACOS_CURSOR_DB.expanduser())
    roots += project_roots(agent, projects)
    if agent in _EXTENSIONS:
        roots += editor_task_folders(_EXTENSIONS[agent], env)
    if agent == "codex":  # Codex moves old rollouts to an archive beside its sessions
        archive = roots[0].parent / "archived_sessions"
        if roots[0].name == "sessions" and archive.is_dir():
            roots.append(archive)
    return roots
