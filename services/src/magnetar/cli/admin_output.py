"""How ``magnetar admin`` prints answers: aligned plain-text tables, or JSON.

* ``render_table(headers, rows)``: one header line and one line per row, columns left-aligned
  and separated by two spaces, no trailing blanks; ``None`` shows as ``-``. No rows prints only
  the header, so an empty answer still says what it would have listed.
* ``render_fields(pairs)``: a two-column ``name  value`` table without a header, for one object.
* ``render_json(value)``: pretty JSON (two-space indent, keys in the server's order), for
  ``--json`` and for nested answers such as topic stats. ``to_jsonable`` turns the admin
  client's values (dataclasses with ``to_json``, frozensets, mappings) into plain JSON first.

Pure functions; no terminal or I/O here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from magnetar.client.admin_messages import AdminMessage

MISSING = "-"


def _cell(value: object) -> str:
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(sorted(str(v) for v in value)) or MISSING
    return str(value)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(headers), *([_cell(v) for v in row] for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    return "\n".join(line.rstrip() for line in lines)


def render_fields(pairs: Sequence[tuple[str, object]]) -> str:
    if not pairs:
        return ""
    width = max(len(name) for name, _ in pairs)
    return "\n".join(f"{name.ljust(width)}  {_cell(value)}".rstrip() for name, value in pairs)


def to_jsonable(value: object) -> Any:
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_jsonable(to_json())
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return sorted(to_jsonable(v) for v in value)
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


def render_json(value: object) -> str:
    return json.dumps(to_jsonable(value), indent=2)


def render_payload(payload: bytes, width: int = 16) -> str:
    """A payload as text when it is printable UTF-8, else as a hex dump (offset, hex, ASCII)."""
    try:
        text = payload.decode()
    except UnicodeDecodeError:
        text = None
    if text is not None and all(c.isprintable() or c in "\n\t" for c in text):
        return text
    lines = []
    for offset in range(0, len(payload), width):
        chunk = payload[offset : offset + width]
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {chunk.hex(' '):<{width * 3 - 1}}  |{ascii_}|")
    return "\n".join(lines)


def render_messages(messages: Sequence[AdminMessage]) -> str:
    """Messages read through the admin API: their fields, then the payload, one block each."""
    if not messages:
        return "No message."
    blocks = []
    for m in messages:
        fields = render_fields(
            [
                ("Message ID", m.message_id),
                ("Publish time", m.publish_time),
                ("Event time", m.event_time),
                ("Producer", m.producer_name),
                ("Sequence id", m.sequence_id),
                ("Key", m.key),
                ("Properties", json.dumps(m.properties) if m.properties else None),
            ]
        )
        blocks.append(f"{fields}\n{render_payload(m.payload)}")
    return "\n\n".join(blocks)
