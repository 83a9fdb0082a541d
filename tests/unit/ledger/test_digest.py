"""Entry digests: the documented byte layout, and mismatch detection."""

from __future__ import annotations

import struct

import crc32c
import pytest

from magnetar.ledger.digest import entry_digest, verify_digest
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
