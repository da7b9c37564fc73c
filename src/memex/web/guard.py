"""Who may use the viewer: on loopback, requests naming a local host (no DNS rebinding); served to the
network (`--allow-remote`), requests carrying the API bearer token (header, `memex_token` cookie, or a
`?token=` link that sets the cookie). Forms that write carry a per-server secret (no cross-site POST)."""

from __future__ import annotations

import hmac
import ipaddress
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, unquote_plus

from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memex.sync.token import LiveToken

COOKIE = "memex_token"
LOCAL_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    """True for `localhost` and the loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip("[]") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """`example.com` from a Host header `example.com:8080` (and `::1` from `[::1]:8080`)."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _without_token(path: str, query: bytes) -> str:
    """`path` with the request's query but its `token` (each other parameter as it was sent)."""
    kept = [
        part for part in query.split(b"&") if part and unquote_plus(part.split(b"=", 1)[0].decode("latin-1")) != "token"
    ]
    return f"{path}?{b'&'.join(kept).decode('latin-1')}" if kept else path


class Guard:
    """ASGI middleware: refuses requests that are not the user's (see the module's docstring)."""

    def __init__(self, app: ASGIApp, token: LiveToken | None) -> None:
        self.app = app
        self.token = token  # the token in force at each request (the token file may change meanwhile)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if self.token is None:
            host = _host_name(headers.get(b"host", b"").decode("latin-1"))
            if not is_loopback(host):
                await PlainTextResponse("memex web answers only requests to localhost", 403)(scope, receive, send)
                return
        else:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0].encode()
            if given and self._matches(given):  # a link with the token: keep it in a cookie, drop it from the URL
                moved = RedirectResponse(_without_token(scope["path"], scope.get("query_string", b"")), 303)
                moved.set_cookie(COOKIE, given.decode(), httponly=True, samesite="strict")
                await moved(scope, receive, send)
                return
            if not self._authorized(headers):
                response = PlainTextResponse("a valid bearer token is required (the API token)", 401)
                response.headers["WWW-Authenticate"] = 'Bearer realm="memex"'
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _matches(self, given: bytes) -> bool:
        return self.token is not None and hmac.compare_digest(given.strip(), self.token.value().encode())

    def _authorized(self, headers: dict[bytes, bytes]) -> bool:
        kind, _, given = headers.get(b"authorization", b"").partition(b" ")
        if kind.lower() == b"bearer" and self._matches(given):
            return True
        cookies: SimpleCookie = SimpleCookie()
        try:
            cookies.load(headers.get(b"cookie", b"").decode("latin-1"))
        except Exception:  # a malformed cookie header is no token
            return False
        morsel = cookies.get(COOKIE)
        return morsel is not None and self._matches(morsel.value.encode())
