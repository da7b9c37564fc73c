"""File paths named by shell commands and patches (Codex and Gemini run tools through a shell).

Conservative by design: only the arguments of commands that plainly read or write a file, and only
words that look like paths, are taken. A missed path costs less than an invented one.
"""

from __future__ import annotations

import posixpath
import re
import shlex

# `*** Update File: src/a.py` and friends, in the patch format of Codex's apply_patch tool.
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)
# Commands whose non-option arguments are files to read.
_FILE_READERS = {"cat", "nl", "head", "tail", "less", "more", "wc", "bat", "stat", "file", "diff", "touch", "rm"}
# Commands whose first non-option argument is a pattern, the rest paths.
_PATTERN_FIRST = {"rg", "grep", "egrep", "fgrep", "ag"}
_SEARCH_VALUE_OPTIONS = frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "--glob", "--type", "--max-count"})
# Options that take a value (the value is not a path), per command.
_VALUE_OPTIONS = {
    "head": frozenset({"-n", "-c"}),
    "tail": frozenset({"-n", "-c"}),
    "sed": frozenset({"-e", "-f", "-l"}),
    **{
        name: {"-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "--glob", "--type", "--max-count"}
        for name in _PATTERN_FIRST
    },
}
_HEREDOC = re.compile(r"<<-?\s*['\"]?([A-Za-z_]\w*)['\"]?")
_SEGMENT = re.compile(r"&&|\|\||[;|\n]")
_SHELL_WORD = re.compile(r"[$`*?{}\[\]<>()]")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,10}$")


def patch_paths(patch: str) -> list[str]:
    """Files an apply_patch text adds, updates, deletes or moves to."""
    return [match.group(1) or match.group(2) for match in _PATCH_FILE.finditer(patch)]


def _looks_like_file(word: str) -> bool:
    if not word or word.startswith("-") or _SHELL_WORD.search(word) or word in (".", "..", "/dev/null"):
        return False
    last = word.rstrip("/").rsplit("/", 1)[-1]
    return bool(_EXTENSION.search(last)) or ("/" in word and not word.endswith("/"))


def _split(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=False)
    except ValueError:  # unbalanced quotes (a heredoc body, a cut command): take no path from it
        return []


def _redirect_targets(words: list[str]) -> list[str]:
    targets = []
    for index, word in enumerate(words):
        if word in (">", ">>") and index + 1 < len(words):
            targets.append(words[index + 1])
        elif word.startswith((">>", ">")) and len(word.lstrip(">")) > 0 and not word.startswith(">&"):
            targets.append(word.lstrip(">"))
    return targets


def _arguments(name: str, words: list[str]) -> list[str]:
    """Non-option arguments, skipping the values of options known to take one."""
    found, skip = [], False
    takes_value = _VALUE_OPTIONS.get(name, frozenset())
    for word in words:
        if skip:
            skip = False
            continue
        if word in takes_value:
            skip = True
            continue
        if word.startswith("-"):
            continue
        found.append(word)
    return found


def _command_paths(words: list[str]) -> list[str]:
    if not words:
        return []
    name = posixpath.basename(words[0])
    rest = words[1:]
    redirects = _redirect_targets(rest)
    if redirects:
        cut = next(i for i, w in enumerate(rest) if w.startswith(">"))
        rest = rest[:cut]
    paths: list[str] = []
    if name in _FILE_READERS:
        paths = _arguments(name, rest)
    elif name == "sed":
        has_script_option = any(w == "-e" or w.startswith("--expression") for w in rest)
        args = _arguments(name, rest)
        paths = args if has_script_option else args[1:]
    elif name in _PATTERN_FIRST:
        has_pattern_option = any(w in ("-e", "-f") for w in rest)
        args = _arguments(name, rest)
        paths = args if has_pattern_option else args[1:]
    elif name in ("cp", "mv"):
        paths = _arguments(name, rest)
    return [p for p in (*paths, *redirects) if _looks_like_file(p)]


def _without_heredocs(script: str) -> str:
    """The script with each heredoc's marker and body removed (the body is data, not commands)."""
    if "<<" not in script:
        return script
    kept, terminator = [], None
    for line in script.split("\n"):
        if terminator is not None:
            if line.strip() == terminator:
                terminator = None
            continue
        marker = _HEREDOC.search(line)
        if marker:
            terminator = marker.group(1)
            line = line[: marker.start()] + line[marker.end() :]
        kept.append(line)
    return "\n".join(kept)


def shell_paths(command: str | list[str]) -> list[str]:
    """Files a shell command reads or writes, as written (relative paths stay relative)."""
    if isinstance(command, list):
        if not all(isinstance(word, str) for word in command):
            return []
        if (
            len(command) >= 3
            and posixpath.basename(command[0]) in ("bash", "sh", "zsh")
            and command[1]
            in (
                "-c",
                "-lc",
            )
        ):
            return shell_paths(command[2])
        if command and command[0] == "apply_patch" and len(command) > 1:
            return patch_paths(command[1])
        return _command_paths(command)
    if "*** Begin Patch" in command:
        return patch_paths(command)
    found: list[str] = []
    for segment in _SEGMENT.split(_without_heredocs(command)):
        found.extend(_command_paths(_split(segment.strip())))
    return list(dict.fromkeys(found))


def command_text(command: str | list[str]) -> str:
    """A command as one line of text: the script of `bash -lc SCRIPT`, else the words joined."""
    if isinstance(command, str):
        return command
    words = [w for w in command if isinstance(w, str)]
    if len(words) >= 3 and posixpath.basename(words[0]) in ("bash", "sh", "zsh") and words[1] in ("-c", "-lc"):
        return words[2]
    if words and words[0] == "apply_patch":
        return "apply_patch"
    return shlex.join(words)


def resolve(path: str, workdir: str | None) -> str:
    """`path` made absolute against `workdir` when it is relative and a workdir is known."""
    if workdir and not path.startswith(("/", "~")) and not re.match(r"^[A-Za-z]:[\\/]", path):
        return posixpath.normpath(posixpath.join(workdir, path))
    return path
