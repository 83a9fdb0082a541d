"""The managed ledger factory (Pulsar's ManagedLedgerFactoryImpl): opens, deletes and closes.

One factory per broker process. It keeps at most one open :class:`ManagedLedger` per name
(concurrent opens of one name share the same opening task), and one :class:`CacheBudget`
bounding the entry caches of all of them.

Concurrency: every method runs on the loop. Opening tasks are owned by the factory (kept in
``_opening``) and awaited by every caller that asked for that name.
"""

from __future__ import annotations

import asyncio

from magnetar.managed_ledger.config import ManagedLedgerConfig, ManagedLedgerFactoryConfig
from magnetar.managed_ledger.entry_cache import CacheBudget
from magnetar.managed_ledger.errors import ManagedLedgerClosed, ManagedLedgerNotFound
from magnetar.managed_ledger.ledger_access import LedgerAccess
from magnetar.managed_ledger.managed_ledger import ManagedLedger, State
from magnetar.metadata import keys
from magnetar.metadata.store import MetadataStore
from magnetar.telemetry import get_logger

log = get_logger(__name__)


class ManagedLedgerFactory:
    def __init__(
        self,
        store: MetadataStore,
        bk: LedgerAccess,
        config: ManagedLedgerFactoryConfig | None = None,
    ) -> None:
        self._store = store
        self._bk = bk
        self.config = config or ManagedLedgerFactoryConfig()
        self._budget = CacheBudget(self.config.cache_max_bytes)
        self._ledgers: dict[str, ManagedLedger] = {}
        self._opening: dict[str, asyncio.Task[ManagedLedger]] = {}
        self._closed = False

    @property
    def cache_used_bytes(self) -> int:
        return self._budget.used_bytes

    @property
    def managed_ledgers(self) -> dict[str, ManagedLedger]:
        return dict(self._ledgers)

    async def open(self, name: str, config: ManagedLedgerConfig | None = None) -> ManagedLedger:
        """The open managed ledger ``name``, opening (and creating) it if needed."""
        if self._closed:
            raise ManagedLedgerClosed(name)
        ml = self._ledgers.get(name)
        if ml is not None and ml.state is State.OPEN:
            return ml
        task = self._opening.get(name)
        if task is None:
            task = asyncio.create_task(self._open(name, config or ManagedLedgerConfig()))
            self._opening[name] = task
            task.add_done_callback(lambda _t: self._opening.pop(name, None))
        return await asyncio.shield(task)

    async def _open(self, name: str, config: ManagedLedgerConfig) -> ManagedLedger:
        old = self._ledgers.pop(name, None)
        if old is not None:
            await old.close()
        cache = self._budget.cache()
        try:
            ml = await ManagedLedger.open(
                name, config, self._store, self._bk, cache, on_close=self._forget
            )
        except BaseException:
            self._budget.release(cache)
            raise
        self._ledgers[name] = ml
        return ml

    def _forget(self, ml: ManagedLedger) -> None:
        if self._ledgers.get(ml.name) is ml:
            del self._ledgers[ml.name]
        self._budget.release(ml._cache)

    async def exists(self, name: str) -> bool:
        return await self._store.get(keys.managed_ledger_info(name)) is not None

    async def delete(self, name: str, config: ManagedLedgerConfig | None = None) -> None:
        """Delete ``name``: its cursors, its info and all its ledgers.

        A ledger that is not open is opened first, with ``config`` (its ensemble settings must
        be satisfiable by the bookies there are, so pass the config it was written with).
        """
        ml = self._ledgers.get(name)
        if ml is None or ml.state is not State.OPEN:
            if not await self.exists(name):
                raise ManagedLedgerNotFound(name)
            ml = await self.open(name, config)
        await ml.delete()

    async def close(self) -> None:
        self._closed = True
        for task in list(self._opening.values()):
            await asyncio.wait([task])
        for ml in list(self._ledgers.values()):
            await ml.close()
        log.info("managed_ledger_factory_closed")
