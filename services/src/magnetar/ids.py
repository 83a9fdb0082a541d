"""Identifier types shared by the storage layers.

A ledger id is allocated once in the metadata store and never reused; entry ids start at 0 in
each ledger and are dense. ``-1`` stands for "no entry" (an empty ledger's last entry id, or a
last-add-confirmed before any confirmation), as in BookKeeper.
"""

from __future__ import annotations

from typing import NewType

LedgerId = NewType("LedgerId", int)
EntryId = NewType("EntryId", int)
BookieId = NewType("BookieId", str)

NO_ENTRY = EntryId(-1)
