"""The Redis keys memex uses, all under one prefix so several users or teams can share a Redis."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Keys:
    """Key names under `prefix`."""

    prefix: str

    @property
    def stream(self) -> str:
        """The stream every computer publishes its mirrors to."""
        return f"{self.prefix}:mirrors"

    def latest(self, computer: str) -> str:
        """Hash of session id -> the latest mirror `computer` published (survives stream trimming)."""
        return f"{self.prefix}:mirror:{computer}"

    @property
    def publishers(self) -> str:
        """Set of the computers that have a `latest` hash."""
        return f"{self.prefix}:publishers"

    def heartbeat(self, computer: str) -> str:
        """A computer's announcement, with a TTL: it exists while the computer's daemon runs."""
        return f"{self.prefix}:heartbeat:{computer}"

    @property
    def computers(self) -> str:
        """Hash of computer -> its last announcement (no TTL: stale computers stay listed)."""
        return f"{self.prefix}:computers"

    @property
    def epoch(self) -> str:
        """A random id naming this Redis's data: a new one means Redis lost what it held."""
        return f"{self.prefix}:epoch"

    @property
    def forgotten(self) -> str:
        """Hash of `<computer>\t<session>` -> when the user forgot that session (no TTL: a computer that
        returns after the stream was trimmed still learns of it)."""
        return f"{self.prefix}:forgotten"
