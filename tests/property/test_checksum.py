"""crc32c_combine against crc32c over the joined bytes (magnetar.checksum)."""

from __future__ import annotations

import crc32c
from hypothesis import example, given
from hypothesis import strategies as st

from magnetar.checksum import crc32c_combine


@given(st.binary(max_size=64), st.binary(max_size=70_000))
@example(b"", b"")
@example(b"head", b"")  # nothing appended: the checksum of the head
@example(b"", b"payload")  # nothing in front: the checksum of the payload
@example(b"h", b"\xff" * 65_535)  # a length with sixteen bits set
@example(b"h", b"\x00" * (1 << 16))  # one bit set, past the sizes drawn
def test_combine_is_the_checksum_of_the_joined_bytes(head: bytes, payload: bytes) -> None:
    joined = crc32c.crc32c(head + payload)
    assert crc32c_combine(crc32c.crc32c(head), crc32c.crc32c(payload), len(payload)) == joined


@given(st.binary(max_size=32), st.binary(max_size=32), st.binary(max_size=2_000))
def test_combine_chains_like_the_checksum(a: bytes, b: bytes, c: bytes) -> None:
    """Combining a + b, then c, is combining a with b + c: the journal and the entry log each
    put their own head in front of the one payload checksum."""
    ab = crc32c_combine(crc32c.crc32c(a), crc32c.crc32c(b), len(b))
    bc = crc32c_combine(crc32c.crc32c(b), crc32c.crc32c(c), len(c))
    left = crc32c_combine(ab, crc32c.crc32c(c), len(c))
    right = crc32c_combine(crc32c.crc32c(a), bc, len(b) + len(c))
    assert left == right == crc32c.crc32c(a + b + c)
