"""The daemon's HTTP API over a real socket: the token, unknown sessions, path traversal, streaming."""

from __future__ import annotations

import http.client
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from agent_dirs import OTHER_AGENT_DIRS
from memex.sync.client import ApiClient
from synctools import SLAY, TOKEN, Computer
from transcripts import ClaudeSession, simple_turn

SLAY_ID = SLAY.stem

OPENCODE_DB = Path(__file__).resolve().parents[1] / "fixtures" / "live" / "opencode-1.18.33" / "opencode.db"


@pytest.fixture
def alpha(computers, tmp_path: Path) -> Computer:
    computer = computers("alpha")
    computer.add_claude(SLAY, "-Users-chloe-c-slay")
    computer.start(serve_api=True)
    # A file next to the store that no request may ever reach.
    (computer.home / "private.txt").write_text("PRIVATE-CONTENT-7f3a")
    return computer


# The first search loads the embedding model: seconds on a busy CPU. A test asserts the answer, not its speed.
PATIENCE_S = 120


def get(computer: Computer, path: str, token: str | None = TOKEN, method: str = "GET") -> tuple[int, bytes, Any]:
    """One raw request (the path is sent exactly as given: no client-side normalisation)."""
    assert computer.daemon is not None and computer.daemon.api is not None
    connection = http.client.HTTPConnection("127.0.0.1", computer.daemon.api.port, timeout=PATIENCE_S)
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read(), response.headers  # case-insensitive, as HTTP has it
    finally:
        connection.close()


def test_health_needs_no_token(alpha: Computer) -> None:
    status, body, _ = get(alpha, "/health", token=None)
    assert status == 200 and json.loads(body)["computer"] == "alpha"


@pytest.mark.parametrize(
    "path", ["/v1/search?q=slay", f"/v1/sessions/{SLAY_ID}/mirror", f"/v1/sessions/{SLAY_ID}/raw", "/v1/nothing"]
)
@pytest.mark.parametrize("token", [None, "", "wrong-token-wrong-token", TOKEN + "x", TOKEN[:-1]])
def test_missing_or_wrong_token_is_refused(alpha: Computer, path: str, token: str | None) -> None:
    status, body, headers = get(alpha, path, token=token)
    assert status == 401 and headers.get("WWW-Authenticate", "").startswith("Bearer")
    assert b"slay" not in body.lower()


def test_a_token_file_copied_in_while_the_daemon_runs_is_accepted(computers) -> None:
    """Sharing the token means copying `api-token` from another computer: the running daemon accepts the
    new token at once (it kept the one it read at start until restarted), and no longer the old one; a
    token file removed or cut short leaves the last token in force."""
    beta = computers("beta")
    beta.env.pop("MEMEX_API_TOKEN")
    beta.add_claude(SLAY, "-Users-chloe-c-slay")
    beta.start(serve_api=True)
    token_file = beta.home / "api-token"
    own = token_file.read_text().strip()
    mirror = f"/v1/sessions/{SLAY_ID}/mirror"
    assert get(beta, mirror, token=own)[0] == 200
    shared = "copied-from-alpha-" + "x" * 30
    token_file.write_text(shared + "\n")
    assert get(beta, mirror, token=shared)[0] == 200
    assert get(beta, mirror, token=own)[0] == 401
    token_file.write_text("")  # a copy under way
    assert get(beta, mirror, token=shared)[0] == 200
    token_file.unlink()
    assert get(beta, mirror, token=shared)[0] == 200 and get(beta, mirror, token="")[0] == 401


def test_other_schemes_are_refused(alpha: Computer) -> None:
    assert alpha.daemon is not None and alpha.daemon.api is not None
    connection = http.client.HTTPConnection("127.0.0.1", alpha.daemon.api.port, timeout=10)
    connection.request("GET", "/v1/search?q=slay", headers={"Authorization": f"Basic {TOKEN}"})
    assert connection.getresponse().status == 401
    connection.close()


def test_search(alpha: Computer) -> None:
    status, body, _ = get(alpha, "/v1/search?q=slay&limit=3")
    data = json.loads(body)
    assert status == 200 and data["computer"] == "alpha"
    assert 0 < len(data["results"]) <= 3 and all(hit["session_id"] == SLAY_ID for hit in data["results"])
    status, body, _ = get(alpha, "/v1/search?q=" + quote("dotfil*"))  # a word ending in `*` is a prefix
    first = json.loads(body)["results"][0]
    assert status == 200 and first["session_id"] == SLAY_ID
    assert {first["matched_chunk"][s:e].lower() for s, e in first["spans"]} == {"dotfiles"}
    assert get(alpha, "/v1/search?q=")[0] == 400
    assert get(alpha, "/v1/search?q=slay&agent=nope")[0] == 400
    assert get(alpha, "/v1/search?q=slay&since=yesterdayish")[0] == 400
    status, body, _ = get(alpha, "/v1/search?q=slay&limit=%C2%B2")  # a digit int() does not read
    assert status == 400 and json.loads(body)["error"] == "limit must be a whole number, got '²'"
    assert get(alpha, "/v1/search?q=slay&limit=--3")[0] == 400
    assert get(alpha, "/v1/search?q=slay&limit=-3")[0] == 200  # out of range: brought within it


def test_mirror(alpha: Computer) -> None:
    status, body, _ = get(alpha, f"/v1/sessions/{SLAY_ID}/mirror")
    data = json.loads(body)
    assert status == 200 and data["session"]["session_id"] == SLAY_ID
    assert data["mirror"]["messages"][0]["role"] == "user"


def test_raw_is_the_transcript_streamed(alpha: Computer) -> None:
    status, body, headers = get(alpha, f"/v1/sessions/{SLAY_ID}/raw")
    assert status == 200 and body == SLAY.read_bytes()
    assert int(headers["Content-Length"]) == SLAY.stat().st_size


def test_unknown_sessions_are_404(alpha: Computer) -> None:
    for session in ("00000000-0000-0000-0000-000000000000", SLAY_ID[:8], "x" * 129):
        for what in ("mirror", "raw"):
            status, body, _ = get(alpha, f"/v1/sessions/{session}/{what}")
            assert status == 404, (session, what)
            assert json.loads(body)["error"]


def test_a_transcript_gone_from_disk_is_served_from_the_archive(alpha: Computer) -> None:
    transcript = alpha.claude_dir / "-Users-chloe-c-slay" / SLAY.name
    transcript.unlink()
    status, body, headers = get(alpha, f"/v1/sessions/{SLAY_ID}/raw")
    assert status == 200 and body == SLAY.read_bytes()
    assert int(headers["Content-Length"]) == SLAY.stat().st_size


def test_a_session_its_agent_deleted_from_its_database_is_served_from_the_archive(computers) -> None:
    """OpenCode keeps sessions in one database: the raw route gives a session's records, and once OpenCode
    deleted it, the archive's copy of them (it was a 410)."""
    computer = computers("alpha")
    database = computer.root / OTHER_AGENT_DIRS["opencode_db"]
    database.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(OPENCODE_DB, database)
    computer.start(serve_api=True)
    with sqlite3.connect(database) as db:
        session_id = db.execute("SELECT id FROM session WHERE parent_id IS NULL ORDER BY id").fetchone()[0]
    status, records, _ = get(computer, f"/v1/sessions/{session_id}/raw")
    assert status == 200 and records.startswith(b'{"session":')
    with sqlite3.connect(database) as db:
        for table, column in (("part", "session_id"), ("message", "session_id"), ("session", "id")):
            db.execute(f"DELETE FROM {table} WHERE {column} = ?", (session_id,))
    status, body, headers = get(computer, f"/v1/sessions/{session_id}/raw")
    assert status == 200 and body == records and int(headers["Content-Length"]) == len(records)


def test_a_transcript_gone_from_disk_without_a_copy_is_410(computers) -> None:
    computer = computers("alpha", archive_enabled=0)
    computer.add_claude(SLAY, "-Users-chloe-c-slay")
    computer.start(serve_api=True)
    (computer.claude_dir / "-Users-chloe-c-slay" / SLAY.name).unlink()
    assert get(computer, f"/v1/sessions/{SLAY_ID}/raw")[0] == 410


TRAVERSALS = [
    "/v1/sessions/../../../../etc/passwd/raw",
    "/v1/sessions/..%2F..%2F..%2F..%2Fetc%2Fpasswd/raw",
    "/v1/sessions/%2e%2e%2f%2e%2e%2fprivate.txt/raw",
    "/v1/sessions/..%252F..%252Fetc%252Fpasswd/raw",
    "/v1/sessions/%2Fetc%2Fpasswd/raw",
    "/v1/sessions/..\\..\\private.txt/raw",
    f"/v1/sessions/{SLAY_ID}/../../../etc/passwd",
    f"/v1/sessions/{SLAY_ID}/raw/../../../private.txt",
    f"/v1/sessions/{SLAY_ID}%00../../private.txt/raw",
    f"/v1/sessions/{SLAY_ID}/raw?path=/etc/passwd",
    "/v1/raw?path=/etc/passwd",
    "/../../etc/passwd",
    "//etc/passwd",
    "/v1/sessions/private.txt/raw",
    "/v1/sessions/~/raw",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_path_traversal_never_reaches_a_file(alpha: Computer, path: str) -> None:
    status, body, _ = get(alpha, path)
    assert b"root:" not in body and b"PRIVATE-CONTENT" not in body
    if "?path=" in path and path.startswith(f"/v1/sessions/{SLAY_ID}/raw"):
        assert status == 200 and body == SLAY.read_bytes()  # the query is ignored: the session's own file
    else:
        assert status in (400, 404)


def test_a_session_id_that_is_a_path_is_refused(alpha: Computer) -> None:
    transcript = alpha.claude_dir / "-Users-chloe-c-slay" / SLAY.name
    status, body, _ = get(alpha, f"/v1/sessions/{quote(str(transcript), safe='')}/raw")
    assert status == 404 and b"slay" not in body.lower()


def test_only_get_is_served(alpha: Computer) -> None:
    assert get(alpha, "/v1/search?q=slay", method="POST")[0] == 405
    assert get(alpha, f"/v1/sessions/{SLAY_ID}/raw", method="DELETE")[0] == 405


def test_a_large_transcript_arrives_in_blocks(computers) -> None:
    computer = computers("alpha")
    path = computer.claude_dir / "-home-dev-big" / "eeeeeeee-1111-2222-3333-444444444444.jsonl"
    session = ClaudeSession(path, path.stem, cwd="/home/dev/big")
    for n in range(300):
        simple_turn(session, f"question {n} " + "lorem ipsum " * 400, f"answer {n} " + "dolor sit amet " * 300)
    assert path.stat().st_size > 2_000_000
    computer.start(serve_api=True)
    assert computer.daemon is not None and computer.daemon.api is not None
    blocks = list(ApiClient(computer.daemon.api.url, TOKEN, timeout=PATIENCE_S).raw(path.stem))
    assert len(blocks) > 10 and b"".join(blocks) == path.read_bytes()
