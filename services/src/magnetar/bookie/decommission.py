"""The bookie's side of decommissioning: read-only while ``keys.bookie_decommission(id)`` exists.

``magnetar admin bookies decommission`` (or the admin REST API) writes the request key; from
then on placement chooses the bookie for no new ensemble, autorecovery copies what it holds
elsewhere, and this watch turns the bookie read-only, so that a writer whose current ensemble
still names it gets ``READ_ONLY`` on its next add and changes its ensemble away (reads go on,
so autorecovery can copy from it). Deleting the key (a cancelled decommission) makes the bookie
writable again, unless something else (disk, ``--read-only``) keeps it read-only.

Concurrency: :meth:`DecommissionWatch.run` is one task in the bookie process's TaskGroup; it
calls ``on_change`` on the loop. A broken watch is re-opened after a backoff, re-reading the key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from magnetar.backoff import METADATA_WATCH
from magnetar.ids import BookieId
from magnetar.metadata import EventType, MetadataError, MetadataStore, keys
from magnetar.telemetry import get_logger

log = get_logger(__name__)

_CALL_TIMEOUT_S = 10.0


class DecommissionWatch:
    """Calls ``on_change(True)`` while this bookie's decommission key exists, else False."""

    def __init__(
        self, store: MetadataStore, bookie_id: BookieId, on_change: Callable[[bool], None]
    ) -> None:
        self._store = store
        self._key = keys.bookie_decommission(bookie_id)
        self._on_change = on_change

    async def run(self) -> None:
        """Follow the key forever (cancel to stop)."""
        backoff = METADATA_WATCH.backoff()
        while True:
            try:
                await self._follow()
            except (MetadataError, TimeoutError) as exc:
                log.warning("bookie_decommission_watch_failed", error=repr(exc))
            await asyncio.sleep(backoff.next())

    async def _follow(self) -> None:
        async with self._store.watch(self._key) as watch:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                current = await self._store.get(self._key)
            self._on_change(current is not None)
            async for event in watch:
                if event.key == self._key:
                    self._on_change(event.type is EventType.PUT)
