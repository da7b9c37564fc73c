"""The cyclic garbage collector paused over a block that makes many long-lived objects holding no cycle
(modules being imported, the rows and file states an index finds), which are then frozen: never looked at
by a collection again, nor by the one at the interpreter's exit. Imports nothing but `gc`: the executable's
entry point uses it before the CLI is loaded."""

from __future__ import annotations

import gc


class Paused:
    """`with Paused():` the collector is off in the block, and what exists at its end is frozen, then the
    collector is as it was before (also when the block raises)."""

    def __init__(self) -> None:
        self.was_enabled = False

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *_: object) -> None:
        gc.freeze()
        if self.was_enabled:
            gc.enable()
