"""The `memex` executable's entry point: hook runs take a fast path that never imports the CLI.

Claude Code starts `memex hook <Event>` for every prompt and every stop; click and rich alone cost more
than a Stop hook's whole budget, so those runs go straight to `memex.hooks.events`.
"""

from __future__ import annotations

import sys

from memex.collector import Paused


def main() -> None:
    """Console entry point."""
    if sys.argv[1:2] == ["hook"]:
        from memex.hooks.events import main as hook_main

        hook_main(sys.argv[2:], fast_exit=True)
    # The CLI's modules (click, rich, the store's) hold no garbage worth a collection: the collector, which
    # ran ~40 times over their new objects, is off while they are imported, and what they made is frozen
    # (never looked at again, nor by the collection at the interpreter's exit): ~10 ms of `memex --version`.
    with Paused():
        from memex.cli.main import main as cli_main
    cli_main()
