"""Messages as the admin API shows them (peek, examine, get-message-by-id), read back from the
HTTP answer: the payload as the body and the metadata in ``X-Pulsar-*`` headers (see
:mod:`magnetar.broker.message_view` for the broker's side, which follows Pulsar's).

A batched entry comes back whole, with ``X-Pulsar-num-batch-message``: it is split here into its
messages (ids ``ledger:entry:index``), each with its own properties, key and event time, as
``pulsar-admin topics peek-messages`` shows them. Pure functions over headers and bytes; safe
from any task or thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from magnetar.client.admin_errors import UnexpectedResponse
from magnetar.protocol.batch import parse_batch
from magnetar.protocol.errors import MalformedBatch

PROPERTY_PREFIX = "x-pulsar-property-"


@dataclass(frozen=True, slots=True)
class AdminMessage:
    """One message read through the admin API (never acknowledged, cursor unmoved)."""

    message_id: str
    payload: bytes
    properties: dict[str, str] = field(default_factory=dict)
    publish_time: str | None = None
    event_time: str | None = None
    producer_name: str | None = None
    sequence_id: int | None = None
    key: str | None = None

    def to_json(self) -> dict[str, object]:
        """For ``--json`` output: the payload as text when it is UTF-8, else as hex."""
        try:
            payload: dict[str, str] = {"payload": self.payload.decode()}
        except UnicodeDecodeError:
            payload = {"payloadHex": self.payload.hex()}
        return {
            "messageId": self.message_id,
            **payload,
            "properties": self.properties,
            "publishTime": self.publish_time,
            "eventTime": self.event_time,
            "producerName": self.producer_name,
            "sequenceId": self.sequence_id,
            "key": self.key,
        }


def _properties(headers: Mapping[str, str]) -> dict[str, str]:
    """The JSON ``X-Pulsar-Property`` header when present (it carries any text), else the
    per-key ``X-Pulsar-PROPERTY-<key>`` headers."""
    doc = headers.get("x-pulsar-property")
    if doc is not None:
        try:
            parsed = json.loads(doc)
        except ValueError as exc:
            raise UnexpectedResponse(f"X-Pulsar-Property is not JSON: {doc!r:.100}") from exc
        if isinstance(parsed, dict):
            return {str(k): str(v) for k, v in parsed.items()}
    return {
        k[len(PROPERTY_PREFIX) :]: v for k, v in headers.items() if k.startswith(PROPERTY_PREFIX)
    }


def messages_from_answer(headers: Mapping[str, str], body: bytes) -> list[AdminMessage]:
    """The messages of one entry; ``headers`` with lower-case names (as httpx gives them)."""
    message_id = headers.get("x-pulsar-message-id")
    if message_id is None:
        raise UnexpectedResponse("the answer names no message (no X-Pulsar-Message-ID header)")
    sequence = headers.get("x-pulsar-sequence-id")
    sequence_id = int(sequence) if sequence is not None and sequence.isdigit() else None
    publish_time = headers.get("x-pulsar-publish-time")
    producer = headers.get("x-pulsar-producer-name")
    count = headers.get("x-pulsar-num-batch-message")
    if count is None:
        message = AdminMessage(
            message_id,
            body,
            _properties(headers),
            publish_time,
            headers.get("x-pulsar-event-time"),
            producer,
            sequence_id,
            headers.get("x-pulsar-partition-key"),
        )
        return [message]
    try:
        items = parse_batch(body, int(count))
    except (MalformedBatch, ValueError) as exc:
        raise UnexpectedResponse(f"batch {message_id} does not split: {exc}") from exc
    return [
        AdminMessage(
            f"{message_id}:{index}",
            item.payload,
            {kv.key: kv.value for kv in item.metadata.properties},
            publish_time,
            _iso(item.metadata.event_time) if item.metadata.event_time else None,
            producer,
            _item_sequence(
                item.metadata.sequence_id if item.metadata.HasField("sequence_id") else None,
                sequence_id,
                index,
            ),
            item.metadata.partition_key if item.metadata.HasField("partition_key") else None,
        )
        for index, item in enumerate(items)
    ]


def _item_sequence(own: int | None, entry: int | None, index: int) -> int | None:
    """A batched message's sequence id: its own when the producer set one, else the entry's
    plus its index (how the clients number a batch)."""
    if own is not None:
        return own
    return None if entry is None else entry + index


def _iso(epoch_ms: int) -> str:
    moment = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
