"""What ``magnetar produce`` reads and what ``magnetar consume`` prints (sans-I/O).

Input: :func:`parse_properties` turns ``-p k=v`` options into a mapping; :func:`split_lines`
turns a file's or stdin's bytes into one message per line (``\\n`` or ``\\r\\n``; the final
newline does not start an empty message; blank lines in between are empty messages).

Output: :func:`format_message` renders a received :class:`~magnetar.client.message.Message`
as ``text`` (pulsar-client's ``----- got message -----`` block), ``hex`` (the same header and a
hexdump) or ``json`` (one object per line). :func:`format_message_id` writes ids as Pulsar's
Java client does: ``ledger:entry:partition`` plus ``:batch_index`` for batched messages.

Pure functions; safe from any task or thread.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import Literal

from magnetar.client.message import Message
from magnetar.protocol.message_id import MessageId
from magnetar.tools.errors import BadInput

OutputFormat = Literal["text", "hex", "json"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("text", "hex", "json")
HEADER = "----- got message -----"


def parse_properties(pairs: Iterable[str]) -> dict[str, str]:
    """``["k=v", "a=b=c"]`` -> ``{"k": "v", "a": "b=c"}``; a later key wins."""
    properties: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"property {pair!r} is not key=value (e.g. -p region=eu)")
        properties[key] = value
    return properties


def split_lines(data: bytes) -> list[bytes]:
    """One message per line; ``\\r\\n`` counts as a newline; no message after the last one."""
    if not data:
        return []
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def format_message_id(message_id: MessageId) -> str:
    """Pulsar's MessageIdImpl/BatchMessageIdImpl text: ``ledger:entry:partition[:batch]``."""
    text = f"{message_id.ledger_id}:{message_id.entry_id}:{message_id.partition}"
    if message_id.batch_index >= 0:
        text += f":{message_id.batch_index}"
    return text


def _properties_text(properties: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(properties.items()))


def header_line(message: Message) -> str:
    key = "null" if message.key is None else message.key
    return f"key:[{key}], properties:[{_properties_text(message.properties)}], content:"


def hexdump(data: bytes, width: int = 16) -> str:
    """Offset, hex bytes and printable ASCII, ``width`` bytes per row."""
    rows = []
    for offset in range(0, len(data), width):
        chunk = data[offset : offset + width]
        hex_part = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        rows.append(f"{offset:08x}  {hex_part:<{width * 3 - 1}}  |{text}|")
    return "\n".join(rows)


def message_document(message: Message, *, force_base64: bool = False) -> dict[str, object]:
    """The JSON object ``consume --output json`` prints for one message."""
    data: str
    encoding = "base64"
    if force_base64:
        data = base64.b64encode(message.data).decode("ascii")
    else:
        try:
            data, encoding = message.data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            data = base64.b64encode(message.data).decode("ascii")
    return {
        "topic": message.topic,
        "message_id": format_message_id(message.message_id),
        "key": message.key,
        "properties": dict(message.properties),
        "publish_time": message.publish_time_ms,
        "event_time": message.event_time_ms,
        "redelivery_count": message.redelivery_count,
        "producer_name": message.producer_name,
        "sequence_id": message.sequence_id,
        "encoding": encoding,
        "data": data,
    }


def format_message(
    message: Message, output: OutputFormat = "text", *, force_base64: bool = False
) -> str:
    """The text ``consume`` prints for one message (no trailing newline)."""
    if output == "json":
        return json.dumps(
            message_document(message, force_base64=force_base64), sort_keys=True, ensure_ascii=False
        )
    if output == "hex":
        return "\n".join([HEADER, header_line(message), hexdump(message.data)])
    if output == "text":
        content = message.data.decode("utf-8", errors="replace")
        return f"{HEADER}\n{header_line(message)}{content}"
    raise BadInput(f"unknown output format {output!r}: use one of {', '.join(OUTPUT_FORMATS)}")
