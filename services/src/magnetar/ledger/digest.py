"""Entry digests: CRC32-C over ``ledger_id | entry_id | lac | payload`` (docs/storage-api.md).

The writer computes the digest of each entry it sends; readers verify it before handing an
entry out, so a corrupt or misplaced entry is caught as :class:`DigestMismatch` and read from
another replica. ``ledger_id`` and ``entry_id`` are 8-byte big-endian unsigned, ``lac`` 8-byte
big-endian signed (-1 before any confirmation). Pure; the one adapter of the ``crc32c`` package.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c

from magnetar.checksum import COMBINE_FROM, KEEP_GIL, crc32c_combine
from magnetar.ledger.bookie_client import AddRequest
from magnetar.ledger.errors import DigestMismatch

_HEADER = struct.Struct(">QQq")
# NamedTuple's generated __new__ is a Python-level lambda: build the tuple directly.
_new_tuple = tuple.__new__


def entry_digest(ledger_id: int, entry_id: int, last_add_confirmed: int, payload: bytes) -> int:
    """On the event loop: the GIL is held throughout (:data:`magnetar.checksum.KEEP_GIL`)."""
    crc = crc32c.crc32c(_HEADER.pack(ledger_id, entry_id, last_add_confirmed))
    return int(crc32c.crc32c(payload, crc, KEEP_GIL))


def add_requests(
    requests: list[AddRequest],
    ledger_id: int,
    first_entry: int,
    lac: int,
    payloads: Sequence[bytes],
    crcs: Sequence[int] | None,
    master_key: bytes,
    recovery: bool,
) -> None:
    """Append to ``requests`` the :class:`AddRequest` of each of ``payloads``, entry ids from
    ``first_entry`` on, with its digest, in one compiled loop (the write handle builds one per
    entry). ``crcs`` (parallel to ``payloads``, at least as long, or None): each payload's
    ``crc32c`` where the caller checked it (-1 where not), from which the digest is combined
    (:func:`digest_from_crc`) instead of read."""
    entry_id = first_entry
    for i, payload in enumerate(payloads):
        crc = -1 if crcs is None else crcs[i]
        if crc < 0:
            digest = entry_digest(ledger_id, entry_id, lac, payload)
        else:
            digest = digest_from_crc(ledger_id, entry_id, lac, crc, len(payload))
        fields = (ledger_id, entry_id, lac, payload, digest, master_key, recovery)
        requests.append(_new_tuple(AddRequest, fields))
        entry_id += 1


def digest_from_crc(
    ledger_id: int, entry_id: int, last_add_confirmed: int, payload_crc: int, size: int
) -> int:
    """:func:`entry_digest` of a payload of ``size`` bytes whose ``crc32c`` is ``payload_crc``
    (known for certain: the broker's own check of a SEND's checksum), without reading it."""
    header_crc = crc32c.crc32c(_HEADER.pack(ledger_id, entry_id, last_add_confirmed))
    return crc32c_combine(header_crc, payload_crc, size)


def payload_crcs(entries: Sequence[AddRequest]) -> list[int]:
    """``crc32c(payload)`` of each entry from its digest, without reading the payload, for
    those at least :data:`~magnetar.checksum.COMBINE_FROM` long (-1 for the rest; an empty list
    when there is none): the CRC is linear, so the payload's checksum is the digest with the
    header's share taken out. Only for digests this process computed or checked over these very
    bytes (its write handles', the replicator's): from a wrong digest comes a wrong checksum."""
    crcs: list[int] = []
    pack = _HEADER.pack
    for at, entry in enumerate(entries):
        size = len(entry.payload)
        if size < COMBINE_FROM:
            if crcs:
                crcs.append(-1)
            continue
        if not crcs:
            crcs = [-1] * at
        header_crc = crc32c.crc32c(pack(entry.ledger_id, entry.entry_id, entry.lac))
        crcs.append(entry.digest ^ crc32c_combine(header_crc, 0, size))
    return crcs


def verify_digest(
    ledger_id: int,
    entry_id: int,
    last_add_confirmed: int,
    payload: bytes,
    digest: int,
    *,
    bookie_id: str = "",
) -> None:
    """Raise :class:`DigestMismatch` unless ``digest`` matches the entry."""
    if entry_digest(ledger_id, entry_id, last_add_confirmed, payload) != digest:
        raise DigestMismatch(ledger_id, entry_id, bookie_id)
