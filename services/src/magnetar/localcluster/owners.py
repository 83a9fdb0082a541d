"""Which broker owns each namespace bundle of a local cluster, read from its metadata store.

Every owner key (``/namespace/<tenant>/<ns>/<bundle range>``, Pulsar's path) holds Pulsar's
NamespaceEphemeralData JSON; its ``nativeUrl`` is the owner's ``pulsar://host:port``. Keys are
ephemeral: an owner that died is still listed until its lease runs out.

:func:`parse_owners` is pure; :func:`read_bundle_owners` opens the store the cluster's metadata
URL names (through :mod:`magnetar.metadata`, never a broker), lists the keys under a deadline
and closes it. Blocking (it runs its own event loop): called by ``magnetar cluster status``
from the command's thread, never from a running loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass

from magnetar.errors import MagnetarError
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store

READ_TIMEOUT_S = 5.0


@dataclass(frozen=True, order=True)
class BundleOwner:
    namespace: str  # tenant/namespace
    bundle: str  # 0x00000000_0x40000000
    broker_url: str  # the owner's pulsar://host:port, or "?" for an unreadable record


def parse_owners(entries: Iterable[tuple[str, bytes]]) -> list[BundleOwner]:
    """The owners in (key, value) pairs of owner keys, sorted by namespace and bundle (a key
    that is not an owner key is left out)."""
    owners = []
    for key, value in entries:
        try:
            tenant, ns, bundle = keys.bundle_owner_of(key)
        except ValueError:
            continue
        try:
            url = str(json.loads(value)["nativeUrl"])
        except (ValueError, KeyError, TypeError):
            url = "?"
        owners.append(BundleOwner(f"{tenant}/{ns}", bundle, url))
    return sorted(owners)


async def _read(metadata_url: str) -> list[BundleOwner]:
    store = await open_store(metadata_url, session_timeout_s=READ_TIMEOUT_S)
    try:
        found = await store.list(keys.BUNDLE_OWNERS_PREFIX)
    finally:
        await store.close()
    return parse_owners((key, versioned.value) for key, versioned in found)


def read_bundle_owners(metadata_url: str) -> list[BundleOwner] | None:
    """The bundle owners now, or None when the store does not answer within the deadline."""

    async def bounded() -> list[BundleOwner]:
        async with asyncio.timeout(READ_TIMEOUT_S):
            return await _read(metadata_url)

    try:
        return asyncio.run(bounded())
    except (TimeoutError, MagnetarError, OSError):
        return None
