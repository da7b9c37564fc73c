"""The bearer token of the daemon's HTTP API.

One token per user, shared by all their computers: set `api_token` (config or MEMEX_API_TOKEN), or let
the first daemon start write `$MEMEX_HOME/api-token` (mode 0600) and copy that file to the same place on
the other computers. Each computer's daemon accepts it and `--computer` / `--raw` send it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from memex.config import Config
from memex.errors import UserError

TOKEN_FILE = "api-token"
# Shorter tokens are refused: a token guards raw transcripts.
MIN_TOKEN_CHARS = 16


def token_path(config: Config) -> Path:
    return config.home / TOKEN_FILE


def read_token(config: Config) -> str | None:
    """The configured token, else the token file's, else None."""
    if config.api_token:
        return config.api_token
    try:
        value = token_path(config).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return value or None


def ensure_token(config: Config) -> str:
    """The API token, creating the token file (0600) when none exists yet, or replacing an empty one."""
    token = read_token(config)
    if token is None:
        token = _write_token(token_path(config))
    if len(token) < MIN_TOKEN_CHARS:
        raise UserError(f"the API token must be at least {MIN_TOKEN_CHARS} characters long")
    return token


def _write_token(path: Path) -> str:
    """Write a new token to `path`, whole or not at all: it is written to a private temporary file, then
    linked into place (another daemon that wrote one first wins). An empty file there (`touch`ed, or cut
    short) holds no token: it is replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:
            try:
                written = path.read_text(encoding="utf-8").strip()
            except OSError:
                written = ""
            if written:
                return written  # another daemon wrote it first
            os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
    return token


class LiveToken:
    """The token a running server accepts (the daemon's API, `memex web` beyond loopback): `api_token` when
    it is set, else the token file's, read again whenever the file changes (a `stat` per request, a read
    only after a change), so that a token copied from another computer (the way to share one) or a new one
    is accepted without a restart, and the old one no longer is. While the file is missing, empty or too
    short (being copied), the last token read stays in force."""

    def __init__(self, config: Config, token: str) -> None:
        self.config = config
        self._token = token
        self._seen: tuple[int, int, int, int] | None = None

    def value(self) -> str:
        """The token to accept now."""
        if self.config.api_token:
            return self._token
        path = token_path(self.config)
        try:
            found = path.stat()
        except OSError:
            return self._token
        state = (found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
        if state == self._seen:
            return self._token
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return self._token
        self._seen = state
        if len(text) >= MIN_TOKEN_CHARS:
            self._token = text
        return self._token
