"""Bookie registration: the ephemeral ``keys.bookie_available(id)`` key clients discover us by.

The value is a ``BookieRegistration`` (id, advertised ``host:port``, read-only flag, start time,
rack: the failure domain rack-aware placement spreads ensembles over).
The key is bound to the metadata session, so it vanishes when the process dies and its session
times out. :class:`Registration` keeps it true:

* at start it creates the key; a stale key left by this bookie id's previous process (whose
  session has not expired yet) is replaced — the cookie guarantees no other live process
  owns this id's data dir;
* when the bookie switches read-only on or off, the value is rewritten;
* when the store reports a new session (``RECONNECTED``) after an expiry, the key is created
  again.

Concurrency: :meth:`Registration.run` is one task (in the entry point's TaskGroup); listeners
called on the loop only set an event that task waits on. Failures are retried with the
:data:`~magnetar.backoff.REGISTRATION` backoff; every store call has a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from magnetar.backoff import REGISTRATION, retry
from magnetar.ids import BookieId
from magnetar.metadata import (
    KeyExists,
    MetadataError,
    MetadataStore,
    NotFound,
    SessionEvent,
    keys,
)
from magnetar.telemetry import get_logger
from magnetar.wire import ledger_pb2

log = get_logger(__name__)

_CALL_TIMEOUT_S = 10.0


class Registration:
    """Keeps this bookie's availability key in the metadata store in line with its state."""

    def __init__(
        self, store: MetadataStore, bookie_id: BookieId, address: str, rack: str = ""
    ) -> None:
        self._store = store
        self._bookie_id = bookie_id
        self._address = address
        self._rack = rack
        self._key = keys.bookie_available(bookie_id)
        self._read_only = False
        self._started_ms = int(time.time() * 1000)
        self._dirty = asyncio.Event()
        self._registered = asyncio.Event()
        self._version: int | None = None
        self._closed = False
        store.add_session_listener(self._on_session)

    @property
    def key(self) -> str:
        return self._key

    def set_read_only(self, read_only: bool) -> None:
        """Called on the loop when the bookie's mode changes."""
        if read_only != self._read_only:
            self._read_only = read_only
            self._dirty.set()

    def _on_session(self, event: SessionEvent) -> None:
        if event is SessionEvent.EXPIRED:
            self._version = None
            self._registered.clear()
        elif event is SessionEvent.RECONNECTED:
            self._version = None
            self._dirty.set()

    def _value(self) -> bytes:
        return ledger_pb2.BookieRegistration(
            bookie_id=self._bookie_id,
            address=self._address,
            read_only=self._read_only,
            started_ms=self._started_ms,
            rack=self._rack,
        ).SerializeToString()

    async def register(self) -> None:
        """Create (or replace a stale) availability key; rewrite it if we already own it."""
        async with asyncio.timeout(_CALL_TIMEOUT_S):
            if self._version is not None:
                try:
                    self._version = await self._store.put(self._key, self._value(), self._version)
                    log.info("bookie_registration_updated", read_only=self._read_only)
                    return
                except MetadataError:
                    self._version = None
            try:
                self._version = await self._store.create(self._key, self._value(), ephemeral=True)
            except KeyExists:
                log.warning("bookie_stale_registration_replaced", key=self._key)
                with contextlib.suppress(NotFound):
                    await self._store.delete(self._key)
                self._version = await self._store.create(self._key, self._value(), ephemeral=True)
        self._registered.set()
        log.info(
            "bookie_registered", key=self._key, address=self._address, read_only=self._read_only
        )

    async def wait_registered(self) -> None:
        await self._registered.wait()

    async def run(self) -> None:
        """Register, then re-register whenever the mode or the session changes. Runs forever."""
        self._dirty.set()
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            await retry(
                self.register,
                REGISTRATION,
                retry_on=(MetadataError, TimeoutError),
                on_retry=_log_register_failed,
            )

    async def unregister(self) -> None:
        """Delete our key (best effort, bounded); closing the store would remove it anyway."""
        if self._version is None:
            return
        try:
            async with asyncio.timeout(_CALL_TIMEOUT_S):
                await self._store.delete(self._key, self._version)
        except (MetadataError, TimeoutError) as exc:
            log.warning("bookie_unregister_failed", error=repr(exc))
        self._version = None


def _log_register_failed(exc: Exception, delay: float) -> None:
    log.warning("bookie_register_failed", error=repr(exc), retry_in_s=delay)
