"""The one module that knows the metadata key layout. Nobody builds a key string elsewhere.

Layout (every key absolute, ``/``-separated; free-form names are percent-encoded so a name with
``/`` in it can never reach into another key's subtree)::

    /cluster/instance-id                         the cluster's instance id (cookies refer to it)
    /ledgers/idgen                               counter for ledger ids (CAS-incremented)
    /ledgers/meta/<ledger id, 20 digits>         LedgerMetadata (wire.ledger_pb2)
    /ledgers/underreplication/<ledger id, 20 digits>
                                                 the auditor's mark that a ledger lacks copies
                                                 (JSON: the missing bookies; autorecovery)
    /ledgers/writers/<client id>                 a live ledger writer (BookKeeper client),
                                                 ephemeral; ledgers name it in custom metadata
    /bookies/cookies/<bookie id>                 BookieCookie
    /bookies/available/<bookie id>               BookieRegistration, ephemeral
    /bookies/decommission/<bookie id>            a decommission request (JSON); placement
                                                 skips the bookie, which turns read-only
    /managed-ledgers/info/<name>                 ManagedLedgerInfo
    /managed-ledgers/cursors/<name>/<cursor>     ManagedCursorInfo
    /locks/<name>                                ephemeral lock / leader-election keys
    /admin/clusters/<cluster>                    ClusterData (JSON, Pulsar's field names)
    /admin/tenants/<tenant>                      TenantInfo (JSON)
    /admin/namespaces/<tenant>/<ns>              namespace Policies (JSON)
    /admin/local-policies/<tenant>/<ns>          LocalPolicies: the namespace's bundle boundaries
    /admin/partitioned-topics/<tenant>/<ns>/<domain>/<topic>
                                                 PartitionedTopicMetadata (JSON)
    /loadbalance/brokers/<host:port>             a live broker's registration and load, ephemeral
    /loadbalance/leader                          the load manager's leader, ephemeral
    /loadbalance/unload/<host:port>/<bundle>     the leader's request that an owner unload a
                                                 bundle (load shedding), ephemeral
    /namespace/<tenant>/<ns>/<bundle range>      a namespace bundle's owner, ephemeral
    /schemas/<tenant>/<ns>/<topic>               a topic's schema history (JSON, magnetar.schema);
                                                 one per partitioned topic, both domains share it

The broker, leader and owner keys are Pulsar's own paths (``host:port`` is the broker's
advertised binary address, the bundle range prints as ``0x00000000_0x40000000``).
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from magnetar.ids import BookieId, LedgerId

CLUSTER_INSTANCE_ID = "/cluster/instance-id"
LEDGER_ID_GENERATOR = "/ledgers/idgen"
LEDGER_META_PREFIX = "/ledgers/meta/"
UNDER_REPLICATED_PREFIX = "/ledgers/underreplication/"
LEDGER_WRITERS_PREFIX = "/ledgers/writers/"
BOOKIES_PREFIX = "/bookies/"
BOOKIE_COOKIE_PREFIX = "/bookies/cookies/"
BOOKIE_AVAILABLE_PREFIX = "/bookies/available/"
BOOKIE_DECOMMISSION_PREFIX = "/bookies/decommission/"
MANAGED_LEDGER_INFO_PREFIX = "/managed-ledgers/info/"
MANAGED_LEDGER_CURSOR_PREFIX = "/managed-ledgers/cursors/"
LOCK_PREFIX = "/locks/"
CLUSTERS_PREFIX = "/admin/clusters/"
TENANTS_PREFIX = "/admin/tenants/"
NAMESPACES_PREFIX = "/admin/namespaces/"
LOCAL_POLICIES_PREFIX = "/admin/local-policies/"
PARTITIONED_TOPICS_PREFIX = "/admin/partitioned-topics/"
BROKERS_PREFIX = "/loadbalance/brokers/"
BUNDLE_OWNERS_PREFIX = "/namespace/"
LOAD_BALANCE_LEADER = "/loadbalance/leader"
UNLOAD_REQUESTS_PREFIX = "/loadbalance/unload/"
SCHEMAS_PREFIX = "/schemas/"


def _enc(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a metadata name must be a non-empty str, got {name!r}")
    return quote(name, safe="")


def ledger_meta(ledger_id: LedgerId) -> str:
    # Zero-padded so that a prefix listing returns ledgers in id order.
    return f"{LEDGER_META_PREFIX}{ledger_id:020d}"


def ledger_id_of(key: str) -> LedgerId:
    """Inverse of :func:`ledger_meta`."""
    if not key.startswith(LEDGER_META_PREFIX):
        raise ValueError(f"not a ledger metadata key: {key!r}")
    return LedgerId(int(key[len(LEDGER_META_PREFIX) :]))


def ledger_meta_bucket(bucket: int, free_digits: int) -> str:
    """The prefix of the metadata keys of ledgers ``bucket * 10**free_digits`` up to
    ``(bucket + 1) * 10**free_digits - 1``: a listing of it reads one id range (the audit
    splits the ledgers this way). ``free_digits`` 0 names one ledger's key."""
    if not 0 <= free_digits <= 20 or bucket < 0:
        raise ValueError(f"bad ledger bucket {bucket} with {free_digits} free digits")
    if free_digits == 20:
        return LEDGER_META_PREFIX
    return f"{LEDGER_META_PREFIX}{bucket:0{20 - free_digits}d}"


def under_replicated(ledger_id: LedgerId) -> str:
    """The auditor's under-replication mark of one ledger (one key per ledger)."""
    return f"{UNDER_REPLICATED_PREFIX}{ledger_id:020d}"


def under_replicated_ledger_of(key: str) -> LedgerId:
    """Inverse of :func:`under_replicated`."""
    if not key.startswith(UNDER_REPLICATED_PREFIX):
        raise ValueError(f"not an under-replication key: {key!r}")
    return LedgerId(int(key[len(UNDER_REPLICATED_PREFIX) :]))


def ledger_writer(client_id: str) -> str:
    """A live ledger writer's ephemeral key (a BookKeeper client, by its id)."""
    return f"{LEDGER_WRITERS_PREFIX}{_enc(client_id)}"


def bookie_decommission(bookie_id: BookieId) -> str:
    return f"{BOOKIE_DECOMMISSION_PREFIX}{_enc(bookie_id)}"


def bookie_cookie(bookie_id: BookieId) -> str:
    return f"{BOOKIE_COOKIE_PREFIX}{_enc(bookie_id)}"


def bookie_available(bookie_id: BookieId) -> str:
    return f"{BOOKIE_AVAILABLE_PREFIX}{_enc(bookie_id)}"


def bookie_id_of(key: str) -> BookieId:
    """Inverse of :func:`bookie_available`, :func:`bookie_cookie`, :func:`bookie_decommission`."""
    for prefix in (BOOKIE_AVAILABLE_PREFIX, BOOKIE_COOKIE_PREFIX, BOOKIE_DECOMMISSION_PREFIX):
        if key.startswith(prefix):
            return BookieId(unquote(key[len(prefix) :]))
    raise ValueError(f"not a bookie key: {key!r}")


def managed_ledger_info(name: str) -> str:
    return f"{MANAGED_LEDGER_INFO_PREFIX}{_enc(name)}"


def managed_ledger_name_of(key: str) -> str:
    if not key.startswith(MANAGED_LEDGER_INFO_PREFIX):
        raise ValueError(f"not a managed ledger key: {key!r}")
    return unquote(key[len(MANAGED_LEDGER_INFO_PREFIX) :])


def cursors_prefix(managed_ledger: str) -> str:
    return f"{MANAGED_LEDGER_CURSOR_PREFIX}{_enc(managed_ledger)}/"


def cursor(managed_ledger: str, cursor_name: str) -> str:
    return f"{cursors_prefix(managed_ledger)}{_enc(cursor_name)}"


def cursor_name_of(managed_ledger: str, key: str) -> str:
    prefix = cursors_prefix(managed_ledger)
    if not key.startswith(prefix):
        raise ValueError(f"not a cursor key of {managed_ledger!r}: {key!r}")
    return unquote(key[len(prefix) :])


def lock(name: str) -> str:
    return f"{LOCK_PREFIX}{_enc(name)}"


def cluster(name: str) -> str:
    return f"{CLUSTERS_PREFIX}{_enc(name)}"


def tenant(name: str) -> str:
    return f"{TENANTS_PREFIX}{_enc(name)}"


def namespaces_prefix(tenant_name: str) -> str:
    """Prefix of every namespace of ``tenant_name`` (list it to find them)."""
    return f"{NAMESPACES_PREFIX}{_enc(tenant_name)}/"


def namespace(tenant_name: str, namespace_name: str) -> str:
    return f"{namespaces_prefix(tenant_name)}{_enc(namespace_name)}"


def local_policies(tenant_name: str, namespace_name: str) -> str:
    """A namespace's LocalPolicies (Pulsar's path): its bundle boundaries, once stored."""
    return f"{LOCAL_POLICIES_PREFIX}{_enc(tenant_name)}/{_enc(namespace_name)}"


def partitioned_topics_prefix(tenant_name: str, namespace_name: str) -> str:
    """Prefix of every partitioned topic (both domains) of one namespace."""
    return f"{PARTITIONED_TOPICS_PREFIX}{_enc(tenant_name)}/{_enc(namespace_name)}/"


def partitioned_topic(tenant_name: str, namespace_name: str, domain: str, local_name: str) -> str:
    prefix = partitioned_topics_prefix(tenant_name, namespace_name)
    return f"{prefix}{_enc(domain)}/{_enc(local_name)}"


def last_segment_of(prefix: str, key: str) -> str:
    """The decoded name right after ``prefix`` (inverse of the single-segment builders above)."""
    if not key.startswith(prefix) or "/" in key[len(prefix) :]:
        raise ValueError(f"not a key directly under {prefix!r}: {key!r}")
    return unquote(key[len(prefix) :])


def partitioned_topic_of(tenant_name: str, namespace_name: str, key: str) -> tuple[str, str]:
    """Inverse of :func:`partitioned_topic`: ``(domain, local_name)``."""
    prefix = partitioned_topics_prefix(tenant_name, namespace_name)
    if not key.startswith(prefix):
        raise ValueError(f"not a partitioned topic key of {tenant_name}/{namespace_name}: {key!r}")
    domain, sep, local = key[len(prefix) :].partition("/")
    if not sep or not domain or not local or "/" in local:
        raise ValueError(f"not a partitioned topic key: {key!r}")
    return unquote(domain), unquote(local)


def broker_registration(broker_id: str) -> str:
    """A broker's registration key; ``broker_id`` is its advertised ``host:port``."""
    if not isinstance(broker_id, str) or not broker_id:
        raise ValueError(f"a broker id must be a non-empty str, got {broker_id!r}")
    return f"{BROKERS_PREFIX}{quote(broker_id, safe=':')}"


def broker_id_of(key: str) -> str:
    """Inverse of :func:`broker_registration`."""
    return last_segment_of(BROKERS_PREFIX, key)


def bundle_owners_prefix(tenant_name: str, namespace_name: str) -> str:
    """Prefix of the owner keys of every bundle of one namespace."""
    return f"{BUNDLE_OWNERS_PREFIX}{_enc(tenant_name)}/{_enc(namespace_name)}/"


def bundle_owner(tenant_name: str, namespace_name: str, bundle_range: str) -> str:
    """The ownership key of one bundle (``bundle_range`` like ``0x00000000_0x40000000``)."""
    return f"{bundle_owners_prefix(tenant_name, namespace_name)}{_enc(bundle_range)}"


def unload_requests_prefix(broker_id: str) -> str:
    """Prefix of the unload requests addressed to one broker (its advertised ``host:port``)."""
    return f"{UNLOAD_REQUESTS_PREFIX}{quote(broker_id, safe=':')}/"


def unload_request(broker_id: str, bundle: str) -> str:
    """The leader's request that ``broker_id`` unload ``bundle`` (``tenant/ns/0x..._0x...``)."""
    return f"{unload_requests_prefix(broker_id)}{_enc(bundle)}"


def unload_request_bundle_of(broker_id: str, key: str) -> str:
    """Inverse of :func:`unload_request`: the bundle's full name."""
    return last_segment_of(unload_requests_prefix(broker_id), key)


def bundle_owner_of(key: str) -> tuple[str, str, str]:
    """Inverse of :func:`bundle_owner`: (tenant, namespace, bundle range)."""
    parts = key.removeprefix(BUNDLE_OWNERS_PREFIX).split("/")
    if not key.startswith(BUNDLE_OWNERS_PREFIX) or len(parts) != 3 or not all(parts):
        raise ValueError(f"not a bundle owner key: {key!r}")
    tenant, ns, bundle_range = (unquote(p) for p in parts)
    return tenant, ns, bundle_range


def schema(tenant_name: str, namespace_name: str, local_name: str) -> str:
    """A topic's schema history. ``local_name`` is the partitioned topic's (Pulsar's schema id
    ``tenant/ns/topic`` has no domain and no partition suffix)."""
    return f"{SCHEMAS_PREFIX}{_enc(tenant_name)}/{_enc(namespace_name)}/{_enc(local_name)}"
