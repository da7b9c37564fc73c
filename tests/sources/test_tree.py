"""The live tree (memex.sources.tree) lists exactly what `os.scandir` and `os.lstat` would, after any
sequence of changes, on a real file system with real inotify."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memex.sources import tree as live
from memex.sources.files import Sieve, candidates
from memex.sync.watch import Watcher

pytestmark = [
    pytest.mark.skipif(not live.available(), reason="inotify is Linux-only"),
    pytest.mark.skipif(
        live.available() and live.file_system(tempfile.gettempdir()) not in live.LOCAL_FILE_SYSTEMS,
        reason="the temporary folder is on a file system the tree does not hold",
    ),
]

NAMES = ["a.jsonl", "b.jsonl", "c.json", "d"]
FOLDERS = ["p", "q", "p/r"]


def _kind(entry: os.DirEntry[str] | live.Entry) -> str:
    if entry.is_dir(follow_symlinks=False):
        return "folder"
    return "file" if entry.is_file(follow_symlinks=False) else "other"


def _state(entry: os.DirEntry[str] | live.Entry) -> tuple[str, int, int] | tuple[str]:
    kind = _kind(entry)
    if kind != "file":
        return (kind,)
    found = entry.stat(follow_symlinks=False)
    return kind, found.st_size, found.st_mtime_ns


def on_disk(root: str) -> dict[str, tuple[object, ...]]:
    """Every entry under `root` as the walk would list it now."""
    found: dict[str, tuple[object, ...]] = {}
    with os.scandir(root) as listing:
        for entry in listing:
            found[entry.path] = _state(entry)
            if _kind(entry) == "folder":
                found.update(on_disk(entry.path))
    return found


def in_tree(tree: live.LiveTree, root: str) -> dict[str, tuple[object, ...]]:
    """Every entry under `root` as the tree holds it (every folder must be held)."""
    held = tree.listing(root)
    assert held is not None, f"{root} is not held"
    found: dict[str, tuple[object, ...]] = {}
    for entry in held:
        path = f"{root}/{entry.name}"
        found[path] = _state(entry)
        if _kind(entry) == "folder":
            found.update(in_tree(tree, path))
    return found


def _apply(root: Path, outside: Path, step: tuple[str, str, str]) -> None:
    """One change of the file system (a step that makes no sense here does nothing)."""
    action, a, b = step
    source, target = root / a, root / b
    try:
        if action == "write":
            source.parent.mkdir(parents=True, exist_ok=True)
            with open(source, "a") as handle:
                handle.write("x" * (len(b) + 1))
        elif action == "truncate":
            os.truncate(source, 0)
        elif action == "touch":
            os.utime(source, ns=(1_000_000_000, 1_000_000_000 + len(b)))
        elif action == "delete":
            if source.is_dir() and not source.is_symlink():
                shutil.rmtree(source)
            else:
                source.unlink()
        elif action == "mkdir":
            (source / "deep" / "er").mkdir(parents=True)
            (source / "deep" / "er" / "new.jsonl").write_text("{}\n")
        elif action == "rename":
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
        elif action == "out":  # a folder or file moved away from the tree, and one moved in
            os.replace(source, outside / "away")
            os.replace(outside / "away", target)
        elif action == "link":
            target.symlink_to(source)
    except OSError:
        pass


def _case(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A fresh folder for one generated example (hypothesis reuses `tmp_path`): its root with FOLDERS and a
    transcript, and a folder outside the root to move things through."""
    case = Path(tmp_path, f"case-{os.urandom(4).hex()}")
    root, outside = case / "root", case / "outside"
    for folder in FOLDERS:
        (root / folder).mkdir(parents=True)
    outside.mkdir()
    (root / "p" / "a.jsonl").write_text("{}\n")
    return case, root, outside


PATHS = st.sampled_from([*NAMES, *FOLDERS, *(f"{f}/{n}" for f in FOLDERS for n in NAMES)])
STEPS = st.tuples(
    st.sampled_from(["write", "truncate", "touch", "delete", "mkdir", "rename", "out", "link"]), PATHS, PATHS
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEPS, max_size=25), refresh_every=st.integers(1, 6))
def test_the_tree_lists_what_the_disk_holds_after_any_changes(
    tmp_path: Path, steps: list[tuple[str, str, str]], refresh_every: int
) -> None:
    case, root, outside = _case(tmp_path)
    tree = live.LiveTree()
    try:
        tree.track([str(root)])
        assert in_tree(tree, str(root)) == on_disk(str(root))
        for n, step in enumerate(steps, 1):
            _apply(root, outside, step)
            if n % refresh_every == 0:  # several changes between two looks, or one
                tree.refresh()
                assert in_tree(tree, str(root)) == on_disk(str(root))
        tree.refresh()
        assert in_tree(tree, str(root)) == on_disk(str(root))
    finally:
        tree.close()
        shutil.rmtree(case)


def test_a_stat_taken_before_a_write_is_not_given_after_it(tmp_path: Path) -> None:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("{}\n")
    tree = live.LiveTree()
    try:
        tree.track([str(tmp_path)])
        (entry,) = tree.listing(str(tmp_path)) or []
        assert entry.stat().st_size == 3
        with open(transcript, "a") as handle:
            handle.write("{}\n")
        tree.refresh()
        (entry,) = tree.listing(str(tmp_path)) or []
        assert entry.stat().st_size == 6
    finally:
        tree.close()


def test_a_lost_change_drops_the_tree_and_the_next_track_lists_again(tmp_path: Path) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 200_000:
        pytest.skip("the kernel's queue is too long to overflow quickly here")
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text("1\n")
    two.write_text("2\n")
    tree = live.LiveTree()
    try:
        tree.track([str(tmp_path)])
        for n in range(limit + 10):  # alternating names: the kernel cannot merge the events
            os.utime(one if n % 2 else two, ns=(n, n))
        (tmp_path / "three.jsonl").write_text("3\n")
        tree.refresh()
        assert tree.overflows == 1
        assert tree.listing(str(tmp_path)) is None  # not held: a walk lists the folder itself
        tree.track([str(tmp_path)])
        assert in_tree(tree, str(tmp_path)) == on_disk(str(tmp_path))
    finally:
        tree.close()


def test_a_folder_that_is_not_held_is_not_answered_for(tmp_path: Path) -> None:
    tree = live.LiveTree()
    try:
        tree.track([str(tmp_path / "missing")])
        assert tree.listing(str(tmp_path / "missing")) is None
        assert tree.listing(str(tmp_path)) is None
        (tmp_path / "missing").mkdir()
        tree.track([str(tmp_path / "missing")])
        held = tree.listing(str(tmp_path / "missing"))  # asked again: held once it exists
        assert held is not None and list(held) == []
    finally:
        tree.close()


def _sieved(tree: live.LiveTree, root: Path, known: dict[str, tuple[object, ...]]) -> tuple[list[str], list[str]]:
    """(the files a sieving walk over `root` yields, those it takes out as unchanged)."""
    unchanged: dict[str, object] = {}
    found = [str(path) for path, _ in candidates([root], "*.jsonl", sieve=Sieve(known, "claude", unchanged, tree))]
    return found, sorted(unchanged)


def test_a_sieving_walk_over_the_tree_takes_out_what_a_listing_walk_takes_out(tmp_path: Path) -> None:
    for n in range(4):
        (tmp_path / "p" / f"{n}.jsonl").parent.mkdir(exist_ok=True)
        (tmp_path / "p" / f"{n}.jsonl").write_text("{}\n" * (n + 1))

    def row(path: Path, size: int | None = None) -> tuple[object, ...]:
        found = path.stat()
        return (found.st_size if size is None else size, found.st_mtime_ns, "claude", path.stem, "", str(path))

    files = sorted((tmp_path / "p").glob("*.jsonl"))
    known = {str(path): row(path) for path in files[:3]}
    tree = live.LiveTree()
    try:
        tree.track([str(tmp_path)])
        expected = _sieved(None, tmp_path, known)  # type: ignore[arg-type]  # no tree: the folders are listed
        assert expected == ([str(files[3])], [str(p) for p in files[:3]])
        assert _sieved(tree, tmp_path, known) == expected
        assert _sieved(tree, tmp_path, known) == expected  # remembered, the same
        assert _sieved(tree, tmp_path, dict(known)) == expected  # the same rows in another mapping
        known[str(files[0])] = row(files[0], size=1)  # the store's row changed, not the file
        assert _sieved(tree, tmp_path, known) == _sieved(None, tmp_path, known)  # type: ignore[arg-type]
        assert str(files[0]) in _sieved(tree, tmp_path, known)[0]
        known[str(files[0])] = row(files[0])
        with open(files[1], "a") as handle:  # the file changed, not the store's row
            handle.write("{}\n")
        tree.refresh()
        assert _sieved(tree, tmp_path, known) == ([str(files[1]), str(files[3])], [str(files[0]), str(files[2])])
    finally:
        tree.close()


def test_a_root_whose_parent_was_renamed_is_listed_again(tmp_path: Path) -> None:
    """No event reaches a root's watch when a folder above it is renamed: its path then names another
    folder, which `track` notices (device and inode) and lists."""
    root = tmp_path / "home" / ".claude" / "projects"
    (root / "p0").mkdir(parents=True)
    (root / "p0" / "s1.jsonl").write_text("{}\n")
    tree = live.LiveTree()
    try:
        tree.track([str(root)])
        os.rename(tmp_path / "home" / ".claude", tmp_path / "home" / ".claude.bak")
        (root / "p1").mkdir(parents=True)
        (root / "p1" / "new.jsonl").write_text("{}\n")
        tree.track([str(root)])
        assert in_tree(tree, str(root)) == on_disk(str(root))
        shutil.rmtree(tmp_path / "home" / ".claude")  # and gone: not held (the walk finds nothing either)
        tree.track([str(root)])
        assert tree.listing(str(root)) is None
    finally:
        tree.close()


def test_what_inotify_cannot_follow_is_not_held(tmp_path: Path) -> None:
    assert live.file_system("/proc/self") == "proc" and "proc" not in live.LOCAL_FILE_SYSTEMS
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    tree = live.LiveTree(watches=2)
    try:
        tree.track(["/proc/self"])  # changes there reach no watch
        assert tree.listing("/proc/self") is None
        tree.track([str(tmp_path)])  # two watches: the root and one folder under it
        held = [f for f in (tmp_path, tmp_path / "a", tmp_path / "a" / "b") if tree.listing(str(f)) is not None]
        assert held == [tmp_path, tmp_path / "a"] and tree.folders == 2
    finally:
        tree.close()


def test_appends_between_two_looks_are_one_event_each(tmp_path: Path) -> None:
    """An agent appending line after line between two runs fills the kernel's queue with one event, not one
    per write (the queue overflows at 16,384 by default)."""
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("")
    tree = live.LiveTree()
    try:
        tree.track([str(tmp_path)])
        for n in range(50):
            with open(transcript, "a") as handle:  # opened, written, closed: as Node's appendFile does
                handle.write(f"{n}\n")
        assert tree._notify is not None
        events = tree._notify.read(timeout=0)
        assert len(events) <= 2, events
    finally:
        tree.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEPS, max_size=20), scan_every=st.integers(1, 5))
def test_the_daemons_scan_over_the_tree_sees_what_a_polling_scan_sees(
    tmp_path: Path, steps: list[tuple[str, str, str]], scan_every: int
) -> None:
    """`memex.sync.watch.Watcher` with the live tree reports the same changed files as without it."""
    case, root, outside = _case(tmp_path)
    clock = [0.0]
    tree = live.LiveTree()
    watched = Watcher({"claude": [root]}, lambda: clock[0], debounce=1.0, debounce_max=5.0, tree=tree)
    polled = Watcher({"claude": [root]}, lambda: clock[0], debounce=1.0, debounce_max=5.0)
    try:
        watched.baseline()
        polled.baseline()
        assert watched._seen == polled._seen
        for n, step in enumerate(steps, 1):
            _apply(root, outside, step)
            if n % scan_every == 0:
                clock[0] += 1.0
                assert watched.scan() == polled.scan()
                assert watched._seen == polled._seen and set(watched._changes) == set(polled._changes)
        clock[0] += 1.0
        assert watched.scan() == polled.scan() and watched._seen == polled._seen
    finally:
        tree.close()
        shutil.rmtree(case)
