"""The one tree of errors memex raises: every one derives from `MemexError`, and the CLI turns each into one
clear line (its `exit_code`: 1 something failed, 2 the request cannot be done as asked).

    MemexError
    ├── UserError                 a bad argument, an unknown session…
    │   ├── ConfigError           the configuration file or an environment override is invalid
    │   └── UnknownComputer       no computer of that name announced itself
    ├── StoreError                the database cannot be opened or used
    ├── EmbedBusy                 another process drains this store's embedding queue
    ├── EmbedderUnavailable       the embedding model cannot be loaded (search falls back to lexical)
    ├── RemoteError               another computer's API could not answer
    │   ├── Unreachable, Refused, NotThere
    ├── ApiFailure                what the HTTP API answers with an error status
    ├── WireError (ValueError)    a payload that cannot be read as a mirror
    ├── ChatTooLarge (ValueError) a chat kept as one JSON document is over max_line_bytes
    ├── NotRegularFile (OSError)  a path that is not a regular file
    ├── ArchiveCorrupt            an archive file whose pieces do not hold what they say
    └── SourceChanged (OSError)   a transcript shrank while the archive copied it
"""


class MemexError(Exception):
    """Base of every error memex reports to the user."""

    exit_code = 1


class UserError(MemexError):
    """The user asked for something that cannot be done (bad argument, unknown session…)."""

    exit_code = 2


class ConfigError(UserError):
    """The configuration file or an environment override is invalid."""


class StoreError(MemexError):
    """The database cannot be opened or used."""


class UnknownComputer(UserError):
    """No computer of that name ever announced itself (or it announced no API address)."""


class EmbedBusy(MemexError):
    """Another process is draining the queue of this store."""


class EmbedderUnavailable(MemexError):
    """The configured embedding model cannot be loaded (search falls back to lexical)."""


class RemoteError(MemexError):
    """Another computer's API could not answer."""


class Unreachable(RemoteError):
    """No answer: the computer is off, its daemon is not running, or the address is wrong."""


class Refused(RemoteError):
    """The computer refused the token (the computers do not share the same `api_token`)."""

    exit_code = 2


class NotThere(RemoteError):
    """The computer answered that it does not have what was asked."""

    exit_code = 2


class ApiFailure(MemexError):
    """A request the HTTP API answers with an error status and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class WireError(MemexError, ValueError):
    """A payload that cannot be read as a mirror."""


class ChatTooLarge(MemexError, ValueError):
    """A chat kept as one JSON document is larger than `max_line_bytes`."""


class NotRegularFile(MemexError, OSError):
    """The path is not a regular file (a FIFO, a device, a socket, a folder)."""


class ArchiveCorrupt(MemexError):
    """An archive file whose complete pieces do not hold what their descriptions say."""


class SourceChanged(MemexError, OSError):
    """The transcript shrank while it was copied (it is copied again on the next run)."""


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or the daemon's SIGTERM) that `exc` stands for, if any. A signal's exception is raised
    wherever the interpreter happens to be, and some places re-raise it as another error: one that lands in
    a class being created (a module imported on first use) comes out as "RuntimeError: Error calling
    __set_name__", with the interrupt as its cause. Such an error is an interrupt, not a failure."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
