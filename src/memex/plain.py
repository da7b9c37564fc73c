"""Plain records: a class's fields are its `__slots__`, its `__init__` is written out, and equality, repr,
hash and `replace` come from here.

`@dataclass` writes an `__init__`, `__repr__` and `__eq__` (a frozen class also `__setattr__`,
`__delattr__` and `__hash__`) as source and compiles them every time its module is imported: 1.3–4.3 M
instructions a class, ~100 M for the classes `memex index PATH` imports (README, "Incremental index over
many transcripts"). These classes behave as the dataclasses they were (equality and repr by fields, in
order; a frozen one hashes by them and mypy keeps it read-only through `Final`), at no cost on import.
"""

from __future__ import annotations

from typing import Any, Self


class Record:
    """Equality and repr by the fields (the class's annotations, in order; `__slots__` holds them, ruff sorts
    it); mutable, so not hashable (a dataclass with eq)."""

    __slots__ = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__class__.__annotations__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    __hash__: Any = None

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__class__.__annotations__)
        return f"{type(self).__qualname__}({fields})"

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, in order (`dataclasses.asdict`, not recursive)."""
        return {name: getattr(self, name) for name in self.__class__.__annotations__}

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (`dataclasses.replace`)."""
        values = self.as_dict()
        unknown = changes.keys() - values.keys()
        if unknown:
            raise TypeError(f"{type(self).__qualname__} has no field {', '.join(sorted(unknown))}")
        return type(self)(**(values | changes))


class FrozenRecord(Record):
    """A record whose fields are `Final` (read-only to mypy): hashable by its fields."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._values())
