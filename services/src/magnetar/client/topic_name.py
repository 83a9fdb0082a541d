"""Topic names as Pulsar clients accept them, and the names of a partitioned topic's partitions.

Short forms expand like the official clients: ``"t"`` -> ``persistent://public/default/t``,
``"tenant/ns/t"`` -> ``persistent://tenant/ns/t``. Partition ``i`` of ``T`` is
``T-partition-i``. The one topic-name parser of the client package: the binary protocol side
(``legacy_cluster=True``, four parts are tenant/cluster/namespace/topic) and the admin REST side
(:class:`magnetar.client.admin_models.TopicRef`: anything after the namespace is the local name,
which the server validates). Pure functions; safe from any task or thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from magnetar.client.errors import InvalidConfiguration, InvalidTopicName

PARTITION_SUFFIX = "-partition-"
PERSISTENT = "persistent"
NON_PERSISTENT = "non-persistent"
DOMAINS = (PERSISTENT, NON_PERSISTENT)
DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class TopicName:
    """A fully qualified topic name split into its parts."""

    domain: str
    tenant: str
    namespace: str
    local_name: str

    @property
    def full(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace}/{self.local_name}"

    def __str__(self) -> str:
        return self.full

    @property
    def path(self) -> str:
        """``persistent/tenant/ns/topic``, each part URL-encoded, as admin REST paths want it."""
        parts = (self.tenant, self.namespace, self.local_name)
        return "/".join((self.domain, *(quote(p, safe="") for p in parts)))

    @property
    def namespace_name(self) -> str:
        """``tenant/namespace``, as GET_TOPICS_OF_NAMESPACE wants it."""
        return f"{self.tenant}/{self.namespace}"

    @property
    def partition_index(self) -> int:
        """The partition number if this names a partition, else -1."""
        head, sep, tail = self.local_name.rpartition(PARTITION_SUFFIX)
        if sep and head and tail.isdigit():
            return int(tail)
        return -1

    @property
    def partitioned_topic(self) -> str:
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        if self.partition_index < 0:
            return self.full
        head = self.local_name.rpartition(PARTITION_SUFFIX)[0]
        return f"{self.domain}://{self.tenant}/{self.namespace}/{head}"


def parse_topic_name(name: str, *, legacy_cluster: bool = True) -> TopicName:
    """Parse a short or full topic name; raises InvalidTopicName (a ValueError).

    ``legacy_cluster``: four parts are the legacy tenant/cluster/namespace/topic; without it
    (the admin REST view) everything after the namespace is the local name.
    """
    if not name or name != name.strip():
        raise InvalidTopicName(f"invalid topic name {name!r}")
    domain = PERSISTENT
    rest = name
    if "://" in name:
        domain, _, rest = name.partition("://")
        if domain not in DOMAINS:
            raise InvalidTopicName(f"unknown topic domain {domain!r} in {name!r}")
    parts = rest.split("/") if legacy_cluster else rest.split("/", 2)
    if "://" not in name and len(parts) == 1:
        parts = [DEFAULT_TENANT, DEFAULT_NAMESPACE, parts[0]]
    if len(parts) == 4:
        # The legacy form tenant/cluster/namespace/topic: keep the cluster in the namespace.
        parts = [parts[0], f"{parts[1]}/{parts[2]}", parts[3]]
    if len(parts) != 3 or not all(parts):
        raise InvalidTopicName(f"invalid topic name {name!r}")
    return TopicName(domain, parts[0], parts[1], parts[2])


def full_topic_name(name: str) -> str:
    """``name`` fully qualified (``persistent://public/default/...`` for short names)."""
    return parse_topic_name(name).full


def partition_name(topic: str, index: int) -> str:
    """The name of partition ``index`` of the partitioned topic ``topic``."""
    if index < 0:
        raise ValueError("partition index cannot be negative")
    return f"{full_topic_name(topic)}{PARTITION_SUFFIX}{index}"


def service_address(url: str) -> str:
    """``host:port`` from ``pulsar://host:port`` or ``pulsar+ssl://host:port`` (or a bare one)."""
    address = url.partition("://")[2] if "://" in url else url
    address = address.rstrip("/")
    if "," in address:
        address = address.split(",")[0]
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidConfiguration(f"invalid service URL {url!r}")
    return address
