"""The compacted ledger's entry format: original position, surviving-index mask, stored bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.broker.compaction.compacted_entry import CompactedEntry, decode, encode
from magnetar.broker.compaction.errors import CorruptCompactedEntry
from magnetar.managed_ledger.position import position


@given(
    ledger=st.integers(0, 2**62),
    entry=st.integers(0, 2**40),
    mask=st.none() | st.integers(1, 2**200),
    data=st.binary(max_size=200),
)
def test_round_trip(ledger: int, entry: int, mask: int | None, data: bytes) -> None:
    original = CompactedEntry(position(ledger, entry), mask, data)
    assert decode(encode(original)) == original


@pytest.mark.parametrize(
    "data", [b"", b"\x00\x00", b"\x00\x00\x00\x09abc", b"\x00\x00\x00\x02\xff\xff"]
)
def test_corrupt_entries_are_refused(data: bytes) -> None:
    with pytest.raises(CorruptCompactedEntry):
        decode(data)
