"""Entry digests: the documented byte layout, and mismatch detection."""

from __future__ import annotations

import os
import struct

import crc32c
import pytest

from magnetar.checksum import COMBINE_FROM
from magnetar.ledger.bookie_client import AddRequest
from magnetar.ledger.digest import entry_digest, payload_crcs, verify_digest
from magnetar.ledger.errors import DigestMismatch


def test_digest_is_crc32c_of_documented_layout() -> None:
    expected = crc32c.crc32c(struct.pack(">QQq", 7, 3, -1) + b"payload")
    assert entry_digest(7, 3, -1, b"payload") == expected


def test_verify_rejects_any_changed_field() -> None:
    digest = entry_digest(1, 2, 1, b"data")
    verify_digest(1, 2, 1, b"data", digest)
    for args in [(9, 2, 1, b"data"), (1, 9, 1, b"data"), (1, 2, 0, b"data"), (1, 2, 1, b"date")]:
        with pytest.raises(DigestMismatch):
            verify_digest(*args, digest)


def test_payload_checksums_come_from_the_digests_of_long_entries() -> None:
    """The payload's checksum taken out of the digest, for entries from COMBINE_FROM on; -1 for
    shorter ones, and nothing at all when none is long."""
    sizes = [10, COMBINE_FROM - 1, COMBINE_FROM, 300_000, 0]
    adds = [
        AddRequest(4, e, e - 1, p, entry_digest(4, e, e - 1, p), b"k")
        for e, p in enumerate(os.urandom(size) for size in sizes)
    ]
    assert payload_crcs(adds) == [
        crc32c.crc32c(a.payload) if len(a.payload) >= COMBINE_FROM else -1 for a in adds
    ]
    assert payload_crcs(adds[:2]) == []
    assert payload_crcs(adds[3:]) == [crc32c.crc32c(adds[3].payload), -1]
