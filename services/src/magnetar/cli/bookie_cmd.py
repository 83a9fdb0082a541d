"""``magnetar bookie``: run one bookie process (filled in by the bookie work)."""

from __future__ import annotations
