"""Which broker owns each namespace bundle of a local cluster, read from its metadata store.

Every owner key (``/namespace/<tenant>/<ns>/<bundle range>``, Pulsar's path) holds Pulsar's
NamespaceEphemeralData JSON; its ``nativeUrl`` is the owner's ``pulsar://host:port``. Keys are
ephemeral: an owner that died is still listed until its lease runs out.

:func:`parse_owners` is pure: :mod:`magnetar.localcluster.cluster_metadata` lists the keys
(one store session for the whole status) and calls it; callable from any thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from magnetar.metadata import keys


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
