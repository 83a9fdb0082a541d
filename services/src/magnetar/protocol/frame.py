"""Frames of the Pulsar binary protocol: a sans-I/O incremental decoder and the encoders.

Wire layout (all sizes u32 big-endian, magics u16 big-endian)::

    simple:  [total][cmd_size][BaseCommand]
    payload: [total][cmd_size][BaseCommand]
             ([0x0e02][bem_size][BrokerEntryMetadata])?      broker -> client only, optional
             ([0x0e01][crc32c])?[meta_size][MessageMetadata][payload...]

``total`` counts the bytes after itself. The CRC32-C (Castagnoli) covers everything after the
checksum field to the end of the frame. Only SEND and MESSAGE carry a payload section.

Invariants:

* The decoder never holds more than one incomplete frame plus what the caller fed; a frame whose
  announced size exceeds ``max_frame_size`` raises :class:`FrameTooLarge` as soon as its 4-byte
  header is seen, before any of its body is buffered.
* The decoder raises only :class:`~magnetar.protocol.errors.ProtocolError` subclasses. Fatal
  ones leave it broken (every later call raises the same error); frame-local ones have already
  consumed the bad frame, so calling :meth:`FrameDecoder.frames` again continues with the next.
* :attr:`PayloadSection.stored` is the exact byte string a broker stores for an entry (what
  followed the command, minus any broker entry metadata block); :func:`encode_message` replays
  it after a new MESSAGE command unchanged, checksum included.

Concurrency: a decoder belongs to one connection and is used from that connection's reader task
only. The encoders are pure functions.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator
from typing import Final, NamedTuple, cast

import crc32c as _crc32c
from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError, EncodeError, Message

from magnetar.checksum import KEEP_GIL
from magnetar.protocol.errors import (
    BrokenStream,
    ChecksumMismatch,
    FrameTooLarge,
    MalformedCommand,
    MalformedFrame,
    MalformedMetadata,
    ProtocolError,
    TruncatedFrame,
    UnknownCommand,
)
from magnetar.protocol.hand_decoded import (
    ACK_TYPE,
    MESSAGE_TYPE,
    SEND_RECEIPT_TYPE,
    SEND_TYPE,
    AckFrame,
    Delivery,
    ReceiptFrame,
    SendFrame,
    scan_ack,
    scan_message,
    scan_receipt,
    scan_send,
    u32_at,
)
from magnetar.wire import pulsar_api_pb2 as pb

MAGIC_CRC32C = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
FRAME_SIZE_PADDING = 10 * 1024
DEFAULT_MAX_FRAME_SIZE = DEFAULT_MAX_MESSAGE_SIZE + FRAME_SIZE_PADDING

PAYLOAD_COMMANDS = frozenset({pb.BaseCommand.SEND, pb.BaseCommand.MESSAGE})

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_MAGIC_CRC = _U16.pack(MAGIC_CRC32C)
_MAGIC_BEM = _U16.pack(MAGIC_BROKER_ENTRY_METADATA)


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC32-C (Castagnoli) of ``data``, continuing from ``value``, holding the GIL
    (:data:`magnetar.checksum.KEEP_GIL` says why)."""
    result: int = _crc32c.crc32c(data, value, KEEP_GIL)
    return result


class PayloadSection(NamedTuple):
    """What follows the command of a SEND or MESSAGE frame.

    A NamedTuple rather than a frozen dataclass, as :class:`Frame`: one is built for every
    SEND and MESSAGE received."""

    metadata: pb.MessageMetadata
    # Where the payload starts in ``stored`` (the broker never needs it apart: no copy).
    payload_offset: int
    # The checksum the frame carried (already verified), or None when it had none.
    checksum: int | None
    broker_entry_metadata: pb.BrokerEntryMetadata | None
    # [0x0e01][crc][meta_size][meta][payload] as received (no broker entry metadata block).
    stored: bytes

    @property
    def payload(self) -> bytes:
        """The message payload (a slice of ``stored``, made when asked for: the broker's SEND
        path never asks)."""
        return self.stored[self.payload_offset :]


class Frame(NamedTuple):
    """One decoded frame: a command, plus its payload section for SEND and MESSAGE.

    A NamedTuple rather than a frozen dataclass: one is built for every frame received."""

    command: pb.BaseCommand
    payload: PayloadSection | None = None

    @property
    def type(self) -> pb.BaseCommand.Type.ValueType:
        return self.command.type


class MessageFrame(NamedTuple):
    """A MESSAGE as a client's reader takes it: the command's fields scanned from the wire
    (:func:`~magnetar.protocol.hand_decoded.scan_message`) and the payload section."""

    delivery: Delivery
    section: PayloadSection

    @property
    def type(self) -> int:
        return MESSAGE_TYPE


# NamedTuple's generated __new__ is a Python-level lambda; the decoder builds frames and
# payload sections directly.
_new_frame = _new_tuple = tuple.__new__


# Body field name of each command type (the field number equals the type value).
_BODY_FIELDS: dict[int, str] = {f.number: f.name for f in pb.BaseCommand.DESCRIPTOR.fields}


def command_body(command: pb.BaseCommand) -> Message:
    """The sub-message of ``command`` that its type selects (field number == type value)."""
    body: Message = getattr(command, _BODY_FIELDS[command.type])
    return body


def _has_body(command: pb.BaseCommand) -> bool:
    """Whether ``command``'s type is known and its body field is set."""
    name = _BODY_FIELDS.get(command.type)
    return name is not None and command.HasField(name)  # type: ignore[arg-type]


# ------------------------------------------------------------------ decoding
# The decoding functions work on offsets into one bytes object: slicing a memoryview or
# comparing slices costs an object per step, and this runs for every frame received.


def parse_command(data: bytes) -> pb.BaseCommand:
    """Parse and validate a BaseCommand: known type, body present, required fields set."""
    command = pb.BaseCommand()
    try:
        command.MergeFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise MalformedCommand(f"protobuf does not parse: {exc}") from exc
    if not command.HasField("type"):
        raise UnknownCommand(_unknown_type_number(command))
    if not _has_body(command):
        name = pb.BaseCommand.Type.Name(command.type)
        raise MalformedCommand(f"{name} command without its body")
    if not command.IsInitialized():
        missing = ", ".join(_missing_fields(command))
        raise MalformedCommand(f"missing required fields: {missing}")
    return command


def _missing_fields(message: Message) -> list[str]:
    # FindInitializationErrors exists at runtime but not in the typeshed stubs.
    finder = getattr(message, "FindInitializationErrors", None)
    return list(finder()) if finder is not None else ["?"]


def _unknown_type_number(command: pb.BaseCommand) -> int | None:
    """The raw value of field 1 when protobuf put it aside as an unknown enum value."""
    fields = unknown_fields.UnknownFieldSet(command)
    for index in range(len(fields)):
        field = fields[index]
        if field.field_number == 1 and isinstance(field.data, int):
            return field.data
    return None


def _parse_message(message: Message, data: bytes) -> str | None:
    """Parse into ``message``; return a reason string on failure, None on success."""
    try:
        message.MergeFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        return f"protobuf does not parse: {exc}"
    if not message.IsInitialized():
        return "missing required fields: " + ", ".join(_missing_fields(message))
    return None


def parse_payload_section(
    command: pb.BaseCommand,
    body: bytes,
    *,
    verify_checksum: bool = True,
    start: int = 0,
) -> PayloadSection:
    """Parse what follows the command of a payload frame (``body[start:]``)."""
    size = len(body)
    pos = start
    broker_entry_metadata: pb.BrokerEntryMetadata | None = None
    if body.startswith(_MAGIC_BEM, pos):
        if size - pos < 6:
            raise MalformedFrame("broker entry metadata size missing", command)
        (bem_size,) = _U32.unpack_from(body, pos + 2)
        if bem_size > size - pos - 6:
            raise MalformedFrame("broker entry metadata longer than the frame", command)
        broker_entry_metadata = pb.BrokerEntryMetadata()
        reason = _parse_message(broker_entry_metadata, body[pos + 6 : pos + 6 + bem_size])
        if reason is not None:
            raise MalformedMetadata(command, f"broker entry metadata: {reason}")
        pos += 6 + bem_size
    stored_at = pos
    checksum: int | None = None
    if body.startswith(_MAGIC_CRC, pos):
        if size - pos < 6:
            raise MalformedFrame("checksum missing", command)
        (checksum,) = _U32.unpack_from(body, pos + 2)
        pos += 6
        if verify_checksum:
            actual = crc32c(memoryview(body)[pos:])
            if actual != checksum:
                raise ChecksumMismatch(command, checksum, actual)
    if size - pos < 4:
        raise MalformedFrame("message metadata size missing", command)
    (meta_size,) = _U32.unpack_from(body, pos)
    meta_end = pos + 4 + meta_size
    if meta_end > size:
        raise MalformedFrame("message metadata longer than the frame", command)
    metadata = pb.MessageMetadata()
    reason = _parse_message(metadata, body[pos + 4 : meta_end])
    if reason is not None:
        raise MalformedMetadata(command, reason)
    return _new_tuple(
        PayloadSection,
        (
            metadata,
            meta_end - stored_at,
            checksum,
            broker_entry_metadata,
            body[stored_at:] if stored_at else body,
        ),
    )


def parse_frame_body(data: bytes, *, verify_checksum: bool = True) -> Frame:
    """Parse one frame given the bytes after its ``total`` field."""
    size = len(data)
    if size < 4:
        raise MalformedFrame("frame too short for its command size")
    (cmd_size,) = _U32.unpack_from(data, 0)
    end = 4 + cmd_size
    if end > size:
        raise MalformedFrame(f"command of {cmd_size} bytes in a frame of {size}")
    command = parse_command(data[4:end])
    if command.type in PAYLOAD_COMMANDS:
        section = parse_payload_section(command, data, verify_checksum=verify_checksum, start=end)
        return _new_frame(Frame, (command, section))
    if end != size:
        raise MalformedFrame(f"{size - end} unexpected bytes after a simple command", command)
    return _new_frame(Frame, (command, None))


def parse_split_frame(command: bytes, section: bytes, *, verify_checksum: bool = True) -> Frame:
    """:func:`parse_frame_body` for a frame whose command bytes and the (non-empty) bytes
    after them arrive apart: a payload command's section is parsed in place, so its stored
    bytes are ``section`` itself (no copy)."""
    parsed = parse_command(command)
    if parsed.type in PAYLOAD_COMMANDS:
        section_parsed = parse_payload_section(parsed, section, verify_checksum=verify_checksum)
        return _new_frame(Frame, (parsed, section_parsed))
    raise MalformedFrame(f"{len(section)} unexpected bytes after a simple command", parsed)


def send_frame_of(frame: Frame) -> SendFrame:
    """The :class:`SendFrame` of a SEND ``frame`` parsed with protobuf."""
    send = frame.command.send
    section = frame.payload
    assert section is not None  # the decoder guarantees a payload for SEND
    metadata = section.metadata
    num_chunks = metadata.num_chunks_from_msg
    return SendFrame(
        send.producer_id,
        send.sequence_id,
        send.highest_sequence_id if send.HasField("highest_sequence_id") else None,
        send.num_messages,
        (metadata.chunk_id, num_chunks) if num_chunks > 1 else None,
        section.stored,
        None if num_chunks > 1 else _dispatch_facts(metadata),
    )


def _dispatch_facts(metadata: pb.MessageMetadata) -> tuple[int, bytes, int] | None:
    """:attr:`SendFrame.facts` from a parsed MessageMetadata (what the scan reads)."""
    try:
        ascii_names = (
            metadata.producer_name.isascii()
            and metadata.uuid.isascii()
            and metadata.partition_key.isascii()
        )
    except (TypeError, ValueError):  # not UTF-8: protobuf may refuse the string when read
        return None
    if not ascii_names:
        return None
    batch = metadata.num_messages_in_batch
    messages = (batch if batch > 1 else 1) if metadata.HasField("num_messages_in_batch") else 1
    if metadata.HasField("ordering_key"):
        key = metadata.ordering_key
    else:
        key = metadata.partition_key.encode()
    return messages, key, metadata.deliver_at_time


def _join_range(pieces: list[bytes | memoryview], start: int, end: int) -> bytes:
    """Bytes ``start:end`` of the pieces laid end to end, in one join (a view of each piece's
    part: no copy before the join's)."""
    parts: list[bytes | memoryview] = []
    at = 0
    for piece in pieces:
        size = len(piece)
        if at + size > start and at < end:
            lo = start - at if start > at else 0
            hi = end - at if end < at + size else size
            parts.append(piece if lo == 0 and hi == size else memoryview(piece)[lo:hi])
        at += size
        if at >= end:
            break
    if len(parts) == 1 and type(parts[0]) is bytes:
        return parts[0]
    return b"".join(parts)


# The command a scanned MESSAGE's section is parsed under: an error there is raised again by
# the protobuf path, with the frame's own command.
_SCANNED = pb.BaseCommand()
_PLAIN: Final = 0  # FrameDecoder._frames: every frame parsed with protobuf
_BROKER: Final = 1  # SEND and ACK scanned
_CLIENT: Final = 2  # SEND_RECEIPT and MESSAGE scanned


class FrameDecoder:
    """Incremental decoder: :meth:`feed` bytes as they arrive, then iterate :meth:`frames`.

    What was received and not yet returned is kept as one ``bytes`` object with an offset into
    it, so that each frame's parts are plain slices of it (one copy each, no view). A frame
    cut across reads is joined from them instead, as its command and its payload section, each
    once (the section is then the one copy of its payload, as for a frame that came in one
    read): when a feed completes a frame the last read cut short, from what was left and the
    new read; when a frame is still incomplete after a feed, from the reads that carry it,
    kept uncopied until it is whole. Either way the last read's bytes after the frame stay as
    they are. Otherwise what is left and the new bytes are joined.
    """

    def __init__(
        self, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, verify_checksum: bool = True
    ) -> None:
        if max_frame_size < 8:
            raise ValueError("max_frame_size must leave room for a command")
        self._max_frame_size = max_frame_size
        self._verify_checksum = verify_checksum
        self._data = b""
        self._offset = 0
        # A frame still incomplete after a feed, as the reads that carry it (then _data is
        # empty), the bytes they hold and the bytes it needs in all (its size field included).
        self._pieces: list[bytes | memoryview] | None = None
        self._have = 0
        self._need = 0
        # Frames made whole from pieces or from a read that completed a cut one, in order
        # (before _data[_offset:]):
        # (command, payload section), or (None, the frame's bytes) for one without a section.
        self._ready: deque[tuple[bytes | None, bytes]] = deque()
        self._broken: ProtocolError | None = None

    @property
    def max_frame_size(self) -> int:
        return self._max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        self._max_frame_size = value

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames."""
        unread = len(self._data) - self._offset + self._have
        for command, rest in self._ready:
            unread += len(rest) if command is None else 8 + len(command) + len(rest)
        return unread

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes. Raises FrameTooLarge early, without buffering the frame."""
        if self._broken is not None:
            raise self._broken
        pieces = self._pieces
        if pieces is not None:
            piece = data if type(data) is bytes else bytes(data)  # (the caller may reuse it)
            pieces.append(piece)
            self._have += len(piece)
            if self._have >= self._need:
                self._complete(pieces)
            return
        rest = len(self._data) - self._offset
        cut = self._completes_cut_frame(rest, len(data))
        if cut:  # just the cut frame is joined (as pieces); the read stays as it is behind it
            self._whole(
                [memoryview(self._data)[self._offset :], memoryview(data)[:cut]], rest + cut
            )
        if rest and not cut:
            self._data = self._data[self._offset :] + data
            self._offset = 0
        else:
            self._data = data if type(data) is bytes else bytes(data)
            self._offset = cut
        self._collect_if_incomplete()

    def _collect_if_incomplete(self) -> None:
        """Start collecting the next frame as pieces if ``_data`` holds only part of it."""
        total = self._check_header()
        if total is not None and len(self._data) - self._offset < 4 + total:
            first = memoryview(self._data)[self._offset :]
            self._pieces = [first]
            self._have = len(first)
            self._need = 4 + total
            self._data = b""
            self._offset = 0

    def _complete(self, pieces: list[bytes | memoryview]) -> None:
        """The collected frame is whole: its command and section (or, without a section, its
        bytes) are joined from the pieces, and what the last piece holds after it is kept."""
        need = self._need
        last = pieces[-1]
        excess = self._have - need
        rest: bytes | memoryview = b""
        if excess:
            cut = len(last) - excess
            rest = last[cut:]
            pieces[-1] = memoryview(last)[:cut]
        self._pieces = None
        self._have = 0
        self._whole(pieces, need)
        if rest:
            self._data = rest if type(rest) is bytes else bytes(rest)
            self._offset = 0
            self._collect_if_incomplete()

    def _whole(self, pieces: list[bytes | memoryview], size: int) -> None:
        """A frame of ``size`` bytes (its size field included) laid out over ``pieces``, whole:
        its command and its payload section are joined from them, each once (or, without a
        section, its bytes), and queued to be taken before ``_data``'s frames."""
        section_at = 8 + _U32.unpack(_join_range(pieces, 4, 8))[0]
        if section_at < size:
            self._ready.append(
                (_join_range(pieces, 8, section_at), _join_range(pieces, section_at, size))
            )
        else:  # no section, or a command that does not fit (its error comes when taken)
            self._ready.append((None, _join_range(pieces, 0, size)))

    def frames(self) -> Iterator[Frame]:
        """Yield every complete frame buffered so far.

        A frame-local error is raised after its frame was consumed; call ``frames()`` again
        to continue with the next frame. After a fatal error every call raises it again.
        """
        # The generator never yields a SendFrame when asked not to.
        return cast("Iterator[Frame]", self._frames(_PLAIN))

    def broker_frames(self) -> Iterator[Frame | SendFrame | AckFrame]:
        """:meth:`frames` as a broker's reader takes them: each SEND as a :class:`SendFrame`,
        and each ACK of whole entries as an :class:`AckFrame` (the fields the broker reads,
        scanned from the wire where the frame is as expected, :mod:`.hand_decoded`). Errors
        are the same as :meth:`frames`'s."""
        return cast("Iterator[Frame | SendFrame | AckFrame]", self._frames(_BROKER))

    def client_frames(self) -> Iterator[Frame | ReceiptFrame | MessageFrame]:
        """:meth:`frames` as a client's reader takes them: each SEND_RECEIPT as a
        :class:`ReceiptFrame` and each MESSAGE as a :class:`MessageFrame` (the commands
        scanned from the wire where they are as expected, :mod:`.hand_decoded`). Errors are
        the same as :meth:`frames`'s."""
        return cast("Iterator[Frame | ReceiptFrame | MessageFrame]", self._frames(_CLIENT))

    def _frames(
        self, mode: int
    ) -> Iterator[Frame | SendFrame | AckFrame | ReceiptFrame | MessageFrame]:
        broker = mode == _BROKER
        verify = self._verify_checksum
        while True:
            if self._broken is not None:
                raise self._broken
            # Read again at each frame: a feed while a frame is out replaces them.
            ready = False
            if self._ready:
                command_of, rest_of = self._ready.popleft()
                if command_of is not None:
                    yield self._payload_frame(command_of, rest_of, mode, verify)
                    continue
                data = rest_of
                pos = 0
                ready = True
            else:
                data = self._data
                pos = self._offset
            total = self._header_at(data, pos)
            start = pos + 4
            if total is None or len(data) < start + total:
                return
            end = start + total
            cmd_end = start + 4 + u32_at(data, start)
            if not ready:
                self._offset = end
            if cmd_end < end:  # a command and what follows it (a SEND's payload section)
                command = data[start + 4 : cmd_end]
                section = data[cmd_end:end]
            else:  # a simple command, or one that does not fit its frame (an error)
                body = data[start:end]
                # An ACK of whole entries or a receipt (a command filling its frame) is
                # scanned too.
                if mode and cmd_end == end and len(body) > 6 and body[4] == 0x08:
                    if broker and body[5] == ACK_TYPE:
                        ack = scan_ack(body, 4)
                        if ack is not None:
                            yield ack
                            continue
                    elif mode == _CLIENT and body[5] == SEND_RECEIPT_TYPE:
                        receipt = scan_receipt(body, 4)
                        if receipt is not None:
                            yield receipt
                            continue
                yield parse_frame_body(body, verify_checksum=verify)
                continue
            yield self._payload_frame(command, section, mode, verify)

    @staticmethod
    def _payload_frame(
        command: bytes, section: bytes, mode: int, verify: bool
    ) -> Frame | SendFrame | MessageFrame:
        """The frame of a command and the payload section after it, sliced apart: the stored
        bytes are then the section itself (no second copy of the payload out of a frame
        body). A broker's SEND is scanned (:func:`scan_send`), and a client's MESSAGE command
        (:func:`scan_message`), else they are parsed with protobuf."""
        if mode == _CLIENT:
            delivery = scan_message(command)
            if delivery is not None:
                try:
                    parsed = parse_payload_section(_SCANNED, section, verify_checksum=verify)
                except ProtocolError:
                    pass  # protobuf's path below raises it, naming the command
                else:
                    return _new_tuple(MessageFrame, (delivery, parsed))
        if mode != _BROKER:
            return parse_split_frame(command, section, verify_checksum=verify)
        scanned = scan_send(command, section, verify)
        if scanned is not None:
            return scanned
        # Not as the scan expects (or not a SEND): protobuf, and its errors.
        frame = parse_split_frame(command, section, verify_checksum=verify)
        return send_frame_of(frame) if frame.command.type == SEND_TYPE else frame

    def eof(self) -> None:
        """Declare the end of the stream; raises TruncatedFrame if a frame was cut short."""
        if self._broken is not None:
            raise self._broken
        if self.buffered:
            self._break(TruncatedFrame(self.buffered))

    def _completes_cut_frame(self, rest: int, size: int) -> int:
        """How many of the ``size`` bytes being fed complete the frame that the ``rest`` bytes
        left in ``_data`` begin, when it ends inside them; 0 otherwise. (A need of 0 or less:
        that frame is whole already, feeds came without the frames being taken in between.)
        Breaks the stream on a size out of bounds, as reading the frame would."""
        total = self._header_at(self._data, self._offset)
        if total is None:
            return 0
        need = 4 + total - rest
        return need if 0 < need <= size else 0

    def _check_header(self) -> int | None:
        """The size field of the next frame in ``_data`` (None: not all four bytes yet)."""
        return self._header_at(self._data, self._offset)

    def _header_at(self, data: bytes, pos: int) -> int | None:
        """The size field of the frame at ``data[pos:]`` (None: not all four bytes yet);
        breaks the stream on a size out of bounds."""
        if len(data) - pos < 4:
            return None
        total = u32_at(data, pos)
        if total > self._max_frame_size:
            self._break(FrameTooLarge(total, self._max_frame_size))
        if total < 4:
            self._break(BrokenStream(f"frame size {total} cannot hold a command size"))
        return total

    def _break(self, error: ProtocolError) -> None:
        self._broken = error
        self._data = b""
        self._offset = 0
        self._pieces = None
        self._have = 0
        self._ready.clear()
        raise error


# ------------------------------------------------------------------ encoding


def _serialize(message: Message) -> bytes:
    try:
        return message.SerializeToString()
    except EncodeError as exc:
        raise MalformedCommand(str(exc)) from exc


def _command_bytes(command: pb.BaseCommand) -> bytes:
    if not _has_body(command):
        raise MalformedCommand(f"command type {command.type} without its body")
    return _serialize(command)


def encode_command(command: pb.BaseCommand) -> bytes:
    """A simple (payload-less) frame for ``command``."""
    cmd = _command_bytes(command)
    return _U32.pack(4 + len(cmd)) + _U32.pack(len(cmd)) + cmd


def payload_section_head(metadata: bytes, payload: bytes, checksum: bool) -> bytes:
    """What goes before ``payload`` in its payload section, ``[0x0e01][crc][meta_size][meta]``
    for the serialized ``metadata`` (without the magic and crc if not ``checksum``; the crc
    covers the size, the metadata and the payload), so that a frame copies the payload once."""
    covered_head = len(metadata).to_bytes(4, "big") + metadata  # (native, unlike a pack)
    if not checksum:
        return covered_head
    crc: int = crc32c(payload, crc32c(covered_head))
    return _MAGIC_CRC + crc.to_bytes(4, "big") + covered_head


def encode_payload_section(
    metadata: pb.MessageMetadata, payload: bytes, *, checksum: bool = True
) -> bytes:
    """``[0x0e01][crc][meta_size][meta][payload]`` (without the magic and crc if not checksum)."""
    return payload_section_head(_serialize(metadata), payload, checksum) + payload


def _frame_with_section(
    command: pb.BaseCommand,
    section: bytes,
    broker_entry_metadata: pb.BrokerEntryMetadata | None,
) -> bytes:
    cmd = _command_bytes(command)
    bem = b""
    if broker_entry_metadata is not None:
        raw = _serialize(broker_entry_metadata)
        bem = _MAGIC_BEM + _U32.pack(len(raw)) + raw
    total = 4 + len(cmd) + len(bem) + len(section)
    return b"".join((_U32.pack(total), _U32.pack(len(cmd)), cmd, bem, section))


def encode_payload_command(
    command: pb.BaseCommand,
    metadata: pb.MessageMetadata,
    payload: bytes,
    *,
    checksum: bool = True,
    broker_entry_metadata: pb.BrokerEntryMetadata | None = None,
) -> bytes:
    """A SEND or MESSAGE frame built from metadata and payload."""
    section = encode_payload_section(metadata, payload, checksum=checksum)
    return _frame_with_section(command, section, broker_entry_metadata)


def encode_message(
    command: pb.BaseCommand,
    stored: bytes,
    *,
    broker_entry_metadata: pb.BrokerEntryMetadata | None = None,
) -> bytes:
    """A MESSAGE frame: a new command followed by an entry's stored bytes, unchanged."""
    return _frame_with_section(command, stored, broker_entry_metadata)


def strip_checksum(stored: bytes) -> bytes:
    """``stored`` without its magic + checksum, for peers older than protocol v11."""
    if stored[:2] == _MAGIC_CRC:
        return stored[6:]
    return stored
