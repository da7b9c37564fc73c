"""`memex web` over a real socket on 127.0.0.1, against a real indexed corpus: each page's content, the
filters, search highlights, a session with subagents, forget with its confirmation, who may ask, and the
escaping of a hostile title."""

from __future__ import annotations

import http.client
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from corpus import CODEX_SHORT
from memex.cli.web import DEFAULT_PORT
from memex.config import Config
from memex.web.server import WebServer
from webtools import HOSTILE, LONG_SESSION, MARKDOWN_SESSION, MIRRORED, SUBAGENT_SESSION, Browser

CODEX_ID = "019a802a-aab1-7c31-9831-d2510c7a74a2"
# The hostile title as pages show it: plain text (its <b> formatting dropped), the rest escaped.
ESCAPED = "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt; &amp; bold"


def session_links(body: str) -> set[str]:
    return set(re.findall(r'class="title" href="/s/([^"]+)"', body))


def test_sessions_list_marks_mirrors_and_subagents(web: Browser) -> None:
    page = web.get("/")
    assert page.status == 200
    assert page.headers["content-type"].startswith("text/html")
    links = session_links(page.body)
    assert {SUBAGENT_SESSION, MIRRORED, CODEX_ID} <= links
    assert "7de1dd02-d3f9-49aa-8911-7d5b98666a03" in links  # HillviewCap
    row = re.search(r'<tr class="mirror">.*?</tr>', page.body, re.S)
    assert row is not None and "laptop" in row.group(0) and "badge mirror" in row.group(0)
    assert "+1 subagent: general-purpose<" in page.body  # the live Claude Code session's, by its agentType


@pytest.mark.parametrize(
    ("query", "present", "absent"),
    [
        ("agent=codex", {CODEX_ID}, {SUBAGENT_SESSION, MIRRORED}),
        ("computer=laptop", {MIRRORED}, {SUBAGENT_SESSION, CODEX_ID}),
        ("local=1", {SUBAGENT_SESSION, CODEX_ID}, {MIRRORED}),
        ("project=proj", {SUBAGENT_SESSION, MIRRORED}, {CODEX_ID, "7de1dd02-d3f9-49aa-8911-7d5b98666a03"}),
        ("since=2026-11-01", {SUBAGENT_SESSION}, {"7de1dd02-d3f9-49aa-8911-7d5b98666a03", CODEX_ID}),
        ("until=2025-12-31", {"7de1dd02-d3f9-49aa-8911-7d5b98666a03"}, {SUBAGENT_SESSION}),
    ],
)
def test_sessions_filters(web: Browser, query: str, present: set[str], absent: set[str]) -> None:
    page = web.get(f"/?{query}")
    assert page.status == 200
    links = session_links(page.body)
    assert present <= links and not absent & links


def test_the_forms_empty_fields_filter_nothing(web: Browser) -> None:
    page = web.get("/?project=&agent=codex&computer=&since=&until=&pr=")
    assert page.status == 200 and session_links(page.body) == {CODEX_ID}
    found = web.get("/search?q=zebra&mode=lexical&level=&project=&agent=&since=&until=&session=&file=&pr=&limit=")
    assert found.status == 200 and "<mark>zebra</mark>" in found.body


def test_a_bad_filter_is_one_clear_message(web: Browser) -> None:
    page = web.get("/?since=yesterdayish")
    assert page.status == 400
    assert "yesterdayish" in page.body and "Traceback" not in page.body
    assert web.get("/?agent=nobody").status == 400


def test_conversation_with_subagents_files_and_folding(web: Browser) -> None:
    page = web.get(f"/s/{SUBAGENT_SESSION[:8]}")
    assert page.status == 200
    assert "MOCK-READ /home/dev/proj/notes.md check the zebra token rotation notes" in page.body
    assert page.body.count('class="message user"') >= 2 and 'class="message assistant"' in page.body
    assert "Subagents (1)" in page.body and "a6464d481e77bfaa0" in page.body and "List project files" in page.body
    assert "<code>notes.md</code>" in page.body  # the files it touched
    assert f'href="/s/{SUBAGENT_SESSION}/related"' in page.body


def test_a_conversation_renders_its_markdown_and_no_script(web: Browser) -> None:
    """An answer's heading, list, code block, table, inline code and link are elements; its <script>, its
    <img onerror> and its javascript: link are shown as text, never run."""
    page = web.get(f"/s/{MARKDOWN_SESSION}")
    assert page.status == 200
    answer = re.search(r'<article class="message assistant">.*?</article>', page.body, re.S)
    assert answer is not None
    html = answer.group(0)
    assert "<h5>Plan MD-HEADING</h5>" in html  # under the message's <h3> and "<li>first MD-ITEM</li>" in html
    code = re.search(r'<pre><code class="language-python">(.*?)</code></pre>', html, re.S)
    assert code is not None and "MD-CODE" in code.group(1)
    assert "\n        return [k for k in keys" in code.group(1)  # its indentation kept
    assert "<th>column</th>" in html and "<td>MD-CELL</td>" in html
    assert "<code>memex index</code>" in html
    assert '<a href="https://example.org/docs" rel="noreferrer nofollow">the docs</a>' in html
    assert "<script" not in html and "<img" not in html and "javascript:" not in re.sub(r">[^<]*<", "><", html)
    assert "&lt;script&gt;alert(&quot;md-xss&quot;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(&quot;md-img&quot;)&gt;" in html
    assert "[click](javascript:alert(&quot;md-link&quot;))" in html  # no link made of it
    # The turns keep the text as it was written (the raw view), and a search its excerpt, highlighted.
    turns = web.get(f"/s/{MARKDOWN_SESSION}?turns=1").body
    assert '<pre class="text">' in turns and "## Plan MD-HEADING" in turns
    found = web.get("/search?q=quokka+MD-CELL&mode=lexical").body
    assert "<mark>quokka</mark>" in found and f'href="/s/{MARKDOWN_SESSION}?turns=1#t' in found
    assert "&lt;script&gt;" in found and "<script>" not in found


def test_turns_nest_subagents_and_collapse_tools(web: Browser) -> None:
    page = web.get(f"/s/{SUBAGENT_SESSION}?turns=1")
    assert page.status == 200
    sub = re.search(r'<article class="turn subagent".*?</article>', page.body, re.S)
    assert sub is not None
    # Named as Claude Code recorded it (agent-<id>.meta.json: agentType, description), with its id.
    assert "subagent general-purpose &#34;List project files&#34; (a6464d481e77bfaa0)" in sub.group(0)
    assert "SUBAGENT-TASK" in sub.group(0)
    assert '<details class="tools"><summary>Tools</summary><pre>Tools: Read ×1, Bash ×1' in page.body


def test_long_outputs_are_folded(web: Browser) -> None:
    for path in (f"/s/{LONG_SESSION}", f"/s/{LONG_SESSION}?turns=1"):
        page = web.get(path)
        assert page.status == 200
        head, _, folded = page.body.partition('<details class="more"><summary>')
        assert "line 0 of a long build log" in head and "TAIL-MARKER" not in head, path
        assert "TAIL-MARKER" in folded, path


def test_received_mirror_shows_its_conversation_and_escapes_its_title(web: Browser) -> None:
    page = web.get(f"/s/{MIRRORED}")
    assert page.status == 200
    assert "on laptop" in page.body and 'class="message user"' in page.body
    assert HOSTILE not in page.body and "<script>" not in page.body
    assert f"<h1>{ESCAPED}</h1>" in page.body
    assert "?turns=1" not in page.body  # no turns for a session of another computer


def test_hostile_title_is_escaped_everywhere(web: Browser) -> None:
    for path in ("/", "/?computer=laptop", "/search?q=zebra&mode=lexical", f"/s/{MIRRORED}/forget"):
        page = web.get(path)
        assert page.status == 200, path
        assert "<script>" not in page.body and ESCAPED in page.body, path


def test_search_highlights_the_query_words(web: Browser) -> None:
    page = web.get("/search?q=zebra+rotation&mode=lexical")
    assert page.status == 200
    assert "<mark>zebra</mark>" in page.body and "<mark>rotation</mark>" in page.body
    assert re.search(f'href="/s/{SUBAGENT_SESSION}\\?turns=1#t\\d+"', page.body)
    assert "No matching turns" not in page.body


@pytest.mark.parametrize("scope", ["conversation", "tools"])
def test_a_hit_links_to_its_turn(web: Browser, scope: str) -> None:
    """A hit opens its session at the turn that matched (of many, the subagent's here), not at the top."""
    query = "SUBAGENT-TASK" if scope == "conversation" else "notes.md"
    page = web.get(f"/search?q={query}&mode=lexical&in={scope}&session={SUBAGENT_SESSION[:8]}&per_session=5")
    links = re.findall(f'href="(/s/{SUBAGENT_SESSION}\\?turns=1)#(t\\d+)"', page.body)
    assert links, page.body
    for path, anchor in links:
        turns = web.get(path).body
        article = re.search(f'<article class="turn[^"]*"[^>]*>\\s*<h3 id="{anchor}">(.*?)</article>', turns, re.S)
        assert article is not None, anchor
        if scope == "conversation":
            assert "SUBAGENT-TASK" in article.group(1) and "subagent" in article.group(0)


def test_search_filters_and_modes(web: Browser) -> None:
    only_codex = web.get("/search?q=zebra&mode=lexical&agent=codex")
    assert only_codex.status == 200 and "No matching turns." in only_codex.body
    one_session = web.get(f"/search?q=subagent&mode=lexical&session={SUBAGENT_SESSION[:8]}&limit=5")
    assert one_session.status == 200
    assert set(re.findall(r'href="/s/([0-9a-f-]{36})', one_session.body)) == {SUBAGENT_SESSION}
    assert web.get("/search?q=zebra&mode=telepathy").status == 400
    assert web.get("/search?q=zebra&limit=abc").status == 400
    form = web.get("/search")
    assert form.status == 200 and '<ol class="hits">' not in form.body


def test_search_names_the_subagent_of_a_hit(web: Browser) -> None:
    page = web.get(f"/search?q=SUBAGENT-TASK&mode=lexical&session={SUBAGENT_SESSION[:8]}&limit=5")
    assert page.status == 200
    assert "subagent general-purpose &#34;List project files&#34; (a6464d481e77bfaa0)" in page.body


def test_search_in_tool_output_and_by_role(web: Browser) -> None:
    tools = web.get("/search?q=alwaysThinkingEnabled&in=tools")
    assert (
        tools.status == 200 and "tool output: Read" in tools.body and "<mark>alwaysThinkingEnabled</mark>" in tools.body
    )
    assert "<option selected>tools</option>" in tools.body
    conversation = web.get("/search?q=alwaysThinkingEnabled&mode=lexical")
    assert conversation.status == 200 and "No matching turns." in conversation.body
    assert "No matching tool output." in web.get("/search?q=zzqxnothing&in=tools").body
    assert "<mark>zebra</mark>" in web.get("/search?q=zebra&role=user").body
    assert web.get("/search?q=zebra&in=tools&role=user").status == 400
    assert web.get("/search?q=zebra&in=nowhere").status == 400


def test_unknown_session_is_not_found(web: Browser) -> None:
    page = web.get("/s/00000000deadbeef")
    assert page.status == 404 and "no session" in page.body


def test_related_before_the_vectors_exist_says_how(web: Browser) -> None:
    page = web.get(f"/s/{SUBAGENT_SESSION[:8]}/related")
    assert page.status == 200
    assert f"memex find-related sessions {SUBAGENT_SESSION}" in page.body


@pytest.mark.model
def test_related_sessions(run, web: Browser) -> None:
    assert run("find-related", "sessions", SUBAGENT_SESSION, "--json").exit_code == 0  # stores the vectors
    page = web.get(f"/s/{SUBAGENT_SESSION}/related")
    assert page.status == 200
    assert "memex find-related sessions" not in page.body
    assert re.search(r'<span class="score">\d\.\d{3}</span>', page.body)
    assert re.search(r"score \d\.\d{3} = 0\.70 × shared \d\.\d{2} \+ 0\.30 × similarity \d\.\d{3}", page.body)
    fewer = web.get(f"/s/{SUBAGENT_SESSION}/related?min_shared=400")
    assert fewer.status == 200 and "No other session touched files" in fewer.body and "× similarity" not in fewer.body


def test_forget_asks_then_forgets(web: Browser) -> None:
    confirm = web.get(f"/s/{CODEX_ID[:8]}/forget")
    assert confirm.status == 200
    assert CODEX_ID in confirm.body and '<form method="post">' in confirm.body
    secret = re.search(r'name="secret" value="([^"]+)"', confirm.body)
    assert secret is not None
    assert web.get(f"/s/{CODEX_ID}").status == 200  # asking forgets nothing
    forged = web.post(f"/s/{CODEX_ID}/forget", {"secret": "guessed"})
    assert forged.status == 400 and web.get(f"/s/{CODEX_ID}").status == 200
    done = web.post(f"/s/{CODEX_ID}/forget", {"secret": secret.group(1)})
    assert done.status == 200 and "Forgot 1 session" in done.body
    assert web.get(f"/s/{CODEX_ID}").status == 404
    assert CODEX_ID not in session_links(web.get("/").body)


def test_forget_is_post_only(web: Browser) -> None:
    assert web.request("PUT", f"/s/{CODEX_ID}/forget").status == 405


def test_static_css_is_served_from_the_package(web: Browser) -> None:
    page = web.get("/static/style.css")
    assert page.status == 200 and "mark" in page.body


def test_another_host_name_is_refused(web: Browser) -> None:
    """A page of another site resolving its name to 127.0.0.1 (DNS rebinding) gets nothing."""
    rebound = Browser(web.server, host_header="evil.example:8765")
    page = rebound.get("/")
    assert page.status == 403 and "MOCK-READ" not in page.body
    assert Browser(web.server, host_header=f"localhost:{web.server.port}").get("/").status == 200


def test_a_non_loopback_host_needs_allow_remote(run) -> None:
    result = run("web", "--host", "0.0.0.0", "--no-open", "--port", "0")
    assert result.exit_code != 0
    assert "--allow-remote" in result.stderr and "Traceback" not in result.stderr


def test_remote_without_a_token_is_refused(run, home: Path) -> None:
    result = run("web", "--host", "0.0.0.0", "--allow-remote", "--no-open", "--port", "0")
    assert result.exit_code != 0 and "token" in result.stderr


def test_served_remotely_every_request_needs_the_token(corpus: Config) -> None:
    token = "t" * 32
    server = WebServer(corpus, token=token)
    server.start()
    try:
        anonymous = Browser(server)
        for path in ("/", f"/s/{SUBAGENT_SESSION}", "/search?q=zebra&mode=lexical", "/static/style.css"):
            page = anonymous.get(path)
            assert page.status == 401 and "MOCK-READ" not in page.body, path
        assert Browser(server, token="wrong-token-0123456789").get("/").status == 401
        assert Browser(server, token=token).get("/").status == 200
        link = anonymous.get(f"/?token={token}")  # the link `memex web` opens: the token moves to a cookie
        assert link.status == 303 and link.headers["location"] == "/"
        cookie = link.headers["set-cookie"].split(";", 1)[0]
        assert "HttpOnly" in link.headers["set-cookie"]
        assert anonymous.get("/", Cookie=cookie).status == 200
        assert anonymous.get("/", Cookie="memex_token=nope").status == 401
    finally:
        server.stop()


def test_a_link_with_the_token_keeps_the_rest_of_its_query(corpus: Config) -> None:
    """A link to a search or to a session's turns, with the token: the token moves to the cookie, and the
    page the link named opens (before, the redirect dropped every parameter: an empty search page)."""
    token = "t" * 32
    server = WebServer(corpus, token=token)
    server.start()
    try:
        anonymous = Browser(server)
        link = anonymous.get(f"/search?q=zebra&token={token}&mode=lexical")
        assert link.status == 303 and link.headers["location"] == "/search?q=zebra&mode=lexical"
        cookie = link.headers["set-cookie"].split(";", 1)[0]
        page = anonymous.get(link.headers["location"], Cookie=cookie)
        assert page.status == 200 and "MOCK-READ" in page.body
        turns = anonymous.get(f"/s/{SUBAGENT_SESSION}?token={token}&turns=1")
        assert turns.headers["location"] == f"/s/{SUBAGENT_SESSION}?turns=1"
        # A value with reserved characters goes back as it came.
        odd = anonymous.get(f"/search?q=a%26b%3Dc+d%C3%A9&token={token}")
        assert odd.headers["location"] == "/search?q=a%26b%3Dc+d%C3%A9"
    finally:
        server.stop()


def test_before_any_index_the_list_says_to_index(home: Path) -> None:
    from memex.config import load_config

    config = load_config()
    server = WebServer(config)
    server.start()
    try:
        page = Browser(server).get("/")
        assert page.status == 200 and "No sessions match." not in page.body  # nothing indexed: the page says so
        assert "Nothing is indexed yet: run `memex index`" in page.body and '<form class="filters"' in page.body
        assert not config.db_path.exists()  # the viewer created no store
    finally:
        server.stop()


def test_codex_fixture_is_the_one_forgotten() -> None:
    assert CODEX_ID in CODEX_SHORT.name


@pytest.mark.subprocess
def test_the_command_serves_until_ctrl_c(corpus: Config) -> None:
    """`memex web --port 0 --no-open` in its own process: it says where it listens, serves, and stops on Ctrl-C."""
    memex = Path(sys.executable).with_name("memex")
    process = subprocess.Popen([str(memex), "web", "--port", "0", "--no-open"], stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"serving http://127\.0\.0\.1:(\d+)/", line)
        assert found, line
        connection = http.client.HTTPConnection("127.0.0.1", int(found.group(1)), timeout=60)
        connection.request("GET", f"/s/{SUBAGENT_SESSION[:8]}")
        answer = connection.getresponse()
        assert answer.status == 200 and "zebra token rotation" in answer.read().decode()
        connection.close()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert "stopped" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.subprocess
def test_without_a_port_the_command_moves_off_a_taken_default(corpus: Config) -> None:
    """The daemon's API listens on 127.0.0.1:8765 by default, and so did the viewer: with the daemon running,
    `memex web` refused to start ("Address already in use") until given --port (and a viewer started first
    kept the daemon from starting). Now the viewer has a port of its own, and any free one when that is taken."""
    assert Config.api_address.endswith(":8765")
    taken = [socket.socket(), socket.socket()]
    for sock, port in zip(taken, (8765, DEFAULT_PORT), strict=True):
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(1)
        except OSError:  # already taken by another process: the same situation
            pass
    memex = Path(sys.executable).with_name("memex")
    process = subprocess.Popen([str(memex), "web", "--no-open"], stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"serving http://127\.0\.0\.1:(\d+)/", line)
        assert found and int(found.group(1)) not in (8765, DEFAULT_PORT), line
        connection = http.client.HTTPConnection("127.0.0.1", int(found.group(1)), timeout=60)
        connection.request("GET", "/")
        assert connection.getresponse().status == 200
        connection.close()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        for sock in taken:
            sock.close()
        if process.poll() is None:
            process.kill()
            process.wait()


def test_served_remotely_a_rotated_token_file_is_honoured_without_a_restart(corpus: Config) -> None:
    """As the daemon's API: the token file is read again when it changes (a token copied from another
    computer, or a new one), the old token then opens nothing, a link with the new one does."""
    from memex.sync.token import token_path

    first, second = "first-token-" + "a" * 24, "second-token-" + "b" * 24
    token_path(corpus).write_text(first + "\n")
    server = WebServer(corpus, token=first)
    server.start()
    try:
        assert Browser(server, token=first).get("/").status == 200
        token_path(corpus).write_text(second + "\n")
        assert Browser(server, token=second).get("/").status == 200
        assert Browser(server, token=first).get("/").status == 401
        anonymous = Browser(server)
        assert anonymous.get(f"/?token={first}").status == 401
        link = anonymous.get(f"/?token={second}")
        assert link.status == 303 and anonymous.get("/", Cookie=link.headers["set-cookie"].split(";")[0]).status == 200
        token_path(corpus).write_text("")  # being copied: the token in force stays
        assert Browser(server, token=second).get("/").status == 200
    finally:
        server.stop()


def test_show_more_appears_only_when_there_is_more(web: Browser, monkeypatch: pytest.MonkeyPatch) -> None:
    """ "Show more" when more sessions wait, never when the page already holds them all (it then led to the
    same list), and never to a limit the viewer refuses (doubling 6,400 led to 12,800: an error page)."""
    from memex.web import app

    every = session_links(web.get("/?limit=1000").body)
    count = len(every)
    assert "Show more" not in web.get(f"/?limit={count}").body
    fewer = web.get(f"/?limit={count - 1}&agent=")
    assert len(session_links(fewer.body)) == count - 1
    more = re.search(r'<p class="more"><a href="([^"]+)">Show more</a>', fewer.body)
    assert more is not None and more.group(1).replace("&amp;", "&") == f"?agent=&limit={2 * (count - 1)}"
    assert session_links(web.get("/" + more.group(1).replace("&amp;", "&")).body) == every

    monkeypatch.setattr(app, "SESSIONS_LIMIT_MAX", count - 1)  # a store larger than the most a page lists
    capped = web.get(f"/?limit={count - 2}")
    more = re.search(r'href="\?limit=(\d+)">Show more', capped.body)
    assert more is not None and int(more.group(1)) == count - 1
    assert web.get(f"/?limit={more.group(1)}").status == 200
    last = web.get(f"/?limit={count - 1}").body
    assert "Show more" not in last and "narrow them with the filters" in last


@pytest.mark.parametrize(
    ("path", "typed"),
    [
        ("/?agent=codex&since=yesterdayish", ["codex", "yesterdayish"]),
        ("/search?q=zebra+rotation&project=proj&since=yesterdayish", ["zebra rotation", "proj", "yesterdayish"]),
        ("/search?q=zebra&agent=nobody&file=notes.md", ["zebra", "nobody", "notes.md"]),
    ],
)
def test_a_mistyped_filter_keeps_the_form(web: Browser, path: str, typed: list[str]) -> None:
    """The error is said above the form, which still holds every value typed: one field to correct, not
    a page saying 'Cannot show that' and the search to type again."""
    page = web.get(path)
    assert page.status == 400
    assert '<p class="error">' in page.body and "Cannot show that" not in page.body
    assert '<form class="filters"' in page.body
    for value in typed:
        assert f'value="{value}"' in page.body, value
    assert "No sessions match" not in page.body and "No matching" not in page.body


def test_search_for_a_session_not_there_keeps_the_form(web: Browser) -> None:
    page = web.get("/search?q=zebra&session=nosuchsession")
    assert page.status == 404 and "no session matches" in page.body and 'value="nosuchsession"' in page.body


def test_a_session_without_turns_says_so(web: Browser) -> None:
    """A HillviewCap session of a title only: its turns page says there are none rather than stay blank."""
    page = web.get("/s/7de1dd02-d3f9-49aa-8911-7d5b98666a03?turns=1")
    assert page.status == 200 and '<article class="turn' not in page.body
    assert '<p class="empty">No turns' in page.body
    assert '<p class="empty">No turns' not in web.get(f"/s/{SUBAGENT_SESSION}?turns=1").body


@pytest.mark.model
def test_related_of_a_session_that_touched_no_file(run, web: Browser) -> None:
    """The session page's "Related sessions" of a session that read no file opens a page saying why there
    is nothing to compare, with the way back: not a bare 'Cannot show that'."""
    assert run("find-related", "sessions", SUBAGENT_SESSION, "--json").exit_code == 0  # stores the vectors
    assert f'href="/s/{LONG_SESSION}/related"' in web.get(f"/s/{LONG_SESSION}").body
    page = web.get(f"/s/{LONG_SESSION}/related")
    assert "Cannot show that" not in page.body and "<h1>Related to" in page.body
    assert "touched no files" in page.body and f'<a href="/s/{LONG_SESSION}">Back to the session</a>' in page.body
    assert web.get(f"/s/{SUBAGENT_SESSION}/related?limit=0").status == 400


def test_files_touched_name_no_internal_label(web: Browser) -> None:
    """HillviewCap's settings.json, edited and restored by Claude Code's file history: its line in "Files
    touched" reads 'Edit, Read, file history snapshot', not memex's own 'file_history_snapshot'."""
    page = web.get("/s/5eac5945-4cf4-4f5c-a46a-1f8dacb407aa")
    assert page.status == 200
    line = re.search(r'<code>/home/jenkins/\.claude/settings\.json</code> <span class="dim">([^<]*)</span>', page.body)
    assert line is not None and line.group(1) == "Edit, Read, file history snapshot"


def test_turns_are_numbered_as_the_list_counts_them(web: Browser) -> None:
    """The live Claude Code session: listed with 4 turns, its turns page numbers the main agent's 1 to 4
    and its subagent's own turn 'subagent turn 1' (it was 'turn 3', and the main agent's last 'turn 5')."""
    row = re.search(
        r'<td class="num">(\d+)<span class="unit">[^<]*</span></td>\s*'
        f'<td class="titled"><a class="title" href="/s/{SUBAGENT_SESSION}"',
        web.get("/").body,
    )
    assert row is not None
    listed = int(row.group(1))
    headings = re.findall(r'<h3 id="t\d+">((?:subagent )?turn \d+) ·', web.get(f"/s/{SUBAGENT_SESSION}?turns=1").body)
    assert [h for h in headings if not h.startswith("subagent")] == [f"turn {n}" for n in range(1, listed + 1)]
    assert headings.count("subagent turn 1") == 1
