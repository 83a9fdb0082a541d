"""The two passes of Pulsar's two-phase compactor, without I/O.

Phase one (:meth:`KeyMap.add`, over every message from the start of the compacted view to the
horizon, in order) records the position ``(entry, batch index)`` of the latest message of each
key; a tombstone (empty payload) removes its key, so earlier values of that key are gone too.
Phase two (:meth:`KeyMap.retained`, over the same messages again) says which messages of each
entry survive: a keyed message if it is its key's latest, every message without a key. The
result is a mask, bit i = batch index i survives; 0 means the entry is not written at all.

Batches are not rebuilt: an entry is written as it was stored, with the mask of the messages
that survive (the ack set a consumer is sent with it, so the client skips the others). Their
message ids stay those the producer was given. ``prior`` is the mask an entry already had in the
previous compacted view (messages already compacted out do not come back).

Pure; one KeyMap per compaction run, used from the compaction task only.
"""

from __future__ import annotations

from collections.abc import Sequence

from magnetar.broker.compaction.messages import MessageKey
from magnetar.managed_ledger import Position


def full_mask(count: int) -> int:
    """Every index of an entry of ``count`` messages."""
    return (1 << max(1, count)) - 1


class KeyMap:
    """Key -> the position of its latest message (see the module docstring)."""

    def __init__(self) -> None:
        self._latest: dict[str, tuple[Position, int]] = {}

    def __len__(self) -> int:
        return len(self._latest)

    def latest(self, key: str) -> tuple[Position, int] | None:
        return self._latest.get(key)

    def add(self, pos: Position, messages: Sequence[MessageKey], prior: int | None = None) -> None:
        """Phase one: the messages of the entry at ``pos`` (``prior``: the mask it had)."""
        latest = self._latest
        for index, message in enumerate(messages):
            if message.key is None or (prior is not None and not prior >> index & 1):
                continue
            if message.empty:
                latest.pop(message.key, None)
            else:
                latest[message.key] = (pos, index)

    def retained(
        self, pos: Position, messages: Sequence[MessageKey], prior: int | None = None
    ) -> int:
        """Phase two: the mask of the messages of the entry at ``pos`` that survive."""
        mask = 0
        latest = self._latest
        for index, message in enumerate(messages):
            if message.key is None or latest.get(message.key) == (pos, index):
                mask |= 1 << index
        return mask if prior is None else mask & prior
