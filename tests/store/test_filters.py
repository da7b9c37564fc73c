"""Filters from the doors' strings (web, HTTP API, MCP): a value memex cannot search by is one clear error."""

from __future__ import annotations

import pytest

from memex.errors import UserError
from memex.store.queries import Filters


@pytest.mark.parametrize("given, number", [("321", 321), (" 7 ", 7), (321, 321)])
def test_a_pull_request_number_is_read(given: object, number: int) -> None:
    assert Filters.parse({"pr": given}).pr == number


@pytest.mark.parametrize("given", ["abc", "-1", "0", "²", "99999999999999999999", 99999999999999999999, -4, True])
def test_a_value_that_is_no_pull_request_number_is_refused(given: object) -> None:
    """A superscript digit passed `isdigit` and failed in `int`; past 2**63 SQLite overflowed."""
    with pytest.raises(UserError, match="pr must be a pull request number"):
        Filters.parse({"pr": given})
