"""Hypothesis strategies for Pulsar protocol messages, shared by the property tests of the
broker's metadata and frame scans (tests/property/test_entry_info.py,
tests/property/test_hand_decoded_send.py)."""

from __future__ import annotations

from hypothesis import strategies as st

from magnetar.wire import pulsar_api_pb2 as pb

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
UINT64 = st.integers(0, 2**64 - 1)
_TEXT = st.text(max_size=12)


@st.composite
def message_metadata(draw: st.DrawFn) -> pb.MessageMetadata:
    """Any MessageMetadata a client writes, every field kind but encryption keys (the SEND
    scan leaves those to protobuf; their tests have near misses of their own)."""
    m = pb.MessageMetadata(
        producer_name=draw(_TEXT), sequence_id=draw(UINT64), publish_time=draw(UINT64)
    )
    for key, value in draw(st.lists(st.tuples(_TEXT, _TEXT), max_size=3)):
        m.properties.add(key=key, value=value)
    if draw(st.booleans()):
        m.partition_key = draw(_TEXT)
        m.partition_key_b64_encoded = draw(st.booleans())
        m.ordering_key = draw(st.binary(max_size=8))
    if draw(st.booleans()):
        m.compression = draw(st.sampled_from(pb.CompressionType.values()))
        m.uncompressed_size = draw(st.integers(0, 2**32 - 1))
        m.num_messages_in_batch = draw(INT32)
    if draw(st.booleans()):
        m.uuid = draw(_TEXT)
        m.num_chunks_from_msg = draw(INT32)
        m.chunk_id = draw(INT32)
        m.total_chunk_msg_size = draw(INT32)
    if draw(st.booleans()):
        m.replicated_from = draw(_TEXT)
        m.replicate_to.extend(draw(st.lists(_TEXT, max_size=2)))
        m.event_time = draw(UINT64)
        m.schema_version = draw(st.binary(max_size=4))
        m.highest_sequence_id = draw(UINT64)
        m.deliver_at_time = draw(INT64)
        m.marker_type = draw(INT32)
        m.txnid_least_bits = draw(UINT64)
        m.txnid_most_bits = draw(UINT64)
        m.null_value = draw(st.booleans())
        m.null_partition_key = draw(st.booleans())
        m.encryption_algo = draw(_TEXT)
        m.encryption_param = draw(st.binary(max_size=4))
    return m
