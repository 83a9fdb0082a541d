"""The format of one entry of a compacted ledger.

Each entry carries a message of the topic as it was stored, with its original position, as
Pulsar's compacted ledger holds RawMessages (``[id size][MessageIdData][stored bytes]``)::

    [id_size u32 BE][MessageIdData{ledgerId, entryId, ack_set}][the stored entry, unchanged]

``ack_set`` is present only for a batch some of whose messages were compacted out: bit i set =
batch index i survives (the meaning it has in a MESSAGE frame, so it is sent on unchanged).

Pure functions; safe from any task.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from magnetar.broker.compaction.errors import CorruptCompactedEntry
from magnetar.broker.dispatch import ack_set_to_mask, mask_to_ack_set
from magnetar.ids import EntryId, LedgerId
from magnetar.managed_ledger import Position
from magnetar.wire import pulsar_api_pb2 as pb

_U32 = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class CompactedEntry:
    """One message kept by compaction: where it was, which indexes survive, what was stored."""

    position: Position
    mask: int | None  # None: every message of the entry survives
    stored: bytes


def encode(entry: CompactedEntry) -> bytes:
    mid = pb.MessageIdData(ledger_id=entry.position.ledger_id, entry_id=entry.position.entry_id)
    if entry.mask is not None:
        mid.ack_set.extend(mask_to_ack_set(entry.mask))
    head = mid.SerializeToString()
    return _U32.pack(len(head)) + head + entry.stored


def decode(data: bytes) -> CompactedEntry:
    if len(data) < 4:
        raise CorruptCompactedEntry("shorter than its header")
    (size,) = _U32.unpack_from(data, 0)
    if size > len(data) - 4:
        raise CorruptCompactedEntry("id longer than the entry")
    mid = pb.MessageIdData()
    try:
        mid.MergeFromString(data[4 : 4 + size])
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise CorruptCompactedEntry(str(exc)) from exc
    if not mid.IsInitialized():
        raise CorruptCompactedEntry("id lacks its ledger or entry")
    return CompactedEntry(
        Position(LedgerId(mid.ledger_id), EntryId(mid.entry_id)),
        ack_set_to_mask(mid.ack_set) if len(mid.ack_set) else None,
        data[4 + size :],
    )
