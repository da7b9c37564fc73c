"""The warm server: a process that keeps memex loaded and answers hook requests over a Unix socket.

A prompt hook is a new process each time; without help it pays for its imports and its database
connection (and, once embeddings exist, for loading the model) on every prompt. The warm server keeps
all of that in memory. It is started on demand: a hook that finds no server spawns one, detached, and
answers that prompt itself (the cold path). The server exits after `warm_idle_seconds` without a request,
when a client runs other code, when an edit of `config.toml` changed its settings, or when another server
took its socket.

Settings: there is one server per fingerprint of the effective configuration (defaults < `config.toml` <
MEMEX_* variables, `settings_stamp`): its socket, lock and pid file are named after the fingerprint
(`warm-<key>.sock`), so two shells or two Claude Code instances whose MEMEX_* environment differs each
have their own server instead of replacing each other's at every prompt (each then paying a cold start).
A server still checks the fingerprint a client sends (`stale` on a mismatch), and it stops by itself when
`config.toml` changes its settings: no client asks for them any more (as the daemon compares its settings
with a reloaded `config.toml`'s). Servers for other environments exit on their idle timeout. A server removes
its files as it exits, and one that starts sweeps those no live server holds (`sweep`).

Protocol: one JSON line in (`{"v": stamp, "s": settings, "op": ..., "payload": {...}}`), one JSON line out
(`{"ok": true, ...}` or `{"ok": false, "error": ...}`). Operations are registered in `OPERATIONS`, so
the embedding engineer can add e.g. `embed_query` without changing the transport.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import memex
from memex.config import Config, file_state

if TYPE_CHECKING:
    import sqlite3

    from memex.ingest.live import LiveIndex

# The files of one settings' server are `warm-<key>.{sock,lock,pid}`, the key a prefix of the fingerprint.
PREFIX = "warm-"
KEY_CHARS = 12
# A Unix socket path must fit in sun_path (108 bytes on Linux, 104 on macOS).
MAX_SOCKET_PATH = 100
MAX_REQUEST_BYTES = 4 * 1_048_576
# Requests answered at once (several Claude Code sessions may prompt together).
WORKERS = 4
# How often the idle server wakes to check its idle time and that its socket is still its own.
TICK_SECONDS = 1.0


def server_key(config: Config) -> str:
    """Which server serves these settings: a short prefix of their fingerprint, in its file names."""
    return settings_stamp(config)[:KEY_CHARS]


def socket_path(home: Path, key: str) -> Path:
    """`$MEMEX_HOME/warm-<key>.sock`, or a private per-user folder in the temp dir when that is too long."""
    path = home / f"{PREFIX}{key}.sock"
    if len(str(path).encode()) <= MAX_SOCKET_PATH:
        return path
    import tempfile

    from memex.digest import blake2b

    digest = blake2b(f"{home}\0{key}".encode(), digest_size=8).hexdigest()
    return Path(tempfile.gettempdir()) / f"memex-{os.getuid()}" / f"{digest}.sock"


def _lock_path(home: Path, key: str) -> Path:
    return home / f"{PREFIX}{key}.lock"


def pid_path(home: Path, key: str) -> Path:
    return home / f"{PREFIX}{key}.pid"


# Before one server per settings, a MEMEX_HOME had one server, its files `warm.{sock,lock,pid}`.
LEGACY = "warm"
# A server's own files: its key is KEY_CHARS hexadecimal digits of its settings' stamp (other files of the
# home that merely begin so are not a server's).
_SERVER_FILE = re.compile(rf"{re.escape(PREFIX)}([0-9a-f]{{{KEY_CHARS}}})\.(?:lock|sock|pid)")


def _files(home: Path, key: str | None) -> tuple[Path, list[Path]]:
    """A server's lock file, and the files it makes once it holds the lock (its socket and pid file); key None
    for the server of versions before one per settings."""
    if key is not None:
        return _lock_path(home, key), [socket_path(home, key), pid_path(home, key)]
    legacy = [home / f"{LEGACY}.sock", home / f"{LEGACY}.pid"]
    if len(str(legacy[0]).encode()) > MAX_SOCKET_PATH:  # its socket was in the temp folder then
        import tempfile

        from memex.digest import blake2b

        digest = blake2b(str(home).encode(), digest_size=8).hexdigest()
        legacy.append(Path(tempfile.gettempdir()) / f"memex-{os.getuid()}" / f"{digest}.sock")
    return home / f"{LEGACY}.lock", legacy


def take_lock(path: Path) -> int | None:
    """A descriptor holding the exclusive lock of the lock file `path` (created if missing), or None while a
    live process holds it. The lock is on the file: a lock file removed (`sweep`) after it was opened here is
    no one's lock any more, so it is held only while `path` still names it, else the new file is tried."""
    import fcntl

    while True:
        lock = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            return None
        except OSError:
            os.close(lock)
            raise
        if _names(path, lock):
            return lock
        os.close(lock)


def _names(path: Path, descriptor: int) -> bool:
    """Whether `path` still names the file open as `descriptor`."""
    try:
        return os.stat(path).st_ino == os.fstat(descriptor).st_ino
    except FileNotFoundError:
        return False


def _remove(lock_path: Path, files: list[Path]) -> None:
    """Remove a server's files while holding its lock, the lock file last: no server of it lives meanwhile."""
    for path in files:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    lock_path.unlink()


def sweep(home: Path, keep: str) -> list[str]:
    """Remove the files of the servers no process runs (a server of settings no longer used stopped, or was
    killed: its lock file stayed; the server of versions before one per settings left `warm.sock`), all but
    those of server `keep`; each one's lock is taken first, so a live server's files are never touched. The
    keys swept ("warm" for the old server's files)."""
    names = {path.name for path in home.glob(f"{LEGACY}*")}
    keys: set[str | None] = {match[1] for name in names if (match := _SERVER_FILE.fullmatch(name))}
    keys.discard(keep)
    if names & {f"{LEGACY}.{kind}" for kind in ("lock", "sock", "pid")}:
        keys.add(None)
    swept = []
    for key in sorted(keys, key=str):
        lock_path, files = _files(home, key)
        lock = take_lock(lock_path)
        if lock is None:
            continue  # its server is alive
        try:
            _remove(lock_path, files)
            swept.append(LEGACY if key is None else key)
        finally:
            os.close(lock)
    return swept


def code_stamp() -> str:
    """The version and the newest source file time of the running memex: a server with other code is stale."""
    root = Path(memex.__file__).parent
    newest = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                with contextlib.suppress(OSError):
                    newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
    return f"{memex.__version__}:{newest}"


def settings_stamp(config: Config) -> str:
    """A fingerprint of every effective setting: a server with other settings must not answer."""
    from memex.digest import blake2b

    return blake2b(repr(config).encode(), digest_size=16).hexdigest()


# --- client ----------------------------------------------------------------------------------------


@dataclass
class Reply:
    """A client's result: the server's answer, or why there is none (`absent`, `refused`, `timeout`…)."""

    answer: dict[str, Any] | None
    reason: str = "ok"

    @property
    def needs_server(self) -> bool:
        """True when no usable server is listening (a new one should be started)."""
        return self.answer is None and self.reason in ("absent", "refused", "stale")


def ask(
    config: Config, op: str, payload: dict[str, Any], stamp: str | None = None, read_timeout_ms: int | None = None
) -> Reply:
    """Send one request to the warm server of these settings; never raises, never waits longer than the
    configured timeouts (or `read_timeout_ms` for the answer)."""
    settings = settings_stamp(config)
    path = socket_path(config.home, settings[:KEY_CHARS])
    return _exchange(config, path, settings, op, payload, stamp, read_timeout_ms)


def _exchange(
    config: Config,
    path: Path,
    settings: str,
    op: str,
    payload: dict[str, Any],
    stamp: str | None = None,
    read_timeout_ms: int | None = None,
) -> Reply:
    if not path.exists():
        return Reply(None, "absent")
    version = stamp or code_stamp()
    request = json.dumps({"v": version, "s": settings, "op": op, "payload": payload}).encode() + b"\n"
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(config.warm_connect_timeout_ms / 1000)
        try:
            client.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            return Reply(None, "refused")
        client.settimeout((read_timeout_ms or config.warm_read_timeout_ms) / 1000)
        client.sendall(request)
        data = b""
        while not data.endswith(b"\n"):
            block = client.recv(65536)
            if not block:
                break
            data += block
        answer = json.loads(data) if data.strip() else None
    except TimeoutError:
        return Reply(None, "timeout")
    except (OSError, ValueError) as exc:
        return Reply(None, f"error: {exc}")
    finally:
        client.close()
    if not isinstance(answer, dict):
        return Reply(None, "error: empty answer")
    if not answer.get("ok"):
        error = str(answer.get("error") or "error")
        return Reply(None, "stale" if error == "stale" else f"error: {error}")
    return Reply(answer)


def spawn(config: Config, environ: dict[str, str] | None = None, *, for_index: bool = False) -> bool:
    """Start a warm server in the background (detached: it outlives the hook), with this process's
    environment (or `environ`: the MEMEX_* settings the clients it is for run with). A server for prompts
    loads the embedding model at once; one `for_index` lists the agents' folders at once instead (each does
    the other on the first request that needs it). False if it could not."""
    import subprocess

    config.home.mkdir(parents=True, exist_ok=True)
    # The server serves this store, whoever starts it.
    env = {**(os.environ if environ is None else environ), "MEMEX_HOME": str(config.home)}
    try:
        with open(config.home / "warm.log", "ab") as log:
            subprocess.Popen(
                [sys.executable, "-m", "memex", "hooks", "serve", *(["--for-index"] if for_index else [])],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                close_fds=True,
                cwd=str(config.home),
                env=env,
            )
    except OSError:
        return False
    return True


def server_pid(config: Config) -> int | None:
    """The pid of the live warm server of these settings, or None."""
    from memex.pids import live_pid

    return live_pid(pid_path(config.home, server_key(config)))


def servers(home: Path) -> dict[str, int]:
    """Every live warm server of this MEMEX_HOME (one per settings in use): its key and its pid."""
    from memex.pids import live_pid

    found = {}
    for path in sorted(home.glob(f"{PREFIX}*.pid")):
        pid = live_pid(path)
        if pid is not None:
            found[path.stem[len(PREFIX) :]] = pid
    return found


def shutdown_all(config: Config) -> list[int]:
    """Ask every warm server of this MEMEX_HOME to stop (whatever its settings); the pids that agreed."""
    stopped = []
    for key in servers(config.home):
        # `shutdown` is answered whatever the client's code and settings.
        reply = _exchange(config, socket_path(config.home, key), "", "shutdown", {})
        if reply.answer is not None:
            stopped.append(int(reply.answer.get("pid") or 0))
    return stopped


# --- server ----------------------------------------------------------------------------------------

Operation = Callable[["WarmServer", dict[str, Any]], dict[str, Any]]
OPERATIONS: dict[str, Operation] = {}
# Answered whatever the client's code version (`memex hooks shutdown` must stop an outdated server).
ADMIN_OPERATIONS = {"ping", "shutdown"}


def operation(name: str) -> Callable[[Operation], Operation]:
    """Register a request type the server answers."""

    def register(func: Operation) -> Operation:
        OPERATIONS[name] = func
        return func

    return register


class WarmServer:
    """The server of one MEMEX_HOME and settings: a socket, a few worker threads, one store connection per
    thread."""

    def __init__(self, config: Config, idle_seconds: float | None = None, for_index: bool = False) -> None:
        self.config = config
        self.for_index = for_index  # started by `memex index`: its folders listed at start, not the model
        self.idle_seconds = config.warm_idle_seconds if idle_seconds is None else idle_seconds
        self.stamp = code_stamp()
        self.settings = settings_stamp(config)
        self.key = self.settings[:KEY_CHARS]
        self.path = socket_path(config.home, self.key)
        self.config_seen = file_state(config.config_file)
        self.last_activity = time.monotonic()
        self.stopping = threading.Event()
        self.local = threading.local()
        self.busy = 0
        self.busy_lock = threading.Lock()
        self.requests = 0
        self._live: LiveIndex | None = None
        self._live_lock = threading.Lock()

    def live_index(self) -> LiveIndex | None:
        """The index runs' live tree and writer (`memex.ingest.live`), made on first use; None when
        `index_warm` is off or this system has no inotify."""
        from memex.sources.tree import available

        if not self.config.index_warm or not available():
            return None
        with self._live_lock:
            if self._live is None:
                from memex.ingest.live import LiveIndex

                self._live = LiveIndex(self.config)
            return self._live

    def store(self) -> sqlite3.Connection | None:
        """This thread's connection, reopened when the database file was replaced (rebuilt)."""
        from memex.store.db import connect_existing

        try:
            identity = os.stat(self.config.db_path).st_ino
        except FileNotFoundError:
            return None
        cached = getattr(self.local, "conn", None)
        if cached is not None and self.local.identity == identity:
            return cached
        if cached is not None:
            cached.close()
        self.local.conn = connect_existing(self.config.db_path, self.config.hook_read_busy_timeout_ms)
        self.local.identity = identity
        return self.local.conn

    def serve(self) -> bool:
        """Run until idle or stopped; False when another server already serves these settings. Its files go
        with it (a killed server's are swept by the next one to start)."""
        home = self.config.home
        home.mkdir(parents=True, exist_ok=True)
        # A server that is stopping (outdated) releases the lock within a tick: wait that long for it.
        deadline = time.monotonic() + 3 * TICK_SECONDS
        while (lock := take_lock(_lock_path(home, self.key))) is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        identity = None
        try:
            with contextlib.suppress(OSError):  # best effort: another server sweeps what is left
                sweep(home, self.key)
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            old_umask = os.umask(0o177)
            try:
                listener.bind(str(self.path))
            finally:
                os.umask(old_umask)
            listener.listen(16)
            listener.settimeout(TICK_SECONDS)
            identity = os.stat(self.path).st_ino
            pid_path(home, self.key).write_text(str(os.getpid()))
            self._loop(listener, identity)
        finally:
            listener.close()
            if self._live is not None:
                self._live.close()
            with contextlib.suppress(OSError):
                if os.stat(self.path).st_ino == identity:
                    self.path.unlink()
            with contextlib.suppress(OSError):
                if pid_path(home, self.key).read_text().strip() == str(os.getpid()):
                    pid_path(home, self.key).unlink()
            with contextlib.suppress(OSError):
                if _names(_lock_path(home, self.key), lock):  # not a newer server's, after ours was removed
                    _lock_path(home, self.key).unlink()  # still held: a server waiting for it takes the next one
            os.close(lock)
        return True

    def _loop(self, listener: socket.socket, identity: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(WORKERS, thread_name_prefix="memex-warm") as pool:
            pool.submit(self._preload)
            while not self.stopping.is_set():
                try:
                    client, _ = listener.accept()
                except TimeoutError:
                    idle = time.monotonic() - self.last_activity
                    if (self.idle_seconds and idle > self.idle_seconds and not self.busy) or not self._owns(identity):
                        break
                    if self._settings_changed():
                        break
                    if self._live is not None:
                        self._live.drain()  # the kernel's queue of changes kept short between index runs
                    continue
                self.last_activity = time.monotonic()
                pool.submit(self._handle, client)

    def _preload(self) -> None:
        """What the first request would wait for, done now (best effort): for a server started by `memex
        index`, list and watch the agents' folders; for one started by a prompt, load the embedding model
        and map the turn vectors."""
        # On failure the first request meets the problem again (an index run walks; a recall answers
        # lexically); what it was goes to the server's log.
        try:
            if self.for_index:
                live = self.live_index()
                if live is not None:
                    live.prepare()
                return
            from memex.embed.model import load_embedder
            from memex.search.vector import vector_index

            embedder = load_embedder(self.config)
            conn = self.store()
            if conn is not None:
                vector_index(self.config, "turn", embedder.dimension).sync(conn)
        except Exception as exc:
            print(f"memex warm server: could not prepare: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def _settings_changed(self) -> bool:
        """True when `config.toml` was edited so that this process's settings are no longer the server's:
        no client would ask it again. One stat a tick; the file is read only when it changed."""
        seen = file_state(self.config.config_file)
        if seen == self.config_seen:
            return False
        self.config_seen = seen
        from memex.config import load_config

        try:
            current = load_config({**os.environ, "MEMEX_HOME": str(self.config.home)})
        except Exception:  # an unreadable file: the hooks answer cold with an error until it is fixed
            return True
        return settings_stamp(current) != self.settings

    def _owns(self, identity: int) -> bool:
        try:
            return os.stat(self.path).st_ino == identity
        except OSError:
            return False

    def _handle(self, client: socket.socket) -> None:
        with self.busy_lock:
            self.busy += 1
        try:
            client.settimeout(self.config.warm_read_timeout_ms / 1000)
            data = b""
            while not data.endswith(b"\n") and len(data) < MAX_REQUEST_BYTES:
                block = client.recv(65536)
                if not block:
                    break
                data += block
            answer = self.answer(data)
            # ASCII: a file name that is no UTF-8 (a lone surrogate once decoded) must not fail the answer.
            client.sendall(json.dumps(answer).encode() + b"\n")
        except Exception:  # one bad client must not stop the server
            pass
        finally:
            client.close()
            self.last_activity = time.monotonic()
            with self.busy_lock:
                self.busy -= 1

    def answer(self, data: bytes) -> dict[str, Any]:
        """The reply to one request line."""
        try:
            request = json.loads(data)
        except ValueError:
            return {"ok": False, "error": "bad request"}
        if not isinstance(request, dict):
            return {"ok": False, "error": "bad request"}
        op = str(request.get("op"))
        stale = request.get("v") != self.stamp or request.get("s") != self.settings
        if stale and op not in ADMIN_OPERATIONS:
            self.stopping.set()  # other code or settings: let a fresh server take over
            return {"ok": False, "error": "stale"}
        handler = OPERATIONS.get(op)
        if handler is None:
            return {"ok": False, "error": f"unknown operation {request.get('op')!r}"}
        payload = request.get("payload")
        try:
            result = handler(self, payload if isinstance(payload, dict) else {})
        except Exception as exc:  # reported to the client, which falls back to the cold path, and logged
            error = f"{type(exc).__name__}: {exc}"
            print(f"memex warm server: {op} failed: {error}", file=sys.stderr, flush=True)
            return {"ok": False, "error": error}
        self.requests += 1
        return {"ok": True, **result}


@operation("ping")
def _ping(server: WarmServer, payload: dict[str, Any]) -> dict[str, Any]:
    return {"pid": os.getpid(), "requests": server.requests, "stamp": server.stamp}


@operation("shutdown")
def _shutdown(server: WarmServer, payload: dict[str, Any]) -> dict[str, Any]:
    server.stopping.set()
    return {"pid": os.getpid()}


@operation("index")
def _index(server: WarmServer, payload: dict[str, Any]) -> dict[str, Any]:
    live = server.live_index()
    if live is None:
        return {"walk": "no live tree here (index_warm = 0, or no inotify)"}
    return live.run(payload)


@operation("recall")
def _recall(server: WarmServer, payload: dict[str, Any]) -> dict[str, Any]:
    from memex.api import Memex

    conn = server.store()
    if conn is None:
        return {"text": "", "hits": 0}
    recalled = Memex(server.config, conn).recall(
        payload.get("prompt") or "",
        session_id=payload.get("session_id") or None,
        project_dir=payload.get("project_dir") or None,
        semantic=True,
    )
    return recalled.to_json()
