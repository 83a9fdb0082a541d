"""One stored message as the admin REST API shows it: Pulsar's peek / examine / get-by-id answer.

Pulsar answers ``GET .../subscription/{sub}/position/{n}``, ``GET .../examinemessage`` and
``GET .../ledger/{l}/entry/{e}`` with the entry's payload as the body
(``application/octet-stream``, decompressed) and its metadata in headers:

* ``X-Pulsar-Message-ID`` ``ledger:entry``;
* the properties twice: one ``X-Pulsar-PROPERTY-<key>`` header per property (the old form,
  kept for keys and values an HTTP header can carry) and ``X-Pulsar-Property`` as one JSON
  object (the newer form, which carries any key or value);
* ``X-Pulsar-publish-time`` / ``X-Pulsar-event-time`` / ``X-Pulsar-deliver-at-time`` as ISO-8601
  UTC with milliseconds; ``X-Pulsar-producer-name``, ``X-Pulsar-sequence-id``,
  ``X-Pulsar-partition-key``, ``X-Pulsar-replicated-from``, ``X-Pulsar-null-value``;
* for a batch, ``X-Pulsar-num-batch-message`` and ``X-Pulsar-batch-size``; the body is then the
  whole (decompressed) batch payload, which clients split with the batch format
  (:func:`magnetar.protocol.batch.parse_batch`).

Pure functions over the stored bytes; safe from any task.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from magnetar.broker.entry import split_entry
from magnetar.broker.errors import BrokerError
from magnetar.managed_ledger import Position
from magnetar.protocol.batch import is_batch
from magnetar.protocol.compression import decompress
from magnetar.protocol.errors import DecompressionError

PROPERTY_PREFIX = "X-Pulsar-PROPERTY-"


class UnreadableMessage(BrokerError):
    """A stored entry whose metadata or payload cannot be read back (corrupt or unknown codec)."""

    def __init__(self, position: Position, reason: str) -> None:
        super().__init__(
            f"message {position.ledger_id}:{position.entry_id} is unreadable: {reason}"
        )
        self.position = position


@dataclass(frozen=True, slots=True)
class MessageView:
    """What the HTTP answer carries: headers and the decompressed payload."""

    headers: dict[str, str]
    body: bytes


def iso_millis(epoch_ms: int) -> str:
    """``2026-11-24T20:01:02.345Z`` for an epoch in milliseconds."""
    seconds, millis = divmod(epoch_ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _header_safe(text: str) -> bool:
    return text.isascii() and text.isprintable() and text == text.strip() and text != ""


def message_view(position: Position, stored: bytes) -> MessageView:
    """The admin's view of the entry ``stored`` at ``position``; UnreadableMessage if its
    metadata does not parse or its payload does not decompress."""
    metadata, payload = split_entry(stored)
    if not metadata.IsInitialized():
        raise UnreadableMessage(position, "its metadata does not parse")
    try:
        body = decompress(metadata.compression, payload, metadata.uncompressed_size)
    except DecompressionError as exc:
        raise UnreadableMessage(position, str(exc)) from exc
    headers = {"X-Pulsar-Message-ID": f"{position.ledger_id}:{position.entry_id}"}
    properties = {kv.key: kv.value for kv in metadata.properties}
    for key, value in properties.items():
        if _header_safe(key) and _header_safe(value):
            headers[PROPERTY_PREFIX + key] = value
    if properties:
        headers["X-Pulsar-Property"] = json.dumps(properties, ensure_ascii=True)
    headers["X-Pulsar-publish-time"] = iso_millis(metadata.publish_time)
    if metadata.event_time:
        headers["X-Pulsar-event-time"] = iso_millis(metadata.event_time)
    if metadata.HasField("deliver_at_time"):
        headers["X-Pulsar-deliver-at-time"] = iso_millis(metadata.deliver_at_time)
    headers["X-Pulsar-producer-name"] = json.dumps(metadata.producer_name)[1:-1]
    headers["X-Pulsar-sequence-id"] = str(metadata.sequence_id)
    if metadata.HasField("partition_key"):
        headers["X-Pulsar-partition-key"] = json.dumps(metadata.partition_key)[1:-1]
    if metadata.HasField("replicated_from"):
        headers["X-Pulsar-replicated-from"] = metadata.replicated_from
    if metadata.null_value:
        headers["X-Pulsar-null-value"] = "true"
    if is_batch(metadata):
        headers["X-Pulsar-num-batch-message"] = str(metadata.num_messages_in_batch)
        headers["X-Pulsar-batch-size"] = str(len(body))
    return MessageView(headers, body)
