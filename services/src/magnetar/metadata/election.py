"""Leader election on the MetadataStore: one ephemeral key per election, ``keys.lock(name)``
(or a key of its own, such as Pulsar's ``keys.LOAD_BALANCE_LEADER``).

Each candidate runs :meth:`LeaderElection.start`; a background task campaigns by creating the
key ephemeral with the candidate's value. The creator is the leader; the others watch the key
and campaign again when it is deleted (the leader resigned, closed, or its session expired).
Leadership ends with the session: on :class:`SessionEvent.EXPIRED` ``is_leader`` turns False
at once (before the server can let anyone else in, see :mod:`magnetar.metadata.session`), and
after :class:`SessionEvent.RECONNECTED` the candidate campaigns again. Observers read the
current leader's value with :func:`current_leader`.

Concurrency: one campaign task per election object, created by ``start`` and cancelled by
``close``; ``wait_until_leader`` may be awaited from any task on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib

from magnetar.backoff import METADATA_SESSION
from magnetar.cancellation import cancel_and_wait
from magnetar.metadata import keys
from magnetar.metadata.errors import (
    BadVersion,
    KeyExists,
    MetadataError,
    NotFound,
    SessionExpired,
    StoreUnavailable,
)
from magnetar.metadata.lock import wait_until_deleted
from magnetar.metadata.store import EventType, MetadataStore, SessionEvent, Watch
from magnetar.telemetry import get_logger

log = get_logger(__name__)


async def current_leader(store: MetadataStore, name: str) -> bytes | None:
    """The value of the current leader of election ``name``, or None if there is none."""
    current = await store.get(keys.lock(name))
    return None if current is None else current.value


class LeaderElection:
    """One candidate in the election ``name``."""

    def __init__(
        self, store: MetadataStore, name: str, value: bytes, *, key: str | None = None
    ) -> None:
        self._store = store
        self.name = name
        self.key = keys.lock(name) if key is None else key
        self.value = value
        self._version: int | None = None
        self._elected = asyncio.Event()
        self._lost = asyncio.Event()
        self._session_live = asyncio.Event()
        self._session_live.set()
        self._task: asyncio.Task[None] | None = None
        store.add_session_listener(self._on_session)

    @property
    def is_leader(self) -> bool:
        return self._version is not None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._campaign(), name=f"election-{self.name}")

    async def wait_until_leader(self) -> None:
        """Return once this candidate leads (bound it with ``asyncio.timeout``)."""
        await self._elected.wait()

    def _on_session(self, event: SessionEvent) -> None:
        if event is SessionEvent.EXPIRED:
            self._session_live.clear()
            self._step_down("session_expired")
        else:
            self._session_live.set()

    def _step_down(self, reason: str) -> None:
        if self._version is not None:
            log.warning("metadata_leadership_lost", election=self.name, reason=reason)
        self._version = None
        self._elected.clear()
        self._lost.set()

    async def _campaign(self) -> None:
        # Not retry(): campaigning never ends; a round that returns resets the backoff.
        backoff = METADATA_SESSION.backoff()
        while True:
            await self._session_live.wait()
            try:
                await self._run_once()
                backoff.reset()
            except SessionExpired:  # the listener pauses us until RECONNECTED
                await asyncio.sleep(backoff.next())
            except StoreUnavailable as exc:
                log.warning("metadata_election_unavailable", election=self.name, error=str(exc))
                await asyncio.sleep(backoff.next())

    async def _run_once(self) -> None:
        try:
            version = await self._store.create(self.key, self.value, ephemeral=True)
        except KeyExists:
            await wait_until_deleted(self._store, self.key)
            return
        self._lost.clear()
        self._version = version
        self._elected.set()
        log.info("metadata_leader_elected", election=self.name)
        await self._hold()

    async def _hold(self) -> None:
        """Stay leader until the key goes away or the session expires."""
        # Not retry(): the loop runs while we lead, re-watching after each broken watch.
        backoff = METADATA_SESSION.backoff()
        while self._version is not None:
            async with self._store.watch(self.key) as watch:
                watcher = asyncio.create_task(self._watch_for_delete(watch))
                lost = asyncio.create_task(self._lost.wait())
                try:
                    current = await self._store.get(self.key)
                    if current is None or current.version != self._version:
                        self._step_down("key_changed")
                    await asyncio.wait({watcher, lost}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    watcher.cancel()
                    lost.cancel()
                    await asyncio.wait({watcher, lost})
            if self._version is not None:  # the watch broke while we still lead: re-watch
                await asyncio.sleep(backoff.next())

    async def _watch_for_delete(self, watch: Watch) -> None:
        try:
            async for event in watch:
                if event.key == self.key and event.type is EventType.DELETE:
                    self._step_down("key_deleted")
                    return
        except MetadataError as exc:
            log.warning("metadata_election_watch_failed", election=self.name, error=str(exc))

    async def resign(self) -> None:
        """Give up leadership (if held) and stop campaigning."""
        await self._stop_task()
        version = self._version
        self._step_down("resigned")
        if version is not None:
            with contextlib.suppress(NotFound, BadVersion):
                await self._store.delete(self.key, expected_version=version)

    async def _stop_task(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def close(self) -> None:
        await self.resign()
