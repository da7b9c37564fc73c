"""Paths and settings: defaults, the TOML file in MEMEX_HOME, and MEMEX_* environment overrides.

Every tunable number lives here, with the reason for its value.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from memex.errors import ConfigError

DEFAULT_HOME = Path("~/.local/share/memex")


@dataclass(frozen=True)
class Config:
    """Resolved settings for one memex process."""

    home: Path
    # The machine this store belongs to; names local sessions and mirrors (default: hostname).
    computer: str = field(default_factory=socket.gethostname)
    # Where each agent writes its transcripts.
    claude_dir: Path = Path("~/.claude/projects")
    codex_dir: Path = Path("~/.codex/sessions")
    gemini_dir: Path = Path("~/.gemini/tmp")
    # Chunks are the unit of lexical and vector search. 384 tokens keeps a chunk inside the context of
    # small embedding models (MiniLM and e5-small truncate at 512 word pieces, and our token estimate runs
    # lower than word pieces); 64 tokens of overlap keeps a sentence cut at a border findable from both sides.
    chunk_max_tokens: int = 384
    chunk_overlap_tokens: int = 64
    # Worker processes parsing transcripts during a backfill. Two: the development machine and most laptops
    # have at least two cores, and the single SQLite writer (this process) needs one of them.
    index_workers: int = 2
    # A writer waits this long for another writer (a Stop hook racing `memex index`) before giving up.
    busy_timeout_ms: int = 30_000

    @property
    def db_path(self) -> Path:
        return self.home / "memex.db"

    @property
    def config_file(self) -> Path:
        return self.home / "config.toml"


_PATH_FIELDS = {f.name for f in dataclasses.fields(Config) if f.type in ("Path", Path)}
_INT_FIELDS = {f.name for f in dataclasses.fields(Config) if f.type in ("int", int)}


def _coerce(name: str, value: object) -> object:
    if name in _PATH_FIELDS:
        return Path(str(value)).expanduser()
    if name in _INT_FIELDS:
        try:
            return int(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ConfigError(f"setting {name!r} must be an integer, got {value!r}") from None
    return str(value)


def load_config(env: dict[str, str] | None = None) -> Config:
    """Build the configuration: defaults < `$MEMEX_HOME/config.toml` < `MEMEX_<SETTING>` variables."""
    env = dict(os.environ) if env is None else env
    home = Path(env.get("MEMEX_HOME") or DEFAULT_HOME).expanduser()
    values: dict[str, object] = {}
    config_file = home / "config.toml"
    if config_file.is_file():
        try:
            values.update(tomllib.loads(config_file.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{config_file}: {exc}") from None
    known = {f.name for f in dataclasses.fields(Config)} - {"home"}
    for name in known:
        key = f"MEMEX_{name.upper()}"
        if key in env:
            values[name] = env[key]
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{config_file}: unknown setting(s): {', '.join(unknown)}")
    resolved = {name: _coerce(name, value) for name, value in values.items()}
    defaults = Config(home=home)
    for name in _PATH_FIELDS - {"home"} - set(resolved):
        resolved[name] = getattr(defaults, name).expanduser()
    return dataclasses.replace(defaults, **resolved)
