"""The days a query names ("on March 16, 2022", "in July 2022", "2022-03-16"): a search lifts the turns of
that time, since what happened on a day is often told in words that share nothing with the question."""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

# Days either side of what the query names: an event is often told a few days after it happened ("last
# Friday …"), and a turn's time is UTC, not the user's day.
SLACK_DAYS = 7
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WRITTEN = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+)?({_MONTH})\.?(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?\b)?,?\s+(\d{{4}})\b",
    re.IGNORECASE,
)
_ISO = re.compile(r"\b(\d{4})-(\d{2})(?:-(\d{2}))?\b")


def named_days(query: str) -> list[tuple[str, str]]:
    """The (first, last) ISO days of each date the query names with its year, widened by SLACK_DAYS; a month
    alone covers the month. A date without a year names no time (which year?)."""
    found: list[tuple[int, int, int | None]] = []
    for match in _WRITTEN.finditer(query):
        day = match.group(1) or match.group(3)
        found.append((int(match.group(4)), _MONTHS[match.group(2).lower()], int(day) if day else None))
    for match in _ISO.finditer(query):
        found.append((int(match.group(1)), int(match.group(2)), int(match.group(3)) if match.group(3) else None))
    spans = []
    for year, month, day in found:
        try:
            first = date(year, month, day or 1)
            last = first if day else date(year, month, calendar.monthrange(year, month)[1])
        except ValueError:  # "February 30", "2022-13"
            continue
        slack = timedelta(days=SLACK_DAYS)
        spans.append(((first - slack).isoformat(), (last + slack).isoformat()))
    return spans
