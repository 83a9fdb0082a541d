"""The session of one store client: a lease kept alive by a background task.

:class:`SessionKeeper` is shared by every backend; the backend passes three coroutines:
``grant`` (new lease -> (id, ttl seconds)), ``renew`` (keep-alive -> still alive?) and
``revoke``. Every ``ttl/4`` the keeper renews. The session is *expired* when the server says so
or when no renewal succeeded for ``GIVE_UP_FRACTION`` of the TTL, counted from when the last
successful renewal was *sent*: the client gives up before the server can expire the lease, so
an owner stops acting before anyone else can take over. On expiry it tells the listeners
``SessionEvent.EXPIRED``, revokes the old lease and grants a new one (both retried with
:data:`~magnetar.backoff.METADATA_SESSION` backoff while the server is unavailable: a server
that restarts restores the old lease with a fresh TTL, so the old lease must be revoked once the
server is back, not merely tried while it is away) and tells them ``SessionEvent.RECONNECTED``.

Fault injection (tests only): :meth:`SessionKeeper.suspend` stops renewals as a hung or
partitioned process would; the session then expires on schedule and no new one is made until
:meth:`SessionKeeper.resume`.

Concurrency: one keeper task per store, created by :meth:`start`, cancelled by :meth:`close`.
Listeners are plain callables run on the loop from that task; an exception in one is logged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable

from magnetar.backoff import METADATA_SESSION, retry
from magnetar.cancellation import cancel_and_wait
from magnetar.metadata.errors import MetadataError, SessionExpired, StoreUnavailable
from magnetar.metadata.store import SessionEvent
from magnetar.telemetry import get_logger

log = get_logger(__name__)

Grant = Callable[[], Awaitable[tuple[int, float]]]
Renew = Callable[[int], Awaitable[bool]]
Revoke = Callable[[int], Awaitable[None]]
Tick = Callable[[], Awaitable[None]]

# The client gives up its session after this fraction of the TTL without a successful renewal,
# so that it stops acting as an owner strictly before the server lets anybody else in.
GIVE_UP_FRACTION = 0.85


class SessionKeeper:
    """Owns a store's current lease id and the task that keeps it alive."""

    def __init__(
        self,
        *,
        backend: str,
        grant: Grant,
        renew: Renew,
        revoke: Revoke,
        tick: Tick | None = None,
        max_interval_s: float = 2.0,
    ) -> None:
        self._backend = backend
        self._grant = grant
        self._renew = renew
        self._revoke = revoke
        self._tick = tick
        self._max_interval = max_interval_s
        self._lease: int | None = None
        self._stale: int | None = None  # an expired lease to revoke before the next grant
        self._ttl = 0.0
        self._last_ok = 0.0
        self._listeners: list[Callable[[SessionEvent], None]] = []
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._task: asyncio.Task[None] | None = None

    @property
    def lease_id(self) -> int | None:
        """The live lease, or None between an expiry and the next session."""
        return self._lease

    def require_lease(self) -> int:
        if self._lease is None:
            raise SessionExpired(f"{self._backend} metadata session expired; a new one is pending")
        return self._lease

    async def start(self) -> None:
        asked = time.monotonic()  # the server counts the TTL from no earlier than this
        self._lease, self._ttl = await self._grant()
        self._last_ok = asked
        self._task = asyncio.create_task(self._run(), name=f"metadata-session-{self._backend}")
        log.debug("metadata_session_started", backend=self._backend, lease=self._lease)

    def add_listener(self, listener: Callable[[SessionEvent], None]) -> None:
        self._listeners.append(listener)

    def suspend(self) -> None:
        """For tests/fault injection: stop renewing, as a hung process would."""
        self._resumed.clear()

    def resume(self) -> None:
        """For tests/fault injection: renew again (a new session is made if the old expired)."""
        self._resumed.set()

    async def close(self) -> None:
        """Stop the keeper and revoke the lease (its ephemeral keys vanish)."""
        await cancel_and_wait(self._task)
        self._task = None
        lease, self._lease = self._lease, None
        if lease is not None:
            try:
                await self._revoke(lease)
            except MetadataError as exc:
                log.warning("metadata_session_revoke_failed", backend=self._backend, error=str(exc))

    def _interval(self) -> float:
        return max(0.01, min(self._ttl / 4, self._max_interval))

    def _give_up_at(self) -> float:
        return self._last_ok + self._ttl * GIVE_UP_FRACTION

    async def _run(self) -> None:
        while True:
            delay = self._interval()
            if self._lease is not None:  # wake in time to give up before the server expires us
                delay = min(delay, max(0.0, self._give_up_at() - time.monotonic()))
            await asyncio.sleep(delay)
            if self._tick is not None:
                try:
                    await self._tick()
                except MetadataError as exc:
                    log.warning(
                        "metadata_session_tick_failed", backend=self._backend, error=str(exc)
                    )
            lease = self._lease
            if lease is None:
                if self._resumed.is_set():
                    await self._reconnect()
                continue
            if self._resumed.is_set() and time.monotonic() < self._give_up_at():
                sent = time.monotonic()
                try:
                    alive = await self._renew(lease)
                except SessionExpired:
                    alive = False
                except MetadataError as exc:  # unknown: the give-up deadline decides
                    log.warning("metadata_keepalive_failed", backend=self._backend, error=str(exc))
                    alive = True
                else:
                    if alive:
                        self._last_ok = sent
                if not alive:
                    await self._expire(lease, reason="server")
                    continue
            if time.monotonic() >= self._give_up_at():
                await self._expire(lease, reason="no_keepalive")

    async def _expire(self, lease: int, *, reason: str) -> None:
        self._lease = None
        log.warning("metadata_session_expired", backend=self._backend, lease=lease, reason=reason)
        self._stale = lease
        self._notify(SessionEvent.EXPIRED)

    async def _reconnect(self) -> None:
        async def grant() -> tuple[float, int, float]:
            if self._stale is not None:
                # Revoked under the same retry as the grant: an etcd that was down and comes
                # back restores the expired lease with a fresh TTL, and it would keep our old
                # ephemeral keys (bundle owners, registrations) alive for one more session.
                try:
                    await self._revoke(self._stale)
                except StoreUnavailable:
                    raise
                except MetadataError:
                    pass  # gone already
                self._stale = None
            asked = time.monotonic()
            return (asked, *await self._grant())

        def failed(exc: Exception, _delay: float) -> None:
            log.warning("metadata_session_grant_failed", backend=self._backend, error=str(exc))

        # Between grants wait at most half the old TTL (0.1 s at least), not the preset's cap.
        policy = dataclasses.replace(METADATA_SESSION, cap=max(0.1, self._ttl / 2))
        asked, new_lease, ttl = await retry(
            grant, policy, retry_on=StoreUnavailable, on_retry=failed
        )
        self._lease, self._ttl, self._last_ok = new_lease, ttl, asked
        log.info("metadata_session_reconnected", backend=self._backend, lease=new_lease)
        self._notify(SessionEvent.RECONNECTED)

    def _notify(self, event: SessionEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as exc:
                log.error(
                    "metadata_session_listener_failed", session_event=event.value, error=repr(exc)
                )
