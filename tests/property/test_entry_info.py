"""The dispatcher's one-pass scan of an entry's metadata agrees with protobuf.

:func:`magnetar.broker.entry.entry_info` reads the fields the dispatcher needs straight from
the stored bytes and falls back to parsing a MessageMetadata when the scan meets anything it
does not expect. Both must give the same :class:`EntryInfo` for every entry a producer can
store (any metadata, with or without the checksum prefix), and the scan must never accept
bytes protobuf would read differently (random and truncated bytes).
"""

from __future__ import annotations

import struct

from hypothesis import example, given, settings
from hypothesis import strategies as st

from magnetar.broker.entry import (
    _scan_info,
    entry_info,
    entry_info_of,
    entry_metadata,
    split_entry,
)
from magnetar.wire import pulsar_api_pb2 as pb
from tests.kit.protobuf_wire import field
from tests.kit.pulsar_strategies import message_metadata


def stored(meta: bytes, payload: bytes, checksum: bool) -> bytes:
    body = struct.pack(">I", len(meta)) + meta + payload
    return (b"\x0e\x01" + b"\0\0\0\0" + body) if checksum else body


@settings(max_examples=400, deadline=None)
@given(message_metadata(), st.binary(max_size=16), st.booleans())
def test_the_scan_reads_what_protobuf_reads(
    m: pb.MessageMetadata, payload: bytes, checksum: bool
) -> None:
    data = stored(m.SerializeToString(), payload, checksum)
    scanned = _scan_info(data)
    assert scanned is not None  # every well-formed entry takes the fast path
    assert scanned == entry_info_of(entry_metadata(data))
    assert entry_info(data) == scanned


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64), st.booleans())
@example(b"\x00\x00\x00\x02\x58\x01", False)  # num_messages_in_batch = 1
@example(b"\x00\x00\x00\x02\x00\x01", False)  # field number 0: protobuf refuses it
@example(b"\x00\x00\x00\x03\x0a\x01\xff", False)  # producer_name not UTF-8
@example(b"\x00\x00\x00\x02\x0b\x00", False)  # a group
def test_any_bytes_give_what_protobuf_gives(data: bytes, checksum: bool) -> None:
    if checksum:
        data = b"\x0e\x01\0\0\0\0" + data
    assert entry_info(data) == entry_info_of(entry_metadata(data))


def test_a_truncated_entry_falls_back_to_protobuf() -> None:
    meta = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=5).SerializeToString()
    data = stored(meta, b"", False)[:-2]
    assert _scan_info(data) is None
    assert entry_info(data) == entry_info_of(entry_metadata(data))


def test_a_string_field_that_is_not_utf8_reads_as_unparseable_metadata() -> None:
    """Protobuf parses a string field that is not UTF-8 and refuses it only when it is read:
    such metadata reads as metadata that does not parse (empty; the entry one message with no
    key), wherever the field is, so no reader meets the error later (the dispatcher met it at
    every step, which stopped the subscription at that entry for good)."""
    head = field(2, 1) + field(3, 5) + field(11, 3)
    unparseable = (1, b"", 0, None)
    scanned = (3, b"", 0, None)  # a field the dispatcher's scan skips: its facts stand
    bad = {
        "partition key": (field(1, b"p") + head + field(6, b"\xff\xfe"), unparseable),
        "producer name": (field(1, b"\xff") + head + field(6, b"k"), unparseable),
        "a chunk's uuid": (field(1, b"p") + head + field(26, b"\xc3") + field(27, 2), unparseable),
        "replicate_to": (field(1, b"p") + head + field(7, b"\xff"), scanned),
        "a property's key": (
            field(1, b"p") + head + field(4, field(1, b"\xff") + field(2, b"v")),
            scanned,
        ),
    }
    for name, (meta, facts) in bad.items():
        stored = struct.pack(">I", len(meta)) + meta + b"payload"
        info = entry_info(stored)
        assert (info.messages, info.key, info.deliver_at, info.chunk) == facts, name
        assert entry_metadata(stored) == pb.MessageMetadata(), name
        assert split_entry(stored) == (pb.MessageMetadata(), b""), name
    good = field(1, b"p\xc3\xa9") + head + field(6, b"k\xc3\xa9")  # UTF-8, not ASCII
    info = entry_info(struct.pack(">I", len(good)) + good + b"payload")
    assert (info.messages, info.key) == (3, "ké".encode())
