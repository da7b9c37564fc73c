"""The one line an agent reads about its bad arguments, instead of the SDK's pydantic report.

The SDK checks a call's arguments against the tool's signature and answers a mistake with pydantic's own
report: several lines per argument, the error codes and a link to pydantic's documentation. `Server`
answers it with one line naming each bad argument, what it takes (read from the tool's input schema, the
same the agent was given) and what it got: "limit must be a whole number from 1 to 100, not -5".

Three mistakes pass pydantic's lax validation and are caught first, against the same schema: an argument the
tool does not take (pydantic drops it, so a misspelled filter silently searched everything), a boolean
where a number is expected (a bool is an int to Python: `limit: true` read as 1), and a string where the
schema takes none (JSON Schema's "integer" is no string: pydantic read `limit: "5"` as 5, and `"1e3"` too).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

# A rejected value is echoed up to this many characters (a pasted log is not repeated whole).
SHOWN_CHARS = 40
# What pydantic's lax mode turns into another type: a bool into a number, a string into a number or a bool.
LAX_TYPES = ("boolean", "string")


class Server(MCPServer[Any]):
    """The SDK's server, whose argument errors are one line each."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        schema = await self._schema(name)
        if schema is not None and (mistakes := screen(name, arguments, schema)):
            raise ToolError(f"Error executing tool {name}: {mistakes}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            # Chained to the pydantic error: the SDK logs the names of the rejected arguments from it.
            raise ToolError(f"Error executing tool {name}: {explain(cause, schema or {})}") from cause

    async def _schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of tool `name`, or None for a tool the server does not offer."""
        return next((tool.input_schema for tool in await self.list_tools() if tool.name == name), None)


def screen(tool: str, arguments: dict[str, Any], schema: dict[str, Any]) -> str:
    """What pydantic would let through in `arguments`, in one line: each argument `schema` does not name,
    and each boolean or string given where the schema takes no boolean or no string; "" when there is none."""
    properties: dict[str, Any] = schema.get("properties", {})
    lines: list[str] = []
    if unknown := [name for name in arguments if name not in properties]:
        named = []
        for name in unknown:
            close = difflib.get_close_matches(name, list(properties), n=1, cutoff=0.6)
            named.append(shown(name) + (f" (did you mean {shown(close[0])}?)" if close else ""))
        takes = f"takes {', '.join(properties)}" if properties else "takes no arguments"
        lines.append(f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(named)}: {tool} {takes}")
    for name, value in arguments.items():
        kind = json_type(value)
        if kind in LAX_TYPES and name in properties and kind not in types(properties[name]):
            lines.append(f"{name} must be {expected(properties[name])}, not {shown(value)}")
    return "; ".join(lines)


# Every type of JSON Schema: what a property that names none takes.
ANY_TYPE = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})


def types(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property of a JSON schema takes (an enum's by its values)."""
    found: set[str] = set()
    for branch in prop.get("anyOf", [prop]):
        if isinstance(branch.get("type"), list):  # `"type": ["integer", "null"]`
            found.update(branch["type"])
        elif "type" in branch:
            found.add(branch["type"])
        elif "enum" in branch:
            found.update(json_type(choice) for choice in branch["enum"])
        else:
            found.update(ANY_TYPE)  # a branch of any type
    return found


def json_type(value: Any) -> str:
    """The JSON Schema type of a value decoded from JSON ("integer" for a whole number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def explain(error: ValidationError, schema: dict[str, Any]) -> str:
    """Each rejected argument of `error` in one line: what `schema` says it takes, and what it got."""
    properties: dict[str, Any] = schema.get("properties", {})
    lines: dict[str, str] = {}  # one per argument (a union's branches may each reject it)
    for item in error.errors():
        name = str(item["loc"][0]) if item["loc"] else ""
        if name in lines:
            continue
        if name not in properties:
            lines[name] = f"{name or 'the arguments'}: {item['msg'].lower()}"
        elif item["type"] == "missing":
            lines[name] = f"{name} is required: {expected(properties[name])}"
        else:
            lines[name] = f"{name} must be {expected(properties[name])}, not {shown(item['input'])}"
    return "; ".join(lines.values())


def expected(prop: dict[str, Any]) -> str:
    """What a property of a JSON schema takes, in words (null, for leaving it out, is not mentioned)."""
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    prop = branches[0] if len(branches) == 1 else prop
    if "enum" in prop:
        choices = [shown(choice) for choice in prop["enum"]]
        return choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])} or {choices[-1]}"
    kind = prop.get("type")
    if kind == "integer":
        low, high = prop.get("minimum"), prop.get("maximum")
        if low is not None and high is not None:
            return f"a whole number from {low:,} to {high:,}"
        if low is not None:
            return f"a whole number of {low:,} or more"
        return "a whole number" if high is None else f"a whole number of {high:,} or less"
    if kind == "string":
        return "a non-empty string" if prop.get("minLength", 0) >= 1 else "a string"
    if kind == "boolean":
        return "true or false"
    return f"a value of type {kind}" if kind else "a valid value"


def shown(value: Any) -> str:
    """A value as the agent would recognise it: a string in quotes, anything else as JSON; cut if long."""
    if isinstance(value, str):
        text = f"'{value}'"
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"
