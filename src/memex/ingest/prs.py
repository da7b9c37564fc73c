"""Pull requests a session created or worked on, from the URLs its tools printed and its agent wrote.

Only Claude Code records the pull requests it creates (`pr-link`); every agent runs `gh pr create` or
`glab mr create`, whose output is the new pull request's URL. So the URLs of GitHub pull requests and
GitLab merge requests in tool output and in the assistant's answers link a session to them too.
"""

from __future__ import annotations

import re
from typing import Final

from memex.plain import FrozenRecord

# https://github.com/OWNER/REPO/pull/N (and GitHub Enterprise hosts); https://gitlab.com/GROUP/…/PROJECT/-/merge_requests/N
# (and self-hosted GitLab hosts whose name says so).
_GITHUB = re.compile(
    r"https?://(?P<host>(?:[\w-]+\.)*github(?:\.[\w-]+)+)/(?P<repo>[\w.-]+/[\w.-]+)/pull/(?P<number>\d+)\b",
    re.IGNORECASE,
)
_GITLAB = re.compile(
    r"https?://(?P<host>(?:[\w-]+\.)*gitlab(?:\.[\w-]+)+)/(?P<repo>[\w.-]+(?:/[\w.-]+)+?)/-/merge_requests/(?P<number>\d+)\b",
    re.IGNORECASE,
)
# A text naming more pull requests than this is a listing (a search result, a page of links), not work on them.
MAX_LINKS_PER_TEXT = 3


class PullRequest(FrozenRecord):
    """One pull (or merge) request: its number, canonical URL and repository."""

    __slots__ = ("number", "repository", "url")

    number: Final[int]
    url: Final[str]
    repository: Final[str]

    def __init__(self, number: int, url: str, repository: str) -> None:
        self.number = number
        self.url = url
        self.repository = repository


def pull_requests(text: str) -> list[PullRequest]:
    """The pull requests a text links to, each once, in order; none when it links to a listing's worth."""
    if "/pull/" not in text and "/merge_requests/" not in text:
        return []
    found: dict[str, PullRequest] = {}
    for pattern, path in ((_GITHUB, "pull"), (_GITLAB, "-/merge_requests")):
        for match in pattern.finditer(text):
            host, repository, number = match.group("host").lower(), match.group("repo"), int(match.group("number"))
            url = f"https://{host}/{repository}/{path}/{number}"
            found.setdefault(url, PullRequest(number, url, repository))
    if len(found) > MAX_LINKS_PER_TEXT:
        return []
    return list(found.values())
