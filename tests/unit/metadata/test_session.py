"""SessionKeeper against a scripted server: expiry while the server is away, and what it
revokes once the server is back."""

from __future__ import annotations

import asyncio

from magnetar.metadata.errors import StoreUnavailable
from magnetar.metadata.session import SessionKeeper
from magnetar.metadata.store import SessionEvent

TTL_S = 0.4


class ScriptedServer:
    """Grants leases 1, 2, ...; while ``down`` every call fails as an unreachable etcd's."""

    def __init__(self) -> None:
        self.down = False
        self.live: set[int] = set()
        self.revoked: list[int] = []
        self._next = 0

    def _reach(self) -> None:
        if self.down:
            raise StoreUnavailable("connection refused")

    async def grant(self) -> tuple[int, float]:
        self._reach()
        self._next += 1
        self.live.add(self._next)
        return self._next, TTL_S

    async def renew(self, lease: int) -> bool:
        self._reach()
        return lease in self.live

    async def revoke(self, lease: int) -> None:
        self._reach()
        self.live.discard(lease)
        self.revoked.append(lease)


async def test_the_expired_lease_is_revoked_once_the_server_is_back() -> None:
    # A restarted etcd restores the leases it had, with a fresh TTL: a lease the keeper gave
    # up while the server was away must be revoked when it returns, or its ephemeral keys
    # (bundle owners, registrations) outlive the session by one more TTL.
    server = ScriptedServer()
    keeper = SessionKeeper(
        backend="scripted", grant=server.grant, renew=server.renew, revoke=server.revoke
    )
    seen = {event: asyncio.Event() for event in SessionEvent}

    def listen(event: SessionEvent) -> None:
        seen[event].set()

    keeper.add_listener(listen)
    await keeper.start()
    try:
        assert keeper.lease_id == 1
        server.down = True
        async with asyncio.timeout(5):
            await seen[SessionEvent.EXPIRED].wait()
        await asyncio.sleep(TTL_S)  # reconnect attempts fail meanwhile
        assert keeper.lease_id is None
        server.down = False
        async with asyncio.timeout(5):
            await seen[SessionEvent.RECONNECTED].wait()
        assert keeper.lease_id == 2
        assert server.revoked == [1]
        assert server.live == {2}
    finally:
        await keeper.close()
    assert server.revoked == [1, 2]
