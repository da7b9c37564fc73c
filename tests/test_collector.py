"""The collector paused over a block of long-lived objects (the CLI's imports, an index's discovery)."""

from __future__ import annotations

import gc

import pytest

from memex.collector import Paused


def test_the_collector_is_off_in_the_block_and_what_it_made_is_frozen() -> None:
    assert gc.isenabled()
    try:
        with Paused():
            assert not gc.isenabled()
            made = [[n] for n in range(1000)]
        assert gc.isenabled() and gc.get_freeze_count() >= len(made)
    finally:
        gc.unfreeze()


def test_the_collector_is_on_again_when_the_block_raises() -> None:
    try:
        with pytest.raises(KeyError), Paused():
            raise KeyError("x")
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_a_collector_off_before_the_block_stays_off() -> None:
    gc.disable()
    try:
        with Paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
