"""Files a turn touched: tool inputs, `@path` mentions in prompts; paths normalised to the project root."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from memex.sources.model import ToolUse

# Keys under which agents' tools name a file or folder (Claude, Gemini and MCP tools alike).
_PATH_KEYS = ("file_path", "notebook_path", "path", "absolute_path", "filePath", "dir_path")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
# `@src/app.py`, `@./README.md`, `@docs/` — a path-looking word after '@' at a word start (not emails).
_AT_MENTION = re.compile(r"(?:(?<=\s)|^)@((?:~|\.{1,2})?/?(?:[\w.\-]+/)*[\w.\-]+/?)", re.MULTILINE)
# `@biomejs/biome`, `@types/node@20`, `@typescript-eslint/no-explicit-any`: an npm scope and name (lowercase,
# no extension), which prompts quote in install commands and pasted tool output. Claude Code's completion
# writes a folder with its `/` and a file with its extension, so what this leaves out is rarely a path.
_NPM_PACKAGE = re.compile(r"[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*")
_EXTENSION = re.compile(r"\.\w{1,8}$")


def normalize_path(path: str, project_dir: str | None) -> str:
    """A path relative to the project root when inside it, else absolute; always with `/`."""
    path = path.strip()
    if _WINDOWS_DRIVE.match(path) or "\\" in path:
        path = path.replace("\\", "/")
    path = posixpath.normpath(path) if path else path
    if project_dir:
        root = posixpath.normpath(project_dir.replace("\\", "/"))
        if path == root:
            return "."
        if path.startswith(root + "/"):
            return path[len(root) + 1 :]
    return path.removeprefix("./")


def tool_paths(tool: ToolUse) -> Iterator[str]:
    """The file paths named in one tool call's input."""
    for key in _PATH_KEYS:
        value = tool.input.get(key)
        if isinstance(value, str) and value.strip():
            yield value
    yield from tool.paths
    edits = tool.input.get("edits")
    if tool.name == "MultiEdit" and isinstance(edits, list):
        for edit in edits:
            if isinstance(edit, dict) and isinstance(edit.get("file_path"), str):
                yield edit["file_path"]


# What tells a prompt speaks of npm packages: an install command, package.json, pasted npm, knip or prisma
# output ("Unused devDependencies"). Without it, `@bin/setup` is a file (a script has no extension).
_NPM_CONTEXT = re.compile(r"npm|yarn|npx|node_modules|package\.json|dependenc|\bbunx\b|\bbun (?:add|i)", re.IGNORECASE)
# A project's usual top folders: `@src/utils` is a file there even in a prompt that speaks of packages (a
# package of such a scope is still one with its version, `@app/cli@2`). Migration 14 names them too.
SOURCE_FOLDERS = frozenset(
    {"src", "lib", "app", "apps", "test", "tests", "spec", "bin", "script", "scripts", "doc", "docs", "packages"}
)


def at_mentions(text: str) -> list[str]:
    """Paths the user pointed at with `@path` in a prompt (a word with a `/` or a file extension), not npm
    packages (`@scope/name` with a version, `@types/node@20`, or in a prompt that speaks of packages when
    the scope is no usual source folder: `@src/utils` stays a file)."""
    found = []
    npm = _NPM_CONTEXT.search(text) is not None
    for match in _AT_MENTION.finditer(text):
        candidate = match.group(1).rstrip(".")
        versioned = text.startswith("@", match.end())
        spoken_of = npm and candidate.partition("/")[0] not in SOURCE_FOLDERS
        if (versioned or spoken_of) and is_package(candidate):
            continue
        if "/" in candidate or _EXTENSION.search(candidate):
            found.append(candidate)
    return found


def is_package(candidate: str) -> bool:
    """Whether `@candidate` reads as a scoped npm package: `scope/name` in lowercase, no extension."""
    return _NPM_PACKAGE.fullmatch(candidate) is not None and not _EXTENSION.search(candidate)
