"""Finding and opening transcript files safely: regular files only, never a read that can hang or run on.

A folder can hold anything with a transcript's name: a FIFO (opening it waits for a writer forever), a
symbolic link to `/dev/zero` (reading it never ends), a link loop, a file this user may not read, a folder
named `x.jsonl`. Discovery takes regular files only and says why it passed over the others; every read of
a transcript opens it through `open_regular`, so a file swapped for something else after discovery fails
at once instead of hanging.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import operator
import os
import re
import stat
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final, NamedTuple, cast

from memex.errors import NotRegularFile
from memex.plain import FrozenRecord, Record
from memex.sources.tree import REGULAR

if TYPE_CHECKING:
    from memex.sources.tree import Entry, LiveTree

FOLDER = "is a folder"
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


class Skipped(FrozenRecord):
    """A file discovery passed over, and why (it looked like a transcript but cannot be one)."""

    __slots__ = ("path", "reason")

    path: Final[Path]
    reason: Final[str]

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return FOLDER
    return f"not a regular file ({_KINDS.get(stat.S_IFMT(mode), 'a special file')})"


def reason_of(exc: BaseException) -> str:
    """One readable line for why a file could not be read."""
    if isinstance(exc, NotRegularFile):
        return str(exc.strerror)
    if isinstance(exc, OSError):
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
        return f"cannot be read: {exc.strerror or exc}"
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 200 else text[:199] + "…"


def open_regular(path: Path) -> BinaryIO:
    """Open `path` for binary reading if it is a regular file; raises OSError (NotRegularFile) otherwise.

    The file is opened without blocking (a FIFO would wait for a writer) and checked on the open
    descriptor, so it cannot be swapped between the check and the read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, _kind(mode), str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def problem(path: Path) -> str | None:
    """None when `path` is a regular file this process can open; otherwise why it cannot be a transcript."""
    try:
        with open_regular(path):
            return None
    except OSError as exc:
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return "broken symbolic link"
        return reason_of(exc)


def safe_resolve(path: Path) -> Path:
    """`path` made absolute with its links resolved, as far as they resolve (never raises on a loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


class Sieve(Record):
    """What the store holds of the transcript files, by real path: (size, mtime_ns, agent, …) each. A walk
    of `agent`'s folders given a sieve takes out each regular file it finds at the very size and time the
    store holds for that agent (`unchanged`: its path -> what the store holds of it) instead of yielding it:
    an unchanged transcript costs one `stat`, never a `Path`, a classification, a path resolution nor an
    open. Files the sieve does not hold, or that changed, are yielded as usual. With a `tree`
    (`memex.sources.tree.LiveTree`), the folders it holds are read from it: no system call at all."""

    __slots__ = ("agent", "known", "tree", "unchanged")

    known: Mapping[str, Sequence[object]]
    agent: str
    unchanged: dict[str, Any]  # the rows of `known`, whatever their type
    tree: LiveTree | None

    def __init__(
        self,
        known: Mapping[str, Sequence[object]],
        agent: str,
        unchanged: dict[str, Any] | None = None,
        tree: LiveTree | None = None,
    ) -> None:
        self.known = known
        self.agent = agent
        self.unchanged = {} if unchanged is None else unchanged
        self.tree = tree


@functools.cache  # the same test for the same pattern: a live tree's sieve memo is keyed by it
def _matcher(pattern: str) -> Callable[[str], object]:
    """A test of a file name against a glob `pattern`: `str.endswith` for `*<suffix>` (every walk's pattern)."""
    suffix = pattern[1:]
    if pattern.startswith("*") and not any(c in suffix for c in "*?["):
        return operator.methodcaller("endswith", suffix)
    return re.compile(fnmatch.translate(pattern)).match


def _walk(folder: str, match: Callable[[str], object], sieve: Sieve | None) -> Iterator[tuple[str, bool]]:
    """Entries under `folder` whose name `match`es, as (path, is a regular file that is no link), in name
    order; folders are searched, links to folders are not (as `Path.rglob`). File types come from the
    directory listing itself: a regular file costs no system call of its own, and a file `sieve` holds one
    `stat`, relative to its folder (`Sieve`), or none in a folder the sieve's live tree holds."""
    prefix = folder.rstrip("/") + "/"
    tree = sieve.tree if sieve is not None else None
    held = tree.listing(folder) if tree is not None else None
    if tree is not None and held is not None and sieve is not None:
        rest = _sift_held(tree, folder, held, prefix, match, sieve)
    else:
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return
        try:  # the folder stays open while its files are `stat`ed (relative to it: no path to resolve)
            with os.scandir(fd) as listing:
                rest = _sift(list(listing), prefix, match, sieve)
        except OSError:
            return
        finally:
            os.close(fd)
    rest.sort()  # so paths come out sorted
    for name, is_folder, regular in rest:
        if is_folder:
            yield from _walk(prefix + name, match, sieve)
        elif match(name):
            yield prefix + name, regular


def _sift(
    entries: Iterable[os.DirEntry[str] | Entry],
    prefix: str,
    match: Callable[[str], object],
    sieve: Sieve | None,
    unchanged: dict[str, Any] | None = None,
) -> list[tuple[str, bool, bool]]:
    """(name, is a folder, is a regular file) of the `entries` of one folder the sieve does not take out
    (into `unchanged`, by default the sieve's)."""
    rest: list[tuple[str, bool, bool]] = []
    known: Mapping[str, Sequence[object]] = sieve.known if sieve is not None else {}
    agent = sieve.agent if sieve is not None else None
    if unchanged is None:
        unchanged = sieve.unchanged if sieve is not None else {}
    for entry in entries:  # per file as few calls as can be: a folder holds thousands of transcripts
        name = entry.name
        try:
            regular = entry.is_file(follow_symlinks=False)
            is_folder = not regular and entry.is_dir(follow_symlinks=False)
        except OSError:
            is_folder = regular = False
        if regular and match(name):
            path = prefix + name
            stored = known.get(path)
            if stored is not None and stored[2] == agent:
                try:
                    found = entry.stat(follow_symlinks=False)
                except OSError:
                    found = None
                if found is not None and stored[0] == found.st_size and stored[1] == found.st_mtime_ns:
                    unchanged[path] = stored
                    continue
        rest.append((name, is_folder, regular))
    return rest


class _Memo(NamedTuple):
    """What `_sift_held` worked out from a folder: the paths of the files it compared with the sieve and the
    rows it found for them, what it kept (`rest`) and what it took out as unchanged (`taken`); and the
    sieve's rows it holds for (the same mapping again: nothing to compare)."""

    paths: list[str]
    rows: list[Sequence[object] | None]
    rest: tuple[tuple[str, bool, bool], ...]
    taken: dict[str, Any]
    known: Mapping[str, Sequence[object]]  # the sieve's rows it was worked out (or last found true) with


def _sift_held(
    tree: LiveTree,
    folder: str,
    held: Collection[Entry],
    prefix: str,
    match: Callable[[str], object],
    sieve: Sieve,
) -> list[tuple[str, bool, bool]]:
    """`_sift` of a folder the live tree holds, remembered with the tree (`LiveTree.memos`) until the folder
    changes or the sieve's row of one of its files is no longer the very row it was: a warm server's run
    over 20,000 unchanged transcripts then compares 20,000 references (none when the sieve's rows are the
    mapping of the run before), without a call per file."""
    memos = tree.memos(folder)
    key = (sieve.agent, match)
    memo = cast("_Memo | None", memos.get(key))
    known = sieve.known
    if memo is not None and (memo.known is known or all(map(operator.is_, map(known.get, memo.paths), memo.rows))):
        if memo.known is not known:
            memos[key] = memo._replace(known=known)  # the next run over the same rows checks nothing
        sieve.unchanged.update(memo.taken)
        return list(memo.rest)
    taken: dict[str, Any] = {}
    rest = _sift(held, prefix, match, sieve, taken)
    sieve.unchanged.update(taken)
    paths = [entry.path for entry in held if entry.kind == REGULAR and match(entry.name)]
    memos[key] = _Memo(paths, list(map(known.get, paths)), tuple(rest), taken, known)
    return rest


def candidates(
    roots: Iterable[Path],
    pattern: str,
    keep: Callable[[Path], bool] = lambda _: True,
    skipped: list[Skipped] | None = None,
    canonical: set[Path] | None = None,
    sieve: Sieve | None = None,
) -> Iterator[tuple[Path, bool]]:
    """The regular files under `roots` whose name matches `pattern` and that `keep` accepts, each as
    (path, given by hand). A root that is a file is taken as given; a root that does not exist is passed
    over silently (an agent that was never used has no folder). Files that look like transcripts but are
    not regular files, or cannot be opened, go to `skipped`; folders named like files are searched.

    A folder is walked from its real path, so a regular file found in it is named by its real path: those
    are added to `canonical` (their `safe_resolve` is themselves). Only links and special files are opened
    here; a regular file that cannot be read fails, with its reason, when it is read. With a `sieve`, the
    files found in a folder as the store holds them are taken out (`Sieve.unchanged`), a link to one too.
    """
    match = _matcher(pattern)
    for root in roots:
        if os.path.isdir(root):
            for name, regular in _walk(str(safe_resolve(root)), match, sieve):
                path = Path(name)
                if not keep(path):
                    continue
                if regular:
                    if canonical is not None:
                        canonical.add(path)
                    yield path, False
                    continue
                reason = problem(path)
                if reason is None:
                    if sieve is None or str(safe_resolve(path)) not in sieve.unchanged:
                        yield path, False
                elif reason != FOLDER and skipped is not None:
                    skipped.append(Skipped(path, reason))
        elif os.path.lexists(root):
            reason = problem(root)
            if reason is None:
                yield root, True
            elif skipped is not None:
                skipped.append(Skipped(root, reason))


def real_path(path: Path, canonical: set[Path]) -> Path:
    """`safe_resolve(path)`, without a system call for a path `candidates` found to be its own real path."""
    return path if path in canonical else safe_resolve(path)
