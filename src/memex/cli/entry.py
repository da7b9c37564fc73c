"""The `memex` executable's entry point: hook runs, and `memex index` writing to no terminal, take fast
paths that never import the CLI.

Claude Code starts `memex hook <Event>` for every prompt and every stop; click and rich alone cost more
than a Stop hook's whole budget, so those runs go straight to `memex.hooks.events`. A `memex index` run
by a hook, a script or cron (`memex.cli.lean`) prints a summary that needs neither.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

from memex.collector import Paused


def main() -> None:
    """Console entry point."""
    _closed_streams_to_nowhere()
    if sys.argv[1:2] == ["hook"]:
        from memex.hooks.events import main as hook_main

        hook_main(sys.argv[2:], fast_exit=True)
    # The modules imported (click, rich, the store's) hold no garbage worth a collection: the collector,
    # which ran ~40 times over their new objects, is off while they are imported, and what they made is
    # frozen (never looked at again, nor by the collection at the interpreter's exit): ~10 ms of
    # `memex --version`.
    if sys.argv[1:2] == ["index"]:
        with Paused():
            from memex.cli.lean import run
        status = run(sys.argv[1:])
        if status is not None:
            if no_pool():
                exit_at_once(status)
            sys.exit(status)
    with Paused():
        from memex.cli.main import main as cli_main
    cli_main()


def _closed_streams_to_nowhere() -> None:
    """A standard stream closed by the caller (`memex index >&-`: Python then has None for it) is opened on
    the null device in its own descriptor, as `>/dev/null` would: the command does its work instead of dying
    on its first print, and no file opened later (the store) takes descriptor 0, 1 or 2, where C code's writes
    (the embedding engine's) would land in it."""
    streams = ("stdin", "stdout", "stderr")
    if all(getattr(sys, name) is not None for name in streams):
        return
    for number, name in enumerate(streams):
        if getattr(sys, name) is None:
            # The lowest free descriptor: `number` itself while free (the lower ones are taken by now); else a
            # file of the interpreter's holds it, and the stream keeps the descriptor it got.
            null = os.open(os.devnull, os.O_RDWR)
            setattr(sys, name, open(null, "r" if number == 0 else "w", encoding="utf-8"))  # noqa: SIM115


def exit_at_once(status: int) -> NoReturn:
    """End the process now, its output flushed (stdout and stderr each: a closed pipe on one keeps the
    other's), without the interpreter's teardown: freeing ~200 modules is a sixth of a quick command's
    work, and after `memex index` also the tens of thousands of stored streams' rows it held (~4 ms at
    20,000). Only once every write is committed and the store closed."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


def no_pool() -> bool:
    """Whether no worker processes were started: a backfill's pool is left to the interpreter's exit, which
    waits for its processes and the threads that feed them."""
    return "concurrent.futures.process" not in sys.modules
