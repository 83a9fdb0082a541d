"""The Pulsar binary protocol (port 6650), sans-I/O: frames, commands, batches, message ids.

Built on Magnetar's own wire-compatible proto (``proto/magnetar/wire/pulsar_api.proto``,
generated into :mod:`magnetar.wire.pulsar_api_pb2`). No I/O and no broker logic here: the broker
and Magnetar's asyncio client both drive these pure codecs from their connection tasks.

* :mod:`.frame` — incremental decoder and encoders, CRC32-C, size limit. Feed bytes, then
  drain ``frames()`` after every feed.
* :mod:`.commands` — constructors for broker commands; re-exports :mod:`.client_commands`.
* :mod:`.envelope` — wrapping a body into its BaseCommand.
* :mod:`.batch` — batch payload format.
* :mod:`.message_id` — MessageId, earliest/latest, ack-set bit helpers.
* :mod:`.version` — protocol version negotiation, feature flags.
* :mod:`.hashing` — Murmur3_32, the key hash of Key_Shared and of Murmur3 partition routing.
* :mod:`.errors` — protocol errors and the one table to ``ServerError`` codes.
"""

from magnetar.protocol.errors import (
    ChecksumMismatch,
    FrameTooLarge,
    MalformedBatch,
    MalformedCommand,
    MalformedFrame,
    MalformedMetadata,
    ProtocolError,
    TruncatedFrame,
    UnknownCommand,
    register_server_error,
    server_error_for,
)
from magnetar.protocol.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE,
    Frame,
    FrameDecoder,
    PayloadSection,
    encode_command,
    encode_message,
    encode_payload_command,
)
from magnetar.protocol.message_id import EARLIEST, LATEST, MessageId

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "EARLIEST",
    "LATEST",
    "ChecksumMismatch",
    "Frame",
    "FrameDecoder",
    "FrameTooLarge",
    "MalformedBatch",
    "MalformedCommand",
    "MalformedFrame",
    "MalformedMetadata",
    "MessageId",
    "PayloadSection",
    "ProtocolError",
    "TruncatedFrame",
    "UnknownCommand",
    "encode_command",
    "encode_message",
    "encode_payload_command",
    "register_server_error",
    "server_error_for",
]
