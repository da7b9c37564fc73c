"""Plain records (memex.plain) behave as the dataclasses they replaced: equality, hash, repr and replace by
their fields in order, and every record's fields, slots and constructor agree."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

import memex
from memex.ingest.prs import PullRequest
from memex.plain import Record
from memex.redact import Rule
from memex.sources.model import Block, Entry


def _records() -> list[type[Record]]:
    for info in pkgutil.walk_packages(memex.__path__, "memex."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
    found: list[type[Record]] = []
    pending = list(Record.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__slots__:  # not a base (FrozenRecord, memex.results.Result)
            found.append(cls)
    return found


@pytest.mark.parametrize("cls", _records(), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_fields_slots_and_constructor_agree(cls: type[Record]) -> None:
    """A field left out of `__slots__` could not be set; one left out of the annotations would be missing from
    equality and repr; the constructor takes the fields in their order (as the dataclass did)."""
    fields = list(cls.__annotations__)
    private = {"_pattern"} if cls is Rule else set()  # a cache, not a field
    assert set(cls.__slots__) == set(fields) | private
    assert list(inspect.signature(cls.__init__).parameters)[1:] == fields


def test_a_record_compares_and_shows_itself_as_its_dataclass_did() -> None:
    @dataclasses.dataclass(frozen=True)
    class Before:
        number: int
        url: str
        repository: str

    after = PullRequest(7, "https://github.com/o/r/pull/7", "o/r")
    before = Before(7, "https://github.com/o/r/pull/7", "o/r")
    assert repr(after) == repr(before).replace(type(before).__qualname__, "PullRequest")
    assert after == PullRequest(7, "https://github.com/o/r/pull/7", "o/r")
    assert after != PullRequest(8, "https://github.com/o/r/pull/7", "o/r")
    assert after != (7, "https://github.com/o/r/pull/7", "o/r")  # not a tuple
    assert hash(after) == hash(PullRequest(7, "https://github.com/o/r/pull/7", "o/r"))
    assert len({after, PullRequest(7, "https://github.com/o/r/pull/7", "o/r")}) == 1


def test_a_mutable_record_is_not_hashable_and_replace_copies() -> None:
    entry = Entry(3, "user", "prompt", blocks=[Block("text", "hi")])
    with pytest.raises(TypeError):
        hash(entry)
    grown = entry.replace(kind="user_meta")
    assert (grown.kind, grown.line_index, grown.blocks) == ("user_meta", 3, entry.blocks)
    assert grown != entry and entry.kind == "prompt"
    with pytest.raises(TypeError, match="no field colour"):
        entry.replace(colour="red")
    assert list(entry.as_dict())[:3] == ["line_index", "entry_type", "kind"]  # declared order, not slots'


def test_a_rule_compares_without_its_compiled_pattern() -> None:
    rule = Rule("token", r"tok_\w+", triggers=("tok_",))
    assert rule.pattern.search("a tok_abc") is not None  # compiled and kept
    assert rule == Rule("token", r"tok_\w+", triggers=("tok_",))
    assert hash(rule) == hash(Rule("token", r"tok_\w+", triggers=("tok_",)))
    assert rule.folded() == Rule("token", r"tok_\w+", triggers=("tok_",), case_folded_triggers=True)
    assert "_pattern" not in repr(rule)
