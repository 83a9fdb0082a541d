"""Pulsar's names for geo-replication: replicator cursors and replicator producers.

A topic's replicator towards cluster ``remote`` reads through the durable cursor
``pulsar.repl.{remote}`` and publishes on the remote as the producer ``pulsar.repl.{local}``
(Pulsar's ``replicatorPrefix``). Both start with :data:`REPLICATOR_PREFIX`: such a cursor is no
user subscription, and such a producer's entries are deduplicated by their metadata's producer
name and sequence id. Pure; any task.
"""

from __future__ import annotations

REPLICATOR_PREFIX = "pulsar.repl."


def cursor_name(remote: str) -> str:
    """The replicator cursor of the replicator towards ``remote``."""
    return REPLICATOR_PREFIX + remote


def producer_name(local: str) -> str:
    """The name a replicator from ``local`` produces under on a remote cluster."""
    return REPLICATOR_PREFIX + local


def is_replicator(name: str) -> bool:
    """A replicator cursor (local side) or a replicator producer (remote side)."""
    return name.startswith(REPLICATOR_PREFIX)


def cluster_of(name: str) -> str:
    """The cluster a replicator cursor or producer name carries."""
    return name[len(REPLICATOR_PREFIX) :]
