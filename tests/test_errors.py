"""One error tree: every exception memex defines derives from `MemexError` (errors.py draws the tree)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import memex
from memex.errors import MemexError

# click's own exception types, through which the CLI reports a MemexError (they carry one, not extend it).
CLICK_WRAPPERS = {"memex.cli.main.Failure", "memex.cli.main.UsageFailure", "memex.cli.main.Interrupted"}
# Signals as the interrupt they stand for (a KeyboardInterrupt, so no `except Exception` takes one for an error).
INTERRUPTS = {"memex.cli.daemon._Stopped"}


def test_every_error_is_a_memex_error() -> None:
    defined = []
    for info in pkgutil.walk_packages(memex.__path__, "memex."):
        if info.name == "memex.__main__":  # runs the CLI
            continue
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if value.__module__ == info.name and issubclass(value, BaseException):
                defined.append(value)
    strays = [f"{c.__module__}.{c.__qualname__}" for c in defined if not issubclass(c, MemexError)]
    assert len(defined) > 10 and sorted(set(strays) - CLICK_WRAPPERS - INTERRUPTS) == []
