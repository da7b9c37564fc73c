"""The CLI across computers: `memex search --computer`, `memex show --raw` of another computer's session,
`memex computers`; and search and show with every daemon down."""

from __future__ import annotations

import json

import pytest

from synctools import SLAY, Computer, free_port, slay_shared

SLAY_ID = SLAY.stem


@pytest.fixture
def pair(computers) -> tuple[Computer, Computer]:
    """alpha holds the slay session and serves its API; beta has received its mirror."""
    return slay_shared(computers, serve_api=True)


def test_search_on_another_computer(pair: tuple[Computer, Computer]) -> None:
    _, b = pair
    result = b.cli("search", "slay", "--computer", "alpha", "--json", "--limit", "3")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert hits and all(hit["computer"] == "alpha" and hit["session_id"] == SLAY_ID for hit in hits)
    assert any(hit["source"] == "turn" for hit in hits)  # alpha answers with its turns, not only the mirror
    text = b.cli("search", "slay", "--computer", "alpha")
    assert text.exit_code == 0 and "[on alpha]" in text.stdout
    assert b.cli("search", "slay", "--computer", "alpha", "--agent", "codex", "--json").stdout.strip() == "[]"


def test_raw_transcript_from_the_owning_computer(pair: tuple[Computer, Computer]) -> None:
    _, b = pair
    result = b.cli("show", SLAY_ID[:8], "--raw")
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == SLAY.read_bytes()


def test_an_unreachable_computer_is_one_clear_line(pair: tuple[Computer, Computer]) -> None:
    a, b = pair
    a.stop()  # its daemon and API are gone
    for args in (("show", SLAY_ID, "--raw"), ("search", "slay", "--computer", "alpha")):
        result = b.cli(*args)
        assert result.exit_code == 1
        assert "alpha" in result.stderr and "unreachable" in result.stderr and "Traceback" not in result.output
        assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_computer_and_wrong_token(pair: tuple[Computer, Computer]) -> None:
    _, b = pair
    unknown = b.cli("search", "slay", "--computer", "nosuch")
    assert unknown.exit_code == 2 and "unknown computer 'nosuch'" in unknown.stderr and "alpha" in unknown.stderr
    b.env["MEMEX_API_TOKEN"] = "another-token-another-token"
    refused = b.cli("show", SLAY_ID, "--raw")
    assert refused.exit_code == 2 and "refused the API token" in refused.stderr


def test_computers_lists_live_and_stale(pair: tuple[Computer, Computer]) -> None:
    a, b = pair
    listing = json.loads(b.cli("computers", "--json").stdout)
    rows = {row["computer"]: row for row in listing["computers"]}
    assert rows["alpha"]["status"] == "live" and rows["alpha"]["mirrors_here"] == 1
    assert rows["alpha"]["sessions"] == 1 and rows["alpha"]["api_url"].startswith("http://127.0.0.1:")
    assert rows["beta"]["this_computer"] and rows["beta"]["status"] == "live"
    assert listing["registry"] == "redis"
    a.stop()  # a clean stop withdraws the heartbeat
    rows = {row["computer"]: row for row in json.loads(b.cli("computers", "--json").stdout)["computers"]}
    assert rows["alpha"]["status"] == "stale" and rows["alpha"]["last_seen"]
    table = b.cli("computers")
    assert table.exit_code == 0 and "stale" in table.stdout and "alpha" in table.stdout


def test_with_redis_away_the_store_knows_where_computers_are(pair: tuple[Computer, Computer]) -> None:
    _, b = pair
    b.env["MEMEX_REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    listing = json.loads(b.cli("computers", "--json").stdout)
    assert listing["registry"] == "local copy" and "unreachable" in listing["note"]
    assert {row["computer"] for row in listing["computers"]} >= {"alpha", "beta"}
    # The API address comes from the store's copy of the registry: the raw fetch still works.
    result = b.cli("show", SLAY_ID, "--raw")
    assert result.exit_code == 0 and result.stdout_bytes == SLAY.read_bytes()


def test_search_and_show_work_with_every_daemon_down(pair: tuple[Computer, Computer]) -> None:
    a, b = pair
    a.stop()
    b.stop()
    hits = json.loads(b.cli("search", "slay", "--json").stdout)
    assert any(hit["session_id"] == SLAY_ID and hit["computer"] == "alpha" for hit in hits)
    shown = b.cli("show", SLAY_ID, "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["mirror"]["computer"] == "alpha"
    local = a.cli("show", SLAY_ID, "--raw")
    assert local.exit_code == 0 and local.stdout_bytes == SLAY.read_bytes()  # from disk, no daemon needed


def test_a_remote_search_by_words_only_says_why(computers) -> None:
    """A computer without a usable model answers by words alone: its notes travel with its answer (the
    `/v1/search` body's `notes`), and the asking computer shows them, named, as it shows its own."""
    from memex.sync.client import ApiClient
    from synctools import TOKEN, settle

    a, b = computers("alpha", embed_model="e5-smal-q4"), computers("beta")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    a.start(serve_api=True)
    b.start()
    settle(a, b)
    assert a.daemon is not None and a.daemon.api is not None
    answer = ApiClient(a.daemon.api.url, TOKEN, timeout=60).search("slay", 3)
    assert answer["results"] and any("e5-smal-q4" in note for note in answer["notes"]), answer["notes"]
    shown = b.cli("search", "slay", "--computer", "alpha")
    assert shown.exit_code == 0 and "note: alpha: semantic search unavailable (embed_model 'e5-smal-q4'" in shown.output
