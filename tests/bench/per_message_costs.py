"""Micro-benchmark: what one value or frame costs on the per-message paths (not a test).

Run: ``.venv/bin/python -m tests.bench.per_message_costs [--repeat 7] [-k NAME]``

Several per-message types and encoders were chosen for their cost, and their docstrings say
so without a figure (figures go stale): this script measures each choice against the
alternative it replaced, on this machine, with ``timeit`` (best of ``--repeat`` rounds, each
long enough to take about 0.2 s, the two sides of a case timed alternately). It prints, per
case, microseconds per message for the code in ``magnetar`` and for the alternative, and their
ratio. The alternatives are built here:

- NamedTuples against a frozen dataclass with the same fields (``slots=True``, as the code
  base writes its values): ``Position`` (build, then compare and hash), ``AddRequest``,
  ``Candidate``, ``PendingAck``, ``Message`` (through ``new_message``), ``JournalRecord``,
  ``EntryInfo`` (one per entry dispatched), ``PayloadSection`` (one per SEND received; built
  with ``tuple.__new__`` as the decoder does);
- ``__slots__`` classes against the dataclass they would be: ``PendingRun`` (two dicts and a
  list from ``default_factory``), ``PendingMessage`` (eight defaults);
- ``unchecked_message_id`` against ``MessageId(...)`` with its range check;
- the hand-encoded SEND_RECEIPT and MESSAGE frames against protobuf's ``BaseCommand``;
- a batch's plain single-message metadata from one reused template, the ACK command filled
  in place, and the receive path's varint scan of a ``SingleMessageMetadata``, each against
  building (and parsing) a new protobuf message;
- a client's 1 KiB SEND frame written by hand around its serialized metadata (``send_frame``)
  against protobuf's command and ``encode_payload_command``; a SEND_RECEIPT and a 1 KiB
  MESSAGE through the client's reader (``client_frames``: the commands scanned from the wire)
  against protobuf's parse (``frames``) and the reads the client made of it;
- the hand encoder's unrolled two- and three-byte ``varint`` against the loop over a
  bytearray it kept for longer values;
- a dispatch step's run of MESSAGE frames for one consumer, what the frames share encoded
  once (``message_frames``), against a ``message_frame_head`` call per entry;
- a producer's run of stored SENDs answered (``send_receipt_frames``: one buffer, the
  producer and ledger encoded once) against a ``send_receipt_frame`` call per SEND, per SEND;
- an ACK of 100 whole entries through the broker's reader (the ids scanned from the wire into
  positions) against protobuf's parse and the former per-id reads, per id;
- a 1 KiB SEND through the broker's reader (``broker_frames``: the fields scanned from the
  wire) against protobuf's parse of the command and metadata (``frames``);
- at 16 KiB, the payload bytes on the broker's own paths: the decoder's SEND (command and
  payload section copied apart, the section kept as the stored bytes) against one copy of the
  frame body and a slice of it; a MESSAGE written as head + stored bytes and joined once by the
  socket write against the whole frame joined first and then again;
- a 4 MiB SEND arriving in 64 KiB reads: the decoder, which keeps the reads of an incomplete
  frame as they came and joins its command and section once, against joining what was left
  with every read (the cost that avoids);
- a dispatch step's facts handed to the entry cache after the read evicted those entries:
  ``remember``'s early return against a lookup per position, per entry;
- the bookie's two record checksums of a 16 KiB and a 128 KiB payload (the journal's and the
  entry log's): one pass over the payload and each head's checksum combined with it
  (``crc32c_combine``) against a pass after each head;
- the SEND scan's checksum of a 128 KiB section through a view against a copy of the covered
  bytes (``tests.bench.gil_checksum`` has the GIL's side of a checksum);
- the bookie journal's per-group metrics (two counters and the sync-latency histogram the
  process puts in place) against the counters alone: the price of the histogram, per group
  (a cost that was added, not a choice that saved one: "ours" is the dearer side).

The figures are in docs/benchmarks.md ("Per-message costs"). Run it on an idle machine and
rerun once: on a shared one the ratios hold better than the absolute times.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import struct
import time
import timeit
from collections.abc import Callable
from typing import Any, NamedTuple

import crc32c

from magnetar.bookie.bookie_stats import JournalStats
from magnetar.bookie.journal_record import JournalRecord, RecordKind
from magnetar.broker.dispatch import ack_set_to_mask
from magnetar.broker.dispatch.dispatcher import Candidate
from magnetar.broker.dispatch.pending_acks import PendingAck
from magnetar.broker.entry import EntryInfo
from magnetar.checksum import KEEP_GIL, crc32c_combine
from magnetar.client.acks import AckRequest
from magnetar.client.batch_builder import PendingMessage, encode_batch_payload
from magnetar.client.message import Message, new_message
from magnetar.client.receiver import _scan_single
from magnetar.ids import EntryId, LedgerId
from magnetar.ledger.bookie_client import AddRequest
from magnetar.ledger.pending_adds import PendingRun
from magnetar.managed_ledger.entry_cache import CacheBudget, EntryCache
from magnetar.managed_ledger.position import Position, position_of_pair
from magnetar.protocol import client_commands, commands, hand_encoded
from magnetar.protocol.frame import (
    Frame,
    FrameDecoder,
    MessageFrame,
    PayloadSection,
    encode_command,
    encode_message,
    encode_payload_command,
    encode_payload_section,
    parse_frame_body,
)
from magnetar.protocol.hand_decoded import AckFrame
from magnetar.protocol.message_id import INT64_MAX, MessageId, to_signed64, unchecked_message_id
from magnetar.telemetry import metric_names
from magnetar.telemetry.metrics import Metrics
from magnetar.wire import pulsar_api_pb2 as pb
from tests.bench.report import header

_BATCH = 100  # messages per batch, ids per ACK


class Case(NamedTuple):
    name: str
    ours: Callable[[], object]
    other: Callable[[], object]
    per: int = 1  # calls of ``ours``/``other`` cover this many messages


def mirror(value_type: type[Any], *, order: bool = False) -> type[Any]:
    """A frozen dataclass with the fields of the NamedTuple ``value_type``."""
    fields = [(name, object) for name in value_type._fields]
    return dataclasses.make_dataclass(
        f"{value_type.__name__}Dataclass", fields, frozen=True, slots=True, order=order
    )


@dataclasses.dataclass
class PendingRunDataclass:
    first: int
    payloads: list[bytes]
    last_add_confirmed: int
    sent: dict[str, int] = dataclasses.field(default_factory=dict)
    acked: dict[str, int] = dataclasses.field(default_factory=dict)
    requests: list[object] = dataclasses.field(default_factory=list)
    callback: object = None


@dataclasses.dataclass
class PendingMessageDataclass:
    payload: bytes
    sequence_id: int
    key: str | None = None
    properties: object = None
    event_time_ms: int | None = None
    ordering_key: bytes | None = None
    deliver_at_ms: int | None = None
    future: object = None
    callback: object = None
    context: object = None
    size: int = dataclasses.field(init=False, default=0)
    plain: bool = dataclasses.field(init=False, default=False)

    def __post_init__(self) -> None:  # the work PendingMessage.__init__ does beyond storing
        self.size = len(self.payload)
        self.plain = (
            self.key is None
            and not self.properties
            and self.event_time_ms is None
            and self.ordering_key is None
        )


def value_cases() -> list[Case]:
    position_dc = mirror(Position, order=True)
    a, b = Position(LedgerId(7), EntryId(41)), Position(LedgerId(7), EntryId(42))
    c, d = position_dc(7, 41), position_dc(7, 42)
    add_dc, cand_dc, ack_dc = mirror(AddRequest), mirror(Candidate), mirror(PendingAck)
    msg_dc, rec_dc = mirror(Message), mirror(JournalRecord)
    info_dc, section_dc = mirror(EntryInfo), mirror(PayloadSection)
    meta, new_tuple = pb.MessageMetadata(), tuple.__new__
    mid = MessageId(7, 42)
    fields: tuple[object, ...] = ("t", mid, b"x", None, {}, 1, None, 0, "p", 3, None, None)
    return [
        Case(
            "Position: build",
            lambda: Position(LedgerId(7), EntryId(42)),
            lambda: position_dc(7, 42),
        ),
        Case("Position: compare and hash", lambda: (a < b, hash(a)), lambda: (c < d, hash(c))),
        Case(
            "AddRequest: build",
            lambda: AddRequest(1, 2, 1, b"p", 0, b"k", False),
            lambda: add_dc(1, 2, 1, b"p", 0, b"k", False),
        ),
        Case("Candidate: build", lambda: Candidate(a, 1, None), lambda: cand_dc(a, 1, None)),
        Case(
            "PendingAck: build",
            lambda: PendingAck(a, (1, 1), 1, None, 0),
            lambda: ack_dc(a, (1, 1), 1, None, 0),
        ),
        Case("Message: build (new_message)", lambda: new_message(fields), lambda: msg_dc(*fields)),
        Case(
            "JournalRecord: build",
            lambda: JournalRecord(RecordKind.ADD, 1, 2, 1, 0, b"k", b"p"),
            lambda: rec_dc(RecordKind.ADD, 1, 2, 1, 0, b"k", b"p"),
        ),
        Case(
            "PendingRun: build (__slots__)",
            lambda: PendingRun(2, [b"p"], 1),
            lambda: PendingRunDataclass(2, [b"p"], 1),
        ),
        Case(
            "PendingMessage: build (__slots__)",
            lambda: PendingMessage(b"p", 3),
            lambda: PendingMessageDataclass(b"p", 3),
        ),
        Case(
            "EntryInfo: build",
            lambda: EntryInfo(1, b"", 1700000000000, False),
            lambda: info_dc(1, b"", 1700000000000, False, 0, None),
        ),
        Case(
            "PayloadSection: build (as the decoder does)",
            lambda: new_tuple(PayloadSection, (meta, 30, 7, None, b"s")),
            lambda: section_dc(meta, 30, 7, None, b"s"),
        ),
        Case(
            "unchecked_message_id",
            lambda: unchecked_message_id(7, 42, -1, -1, 0),
            lambda: MessageId(7, 42, -1, -1, 0),
        ),
    ]


def read_fields(meta: pb.SingleMessageMetadata) -> tuple[int, int, int, bool, bool]:
    """What ``_scan_single`` returns, read from a parsed message instead."""
    sequence = meta.sequence_id if meta.HasField("sequence_id") else -1
    return meta.payload_size, sequence, meta.event_time, meta.null_value, meta.compacted_out


def varint_loop(value: int) -> bytes:
    """``hand_encoded.varint`` without its unrolled two- and three-byte cases."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def message_heads_one_by_one(positions: list[tuple[int, int]], stored: list[bytes]) -> object:
    """The dispatcher's former loop: one :func:`message_frame_head` call per entry."""
    parts: list[bytes] = []
    for (ledger_id, entry_id), data in zip(positions, stored, strict=True):
        parts.append(hand_encoded.message_frame_head(1, ledger_id, entry_id, -1, len(data)))
        parts.append(data)
    return parts


@dataclasses.dataclass
class StoredSend:
    """A stored SEND as the producer's receipts read it."""

    sequence_id: int
    highest_sequence_id: int | None
    message_id: Position


def receipts_one_by_one(producer_id: int, sends: list[StoredSend]) -> object:
    """The producer's former loop: one :func:`send_receipt_frame` call per SEND."""
    return [
        hand_encoded.send_receipt_frame(
            producer_id,
            send.sequence_id,
            send.message_id.ledger_id,
            send.message_id.entry_id,
            send.highest_sequence_id,
        )
        for send in sends
    ]


def decode_one(data: bytes, *, sends: bool) -> object:
    """One frame through a fresh decoder: the broker's reader (SENDs scanned from the wire)
    or protobuf's parse (:meth:`FrameDecoder.frames`)."""
    decoder = FrameDecoder()
    decoder.feed(data)
    return next(decoder.broker_frames() if sends else decoder.frames())


def decode_read(data: bytes, *, sends: bool) -> object:
    """Every frame of one read (the broker's reader at full speed: a read holds many SENDs)
    through one decoder, scanned from the wire or parsed with protobuf."""
    decoder = FrameDecoder()
    decoder.feed(data)
    return list(decoder.broker_frames() if sends else decoder.frames())


def receipt_read(data: bytes, *, scanned: bool) -> object:
    """What a producer reads of a SEND_RECEIPT: the client's reader (scanned from the wire)
    or protobuf's parse and the former reads (``MessageId.from_proto``)."""
    decoder = FrameDecoder()
    decoder.feed(data)
    if scanned:
        _, sequence_id, ledger_id, entry_id = next(decoder.client_frames())  # type: ignore[misc]
        return sequence_id, ledger_id, entry_id
    receipt = next(decoder.frames()).command.send_receipt
    return receipt.sequence_id, MessageId.from_proto(receipt.message_id)


def message_read(data: bytes, *, scanned: bool) -> object:
    """What a consumer reads of a MESSAGE's command: the client's reader (the command scanned
    from the wire) or protobuf's parse and the former reads of the command."""
    decoder = FrameDecoder()
    decoder.feed(data)
    frame = next(decoder.client_frames() if scanned else decoder.frames())
    if isinstance(frame, MessageFrame):
        d = frame.delivery
        return d.ledger_id, d.entry_id, d.partition, d.redelivery_count, d.consumer_epoch
    assert isinstance(frame, Frame)
    command = frame.command.message
    mid = command.message_id
    epoch = command.consumer_epoch if command.HasField("consumer_epoch") else -1
    return mid.ledger_id, mid.entry_id, mid.partition, command.redelivery_count, epoch


def ack_positions(data: bytes, *, broker: bool) -> object:
    """An ACK frame's acked positions: the broker's reader (ids scanned from the wire, then
    mapped to positions) or its former path (protobuf's parse, then per id the attribute
    reads and the signed conversion of ``ConsumerRequests._ack``)."""
    decoder = FrameDecoder()
    decoder.feed(data)
    if broker:
        frame = next(decoder.broker_frames())
        assert isinstance(frame, AckFrame)
        return list(map(position_of_pair, frame.entries))
    ack = next(decoder.frames()).command.ack
    return [
        (
            tuple.__new__(
                Position,
                (
                    lid if (lid := m.ledger_id) <= INT64_MAX else to_signed64(lid),
                    eid if (eid := m.entry_id) <= INT64_MAX else to_signed64(eid),
                ),
            ),
            ack_set_to_mask(words) if (words := m.ack_set) else None,
        )
        for m in ack.message_id
    ]


def encoding_cases() -> list[Case]:
    mid = MessageId(123_456, 789)
    stored = b"\x00" * 64
    plain = [PendingMessage(b"p" * 100, i) for i in range(_BATCH)]
    rich = [PendingMessage(b"p" * 100, i) for i in range(_BATCH)]
    for message in rich:
        message.plain = False  # the same content through a new SingleMessageMetadata each
    ids = tuple((MessageId(123_456, i), ()) for i in range(_BATCH))
    request = AckRequest(pb.CommandAck.Individual, ids)
    reused = client_commands.send(1, 0)

    def protobuf_send(payload: bytes) -> bytes:
        # The client's former SEND: a reused command, its sequence id set, then the frame.
        reused.send.sequence_id = 42
        return encode_payload_command(reused, meta, payload)

    raw = pb.SingleMessageMetadata(payload_size=100, sequence_id=42).SerializeToString()
    run_positions = [(123_456, 789 + i) for i in range(_BATCH)]
    run_stored = [stored] * _BATCH
    stored_sends = [
        StoredSend(42 + i, None, Position(LedgerId(123_456), EntryId(789 + i)))
        for i in range(_BATCH)
    ]
    meta = pb.MessageMetadata(producer_name="standalone-0-1", sequence_id=42, publish_time=1)
    kib = b"x" * 1024
    send_1k = encode_payload_command(commands.send(1, 42), meta, kib)
    sends_1k = b"".join(
        encode_payload_command(
            commands.send(1, seq),
            pb.MessageMetadata(producer_name="standalone-0-1", sequence_id=seq, publish_time=1),
            kib,
        )
        for seq in range(_BATCH)
    )
    receipt = hand_encoded.send_receipt_frame(1, 42, 123_456, 789)
    message_1k = hand_encoded.message_frame(1, 123_456, 789, -1, encode_payload_section(meta, kib))
    ack_ids = [pb.MessageIdData(ledger_id=123_456, entry_id=789 + i) for i in range(_BATCH)]
    ack_frame = encode_command(
        pb.BaseCommand(
            type=pb.BaseCommand.ACK,
            ack=pb.CommandAck(consumer_id=1, ack_type=pb.CommandAck.Individual, message_id=ack_ids),
        )
    )
    return [
        Case(
            "SEND_RECEIPT frame",
            lambda: hand_encoded.send_receipt_frame(1, 42, 123_456, 789),
            lambda: encode_command(commands.send_receipt(1, 42, mid)),
        ),
        Case(
            "SEND_RECEIPT frames of a run (one buffer)",
            lambda: hand_encoded.send_receipt_frames(1, stored_sends),
            lambda: receipts_one_by_one(1, stored_sends),
            _BATCH,
        ),
        Case(
            "MESSAGE frame",
            lambda: hand_encoded.message_frame(1, 123_456, 789, -1, stored),
            lambda: encode_message(commands.message(1, mid), stored),
        ),
        Case(
            "batch metadata per message (template)",
            lambda: encode_batch_payload(plain),
            lambda: encode_batch_payload(rich),
            _BATCH,
        ),
        Case(
            "ACK per id (filled in place)",
            lambda: request.to_command(1),
            lambda: client_commands.ack(1, [m.to_proto() for m, _ in ids]),
            _BATCH,
        ),
        Case(
            "client SEND frame 1 KiB (hand-encoded)",
            lambda: hand_encoded.send_frame(1, 42, -1, -1, meta.SerializeToString(), kib, True),
            lambda: protobuf_send(kib),
        ),
        Case(
            "client SEND_RECEIPT decode (wire scan)",
            lambda: receipt_read(receipt, scanned=True),
            lambda: receipt_read(receipt, scanned=False),
        ),
        Case(
            "client MESSAGE decode 1 KiB (wire scan)",
            lambda: message_read(message_1k, scanned=True),
            lambda: message_read(message_1k, scanned=False),
        ),
        Case(
            "SingleMessageMetadata read (varint scan)",
            lambda: _scan_single(raw, 0, len(raw)),
            lambda: read_fields(pb.SingleMessageMetadata.FromString(raw)),
        ),
        Case(
            "MESSAGE frames of a run (shared parts once)",
            lambda: hand_encoded.message_frames(1, -1, None, run_positions, run_stored),
            lambda: message_heads_one_by_one(run_positions, run_stored),
            _BATCH,
        ),
        Case(
            "ACK decode per id (wire scan)",
            lambda: ack_positions(ack_frame, broker=True),
            lambda: ack_positions(ack_frame, broker=False),
            _BATCH,
        ),
        Case(
            "SEND decode 1 KiB (wire scan)",
            lambda: decode_one(send_1k, sends=True),
            lambda: decode_one(send_1k, sends=False),
        ),
        Case(
            f"SEND decode 1 KiB, {_BATCH} a read",
            lambda: decode_read(sends_1k, sends=True),
            lambda: decode_read(sends_1k, sends=False),
            _BATCH,
        ),
        Case(
            "varint, 2 and 3 bytes (packed)",
            lambda: (hand_encoded.varint(300), hand_encoded.varint(100_000)),
            lambda: (varint_loop(300), varint_loop(100_000)),
            2,
        ),
        Case(
            "a bare message's metadata (hand-encoded)",
            lambda: hand_encoded.plain_metadata("standalone-0-1", 123_456, 1_700_000_000_000),
            lambda: pb.MessageMetadata(
                producer_name="standalone-0-1", sequence_id=123_456, publish_time=1_700_000_000_000
            ).SerializeToString(),
        ),
        Case(
            "varint, 6 bytes (a publish time in ms)",
            lambda: hand_encoded.varint(1_700_000_000_000),
            lambda: varint_loop(1_700_000_000_000),
        ),
    ]


def journal_group_metrics(stats: JournalStats) -> Callable[[], None]:
    """What ``Journal._write_group`` does for metrics after each group's write and fdatasync."""

    def account() -> None:
        started = time.perf_counter()
        stats.sync_latency.record(time.perf_counter() - started)
        stats.syncs += 1
        stats.written_bytes += 4096

    return account


_BIG = 16 * 1024  # payload bytes of the byte-path cases


def decode_body_copy(data: bytes) -> object:
    """The decoder's former step: one copy of the whole frame body, parsed (the stored bytes
    then sliced out of it: a second copy of the payload). A function, not a subclass of
    :class:`FrameDecoder`: compiled, that class cannot be subclassed from Python."""
    buffer = bytearray(data)
    (total,) = struct.unpack_from(">I", buffer, 0)
    with memoryview(buffer) as view:
        body = bytes(view[4 : 4 + total])
    return parse_frame_body(body)


def decode_split(data: bytes) -> object:
    decoder = FrameDecoder()
    decoder.feed(data)
    return next(decoder.frames())


_LARGE = 4 * 1024 * 1024  # payload bytes of the large-frame case
_READ = 64 * 1024  # bytes a socket read delivers in that case


def decode_in_reads(pieces: list[bytes]) -> object:
    """A frame that spans many reads through the decoder (its reads kept while it is
    incomplete, its section joined once)."""
    decoder = FrameDecoder(max_frame_size=2 * _LARGE)
    for piece in pieces:
        decoder.feed(piece)
    return next(decoder.frames())


def decode_joined_per_read(pieces: list[bytes]) -> object:
    """The same frame when what was left is joined with every read (each read copies all that
    came before it again), then parsed."""
    data = b""
    for piece in pieces:
        data += piece
    decoder = FrameDecoder(max_frame_size=2 * _LARGE)
    decoder.feed(data)
    return next(decoder.frames())


def byte_cases() -> list[Case]:
    meta = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1)
    send = encode_payload_command(commands.send(1, 1), meta, b"x" * _BIG)
    stored = b"\x0e\x01" + b"x" * _BIG
    others = [b"r" * 40]  # a receipt written in the same loop iteration
    large = encode_payload_command(commands.send(1, 1), meta, b"y" * _LARGE)
    pieces = [large[i : i + _READ] for i in range(0, len(large), _READ)]

    def message_parts() -> bytes:
        head = hand_encoded.message_frame_head(1, 123_456, 789, -1, len(stored))
        return b"".join([*others, head, stored])

    def message_joined() -> bytes:
        return b"".join([*others, hand_encoded.message_frame(1, 123_456, 789, -1, stored)])

    return [
        Case(
            "SEND decode 16 KiB: split copies",
            lambda: decode_split(send),
            lambda: decode_body_copy(send),
        ),
        Case("MESSAGE write 16 KiB: head + stored", message_parts, message_joined),
        Case(
            "a 4 MiB SEND over 64 KiB reads, per frame",
            lambda: decode_in_reads(pieces),
            lambda: decode_joined_per_read(pieces),
        ),
        *(
            Case(
                f"journal and entry-log checksums of a {size >> 10} KiB payload: combined",
                functools.partial(checksums_combined, b"c" * size),
                functools.partial(checksums_seeded, b"c" * size),
            )
            for size in (16 << 10, 128 << 10)
        ),
    ]


_JOURNAL_HEAD = b"j" * 31  # a record's head: kind, ids, lac, digest, key length
_ENTRY_LOG_HEAD = b"e" * 20  # the entry log's checksummed head: ids and length


def checksums_combined(payload: bytes) -> tuple[int, int]:
    """The bookie's way from COMBINE_FROM on: one pass, each head's checksum combined."""
    payload_crc = crc32c.crc32c(payload)
    size = len(payload)
    return (
        crc32c_combine(crc32c.crc32c(_JOURNAL_HEAD), payload_crc, size),
        crc32c_combine(crc32c.crc32c(_ENTRY_LOG_HEAD), payload_crc, size),
    )


def checksums_seeded(payload: bytes) -> tuple[int, int]:
    """A pass per record: the payload checksummed after each head."""
    return (
        crc32c.crc32c(payload, crc32c.crc32c(_JOURNAL_HEAD)),
        crc32c.crc32c(payload, crc32c.crc32c(_ENTRY_LOG_HEAD)),
    )


def remember_each(cache: EntryCache, infos: list[tuple[Position, object]]) -> None:
    """``EntryCache.remember`` before it returned early: one lookup per position."""
    entries = cache._entries
    for pos, info in infos:
        found = entries.get(pos)
        if found is not None:
            entries[pos] = (found[0], found[1], info)


def cache_cases() -> list[Case]:
    """A dispatch step's facts handed to the cache after a lone cursor's read evicted the
    entries it read (what ``remember`` then finds: none of them)."""
    cache = CacheBudget(1 << 30).cache()
    ledger = LedgerId(1)
    positions = [Position(ledger, EntryId(i)) for i in range(_BATCH)]
    cache.insert_run(positions, [b"x"] * _BATCH)
    cache.insert_run([Position(ledger, EntryId(_BATCH))], [b"y"])  # the next entry stays cached
    cache.evict_before(Position(ledger, EntryId(_BATCH)))
    infos: list[tuple[Position, object]] = [(p, (1, b"", 0, None)) for p in positions]
    return [
        Case(
            "facts of evicted entries remembered, per entry: early return",
            functools.partial(cache.remember, infos),
            functools.partial(remember_each, cache, infos),
            per=_BATCH,
        )
    ]


def metrics_cases() -> list[Case]:
    with_histogram = JournalStats()
    with_histogram.sync_latency = Metrics().histogram(metric_names.BOOKIE_JOURNAL_SYNC_LATENCY)
    return [
        Case(
            "journal group metrics: histogram + counters",
            journal_group_metrics(with_histogram),
            journal_group_metrics(JournalStats()),  # the default recorder discards
        )
    ]


def checksum_cases() -> list[Case]:
    """The SEND scan's checksum of a 128 KiB section through a view against a copy of the
    covered bytes (what the scan does from 16 KiB on)."""
    section = b"\x0e\x01" + bytes(4) + os.urandom(128 * 1024)
    return [
        Case(
            "SEND checksum, 128 KiB: view against copy",
            lambda: crc32c.crc32c(memoryview(section)[6:], 0, KEEP_GIL),
            lambda: crc32c.crc32c(section[6:], 0, KEEP_GIL),
        ),
    ]


def best_us(case: Case, repeat: int) -> tuple[float, float]:
    """Microseconds per message of ``ours`` and ``other``: the best of ``repeat`` rounds, the
    two timed alternately so that a neighbour's burst of load hits both alike."""
    timers = [timeit.Timer(case.ours), timeit.Timer(case.other)]
    numbers = [timer.autorange()[0] for timer in timers]
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, timer in enumerate(timers):
            best[i] = min(best[i], timer.timeit(numbers[i]) / numbers[i])
    return best[0] / case.per * 1e6, best[1] / case.per * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=7, help="timeit rounds; the best counts")
    parser.add_argument("-k", dest="only", default="", help="only cases whose name has this")
    args = parser.parse_args()
    print(header(vars(args) | {"batch": _BATCH}), flush=True)
    print(f"{'case':<42} {'ours us':>8} {'other us':>9} {'other/ours':>10}")
    cases = value_cases() + encoding_cases() + byte_cases() + cache_cases() + metrics_cases()
    for case in cases + checksum_cases():
        if args.only.lower() not in case.name.lower():
            continue
        ours, other = best_us(case, args.repeat)
        print(f"{case.name:<42} {ours:>8.3f} {other:>9.3f} {other / ours:>9.1f}x", flush=True)


if __name__ == "__main__":
    main()
