"""The web viewer's tests' tools: the corpus's session ids and a tiny HTTP client over a real socket. A
plain module, imported by name (`from webtools import Browser`)."""

from __future__ import annotations

import dataclasses
import http.client
from urllib.parse import urlencode

from memex.web.server import WebServer

SUBAGENT_SESSION = "322e6fc1-933c-4088-b825-a0b12dac4c7a"
MIRRORED = "feedface-0000-4000-8000-000000000001"
LONG_SESSION = "10001000-0000-4000-8000-000000000001"
LONG_ANSWER = "\n".join(f"line {n} of a long build log" for n in range(300)) + "\nTAIL-MARKER"
MARKDOWN_SESSION = "3d3d3d3d-0000-4000-8000-000000000001"
# An answer in Markdown, as agents write them, with three attempts at running script in the page.
MARKDOWN_ANSWER = """## Plan MD-HEADING

- first MD-ITEM
- second item

```python
def rotate(keys):  # MD-CODE
        return [k for k in keys if k.expires_at > now() and k.scope in ("read", "write", "admin")]
```

| column | value |
|---|---|
| MD-CELL | 42 |

Run `memex index` once, see [the docs](https://example.org/docs).

<script>alert("md-xss")</script> <img src=x onerror=alert("md-img")> [click](javascript:alert("md-link"))
"""
HOSTILE = '<script>alert("pwned")</script> & <b>bold</b>'
# How a page shows it: as text, a title's formatting tags dropped (a plain-text title), the rest escaped.
HOSTILE_SHOWN = '<script>alert("pwned")</script> & bold'


@dataclasses.dataclass
class Page:
    status: int
    body: str
    headers: dict[str, str]


class Browser:
    """A tiny HTTP client over a real socket (one connection per request)."""

    def __init__(self, server: WebServer, host_header: str | None = None, token: str | None = None) -> None:
        self.server = server
        self.host_header = host_header
        self.token = token

    def request(self, method: str, path: str, form: dict[str, str] | None = None, **headers: str) -> Page:
        connection = http.client.HTTPConnection(self.server.host, self.server.port, timeout=60)
        try:
            body = urlencode(form).encode() if form is not None else None
            sent = dict(headers)
            if body is not None:
                sent["Content-Type"] = "application/x-www-form-urlencoded"
            if self.token:
                sent.setdefault("Authorization", f"Bearer {self.token}")
            if self.host_header:
                connection.putrequest(method, path, skip_host=True)
                connection.putheader("Host", self.host_header)
            else:
                connection.putrequest(method, path)
            for name, value in sent.items():
                connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            answer = connection.getresponse()
            return Page(answer.status, answer.read().decode(), {k.lower(): v for k, v in answer.getheaders()})
        finally:
            connection.close()

    def get(self, path: str, **headers: str) -> Page:
        return self.request("GET", path, **headers)

    def post(self, path: str, form: dict[str, str]) -> Page:
        return self.request("POST", path, form)
