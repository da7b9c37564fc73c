"""The JSON types a tool's property takes, as the argument check reads them from its schema."""

from __future__ import annotations

from memex.mcpserver.arguments import types


def test_the_types_of_a_property_in_each_schema_spelling() -> None:
    assert types({"type": "integer"}) == {"integer"}
    assert types({"type": ["integer", "null"]}) == {"integer", "null"}  # a list of types: no TypeError
    assert types({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == {"integer", "null"}
    assert types({"enum": ["turns", "conversation"]}) == {"string"}  # no boolean among the choices
    assert types({"enum": [True, "auto", 3, None]}) == {"boolean", "string", "integer", "null"}
    assert {"boolean", "string", "integer"} <= types({})  # any type
