"""Every setting is checked when it is loaded: its type, its range, its shape; a bad one is one line
naming the setting and where it came from (exit 2), never a crash later."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memex import config_doc
from memex.config import _INT_FIELDS, INT_RANGES, SECTIONS, TEXT_CHECKS, Config, load_config, setting_names
from memex.errors import ConfigError


def env(home: Path, **settings: str) -> dict[str, str]:
    return {"MEMEX_HOME": str(home), **{f"MEMEX_{k.upper()}": v for k, v in settings.items()}}


def problem(home: Path, **settings: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(env(home, **settings))
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        # The figures of the issue: each was accepted, and crashed or hung later.
        ("redis_url", "http://nope", "redis_url must start with redis://"),
        ("search_rrf_k", "-5", "search_rrf_k must be at least 1, got '-5'"),
        ("index_workers", "0", "index_workers must be at least 1"),
        # Types.
        ("index_workers", "two", "index_workers must be a whole number, got 'two'"),
        ("embed_batch_size", "2.5", "embed_batch_size must be a whole number"),
        ("embed_batch_size", "0", "embed_batch_size must be at least 1"),
        # Ranges of every kind.
        ("recall_min_coverage_pct", "101", "recall_min_coverage_pct must be at most 100"),
        ("hooks_enabled", "2", "hooks_enabled must be at most 1"),
        ("busy_timeout_ms", "-1", "busy_timeout_ms must be at least 0"),
        ("hook_max_chars", "20000", "hook_max_chars must be at most 10000"),
        # Shapes of text settings.
        ("api_address", "localhost", "api_address must be host:port"),
        ("api_address", "127.0.0.1:99999", "api_address must be host:port"),
        ("api_url", "ftp://laptop", "api_url must start with http:// or https://"),
        ("summary_llm_url", "localhost:8080", "summary_llm_url must start with http://"),
        ("summary_llm_key_env", "MY KEY", "summary_llm_key_env must be the name of an environment variable"),
        ("computer", "", "computer must be a non-empty name"),
        ("computer", "my laptop", "computer must be a non-empty name"),
        ("redis_prefix", "", "redis_prefix must be a non-empty name"),
        ("redis_url", "redis://", "redis_url has no host"),
        ("redis_url", "redis://host:port/0", "redis_url is not a valid URL"),
        ("claude_dir", " ", "claude_dir must be a folder"),
    ],
)
def test_a_bad_setting_from_the_environment_names_itself(tmp_path: Path, name: str, value: str, expected: str) -> None:
    message = problem(tmp_path, **{name: value})
    assert message.startswith(f"MEMEX_{name.upper()}: ") and expected in message


def test_a_bad_setting_in_the_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('search_rrf_k = -5\nindex_workers = "x"\n')
    assert problem(tmp_path).startswith(f"{tmp_path / 'config.toml'}: search_rrf_k must be at least 1")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("index_workers = true", "index_workers must be a whole number, got True"),
        ("index_workers = 2.0", "index_workers must be a whole number, got 2.0"),
        ("index_workers = [2]", "index_workers must be a whole number"),
        ("computer = 5", "computer must be a string, got 5"),
        ("claude_dir = 1", "claude_dir must be a string"),
    ],
)
def test_toml_values_of_the_wrong_type(tmp_path: Path, line: str, expected: str) -> None:
    (tmp_path / "config.toml").write_text(line + "\n")
    assert expected in problem(tmp_path)


def test_good_values_pass_in_both_places(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('index_workers = 4\nredis_url = "rediss://:pw@redis.example:6380/1"\n')
    config = load_config(env(tmp_path, search_rrf_k="10", redis_url="", api_address="[::1]:0", embed_threads=" 1 "))
    assert (config.index_workers, config.search_rrf_k, config.redis_url) == (4, 10, "")
    assert (config.api_address, config.embed_threads) == ("[::1]:0", 1)
    assert load_config(env(tmp_path, redis_url="unix:///run/redis.sock")).redis_url == "unix:///run/redis.sock"


def test_settings_that_depend_on_each_other(tmp_path: Path) -> None:
    message = problem(tmp_path, chunk_overlap_tokens="500")
    expected = "chunk_overlap_tokens (500) must be smaller than chunk_max_tokens (384)"
    assert message == f"MEMEX_CHUNK_OVERLAP_TOKENS: {expected}"
    assert "heartbeat_seconds (60) must be smaller than heartbeat_ttl_seconds (45)" in problem(
        tmp_path, heartbeat_seconds="60"
    )
    assert "daemon_debounce_seconds (40) must be at most daemon_debounce_max_seconds (30)" in problem(
        tmp_path, daemon_debounce_seconds="40"
    )
    assert "summary_llm_model must be too" in problem(tmp_path, summary_llm_url="http://127.0.0.1:9/v1")


def test_secrets_are_never_repeated_in_a_message(tmp_path: Path) -> None:
    message = problem(tmp_path, api_token="hunter2 hunter2 x")
    assert "hunter2" not in message and "api_token must be at least 16 characters" in message
    message = problem(tmp_path, redis_url="redis://:s3cr3tpass@host:notaport/0")
    assert "s3cr3tpass" not in message and "redis_url is not a valid URL" in message


def test_an_unreadable_config_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()  # a folder where the file should be: is_file() is False, ignored
    load_config(env(tmp_path))
    (tmp_path / "config.toml").rmdir()
    (tmp_path / "config.toml").write_bytes(b"index_workers = \xff\n")
    assert str(tmp_path / "config.toml") in problem(tmp_path)


def test_every_default_is_in_range_and_every_range_names_a_setting() -> None:
    """The table of ranges matches the settings (a renamed setting cannot keep a stale range), and the
    defaults pass their own checks."""
    names = {f.name for f in dataclasses.fields(Config)}
    assert set(INT_RANGES) <= _INT_FIELDS and set(TEXT_CHECKS) <= names
    defaults = Config(home=Path("/nonexistent"))
    for name in _INT_FIELDS:
        low, high = INT_RANGES.get(name, (0, None))
        value = getattr(defaults, name)
        assert low <= value and (high is None or value <= high), name
    for name, check in TEXT_CHECKS.items():
        assert check(getattr(defaults, name)) is None, name


def test_the_cli_says_it_in_one_line(run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_SEARCH_RRF_K", "-5")
    result = run("search", "anything")
    assert result.exit_code == 2
    assert result.stderr == "memex: error: MEMEX_SEARCH_RRF_K: search_rrf_k must be at least 1, got '-5'\n"


def test_sections_in_the_file_and_flat_names_alike(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        'index_workers = 3\n[search]\nrrf_k = 10\n[hooks]\ntimeout_s = 5\nhooks_enabled = 0\n[sync]\nredis_url = ""\n'
    )
    config = load_config(env(tmp_path, recall_max_hits="7"))
    assert (config.index_workers, config.search_rrf_k, config.hook_timeout_s) == (3, 10, 5)
    assert (config.hooks_enabled, config.redis_url, config.recall_max_hits) == (0, "", 7)
    (tmp_path / "config.toml").write_text("[search]\nrecall_max_hits = 3\n")  # a setting of another section
    assert problem(tmp_path) == f"{tmp_path / 'config.toml'}: unknown setting [search] recall_max_hits"
    (tmp_path / "config.toml").write_text("search_rrf_k = 5\n[search]\nrrf_k = 6\n")
    assert "search_rrf_k is set twice" in problem(tmp_path)


def test_every_setting_is_in_one_section() -> None:
    in_sections = [name for section in SECTIONS for name in setting_names(section)]
    assert len(in_sections) == len(set(in_sections))
    assert set(in_sections) == {f.name for f in dataclasses.fields(Config)} - {"home"}


def test_the_readme_lists_every_setting_as_config_py_says() -> None:
    """README.md's tables are generated from config.py (`scripts/settings-table --write` refreshes them)."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert readme == config_doc.replaced(readme)
    for name in (f.name for f in dataclasses.fields(Config) if f.name != "home"):
        assert f"`{name}`" in readme, name


def test_a_config_is_read_only_as_a_frozen_dataclass_is(tmp_path: Path) -> None:
    """`Config` is not made frozen by `dataclass` (that writes methods at every start) but forbids assigning
    and deleting itself: a copy with other values is `dataclasses.replace`'s, and pickles and copies keep it."""
    import copy
    import pickle

    config = Config(home=tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.search_rrf_k = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.no_such_setting = 1  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del config.home
    changed = dataclasses.replace(config, search_rrf_k=7)
    assert changed.search_rrf_k == 7 and config.search_rrf_k != 7 and changed.home == tmp_path
    for clone in (pickle.loads(pickle.dumps(changed)), copy.deepcopy(changed), copy.copy(changed)):
        assert clone == changed and hash(clone) == hash(changed)
        with pytest.raises(dataclasses.FrozenInstanceError):
            clone.search_rrf_k = 1  # type: ignore[misc]
