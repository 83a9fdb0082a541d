"""In-process leases for the embedded backends (memory, RocksDB): a sans-I/O table.

A lease has a TTL and a deadline; a keep-alive pushes the deadline to ``now + ttl``. Keys
created ephemeral are attached to their lease; when the lease is revoked or expires, the
caller deletes the attached keys. Time is passed in (``now``), so this is tested without a
clock or a loop. Not thread-safe: the owning server touches it from its event loop only.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field


@dataclass
class _Lease:
    ttl: float
    deadline: float
    keys: set[str] = field(default_factory=set)


class LeaseTable:
    """Live leases by id, with the keys bound to each."""

    def __init__(self) -> None:
        self._leases: dict[int, _Lease] = {}
        self._ids = itertools.count(1)

    def grant(self, ttl: float, now: float) -> int:
        if ttl <= 0:
            raise ValueError(f"lease ttl must be > 0, got {ttl}")
        lease_id = next(self._ids)
        self._leases[lease_id] = _Lease(ttl=ttl, deadline=now + ttl)
        return lease_id

    def alive(self, lease_id: int, now: float) -> bool:
        lease = self._leases.get(lease_id)
        return lease is not None and now < lease.deadline

    def keepalive(self, lease_id: int, now: float) -> bool:
        """Renew ``lease_id``; False if it is gone or already past its deadline."""
        lease = self._leases.get(lease_id)
        if lease is None or now >= lease.deadline:
            return False
        lease.deadline = now + lease.ttl
        return True

    def attach(self, lease_id: int, key: str) -> None:
        lease = self._leases.get(lease_id)
        if lease is not None:
            lease.keys.add(key)

    def detach(self, lease_id: int, key: str) -> None:
        lease = self._leases.get(lease_id)
        if lease is not None:
            lease.keys.discard(key)

    def revoke(self, lease_id: int) -> set[str]:
        """Forget ``lease_id``; return the keys that were bound to it (to be deleted)."""
        lease = self._leases.pop(lease_id, None)
        return set() if lease is None else lease.keys

    def due(self, now: float) -> list[int]:
        """Leases past their deadline, oldest deadline first."""
        expired = [(lease.deadline, lid) for lid, lease in self._leases.items()]
        return [lid for deadline, lid in sorted(expired) if now >= deadline]

    def __len__(self) -> int:
        return len(self._leases)
