"""Geo-replication in the broker (Pulsar's replicators), I/O shells around pure cores.

- :mod:`.names` — Pulsar's names: cursor ``pulsar.repl.{remote}``, producer ``pulsar.repl.{local}``.
- :mod:`.window` — pure: which entries go where, the replicated metadata, the in-flight window.
- :mod:`.remote` — the protocols a composition above the broker implements on the client.
- :mod:`.replicator` — one topic's replicator towards one remote cluster.
- :mod:`.topic_replicators` — a topic's replicators, kept in line with the namespace policy.
- :mod:`.stats` — the ``replication`` section of topic stats.

docs/geo-replication.md describes the behaviour as a user sees it.
"""

from magnetar.broker.replication.names import REPLICATOR_PREFIX, is_replicator
from magnetar.broker.replication.remote import RemoteClusters, RemoteProducer
from magnetar.broker.replication.replicator import Replicator, ReplicatorConfig
from magnetar.broker.replication.topic_replicators import ReplicationContext, TopicReplicators

__all__ = [
    "REPLICATOR_PREFIX",
    "RemoteClusters",
    "RemoteProducer",
    "ReplicationContext",
    "Replicator",
    "ReplicatorConfig",
    "TopicReplicators",
    "is_replicator",
]
