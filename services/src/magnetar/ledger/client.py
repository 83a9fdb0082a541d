"""The BookKeeper client: create, open (with recovery), delete and list ledgers.

``BookKeeper.start(store, config)`` starts the :class:`BookieRegistry` (a watch on available
bookies) and a :class:`BookiePool` of per-bookie connections shared by every handle this client
opens (bookies in this process, given as ``local_bookies``, are called directly: see
:mod:`magnetar.ledger.local_bookie`). Creating a ledger waits (up to ``bookie_wait_s``) for
enough writable bookies, places an ensemble, allocates an id and creates the metadata. Opening
a ledger left OPEN with ``recovery=True`` fences and closes it first
(:mod:`magnetar.ledger.recovery`). The client keeps an ephemeral writer key and names it in the
ledgers it creates, so that autorecovery can tell a live writer from a dead one
(:mod:`magnetar.ledger.writer_liveness`).

Concurrency: one client per process is the norm; every method is a coroutine on its loop.
``close()`` stops the registry watch and closes every bookie connection (pending adds of open
write handles fail with :class:`BookieUnavailable`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping

from magnetar.ids import BookieId, EntryId, LedgerId
from magnetar.ledger.bookie_registry import BookiePool, BookieRegistry
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.errors import BookieUnavailable, ClientClosed, NotEnoughBookies
from magnetar.ledger.ledger_manager import LedgerManager
from magnetar.ledger.local_bookie import InProcessBookie
from magnetar.ledger.metadata import LedgerMetadataView, validate_quorums
from magnetar.ledger.placement import choose_ensemble
from magnetar.ledger.read_handle import ReadHandle
from magnetar.ledger.recovery import recover_ledger
from magnetar.ledger.write_handle import WriteHandle
from magnetar.ledger.writer_liveness import WRITER_KEY, WriterLiveness
from magnetar.metadata import MetadataStore
from magnetar.telemetry import get_logger
from magnetar.wire import bookie_pb2

log = get_logger(__name__)


class BookKeeper:
    def __init__(
        self,
        store: MetadataStore,
        config: LedgerClientConfig,
        registry: BookieRegistry,
        local_bookies: Mapping[BookieId, InProcessBookie] | None = None,
        liveness: WriterLiveness | None = None,
    ) -> None:
        self._store = store
        self._liveness = liveness
        self._config = config
        self._registry = registry
        self._pool = BookiePool(registry, config, local_bookies)
        self._manager = LedgerManager(store, config.metadata_timeout_s)
        self._closed = False
        self._writers: set[WriteHandle] = set()

    @classmethod
    async def start(
        cls,
        store: MetadataStore,
        config: LedgerClientConfig | None = None,
        local_bookies: Mapping[BookieId, InProcessBookie] | None = None,
    ) -> BookKeeper:
        """Watch the registered bookies; ``local_bookies`` are reached in-process, not by gRPC."""
        config = config or LedgerClientConfig()
        registry = await BookieRegistry.start(store, config.metadata_timeout_s)
        liveness = WriterLiveness(store)
        try:
            await liveness.register()
        except BaseException:
            await registry.close()
            raise
        return cls(store, config, registry, local_bookies, liveness)

    @property
    def manager(self) -> LedgerManager:
        return self._manager

    @property
    def pool(self) -> BookiePool:
        return self._pool

    @property
    def config(self) -> LedgerClientConfig:
        return self._config

    @property
    def registry(self) -> BookieRegistry:
        return self._registry

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed("the BookKeeper client is closed")

    async def create_ledger(
        self,
        ensemble_size: int = 3,
        write_quorum: int = 3,
        ack_quorum: int = 2,
        custom: Mapping[str, bytes] | None = None,
    ) -> WriteHandle:
        self._check_open()
        validate_quorums(ensemble_size, write_quorum, ack_quorum)
        await self._registry.wait_for_writable(ensemble_size, self._config.bookie_wait_s)
        try:
            ensemble = choose_ensemble(
                self._registry.writable(),
                ensemble_size,
                policy=self._config.placement_policy,
                load=self._load(),
                exclude=self._pool.quarantined(),
                racks=self._registry.racks(),
            )
        except NotEnoughBookies:  # rather a recently failed (now registered) bookie than none
            ensemble = choose_ensemble(
                self._registry.writable(),
                ensemble_size,
                policy=self._config.placement_policy,
                racks=self._registry.racks(),
            )
        ledger_id = await self._manager.allocate_ledger_id()
        view = LedgerMetadataView(
            ensemble_size=ensemble_size,
            write_quorum=write_quorum,
            ack_quorum=ack_quorum,
            ensembles=((EntryId(0), ensemble),),
            custom=self._custom(custom),
            master_key=os.urandom(16),
            ctime_ms=int(time.time() * 1000),
        )
        meta = await self._manager.create(ledger_id, view)
        log.info("ledger_created", ledger_id=ledger_id, ensemble=list(ensemble))
        handle = WriteHandle(
            meta,
            pool=self._pool,
            registry=self._registry,
            manager=self._manager,
            config=self._config,
            load=self._load,
            on_closed=self._writers.discard,
        )
        self._writers.add(handle)
        return handle

    def _custom(self, custom: Mapping[str, bytes] | None) -> dict[str, bytes]:
        named = dict(custom or {})
        if self._liveness is not None:
            named[WRITER_KEY] = self._liveness.writer_id.encode()
        return named

    def _load(self) -> dict[BookieId, int]:
        """Open write handles per bookie: what ``LEAST_LOADED`` placement balances."""
        load: dict[BookieId, int] = {}
        for handle in self._writers:
            for bookie in handle.metadata.current_ensemble:
                load[bookie] = load.get(bookie, 0) + 1
        return load

    async def open_ledger(self, ledger_id: LedgerId, recovery: bool = True) -> ReadHandle:
        """A read handle; with ``recovery`` an unclosed ledger is fenced and closed first."""
        self._check_open()
        meta = await self._manager.read(ledger_id)
        if recovery and not meta.metadata.is_closed:
            meta = await recover_ledger(
                ledger_id,
                manager=self._manager,
                pool=self._pool,
                registry=self._registry,
                config=self._config,
            )
        handle = ReadHandle(meta, pool=self._pool, config=self._config)
        if not meta.metadata.is_closed:
            try:
                await handle.read_last_add_confirmed()
            except BookieUnavailable as exc:
                log.warning("open_ledger_lac_unknown", ledger_id=ledger_id, error=str(exc))
        return handle

    async def delete_ledger(self, ledger_id: LedgerId) -> None:
        """Remove the metadata (:class:`NoSuchLedger` if absent), then ask bookies to delete."""
        self._check_open()
        meta = await self._manager.read(ledger_id)
        await self._manager.delete(ledger_id)

        async def delete_on(bookie: str) -> None:
            try:
                status = await self._pool.client(bookie).delete_ledger(ledger_id)  # type: ignore[arg-type]
            except BookieUnavailable as exc:
                # The bookie's garbage collection removes it later (no metadata any more).
                log.warning(
                    "bookie_delete_failed", ledger_id=ledger_id, bookie_id=bookie, error=str(exc)
                )
                return
            if status not in (bookie_pb2.OK, bookie_pb2.NO_SUCH_LEDGER):
                log.warning(
                    "bookie_delete_refused", ledger_id=ledger_id, bookie_id=bookie, status=status
                )

        await asyncio.gather(*(delete_on(b) for b in sorted(meta.metadata.all_bookies())))
        log.info("ledger_deleted", ledger_id=ledger_id)

    async def list_ledgers(self) -> list[LedgerId]:
        self._check_open()
        return await self._manager.list_ledgers()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for handle in list(self._writers):
            await handle.abandon()  # their pending adds fail with LedgerClosed
        await self._pool.close()
        await self._registry.close()
        if self._liveness is not None:
            await self._liveness.close()
