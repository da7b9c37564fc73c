"""Entry points of the Claude Code hooks: `memex hook <Event>` reads the event's JSON on stdin.

A hook never breaks the user's session: whatever happens, it exits 0, and it prints only what the event
injects (and only when there is something worth injecting). Errors go to the hook-run log. Imports are
made inside each handler so a Stop hook never loads what only recall needs, and nothing loads click or
rich (`python -X importtime -m memex hook Stop < event.json` shows what a hook pays for).

| event | does | prints |
| --- | --- | --- |
| Stop, SubagentStop | incremental ingest of the session and its subagents | nothing |
| SessionEnd | the same, once the session's transcript is whole | nothing |
| PreCompact | ingest, then record the compaction boundary | nothing |
| UserPromptSubmit | recall for the prompt (warm server, else in-process) | additionalContext |
| PreToolUse (Read/Edit/Write) | earlier sessions' turns that touched the file | additionalContext |
| SubagentStart | the files the parent session touched most recently | additionalContext |
| SessionStart (source `compact`) | the session's own last turns before the compaction | plain text |
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memex.config import DEFAULT_HOME, Config, load_config
from memex.hooks.log import record

# Events whose output reaches the model, and how: JSON `hookSpecificOutput.additionalContext`, or plain
# stdout (SessionStart: JSON there has made some versions report a hook error).
JSON_EVENTS = {"UserPromptSubmit", "PreToolUse", "SubagentStart"}
PLAIN_EVENTS = {"SessionStart"}
FILE_TOOLS = {"Read", "Edit", "MultiEdit", "Write", "NotebookEdit"}


@dataclass
class Hook:
    """One hook run: the event, its input, the configuration, and what the log should say about it."""

    event: str
    payload: dict[str, Any]
    config: Config
    log: dict[str, Any] = field(default_factory=dict)
    conn: Any = None  # the one store connection of this run, opened on first use

    def store(self, write: bool = False, busy_timeout_ms: int | None = None) -> Any:
        """The store: for writing (created if missing, waits for other writers) or for reading (None when
        there is no store yet; gives up at once on a locked file)."""
        from memex.store.db import connect, set_busy_timeout

        timeout = self.config.hook_write_busy_timeout_ms if write else self.config.hook_read_busy_timeout_ms
        timeout = timeout if busy_timeout_ms is None else busy_timeout_ms
        if self.conn is None:
            if not write and not self.config.db_path.exists():
                self.log["detail"] = "no database"
                return None
            self.conn = connect(self.config.db_path, timeout)
        set_busy_timeout(self.conn, timeout)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    @property
    def session_id(self) -> str | None:
        value = self.payload.get("session_id")
        return value if isinstance(value, str) and value else None

    def text(self, key: str) -> str | None:
        value = self.payload.get(key)
        return value if isinstance(value, str) and value else None


# --- ingest (Stop, SubagentStop, PreCompact, SessionStart, SubagentStart) ---------------------------


def _main_transcript(hook: Hook) -> Path | None:
    """The session's own transcript: `transcript_path`, or derived from a subagent's transcript path."""
    path = hook.text("transcript_path")
    if path:
        return Path(path).expanduser()
    agent_path = hook.text("agent_transcript_path")
    if agent_path:  # <session>/subagents/agent-<id>.jsonl -> <session>.jsonl
        folder = Path(agent_path).expanduser().parent.parent
        return folder.with_name(folder.name + ".jsonl")
    return None


def _pending_bytes(conn: Any, transcript: Any) -> int | None:
    """Bytes of a transcript not ingested yet; None when it has not changed since the last ingest."""
    try:
        stat = transcript.path.stat()
    except FileNotFoundError:
        return None
    from memex.store.forget import is_forgotten
    from memex.store.queries import ingest_mark

    if is_forgotten(conn, transcript.session_id):
        return None  # `memex forget`: never indexed again
    row = ingest_mark(conn, transcript.session_id, transcript.subagent_id, str(transcript.path.resolve()))
    if row is not None and row[0] == stat.st_size and row[1] == stat.st_mtime_ns:
        return None
    consumed = row[2] if row is not None and row[2] <= stat.st_size else 0
    return stat.st_size - consumed


def _hand_off(hook: Hook, session_path: Path, paths: list[Path]) -> bool:
    """Ingest a large backlog in a detached `memex index` (one at a time per session); True if started."""
    import subprocess

    from memex.digest import blake2b

    runs = hook.config.home / "run"
    runs.mkdir(parents=True, exist_ok=True)
    marker = runs / ("index-" + blake2b(str(session_path).encode(), digest_size=8).hexdigest())
    from memex.pids import live_pid

    if live_pid(marker) is not None:
        return False  # the previous hand-off is still at work
    process = subprocess.Popen(
        [sys.executable, "-m", "memex", "index", "--agent", "claude", *map(str, paths)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    marker.write_text(str(process.pid))
    return True


def _named_sidechain(hook: Hook, known: list[Any]) -> list[Any]:
    """The subagent transcript a SubagentStop names when it lies outside `<session>/subagents/` (Claude Code
    2.0 wrote sidechains as `agent-<id>.jsonl` beside the sessions)."""
    from memex.sources import claude

    agent_path = hook.text("agent_transcript_path")
    if agent_path is None or not Path(agent_path).expanduser().is_file():
        return []
    paths = {t.path.resolve() for t in known}
    found = claude.discover([Path(agent_path).expanduser()])
    return [t for t in found if t.subagent_id and t.path.resolve() not in paths]


# Claude Code 2.1 writes its transcript a little after the Stop hook starts (tens of milliseconds; a print
# mode session's whole file): Stop waits for the answer it was told of to be on disk, at most this long.
FLUSH_WAIT_SECONDS = 2.0
FLUSH_POLL_SECONDS = 0.02
# What is looked for in the transcript: a run of plain characters of the answer's start (JSON escapes none
# of them), and how much of the file's end is read for it. A pattern, compiled (and cached by `re`) on first
# use: only a Stop hook looks for an answer, and every hook imports this module.
_PLAIN_RUN = r"[A-Za-z0-9 ]{12,}"
SNIPPET_CHARS = 40
TAIL_BYTES = 1 << 20


def _answer_snippet(message: str | None) -> bytes | None:
    """A piece of the answer's start as the transcript's JSON holds it, or None when it has none to use."""
    found = re.search(_PLAIN_RUN, (message or "")[:400])
    return found.group()[:SNIPPET_CHARS].strip().encode() if found else None


def _holds(path: Path, snippet: bytes) -> bool:
    """Whether the end of the file at `path` holds `snippet`."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            return snippet in handle.read()
    except OSError:
        return False


def await_transcript(hook: Hook, path: Path, seconds: float = FLUSH_WAIT_SECONDS) -> None:
    """Wait until the session's transcript exists and, when the event names the last answer
    (`last_assistant_message`), holds it; at most `seconds`. The wait, when there was one, is logged."""
    snippet = _answer_snippet(hook.text("last_assistant_message"))
    started = time.monotonic()
    while not (path.is_file() and (snippet is None or _holds(path, snippet))):
        if time.monotonic() - started >= seconds:
            hook.log["flush"] = "not seen"
            return
        time.sleep(FLUSH_POLL_SECONDS)
    if time.monotonic() - started >= FLUSH_POLL_SECONDS:
        hook.log["flush_ms"] = round((time.monotonic() - started) * 1000)


def ingest_session(hook: Hook, with_subagents: bool = True, busy_timeout_ms: int | None = None) -> bool:
    """Bring the store up to date with the hook's session (inline, or handed off when large); True if inline."""
    # The adapter directly, not `ingest.indexer.session_transcripts`: the indexer module loads the
    # backfill's process-pool machinery, a third of a Stop hook's import time.
    from memex.ingest.pipeline import ingest_isolated
    from memex.sources import claude

    path = _main_transcript(hook)
    if path is not None and hook.event == "Stop":  # at SessionEnd it is whole, or there is none to wait for
        await_transcript(hook, path)
    if path is None or not path.is_file():
        hook.log["detail"] = "no transcript"
        return False
    transcripts = claude.discover([path])
    if with_subagents:
        transcripts += claude.subagent_transcripts(path)
        transcripts += _named_sidechain(hook, transcripts)
    config = hook.config
    conn = hook.store(write=True, busy_timeout_ms=busy_timeout_ms)
    pending = [(t, n) for t in transcripts if (n := _pending_bytes(conn, t)) is not None]
    backlog = sum(n for _, n in pending)
    hook.log["files"] = len(pending)
    if backlog > config.hook_inline_ingest_max_bytes:
        started = _hand_off(hook, path, [t.path for t, _ in pending])
        hook.log["detail"] = f"{backlog} bytes handed to a background index" + ("" if started else " (running)")
        return False
    turns = 0
    for transcript, _ in pending:
        report = ingest_isolated(conn, config, transcript)  # a subagent file that fails stops no other
        turns += report.turns
        if report.status == "failed":
            hook.log.setdefault("failed", []).append(f"{transcript.path}: {report.error}")
    hook.log["turns"] = turns
    return True


def refresh(hook: Hook) -> None:
    """Ingest the session's own transcript before answering from it, best effort and briefly: a hook that
    injects context answers from what the store holds when the store is busy."""
    try:
        ingest_session(hook, with_subagents=False, busy_timeout_ms=hook.config.hook_read_busy_timeout_ms)
    except Exception as exc:  # the answer comes from what is already stored
        hook.log["ingest"] = f"{type(exc).__name__}: {exc}"


def on_stop(hook: Hook) -> str:
    """Stop / SubagentStop / SessionEnd: ingest the session (and its subagents); at Stop and SessionEnd,
    tell a running memex daemon that the session stopped (it publishes the session's mirror and embeds what
    the ingest queued), or else start a background worker to embed it (embedding never runs inside a hook).
    Prints nothing, ever. Claude Code 2.1 writes the transcript just after Stop starts (`await_transcript`
    waits for it); SessionEnd, where it is whole, is the safety net."""
    from memex.signals import notify_stop

    stored = ingest_session(hook) and hook.log.get("turns")
    if (
        hook.event in ("Stop", "SessionEnd")
        and hook.session_id
        and notify_stop(hook.config.home, hook.session_id, hook.text("transcript_path"))
    ):
        return ""
    if stored and hook.config.index_embeds:
        from memex.embed.background import start_background_embed

        hook.log["embed"] = "started" if start_background_embed(hook.config.home) else "running"
    return ""


def on_pre_compact(hook: Hook) -> str:
    """PreCompact: ingest, then record where the compaction happens (what SessionStart re-injects from)."""
    from memex.store.db import transaction
    from memex.store.queries import mark_compaction

    if not ingest_session(hook):
        return ""
    path = _main_transcript(hook)
    conn = hook.store(write=True)
    with transaction(conn):
        mark_compaction(conn, str(path.resolve()) if path else "")
    return ""


# --- context (UserPromptSubmit, SessionStart, PreToolUse, SubagentStart) ------------------------------


def project_of(payload: dict[str, Any]) -> str | None:
    """The project a hook runs in: Claude Code's project root when it says, else the working folder."""
    return os.environ.get("CLAUDE_PROJECT_DIR") or payload.get("cwd") or None


def on_prompt(hook: Hook) -> str:
    """UserPromptSubmit: recalled turns of other sessions, or nothing (gated, or nothing relevant).

    The warm server answers when it runs (this process then imports no search code at all); else this
    process answers itself and starts a server for the next prompt.
    """
    from memex.context.gate import gate

    prompt = hook.text("prompt") or ""
    verdict = gate(prompt, hook.config.gate_min_content_units)
    if not verdict.recall:
        hook.log["detail"] = f"gated: {verdict.reason}"
        return ""
    if not hook.config.db_path.exists():
        hook.log["detail"] = "no database"
        return ""
    request = {"prompt": prompt, "session_id": hook.session_id, "project_dir": project_of(hook.payload)}
    if hook.config.warm_idle_seconds > 0:
        from memex.hooks import warm

        reply = warm.ask(hook.config, "recall", request)
        if reply.answer is not None:
            hook.log.update(path="warm", hits=reply.answer.get("hits", 0))
            return str(reply.answer.get("text") or "")
        hook.log["warm"] = reply.reason
        if reply.needs_server:
            warm.spawn(hook.config)
    from memex.api import Memex

    conn = hook.store()
    if conn is None:
        return ""
    recalled = Memex(hook.config, conn).recall(prompt, session_id=hook.session_id, project_dir=request["project_dir"])
    hook.log.update(path="cold", hits=recalled.hits)
    return recalled.text


def on_session_start(hook: Hook) -> str:
    """SessionStart after a compaction: the session's own last turns before the boundary."""
    from memex.api import Memex

    if hook.payload.get("source") != "compact":
        hook.log["detail"] = f"source {hook.payload.get('source')!r}"
        return ""
    refresh(hook)  # the boundary line may not be in the store yet
    conn = hook.store()
    if conn is None:
        return ""
    context = Memex(hook.config, conn).compaction_context(hook.session_id, hook.text("transcript_path"))
    if context is None:
        hook.log["detail"] = "session not indexed"
        return ""
    hook.log["turns"] = context.items
    return context.text


def _seen_file(hook: Hook) -> Path:
    from memex.digest import blake2b

    digest = blake2b((hook.session_id or "").encode(), digest_size=8).hexdigest()
    return hook.config.home / "run" / "seen" / digest


def on_pre_tool(hook: Hook) -> str:
    """PreToolUse on a file tool: earlier sessions' turns that touched the file (once per file and session)."""
    from memex.api import Memex

    if hook.payload.get("tool_name") not in FILE_TOOLS:
        return ""
    tool_input = hook.payload.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    raw = tool_input.get("file_path") or tool_input.get("notebook_path")
    if not isinstance(raw, str) or not raw.strip():
        return ""
    cwd = hook.text("cwd")
    path = os.path.normpath(os.path.join(cwd or os.getcwd(), os.path.expanduser(raw)))
    seen = _seen_file(hook)
    with contextlib.suppress(FileNotFoundError):
        if path in seen.read_text(encoding="utf-8").splitlines():
            hook.log["detail"] = "already said"
            return ""
    conn = hook.store()
    if conn is None:
        return ""
    context = Memex(hook.config, conn).file_context(path, session_id=hook.session_id, cwd=cwd)
    hook.log["turns"] = context.items
    if context.text:
        if not seen.exists():
            _prune(seen.parent, hook.config.file_context_seen_days * 86_400)
        seen.parent.mkdir(parents=True, exist_ok=True)
        with seen.open("a", encoding="utf-8") as handle:
            handle.write(path + "\n")
    return context.text


def _prune(folder: Path, max_age_seconds: float) -> None:
    """Remove the records of sessions not heard of for a while (one small file per session)."""
    cutoff = time.time() - max_age_seconds
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)


def on_subagent_start(hook: Hook) -> str:
    """SubagentStart: the files the parent session touched most recently, for the subagent's context."""
    from memex.api import Memex

    refresh(hook)  # this very turn's edits are not in the store yet
    conn = hook.store()
    if conn is None:
        return ""
    context = Memex(hook.config, conn).recent_files_context(hook.session_id, hook.text("transcript_path"))
    if context is None:
        hook.log["detail"] = "session not indexed"
        return ""
    hook.log["files"] = context.items
    return context.text


HANDLERS: dict[str, Callable[[Hook], str]] = {
    "Stop": on_stop,
    "SubagentStop": on_stop,
    "SessionEnd": on_stop,
    "PreCompact": on_pre_compact,
    "UserPromptSubmit": on_prompt,
    "SessionStart": on_session_start,
    "PreToolUse": on_pre_tool,
    "SubagentStart": on_subagent_start,
}


# --- the process -------------------------------------------------------------------------------------


def format_output(event: str, text: str) -> str:
    """What to print for `text`: the event's JSON, plain text, or nothing."""
    if not text:
        return ""
    if event in JSON_EVENTS:
        output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        return json.dumps(output, ensure_ascii=False)
    if event in PLAIN_EVENTS:
        return text
    return ""  # Stop, SubagentStop, SessionEnd, PreCompact: output there would keep the agent going or be dropped


def _answered_in_settings(event: str, payload: dict[str, Any]) -> Path | None:
    from memex.hooks.installer import answered_in_settings

    cwd = payload.get("cwd")
    return answered_in_settings(event, Path(cwd) if isinstance(cwd, str) and cwd else None)


def run(
    event: str, stdin: bytes, env: dict[str, str] | None = None, keep_open: bool = False, via_plugin: bool = False
) -> tuple[str, dict[str, Any]]:
    """Run one hook; returns what to print and the log entry. Never raises.

    `via_plugin`: the handler comes from the Claude Code plugin's `hooks.json`; it stands aside (does
    nothing, logs why) when memex's handlers in a settings file answer the same event.

    `keep_open` leaves the store connection open for a process about to end with `os._exit`: closing the
    last connection to a WAL database checkpoints it (an fsync), which the hook need not wait for; the
    next writer's automatic checkpoint does that work.
    """
    hook: Hook | None = None
    started = time.perf_counter()
    entry: dict[str, Any] = {"event": event}
    home = Path((env or os.environ).get("MEMEX_HOME") or DEFAULT_HOME).expanduser()
    max_log = 1_048_576
    output = ""
    try:
        payload = json.loads(stdin) if stdin.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
        if not event and isinstance(payload.get("hook_event_name"), str):
            event = entry["event"] = payload["hook_event_name"]
        entry["session"] = str(payload.get("session_id") or "")[:8]
        config = load_config(env)
        home, max_log = config.home, config.hook_log_max_bytes
        if not config.hooks_enabled:
            entry["status"] = "disabled"
        elif via_plugin and (answered := _answered_in_settings(event, payload)):
            entry["status"] = "stood aside"
            entry["detail"] = f"memex hooks in {answered} answer {event}; the plugin's stand aside"
        elif event not in HANDLERS:
            entry["status"] = "unknown event"
        else:
            hook = Hook(event, payload, config, entry)
            # Nothing a library prints may reach stdout: there, it would be injected into the model's context.
            with contextlib.redirect_stdout(sys.stderr):
                output = format_output(event, HANDLERS[event](hook))
                if not keep_open:
                    hook.close()
            entry["status"] = "injected" if output else "ok"
            if output:
                entry["chars"] = len(output)
    except Exception as exc:  # a hook logs every error and stays silent
        import traceback

        output = ""
        entry["status"] = "error"
        if hook is not None and not keep_open:
            with contextlib.suppress(Exception):
                hook.close()
        frames = traceback.extract_tb(exc.__traceback__)[-3:]
        where = " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames))
        entry["detail"] = f"{type(exc).__name__}: {exc} ({where})"
    entry["ms"] = round((time.perf_counter() - started) * 1000, 1)
    record(home, max_log, **entry)
    return output, entry


def main(argv: list[str], fast_exit: bool = False) -> int:
    """`memex hook <Event>`: read the event on stdin, print the injection (if any), exit 0.

    With `fast_exit` (the `memex` executable) the process ends right after its output with `os._exit`,
    skipping interpreter teardown and the checkpoint of closing the store.
    """
    from memex.hooks.installer import PLUGIN_FLAG

    event = argv[0] if argv else ""
    try:
        stdin = sys.stdin.buffer.read()
    except (OSError, ValueError, AttributeError):
        stdin = b""
    output, _ = run(event, stdin, keep_open=fast_exit, via_plugin=PLUGIN_FLAG in argv[1:])
    if output:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.write(output)
            sys.stdout.flush()
    if fast_exit:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(0)
    return 0
