"""A live listing of the agents' folders, kept exact by the kernel's change notifications (inotify).

`memex index` over 20,000 transcripts where one changed spends most of its CPU listing folders and
`stat`ing every file (one system call each: ~55 ms on 2 cores, whatever the walk's own cost). A process
that lives between runs (the warm server, `memex.ingest.live`; the daemon's scans, `memex.sync.watch`) can
keep the listing instead: each folder is listed once, watched, and then only the names the kernel reports
changed are looked at again.

The tree answers for the folders it holds exactly what `os.scandir` would (`listing`: entries with
`name`, `path`, `is_file`, `is_dir` and `stat`, as `os.DirEntry` has them), as of
the last `refresh`, which reads every notification the kernel has queued. A write that returned before
`refresh` was called is in that queue (inotify queues the event in the writer's own system call), so a
client that asks after its agent wrote sees the write. A folder the tree does not hold (not tracked, no
watch could be added, gone) gets None: the walk lists it itself. When the kernel's queue overflowed,
some change may be lost: the tree forgets everything and is built again by the next `track`.

What inotify cannot see is not held: a folder on a file system where another computer (or the host of a
virtual machine) may write without this kernel knowing (NFS, SMB, 9p, FUSE…: only `LOCAL_FILE_SYSTEMS` are
held), a folder past `max_watches` (a quarter of `fs.inotify.max_user_watches`: the daemon and the warm
server may each hold a tree, and editors and other tools need theirs), and a root whose path now names
another folder (a parent renamed: no event reaches the root's own watch; `track` compares each root's
device and inode). What a link points to is not watched: a link is looked at again every time.

Linux only (inotify, through `inotify_simple`); elsewhere `available()` is False and every walk lists.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inotify_simple import INotify

# What an entry is, as `os.scandir` tells it without following a link.
FOLDER, REGULAR, OTHER = 1, 2, 0
# inotify's flags (<sys/inotify.h>; as ints: the enum's operators cost a call per event).
_MODIFY, _ATTRIB = 0x2, 0x4
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF = 0x400, 0x800
_Q_OVERFLOW, _IGNORED = 0x4000, 0x8000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK, _ISDIR = 0x01000000, 0x02000000, 0x04000000, 0x40000000
# Every change that can alter what a listing or a `stat` says: a name that comes or goes, a file's size or
# time (written, truncated, touched), a watched folder that goes. Not IN_CLOSE_WRITE: a write is reported
# by IN_MODIFY already, and the kernel merges a run of IN_MODIFY on one name (an agent's appends between
# two runs) into one event, which an IN_CLOSE_WRITE between them would prevent.
WATCHED = (
    _MODIFY
    | _ATTRIB
    | _MOVED_FROM
    | _MOVED_TO
    | _CREATE
    | _DELETE
    | _DELETE_SELF
    | _MOVE_SELF
    | _ONLYDIR
    | _DONT_FOLLOW
    | _EXCL_UNLINK
)
_NAME_GOES_OR_COMES = _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE
# File systems whose every change goes through this kernel (`/proc/self/mountinfo`'s names).
LOCAL_FILE_SYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "bcachefs", "f2fs", "jfs", "reiserfs", "nilfs2", "zfs"}
    | {"tmpfs", "ramfs", "overlay", "vfat", "exfat", "ntfs3", "hfsplus", "apfs"}
)


def available() -> bool:
    """Whether this system has inotify (and `inotify_simple` is installed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import inotify_simple  # noqa: F401
    except ImportError:
        return False
    return True


class Entry:
    """One name in a folder, answering as `os.DirEntry` does; its own `stat` (a link's, not its target's) is
    taken once and kept until a change of that name is reported. What a link points to is not watched:
    asked with `follow_symlinks`, a link is looked at every time."""

    __slots__ = ("_stat", "kind", "name", "path")

    def __init__(self, name: str, path: str, kind: int, stat: os.stat_result | None = None) -> None:
        self.name = name
        self.path = path
        self.kind = kind
        self._stat = stat

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        if self.kind == OTHER and follow_symlinks:
            return os.path.isfile(self.path)
        return self.kind == REGULAR

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        if self.kind == OTHER and follow_symlinks:
            return os.path.isdir(self.path)
        return self.kind == FOLDER

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        if self.kind == OTHER and follow_symlinks:
            return os.stat(self.path)
        if self._stat is None:
            self._stat = os.lstat(self.path)
        return self._stat


def _now(name: str, path: str) -> Entry | None:
    """The entry `name` is now (one `lstat`, kept as its `stat`), or None when it is gone."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    mode = found.st_mode & 0o170000
    kind = FOLDER if mode == 0o040000 else REGULAR if mode == 0o100000 else OTHER
    return Entry(name, path, kind, found)


def max_watches() -> int:
    """How many folders one tree watches at most: a quarter of what this user may watch in all (the daemon
    and the warm server may each hold one; editors and other tools need theirs)."""
    try:
        return int(Path("/proc/sys/fs/inotify/max_user_watches").read_text()) // 4
    except (OSError, ValueError):
        return 2_048  # a quarter of the kernel's oldest default


def file_system(path: str) -> str | None:
    """The type of the file system `path` (a real path) is on, from `/proc/self/mountinfo`; None if unknown."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    found, longest = None, -1
    for line in lines:  # "id parent dev root MOUNT options… - TYPE source options"
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        mount = parts[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > longest:  # the last of equal mounts is the one on top
            found, longest = rest.split()[0], len(mount)
        elif inside and len(mount) == longest:
            found = rest.split()[0]
    return found


class LiveTree:
    """Folders listed once and kept up to date from inotify's reports (see the module's docstring). Not
    thread-safe: its user serialises `track`, `refresh` and the walks that read `listing`."""

    def __init__(self, watches: int | None = None) -> None:
        self.max_watches = max_watches() if watches is None else watches
        self._notify: INotify | None = None
        self._roots: dict[str, tuple[int, int]] = {}  # root -> (device, inode) it was when added
        self._folders: dict[str, dict[str, Entry]] = {}  # real path -> name -> entry
        self._watch_of: dict[str, int] = {}  # folder -> its watch descriptor
        self._folder_of: dict[int, str] = {}  # watch descriptor -> folder
        self._memos: dict[str, dict[object, object]] = {}  # folder -> what its users keep of it (`memos`)
        self.overflows = 0  # times the kernel's queue overflowed (the tree was dropped and built again)

    @property
    def folders(self) -> int:
        """How many folders are held (listed and watched)."""
        return len(self._folders)

    def track(self, folders: Iterable[str]) -> None:
        """Hold these folders (real paths, as the walk names them) and everything under them; a folder held
        already is only brought up to date (listed again if its path now names another folder), one that
        does not exist or that inotify cannot follow is passed over (asked again next time)."""
        self.refresh()
        for folder in folders:
            try:
                found = os.stat(folder)
            except OSError:
                self._drop(folder, unwatch=True)
                continue
            identity = (found.st_dev, found.st_ino)
            if folder in self._folders and self._roots.get(folder) == identity:
                continue
            self._drop(folder, unwatch=True)
            if file_system(folder) in LOCAL_FILE_SYSTEMS:
                self._add(folder)
                if folder in self._folders:
                    self._roots[folder] = identity

    def listing(self, folder: str) -> Collection[Entry] | None:
        """The entries of `folder` as of the last `refresh`, or None when the tree does not hold it."""
        held = self._folders.get(folder)
        return None if held is None else held.values()

    def memos(self, folder: str) -> dict[object, object]:
        """A place to keep what is worked out from `folder`'s listing (by a key of the caller's), emptied
        whenever a change to the folder is applied: what is found there was worked out from the listing as
        it is now."""
        return self._memos.setdefault(folder, {})

    def refresh(self) -> None:
        """Apply every change the kernel has reported so far."""
        if self._notify is None:
            return
        while events := self._notify.read(timeout=0):
            for wd, mask, _cookie, name in events:
                if mask & _Q_OVERFLOW:  # changes were lost: start again (the rest of this read is the old tree's)
                    self.overflows += 1
                    self.close()
                    return
                self._apply(wd, mask, name)

    def close(self) -> None:
        """Drop every folder and watch."""
        if self._notify is not None:
            self._notify.close()
            self._notify = None
        self._folders.clear()
        self._watch_of.clear()
        self._folder_of.clear()
        self._memos.clear()
        self._roots.clear()

    def _apply(self, wd: int, mask: int, name: str) -> None:
        folder = self._folder_of.get(wd)
        if folder is None:  # a watch dropped already
            return
        if mask & _IGNORED:  # the watch is gone (its folder deleted, or unmounted)
            self._drop(folder, unwatch=False)
            return
        if mask & (_DELETE_SELF | _MOVE_SELF):
            self._drop(folder, unwatch=True)
            return
        held = self._folders.get(folder)
        if held is None or not name:
            return
        path = f"{folder.rstrip('/')}/{name}"
        self._memos.pop(folder, None)
        if mask & _ISDIR and mask & _NAME_GOES_OR_COMES:
            self._drop(path, unwatch=True)  # what was held under this name is not what is there now
        entry = _now(name, path)
        if entry is None:
            held.pop(name, None)
            return
        held[name] = entry
        if entry.kind == FOLDER and path not in self._folders:
            self._add(path)

    def _add(self, folder: str) -> None:
        """Watch `folder`, then list it (a change after the watch is reported; one before it is listed), and
        its sub-folders likewise."""
        if self._notify is None:
            from inotify_simple import INotify

            self._notify = INotify(nonblocking=True)
        pending = [folder]
        while pending:
            current = pending.pop()
            if len(self._watch_of) >= self.max_watches:  # the rest is listed by the walks
                break
            try:
                wd = self._notify.add_watch(current, WATCHED)
            except OSError:  # gone, not readable, or no watch left (fs.inotify.max_user_watches): listed by walks
                continue
            previous = self._folder_of.get(wd)
            if previous is not None and previous != current:  # the same folder reached by another path
                self._drop(previous, unwatch=False)
            self._folder_of[wd] = current
            self._watch_of[current] = wd
            try:
                with os.scandir(current) as listing:
                    found = list(listing)
            except OSError:
                self._drop(current, unwatch=True)
                continue
            held: dict[str, Entry] = {}
            prefix = current.rstrip("/") + "/"
            for item in found:
                try:
                    kind = (
                        FOLDER
                        if item.is_dir(follow_symlinks=False)
                        else REGULAR
                        if item.is_file(follow_symlinks=False)
                        else OTHER
                    )
                except OSError:
                    kind = OTHER
                held[item.name] = Entry(item.name, prefix + item.name, kind)
                if kind == FOLDER and prefix + item.name not in self._folders:
                    pending.append(prefix + item.name)
            self._folders[current] = held
            self._memos.pop(current, None)

    def _drop(self, folder: str, *, unwatch: bool) -> None:
        """Forget `folder` and everything held under it; `unwatch`: remove their watches too (a folder moved
        away keeps its watches, which would report changes under a name it no longer has)."""
        inside = folder.rstrip("/") + "/"
        for held in [f for f in self._folders if f == folder or f.startswith(inside)]:
            del self._folders[held]
            self._memos.pop(held, None)
            self._roots.pop(held, None)
        for held in [f for f in self._watch_of if f == folder or f.startswith(inside)]:
            wd = self._watch_of.pop(held)
            self._folder_of.pop(wd, None)
            if unwatch and self._notify is not None:
                with contextlib.suppress(OSError):
                    self._notify.rm_watch(wd)
