"""One watch over every namespace's policies, for the broker's loaded topics.

A policy stored through any broker's admin API reaches the topics this broker has loaded:
:class:`NamespacePolicyWatch` calls the service's pass over its topics (deduplication,
delayed delivery, persistence, replication clusters) after each change of a namespace key.
Runs on the broker's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from magnetar.backoff import METADATA_WATCH
from magnetar.cancellation import cancel_and_wait
from magnetar.errors import MagnetarError
from magnetar.metadata import keys
from magnetar.metadata.store import MetadataStore
from magnetar.telemetry import get_logger

log = get_logger(__name__)


class NamespacePolicyWatch:
    """Re-applies namespace policies to live topics when any namespace's policies change.

    Watches the namespaces' keys in the metadata store and calls ``sync`` (the service's pass
    over its loaded topics) after each change; when the watch breaks it is reopened after a
    backoff and ``sync`` runs once more, so no change is missed for good.
    """

    def __init__(self, store: MetadataStore, sync: Callable[[], Awaitable[None]]) -> None:
        self._store = store
        self._sync = sync
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="namespace-policy-watch")

    async def close(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _run(self) -> None:
        # Not retry(): the watch is reopened forever; each delivered change resets the backoff.
        backoff = METADATA_WATCH.backoff()
        while True:
            try:
                async with self._store.watch(keys.NAMESPACES_PREFIX) as watch:
                    await self._sync()
                    async for _event in watch:
                        await self._sync()
                        backoff.reset()
            except MagnetarError as exc:
                log.warning("namespace_policy_watch_failed", error=repr(exc))
            await asyncio.sleep(backoff.next())
