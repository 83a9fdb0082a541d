"""Every metric a Magnetar process exports, declared once: name, kind, labels, help text.

Names are Pulsar's where Pulsar has the metric (``pulsar_in_messages_total``,
``pulsar_storage_size``, ``pulsar_msg_backlog``), so that Pulsar dashboards and alerts work
unchanged; Pulsar's names carry no unit suffix, and those stay as Pulsar spells them. Every name
of our own carries its unit (``_seconds``, ``_bytes``) or ``_total`` for a counter. Bookie
metrics use BookKeeper's prefixes (``bookie_``, ``bookie_journal_``) in lower snake case.

Labels of per-topic metrics are Pulsar's: ``cluster``, ``namespace`` (``tenant/ns``), ``topic``
(the full name). The collectors that produce samples (the broker's topic metrics, the bookie's
metrics) import their specs from here; :mod:`magnetar.telemetry.metrics` turns a spec into an
OpenTelemetry instrument. Pure values, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    COUNTER = "counter"
    """Monotonic, read from a counter the process keeps (observed at scrape time)."""
    GAUGE = "gauge"
    """A level read at scrape time (counts, sizes, states)."""
    HISTOGRAM = "histogram"
    """Recorded as it happens, into fixed buckets."""


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    kind: Kind
    description: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


TOPIC_LABELS = ("cluster", "namespace", "topic")

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)

# ---------------------------------------------------------------- broker (Pulsar's names)
PULSAR_IN_MESSAGES = MetricSpec(
    "pulsar_in_messages_total",
    Kind.COUNTER,
    "Messages published to the topic and stored, since the topic was loaded here.",
    TOPIC_LABELS,
)
PULSAR_IN_BYTES = MetricSpec(
    "pulsar_in_bytes_total",
    Kind.COUNTER,
    "Bytes (stored entries) published to the topic, since the topic was loaded here.",
    TOPIC_LABELS,
)
PULSAR_OUT_MESSAGES = MetricSpec(
    "pulsar_out_messages_total",
    Kind.COUNTER,
    "Messages dispatched to the topic's consumers, summed over its subscriptions.",
    TOPIC_LABELS,
)
PULSAR_OUT_BYTES = MetricSpec(
    "pulsar_out_bytes_total",
    Kind.COUNTER,
    "Bytes (stored entries) dispatched to the topic's consumers, summed over its subscriptions.",
    TOPIC_LABELS,
)
PULSAR_PRODUCERS = MetricSpec(
    "pulsar_producers_count", Kind.GAUGE, "Producers connected to the topic.", TOPIC_LABELS
)
PULSAR_CONSUMERS = MetricSpec(
    "pulsar_consumers_count", Kind.GAUGE, "Consumers connected to the topic.", TOPIC_LABELS
)
PULSAR_SUBSCRIPTIONS = MetricSpec(
    "pulsar_subscriptions_count", Kind.GAUGE, "Subscriptions of the topic.", TOPIC_LABELS
)
PULSAR_STORAGE_SIZE = MetricSpec(
    "pulsar_storage_size",
    Kind.GAUGE,
    "Bytes the topic's managed ledger holds (all its ledgers), in bytes.",
    TOPIC_LABELS,
)
PULSAR_MSG_BACKLOG = MetricSpec(
    "pulsar_msg_backlog",
    Kind.GAUGE,
    "Entries not yet acknowledged, summed over the topic's subscriptions.",
    TOPIC_LABELS,
)
PULSAR_TOPICS = MetricSpec(
    "pulsar_topics_count", Kind.GAUGE, "Topics loaded on this broker.", ("cluster",)
)

PULSAR_AUTHENTICATION_SUCCESS = MetricSpec(
    "pulsar_authentication_success_total",
    Kind.COUNTER,
    "Credentials accepted (binary CONNECT and AUTH_RESPONSE, admin HTTP), by method.",
    ("cluster", "auth_method"),
)
PULSAR_AUTHENTICATION_FAILURES = MetricSpec(
    "pulsar_authentication_failures_total",
    Kind.COUNTER,
    "Credentials refused, by method and reason (expired or invalid).",
    ("cluster", "auth_method", "reason"),
)

# Geo-replication (Pulsar's replication metrics): one sample per topic and remote cluster.
REPLICATION_LABELS = (*TOPIC_LABELS, "remote_cluster")
PULSAR_REPLICATION_BACKLOG = MetricSpec(
    "pulsar_replication_backlog",
    Kind.GAUGE,
    "Entries the remote cluster has not acknowledged yet (the replicator cursor's backlog).",
    REPLICATION_LABELS,
)
PULSAR_REPLICATION_CONNECTED = MetricSpec(
    "pulsar_replication_connected_count",
    Kind.GAUGE,
    "1 while the topic's replicator to the remote cluster is attached to it, else 0.",
    REPLICATION_LABELS,
)
PULSAR_REPLICATION_DELAY = MetricSpec(
    "pulsar_replication_delay_in_seconds",
    Kind.GAUGE,
    "Age of the oldest entry the remote cluster lacks, in seconds (0 without a backlog).",
    REPLICATION_LABELS,
)

BROKER_METRICS = (
    PULSAR_AUTHENTICATION_SUCCESS,
    PULSAR_AUTHENTICATION_FAILURES,
    PULSAR_IN_MESSAGES,
    PULSAR_IN_BYTES,
    PULSAR_OUT_MESSAGES,
    PULSAR_OUT_BYTES,
    PULSAR_PRODUCERS,
    PULSAR_CONSUMERS,
    PULSAR_SUBSCRIPTIONS,
    PULSAR_STORAGE_SIZE,
    PULSAR_MSG_BACKLOG,
    PULSAR_TOPICS,
    PULSAR_REPLICATION_BACKLOG,
    PULSAR_REPLICATION_CONNECTED,
    PULSAR_REPLICATION_DELAY,
)

# ---------------------------------------------------------------- any server process
EVENT_LOOP_LAG = MetricSpec(
    "magnetar_event_loop_lag_seconds",
    Kind.HISTOGRAM,
    "How late the process's event loop ran a timer due every 50 ms, in seconds: the wait that "
    "a busy or stalled loop adds to every message.",
    buckets=LATENCY_BUCKETS_S,
)

# ---------------------------------------------------------------- bookie
BOOKIE_JOURNAL_ADD_ENTRIES = MetricSpec(
    "bookie_journal_add_entries_total",
    Kind.COUNTER,
    "Entries added: journalled, fsynced and applied to ledger storage.",
)
BOOKIE_JOURNAL_SYNCS = MetricSpec(
    "bookie_journal_syncs_total",
    Kind.COUNTER,
    "Journal groups written (each ends with one fdatasync when journal sync is on).",
)
BOOKIE_JOURNAL_WRITTEN_BYTES = MetricSpec(
    "bookie_journal_written_bytes_total", Kind.COUNTER, "Bytes written to the journal."
)
BOOKIE_JOURNAL_SYNC_LATENCY = MetricSpec(
    "bookie_journal_sync_latency_seconds",
    Kind.HISTOGRAM,
    "Time to write one journal group and fdatasync it, in seconds.",
    buckets=LATENCY_BUCKETS_S,
)
BOOKIE_READ_ENTRIES = MetricSpec(
    "bookie_read_entries_total", Kind.COUNTER, "Entries read from ledger storage and returned."
)
BOOKIE_LEDGERS = MetricSpec(
    "bookie_ledgers_count", Kind.GAUGE, "Ledgers the bookie knows (deleted ones excluded)."
)
BOOKIE_LEDGER_STORAGE_SIZE = MetricSpec(
    "bookie_ledger_storage_size_bytes",
    Kind.GAUGE,
    "Bytes of the ledger directory (entry logs and entry index) on disk.",
)
BOOKIE_READ_ONLY = MetricSpec(
    "bookie_read_only", Kind.GAUGE, "1 while the bookie refuses adds (read-only mode), else 0."
)

# Exported only with journal_stage_metrics on (bookie/bookie_stats.py: JournalStats).
BOOKIE_JOURNAL_QUEUE_WAIT = MetricSpec(
    "bookie_journal_queue_wait_seconds",
    Kind.HISTOGRAM,
    "Time from the hand-off of a journal group's first add to the start of the group's write.",
    buckets=LATENCY_BUCKETS_S,
)
BOOKIE_JOURNAL_APPLY_LATENCY = MetricSpec(
    "bookie_journal_apply_latency_seconds",
    Kind.HISTOGRAM,
    "Time to apply one synced journal group to ledger storage, in seconds.",
    buckets=LATENCY_BUCKETS_S,
)
BOOKIE_JOURNAL_HANDBACK_LATENCY = MetricSpec(
    "bookie_journal_handback_latency_seconds",
    Kind.HISTOGRAM,
    "Time from the journal thread posting a group's outcome to the event loop delivering it.",
    buckets=LATENCY_BUCKETS_S,
)

BOOKIE_METRICS = (
    BOOKIE_JOURNAL_ADD_ENTRIES,
    BOOKIE_JOURNAL_SYNCS,
    BOOKIE_JOURNAL_WRITTEN_BYTES,
    BOOKIE_JOURNAL_SYNC_LATENCY,
    BOOKIE_JOURNAL_QUEUE_WAIT,
    BOOKIE_JOURNAL_APPLY_LATENCY,
    BOOKIE_JOURNAL_HANDBACK_LATENCY,
    BOOKIE_READ_ENTRIES,
    BOOKIE_LEDGERS,
    BOOKIE_LEDGER_STORAGE_SIZE,
    BOOKIE_READ_ONLY,
)

# ---------------------------------------------------------------- proxy (Pulsar's proxy names)
PROXY_ACTIVE_CONNECTIONS = MetricSpec(
    "pulsar_proxy_active_connections",
    Kind.GAUGE,
    "Client connections open on the proxy now (lookup connections and relays).",
)
PROXY_NEW_CONNECTIONS = MetricSpec(
    "pulsar_proxy_new_connections_total",
    Kind.COUNTER,
    "Client connections the proxy accepted since it started.",
)
PROXY_REJECTED_CONNECTIONS = MetricSpec(
    "pulsar_proxy_rejected_connections_total",
    Kind.COUNTER,
    "Client connections refused or dropped before relaying: bad or late handshake, an address "
    "that is not a registered broker, a broker that did not answer.",
)
PROXY_ACTIVE_RELAYS = MetricSpec(
    "pulsar_proxy_active_relays",
    Kind.GAUGE,
    "Client connections relayed to a broker now.",
)
PROXY_BINARY_BYTES = MetricSpec(
    "pulsar_proxy_binary_bytes_total",
    Kind.COUNTER,
    "Bytes relayed between clients and brokers; direction is client_to_broker or broker_to_client.",
    ("direction",),
)
PROXY_LOOKUPS = MetricSpec(
    "pulsar_proxy_lookup_requests_total",
    Kind.COUNTER,
    "LOOKUP requests the proxy answered; result is connect or failed.",
    ("result",),
)
PROXY_DROPPED_SLOW = MetricSpec(
    "pulsar_proxy_dropped_slow_connections_total",
    Kind.COUNTER,
    "Relays dropped because one side took no bytes for the write-stall timeout.",
)

PROXY_METRICS = (
    PROXY_ACTIVE_CONNECTIONS,
    PROXY_NEW_CONNECTIONS,
    PROXY_REJECTED_CONNECTIONS,
    PROXY_ACTIVE_RELAYS,
    PROXY_BINARY_BYTES,
    PROXY_LOOKUPS,
    PROXY_DROPPED_SLOW,
)

# ---------------------------------------------------------------- autorecovery
AUTORECOVERY_UNDER_REPLICATED_LEDGERS = MetricSpec(
    "autorecovery_under_replicated_ledgers",
    Kind.GAUGE,
    "Ledgers marked under-replicated by the auditor and not yet repaired (cluster-wide).",
)
AUTORECOVERY_REREPLICATED_BYTES = MetricSpec(
    "autorecovery_rereplicated_bytes_total",
    Kind.COUNTER,
    "Entry payload bytes this process copied to replacement bookies.",
)
AUTORECOVERY_REREPLICATED_ENTRIES = MetricSpec(
    "autorecovery_rereplicated_entries_total",
    Kind.COUNTER,
    "Entries this process copied to replacement bookies.",
)
AUTORECOVERY_REREPLICATED_LEDGERS = MetricSpec(
    "autorecovery_rereplicated_ledgers_total",
    Kind.COUNTER,
    "Ledgers this process repaired (their under-replication mark removed).",
)
AUTORECOVERY_FRAGMENTS_IN_PROGRESS = MetricSpec(
    "autorecovery_fragments_in_progress",
    Kind.GAUGE,
    "Ledger fragments this process is copying now.",
)
AUTORECOVERY_AUDITOR_LEADER = MetricSpec(
    "autorecovery_auditor_leader",
    Kind.GAUGE,
    "1 while this process is the elected auditor, else 0.",
)

AUTORECOVERY_METRICS = (
    AUTORECOVERY_UNDER_REPLICATED_LEDGERS,
    AUTORECOVERY_REREPLICATED_BYTES,
    AUTORECOVERY_REREPLICATED_ENTRIES,
    AUTORECOVERY_REREPLICATED_LEDGERS,
    AUTORECOVERY_FRAGMENTS_IN_PROGRESS,
    AUTORECOVERY_AUDITOR_LEADER,
)
