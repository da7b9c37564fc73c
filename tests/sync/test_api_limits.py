"""The daemon's HTTP API under load and abuse, over real sockets on 127.0.0.1: a burst of connections,
200 concurrent clients, slow clients, bad input, a GET with a body, and what the server holds over many
requests (threads, descriptors of the store)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memex.sync.server import ApiServer, Limits
from rawhttp import Peak, burst, open_on, request, status_of, statuses, store_descriptors, trickle
from synctools import SLAY, TOKEN, Computer, wait_until

SLAY_ID = SLAY.stem
MIRROR = f"/v1/sessions/{SLAY_ID}/mirror"
RAW = f"/v1/sessions/{SLAY_ID}/raw"

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")


@pytest.fixture
def alpha(computers) -> Computer:
    """A computer with one indexed session; its daemon runs without the API (each test starts its own)."""
    computer = computers("alpha")
    computer.add_claude(SLAY, "-Users-chloe-c-slay")
    computer.start()
    return computer


@pytest.fixture
def serve(alpha: Computer) -> Iterator[Callable[..., ApiServer]]:
    """Start alpha's API with the given limits (`serve(request_seconds=0.5)`); stopped at the end."""
    started: list[ApiServer] = []

    def start(run: bool = True, **limits: float) -> ApiServer:
        api = ApiServer(alpha.config, TOKEN, "127.0.0.1:0", Limits(**limits))  # type: ignore[arg-type]
        started.append(api)
        if run:
            api.start()
        return api

    yield start
    for api in started:
        api.stop()


def ask(api: ApiServer, path: str, token: str | None = TOKEN, timeout: float = 30) -> tuple[int | None, bytes]:
    answer = burst(api.port, [request(path, token)], timeout=timeout)[0]
    return status_of(answer), answer.partition(b"\r\n\r\n")[2]


def test_a_burst_of_connections_waits_in_the_backlog(serve) -> None:
    """Connections that arrive while the server is busy (here: not accepting yet) are queued by the
    kernel, not dropped (the stdlib's backlog of 5 completed 6 handshakes of 100)."""
    api = serve(run=False)
    sockets = []
    try:
        for _ in range(100):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", api.port))
            sockets.append(sock)
        time.sleep(0.5)
        connected = sum(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 and _peer(sock) for sock in sockets)
        assert connected == 100
        api.start()  # the queued connections are then served
        assert ask(api, "/health", token=None)[0] == 200
    finally:
        for sock in sockets:
            sock.close()


def _peer(sock: socket.socket) -> bool:
    try:
        sock.getpeername()
        return True
    except OSError:
        return False


@pytest.mark.parametrize("path", [MIRROR, "/v1/search?q=slay"])
def test_200_concurrent_clients_are_all_served_by_a_bounded_pool(serve, path: str) -> None:
    api = serve(workers=4)
    assert ask(api, path)[0] == 200  # warm: the embedding model is loaded once per process
    with Peak(threading.active_count) as threads:
        answers = burst(api.port, [request(path, TOKEN)] * 200)
    assert [status_of(answer) for answer in answers] == [200] * 200
    assert all(json.loads(answer.partition(b"\r\n\r\n")[2]) for answer in answers)
    # The server's threads: its event loop and at most `workers` threads reading the store.
    assert threads.peak <= threading.active_count() + 4 + 1


def test_slow_clients_are_cut_at_the_deadline_and_hold_no_thread(serve) -> None:
    api = serve(request_seconds=0.5)
    before = threading.active_count()
    endless_header = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10_000
    slow_body = b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n" + b"a" * 10_000
    results: list[tuple[bool, int]] = []

    def slow(data: bytes) -> None:
        results.append(trickle(api.port, data, every=0.05, limit=30))

    clients = [threading.Thread(target=slow, args=(endless_header if n % 2 else slow_body,)) for n in range(40)]
    with Peak(threading.active_count) as threads:
        for client in clients:
            client.start()
        time.sleep(0.2)
        assert ask(api, "/health", token=None)[0] == 200  # served while the slow ones are held
        for client in clients:
            client.join()
    assert len(results) == 40 and all(closed for closed, _ in results)
    # Each was cut after about 0.5 s (10 bytes at 20 a second), far before the 30 s it would go on.
    assert max(sent for _, sent in results) < 200
    assert threads.peak <= before + len(clients) + 4 + 1  # the clients' own threads, no thread per client


def test_connections_beyond_the_limit_get_a_503(serve) -> None:
    api = serve(max_connections=5)
    idle = [socket.create_connection(("127.0.0.1", api.port), timeout=30) for _ in range(5)]
    try:
        wait_until(lambda: ask(api, "/health", token=None)[0] == 503)  # once the idle ones are accepted
    finally:
        for sock in idle:
            sock.close()
    wait_until(lambda: ask(api, "/health", token=None)[0] == 200)


def test_a_connection_that_sends_nothing_is_closed(serve) -> None:
    api = serve(request_seconds=0.3)
    with socket.create_connection(("127.0.0.1", api.port), timeout=30) as sock:
        assert sock.recv(1024) == b""


def test_a_client_that_stops_reading_a_transcript_is_cut(alpha: Computer, serve) -> None:
    transcript = _big_transcript(alpha)
    size = transcript.stat().st_size
    api = serve(stall_seconds=0.3)
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(30)
        sock.connect(("127.0.0.1", api.port))
        sock.sendall(request(RAW, TOKEN))
        time.sleep(2)  # reads nothing meanwhile
        received = 0
        try:
            while data := sock.recv(1 << 20):
                received += len(data)
        except ConnectionResetError:
            pass
    assert 0 < received < size
    wait_until(lambda: not open_on(transcript))  # the stream let go of the file


def _big_transcript(alpha: Computer) -> Path:
    """alpha's transcript with 32 MiB appended: more than socket buffers hold."""
    transcript = alpha.claude_dir / "-Users-chloe-c-slay" / SLAY.name
    with transcript.open("ab") as handle:
        handle.write((b'{"type":"padding","text":"' + b"x" * (1 << 20) + b'"}\n') * 32)
    return transcript


def test_a_transcript_that_shrinks_while_sent_ends_short(alpha: Computer, serve) -> None:
    transcript = _big_transcript(alpha)
    api = serve()
    with socket.create_connection(("127.0.0.1", api.port), timeout=30) as sock:
        sock.sendall(request(RAW, TOKEN))
        answer = sock.recv(65536)
        announced = int(answer.split(b"content-length: ")[1].split(b"\r\n")[0])
        os.truncate(transcript, 1000)
        received = len(answer.partition(b"\r\n\r\n")[2])
        while data := sock.recv(1 << 20):
            received += len(data)
    assert received < announced  # the connection is closed: the client knows it is short
    wait_until(lambda: not open_on(transcript))


def test_stop_cuts_the_answers_under_way(alpha: Computer, serve) -> None:
    transcript = _big_transcript(alpha)
    api = serve()
    with socket.create_connection(("127.0.0.1", api.port), timeout=30) as sock:
        sock.sendall(request(RAW, TOKEN))
        assert sock.recv(100)
        api.stop()  # returns though the client reads nothing
        assert not open_on(transcript)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/search?q=sl%00ay",
        "/v1/search?q=slay&project=%00",
        "/v1/search?q=slay&session=%00",
        "/v1/search?q=slay&limit=%00",
        "/v1/search?q=slay&limit=ten",
        "/v1/search?q=slay&agent=%00",
        "/v1/search?q=" + "slay%20" * 300,
        f"/v1/sessions/{SLAY_ID}%00/mirror",
    ],
)
def test_bad_input_is_a_4xx(serve, path: str) -> None:
    status, body = ask(serve(), path)
    assert status is not None and 400 <= status < 500, (status, body)
    assert json.loads(body)["error"]


def test_a_nul_byte_in_the_request_line_is_a_400(serve) -> None:
    api = serve()
    answer = burst(api.port, [b"GET /v1/search?q=sl\x00ay HTTP/1.1\r\nHost: x\r\n\r\n"])[0]
    assert status_of(answer) == 400


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_a_get_body_is_not_read_as_a_second_request(serve, framing: str) -> None:
    """A body on a GET is skipped as the body it is: the request hidden in it is never answered."""
    api = serve()
    hidden = b"GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n"
    if framing == "length":
        first = b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(hidden), hidden)
    else:
        first = b"GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (
            len(hidden),
            hidden,
        )
    second = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answer = burst(api.port, [first + second])[0]
    assert statuses(answer) == [200, 200], answer


def test_threads_and_store_handles_stay_flat_over_many_requests(alpha: Computer, serve) -> None:
    api = serve(workers=4)
    paths = [MIRROR, "/v1/search?q=slay", RAW, "/health", "/v1/search?q=sl%00ay", "/v1/sessions/nope/raw"]
    burst(api.port, [request(path, TOKEN) for path in paths * 10])  # warm
    threads, handles = threading.active_count(), store_descriptors(alpha.config.db_path)
    fds = len(os.listdir("/proc/self/fd"))
    with Peak(lambda: store_descriptors(alpha.config.db_path)) as peak_handles:
        for _ in range(10):
            answers = burst(api.port, [request(path, TOKEN) for path in paths * 10])
            assert all(status_of(answer) for answer in answers)
    # A pool of 4 read-only handles (database, WAL: 2 descriptors each), not one per request.
    assert peak_handles.peak <= handles + 4 * 2
    assert store_descriptors(alpha.config.db_path) <= handles + 4 * 2
    assert threading.active_count() <= threads + 4, [t.name for t in threading.enumerate()]
    assert len(os.listdir("/proc/self/fd")) <= fds + 4 * 2 + 2
