"""The client of another computer's daemon API (stdlib http.client: a few GETs, one of them streamed).

Errors form a short hierarchy the CLI prints as one line each: the computer cannot be reached, refused
the token, or does not have what was asked.
"""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import orjson

from memex.errors import NotThere, Refused, RemoteError, Unreachable

STREAM_BLOCK = 1 << 16


class ApiClient:
    """Talks to one computer's API at `url` with the shared bearer `token`."""

    def __init__(self, url: str, token: str | None, timeout: float, name: str | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Unreachable(f"{name or url}: not an http(s) address: {url!r}")
        self.url = url.rstrip("/")
        self.name = name or parts.hostname
        self.token = token
        self.timeout = timeout
        self._parts = parts

    def _connection(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
        return cls(self._parts.hostname or "", self._parts.port, timeout=self.timeout)

    def _request(self, path: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        connection = self._connection()
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            connection.request("GET", self._parts.path.rstrip("/") + path, headers=headers)
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise Unreachable(f"{self.name} is unreachable at {self.url} ({_reason(exc)})") from None
        if response.status != 200:
            detail = _error_of(response)
            connection.close()
            if response.status == 401:
                raise Refused(
                    f"{self.name} refused the API token ({detail}): every computer needs the same api_token "
                    "(copy $MEMEX_HOME/api-token)"
                )
            if response.status in (404, 410):
                raise NotThere(f"{self.name}: {detail}")
            raise RemoteError(f"{self.name} answered {response.status}: {detail}")
        return connection, response

    def _json(self, path: str) -> Any:
        connection, response = self._request(path)
        try:
            return orjson.loads(response.read())
        except (OSError, http.client.HTTPException) as exc:
            raise Unreachable(f"{self.name} stopped answering ({_reason(exc)})") from None
        except orjson.JSONDecodeError:
            raise RemoteError(f"{self.name} answered something that is not JSON") from None
        finally:
            connection.close()

    def health(self) -> dict[str, Any]:
        return self._json("/health")

    def search(self, query: str, limit: int, **filters: str | None) -> dict[str, Any]:
        """The computer's answer: `{"computer", "results", "notes"}` (`notes` absent from an older memex)."""
        params = {"q": query, "limit": str(limit), **{k: v for k, v in filters.items() if v}}
        answer = self._json("/v1/search?" + urlencode(params))
        if not isinstance(answer, dict) or not isinstance(answer.get("results"), list):
            raise RemoteError(f"{self.name} answered a search without results")
        return answer

    def mirror(self, session_id: str) -> dict[str, Any]:
        return self._json(f"/v1/sessions/{quote(session_id, safe='')}/mirror")

    def raw(self, session_id: str) -> Iterator[bytes]:
        """The session's transcript, block by block (the request is made before the first block)."""
        connection, response = self._request(f"/v1/sessions/{quote(session_id, safe='')}/raw")

        def blocks() -> Iterator[bytes]:
            try:
                while block := response.read(STREAM_BLOCK):
                    yield block
            except (OSError, http.client.HTTPException) as exc:
                raise Unreachable(f"{self.name} stopped sending the transcript ({_reason(exc)})") from None
            finally:
                connection.close()

        return blocks()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused: is its memex daemon running?"
    if isinstance(exc, socket.timeout | TimeoutError):
        return "no answer in time"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    return str(exc) or type(exc).__name__


def _error_of(response: http.client.HTTPResponse) -> str:
    try:
        body = orjson.loads(response.read(65536))
        return str(body.get("error", body))
    except (orjson.JSONDecodeError, AttributeError, OSError, http.client.HTTPException):
        return response.reason or f"HTTP {response.status}"
