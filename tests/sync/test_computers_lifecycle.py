"""Renaming a computer (its sessions follow the new name) and retiring one (`memex computers forget`)."""

from __future__ import annotations

import json

import redis

from synctools import SLAY, settle, slay_shared

SLAY_ID = SLAY.stem


def test_a_renamed_computer_keeps_its_sessions_and_publishes_them_under_the_new_name(computers) -> None:
    a, b = slay_shared(computers)
    assert SLAY_ID in b.mirrors("alpha")
    a.stop()
    a.env["MEMEX_COMPUTER"] = a.name = "alpha2"  # the user changed the `computer` setting
    a.start()
    settle(a, b)
    listed = json.loads(a.cli("sessions", "list", "--json", "--local").stdout)
    assert [s["session_id"] for s in listed] == [SLAY_ID] and listed[0]["computer"] == "alpha2"
    assert SLAY_ID in b.mirrors("alpha2")  # published under the new name
    assert SLAY_ID not in b.mirrors("alpha")  # and the old name's copy is gone
    names = {c["computer"] for c in json.loads(b.cli("computers", "--json").stdout)["computers"]}
    assert "alpha" not in names and "alpha2" in names


def test_index_says_the_sessions_followed_the_new_name(computers) -> None:
    a = computers("alpha", url="")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    assert a.cli("index").exit_code == 0
    a.env["MEMEX_COMPUTER"] = "laptop"
    result = a.cli("index")
    assert result.exit_code == 0 and "this computer was 'alpha', now 'laptop': 1 sessions follow" in result.stderr
    listed = json.loads(a.cli("sessions", "list", "--json").stdout)
    assert [(s["session_id"], s["computer"]) for s in listed] == [(SLAY_ID, "laptop")]


def test_forgetting_a_retired_computer_drops_its_mirrors_everywhere(computers, redis_url, prefix) -> None:
    a, b, c = computers("alpha"), computers("beta"), computers("gamma")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    for computer in (a, b, c):
        computer.start()
    settle(a, b, c)
    assert SLAY_ID in c.mirrors("alpha")
    refused = b.cli("computers", "forget", "alpha", "--yes")
    assert refused.exit_code == 2 and "daemon is running" in refused.stderr
    assert b.cli("computers", "forget", "beta", "--yes").exit_code == 2  # not itself
    a.stop()  # retired: its heartbeat is withdrawn
    result = b.cli("computers", "forget", "alpha", "--yes", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"computer": "alpha", "mirrors": 1, "published": True, "note": None}
    assert b.mirrors("alpha") == {}
    stream = redis.Redis.from_url(redis_url).xrange(f"{prefix}:mirrors")
    assert [f for _, f in stream if b"mirror" in f and f[b"computer"] == b"alpha"] == []  # its conversations too
    settle(b, c)
    assert c.mirrors("alpha") == {}
    for computer in (b, c):
        names = {row["computer"] for row in json.loads(computer.cli("computers", "--json").stdout)["computers"]}
        assert "alpha" not in names
    d = computers("delta")  # a late joiner does not get them back
    d.start()
    settle(b, c, d)
    assert d.mirrors("alpha") == {}
    assert b.cli("computers", "forget", "nosuch", "--yes").exit_code == 2


def test_a_retired_computer_that_comes_back_publishes_its_sessions_again(computers) -> None:
    """`memex computers forget alpha` while alpha was off, then alpha's daemon started again: its sessions
    reach the others again (they stayed without them, `memex computers` showing alpha live with its sessions
    and none of them here, until each changed)."""
    a, b = slay_shared(computers)
    a.stop()
    assert b.cli("computers", "forget", "alpha", "--yes").exit_code == 0
    settle(b)
    assert b.mirrors("alpha") == {}
    a.start()
    settle(a, b)
    settle(a, b)  # the forgetting is read by alpha's pass, its mirrors go out on the next ones
    assert SLAY_ID in b.mirrors("alpha")
    late = computers("gamma")  # a computer joining afterwards gets them too
    late.start()
    settle(a, b, late)
    assert SLAY_ID in late.mirrors("alpha")


def test_a_forgetting_asked_before_a_rename_is_published_under_the_new_name(computers) -> None:
    """A session forgotten while Redis was unreachable waits to be published; once the computer was renamed,
    it was waiting for a computer of the old name, which never comes: the others kept the session."""
    a, b = slay_shared(computers)
    assert SLAY_ID in b.mirrors("alpha")
    a.stop()
    url = a.env["MEMEX_REDIS_URL"]
    a.env["MEMEX_REDIS_URL"] = "redis://127.0.0.1:9/0"  # unreachable: the forgetting waits
    assert a.cli("forget", SLAY_ID, "--yes").exit_code == 0
    a.env["MEMEX_REDIS_URL"] = url
    a.env["MEMEX_COMPUTER"] = a.name = "alpha2"
    a.start()
    settle(a, b)
    assert SLAY_ID not in b.mirrors("alpha")
