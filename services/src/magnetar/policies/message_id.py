"""A message id as the admin REST API carries it: Pulsar's ``MessageIdImpl`` / ``ResetCursorData``.

One shape for both ends: the admin client sends it (``reset-cursor``, ``create-subscription``),
the broker's admin routes read it. JSON fields as Pulsar's: ``ledgerId``, ``entryId``,
``partitionIndex`` (-1: not a partition), ``batchIndex`` (-1: the whole entry) and
``isExcluded``. :data:`EARLIEST` is (-1, -1) and :data:`LATEST` is (Long.MAX, Long.MAX), as in
Pulsar. Values only; safe from any task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from magnetar.policies.errors import InvalidPolicies

MAX_ID = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class MessageIdData:
    """A position as the admin API takes it."""

    ledger_id: int
    entry_id: int
    partition_index: int = -1
    batch_index: int = -1
    is_excluded: bool = False

    @classmethod
    def parse(cls, text: str) -> MessageIdData:
        """``ledger:entry`` or ``ledger:entry:partition``, or ``earliest`` / ``latest``
        (the command line's form); ValueError names the accepted forms."""
        word = text.strip().lower()
        if word == "earliest":
            return EARLIEST
        if word == "latest":
            return LATEST
        try:
            numbers = [int(p) for p in word.split(":")]
        except ValueError:
            numbers = []
        if len(numbers) not in (2, 3):
            raise ValueError(
                f"a message id is ledgerId:entryId[:partition], earliest or latest; got {text!r}"
            )
        return cls(numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else -1)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "ledgerId": self.ledger_id,
            "entryId": self.entry_id,
            "partitionIndex": self.partition_index,
        }
        if self.batch_index != -1:
            doc["batchIndex"] = self.batch_index
        if self.is_excluded:
            doc["isExcluded"] = True
        return doc

    @classmethod
    def from_json(cls, value: object) -> MessageIdData:
        """Read a JSON body; :class:`InvalidPolicies` names the field that is wrong."""
        if not isinstance(value, dict):
            raise InvalidPolicies("a message id is a JSON object with ledgerId and entryId")
        fields: dict[str, int] = {}
        for key, default in (
            ("ledgerId", None),
            ("entryId", None),
            ("partitionIndex", -1),
            ("batchIndex", -1),
        ):
            found = value.get(key, default)
            if found is None or isinstance(found, bool) or not isinstance(found, int):
                raise InvalidPolicies(f"message id field {key} must be an integer")
            fields[key] = found
        excluded = value.get("isExcluded", False)
        if not isinstance(excluded, bool):
            raise InvalidPolicies("message id field isExcluded must be true or false")
        return cls(
            fields["ledgerId"],
            fields["entryId"],
            fields["partitionIndex"],
            fields["batchIndex"],
            excluded,
        )


EARLIEST = MessageIdData(-1, -1)
LATEST = MessageIdData(MAX_ID, MAX_ID)
