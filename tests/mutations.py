"""Hypothesis strategies that damage real transcript records: any JSON value in any field.

A mutation takes one record (a parsed JSONL line, or one message of a JSON document) and, at a path drawn
from the record's own structure, replaces the value (another type, a huge integer, a lone surrogate, a long
string, nesting thousands deep), deletes the key, or adds one; or it replaces the whole record; then, for
a line, it may damage the bytes (a byte-order mark, invalid UTF-8, a cut).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

# Values that have broken parsers: past SQLite's integers, past 64 bits, lone UTF-16 surrogates (Node
# writes them), NUL, timestamps that are not, paths that climb, a string over a small line cap.
SPECIAL_INTS = [2**63, 2**63 - 1, 2**64 - 1, -(2**63) - 1, 10**30, 0, -1]
SPECIAL_TEXT = [
    "",
    " ",
    "\ud83d",
    "a\udc00b",
    "\x00",
    "🦦 café 中文",
    "2026-13-45T99:99:99Z",
    "../../../etc/passwd",
    "<command-name>/x</command-name>",
    "x" * 70_000,
]
_DEEP = "\x00memex-deep:{}\x00"


def json_values(forbidden_keys: frozenset[str] = frozenset()) -> st.SearchStrategy[Any]:
    """Any JSON value, biased to the ones that break parsers; dict keys never in `forbidden_keys`."""
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.sampled_from(SPECIAL_INTS),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
        st.sampled_from(SPECIAL_TEXT),
        st.sampled_from(["[]", "{}", "[[]]", '{"": {}}']).map(json.loads),  # a fresh container each time
        st.integers(min_value=1_100, max_value=3_000).map(_DEEP.format),  # nesting deeper than parsers allow
    )
    keys = st.text(max_size=12).filter(lambda k: k not in forbidden_keys)
    return st.recursive(
        leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=12
    )


def dumps(value: Any) -> bytes:
    """JSON text as Node writes it (lone surrogates escaped), with the deep-nesting markers expanded."""
    text = json.dumps(value)
    while "memex-deep:" in text:
        start = text.index('"\\u0000memex-deep:')
        end = text.index('\\u0000"', start) + len('\\u0000"')
        depth = int(text[start:end].split(":")[1].split("\\")[0])
        text = text[:start] + "[" * depth + "]" * depth + text[end:]
    return text.encode("utf-8", "surrogatepass")


def _paths(value: Any, skip_keys: frozenset[str], prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside `value` (keys in `skip_keys` and what lies under them left out)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in skip_keys:
                found += _paths(item, skip_keys, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, skip_keys, (*prefix, index))
    return found


def _at(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


@dataclass
class Mutation:
    """What was done, for a failing example's report."""

    what: str
    path: tuple = ()


@st.composite
def mutated_record(draw: st.DrawFn, record: Any, protected: frozenset[str] = frozenset()) -> tuple[Any, list[Mutation]]:
    """`record` (a parsed JSON value, copied) with one to three changes; keys in `protected` are never
    touched, added, or changed under."""
    record = json.loads(json.dumps(record))
    values = json_values(protected)
    done: list[Mutation] = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(record, protected)
        # Parsers read the fields near the top: each depth is as likely as any other, so a record's few
        # top-level fields are damaged as often as the many leaves of its tool output.
        depth = draw(st.sampled_from(sorted({len(p) for p in paths})))
        path = draw(st.sampled_from([p for p in paths if len(p) == depth]))
        if not path:
            record = draw(values)
            done.append(Mutation("replace the record"))
            continue
        parent, last = _at(record, path[:-1]), path[-1]
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[last]
        elif action == "add" and isinstance(parent, dict):
            key = draw(st.text(max_size=12).filter(lambda k: k not in protected))
            parent[key] = draw(values)
        else:
            parent[last] = draw(values)
        done.append(Mutation(action, path))
    return record, done


@st.composite
def damaged_bytes(draw: st.DrawFn, line: bytes) -> tuple[bytes, str]:
    """`line` (without its newline) as written, or with a byte-order mark, invalid UTF-8, or cut short."""
    damage = draw(st.sampled_from(["none", "none", "none", "bom", "invalid utf-8", "cut"]))
    if damage == "bom":
        return b"\xef\xbb\xbf" + line, damage
    position = draw(st.integers(min_value=0, max_value=len(line)))
    if damage == "invalid utf-8":
        return line[:position] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\xbd", b"\xe9"])) + line[
            position:
        ], damage
    if damage == "cut":
        return line[:position], damage
    return line, damage
