"""Entries written before their parent, put back in conversation order.

Claude Code 2.1 queues its transcript writes, and an answer's line can land before the line of the prompt
it answers (2.1.197, interactive: `assistant` at line 4, its prompt at line 6, the prompt's two
attachments at 7 and 8, the answer's `parentUuid` the second attachment: the chain keeps the real order).
Turns are built in the order entries are given, so such an answer joined the previous turn (or made a turn
of its own) and its prompt made a turn without an answer. An answer whose parent has not been seen waits
here, with the entries after it, until that parent comes: the prompt and the parent then go first, the
answer after them (`_after_parent`); when the parent does not come within `WINDOW` entries (it was read
before this batch, or it is gone), they all go in file order, as before.
"""

from __future__ import annotations

from memex.sources.model import Entry

# Entries an answer may wait for its parent. Claude Code's late prompt line came two lines after the answer.
WINDOW = 64


class ParentOrder:
    """Feed it a stream's entries in line order (`add`); it gives them back in conversation order."""

    __slots__ = ("awaited", "held", "seen")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.held: list[Entry] = []
        self.awaited: str | None = None

    def add(self, entry: Entry) -> list[Entry]:
        """The entries to take now (none while an answer waits for its parent)."""
        if self.held:
            if entry.uuid is not None and entry.uuid == self.awaited:
                return self._release(_after_parent(self.held, entry))
            self.held.append(entry)
            return self.flush() if len(self.held) > WINDOW else []
        parent = entry.parent_uuid
        if entry.kind == "assistant" and parent and parent not in self.seen:
            self.held.append(entry)
            self.awaited = parent
            return []
        return self._release([entry])

    def flush(self) -> list[Entry]:
        """What still waits, in file order (the stream, or the part read, ended)."""
        return self._release(self.held)

    def _release(self, entries: list[Entry]) -> list[Entry]:
        """Give `entries` (all that waited), nothing held any more."""
        self.held, self.awaited = [], None
        self.seen.update(entry.uuid for entry in entries if entry.uuid is not None)
        return entries


def _after_parent(held: list[Entry], parent: Entry) -> list[Entry]:
    """What waited, once the awaited `parent` came: the entries written between the answer and its parent
    that do not descend from the answer (the prompt, its attachments: the parent's own ancestors) first, in
    file order, then the parent, then the answer and what followed from it."""
    answer = held[0]
    family = {answer.uuid}
    descended = [answer]
    before = []
    for entry in held[1:]:
        if entry.parent_uuid is not None and entry.parent_uuid in family:
            family.add(entry.uuid)
            descended.append(entry)
        else:
            before.append(entry)
    return [*before, parent, *descended]
