"""Long output through a pager, as git does: `$MEMEX_PAGER`, else `$PAGER`, else `less -FRX`.

An empty value or `cat` means no pager. The command runs through the shell (it may hold options or a
pipeline, as git allows), with `LESS=FRX` when LESS is unset: quit when the text fits one screen (-F),
let colours through (-R), leave the text on the screen after quitting (-X).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from typing import TextIO

DEFAULT_PAGER = "less -FRX"
NO_PAGER = ("", "cat")
# The shell's status for a command it could not find or run: the text is then printed as it is.
_NOT_STARTED = (126, 127)


def pager_command(environ: Mapping[str, str]) -> str | None:
    """The pager to run: the first of MEMEX_PAGER and PAGER that is set (even empty: no pager), else
    `less -FRX` when less is installed; None for no pager."""
    for name in ("MEMEX_PAGER", "PAGER"):
        if name in environ:
            value = environ[name].strip()
            return None if value in NO_PAGER else value
    return DEFAULT_PAGER if shutil.which("less") else None


def terminal_lines(stream: TextIO) -> int:
    """The height of the terminal `stream` writes to (LINES, or 24, when it cannot be told)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        lines = os.get_terminal_size(stream.fileno()).lines
        if lines > 0:  # a pseudo-terminal nobody sized says 0
            return lines
    return shutil.get_terminal_size().lines


def page(command: str, text: str) -> bool:
    """Show `text` through the pager `command` (it writes to this process's terminal); False when the pager
    could not be started, so the caller prints the text itself."""
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    try:
        process = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)  # as git runs it
    except OSError:
        return False
    # Ctrl-C belongs to the pager while it runs (less uses it to stop a search), as with git.
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals are not ours to set
        previous = None
    try:
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # the reader quit before the end: that is fine
            process.stdin.write(text.encode("utf-8", "replace"))
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        status = process.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return status not in _NOT_STARTED
