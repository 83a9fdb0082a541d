"""Topic and namespace names as Pulsar spells them: the one name type of every layer.

Like ``TopicName`` / ``NamespaceName`` in Pulsar's ``pulsar-common``, these values are shared by
the broker (validation, managed-ledger names), the admin REST API, the client (short names,
partitions) and the tools, so that a name means the same thing on both ends of a connection.

``persistent://tenant/namespace/local-name`` (or ``non-persistent://...``). Short forms are
accepted as Pulsar accepts them: ``local`` means ``persistent://public/default/local`` and
``tenant/ns/local`` means ``persistent://tenant/ns/local``. The local name may itself contain
``/``. A ``-partition-N`` suffix marks one partition of a partitioned topic. Tenant and
namespace are checked against Pulsar's allowed characters; the local name only for being
non-empty and without surrounding blanks.

``TopicName.parse(name, legacy_cluster=True)`` is the client's view of the binary protocol:
four parts after the domain are the deprecated ``tenant/cluster/namespace/topic`` form, whose
namespace part is ``cluster/namespace``. Without it (the broker, the admin REST API), everything
after the namespace is the local name.

``strict=False`` (the clients) checks only the shape and leaves the characters of tenant and
namespace to the server, which answers with its own error.

Invariants: a strictly parsed :class:`TopicName` always holds a valid domain, tenant, namespace
and a non-empty local name; ``str(t)`` is the fully qualified name and parses back to ``t``.
``managed_ledger_name`` is ``tenant/ns/persistent/<url-encoded local name>`` (Pulsar's
persistence naming), so the managed ledger of a topic is found from its name alone.
:class:`InvalidTopicName` (a ``ValueError`` too, for command-line usage errors) carries the
offending name and the reason; the broker maps it to ServerError ``InvalidTopicName`` and the
admin API to HTTP 412.

Pure values; safe from any task or thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from magnetar.errors import MagnetarError

PERSISTENT = "persistent"
NON_PERSISTENT = "non-persistent"
DOMAINS = (PERSISTENT, NON_PERSISTENT)
PARTITION_SUFFIX = "-partition-"
DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "default"

_NAME = re.compile(r"[-=:.\w]+")
_PARTITION = re.compile(r"(?P<base>.+)-partition-(?P<index>\d+)")
_NAMESPACE_SHAPE = "a namespace is 'tenant/namespace'"


class InvalidTopicName(MagnetarError, ValueError):
    """A topic or namespace name Pulsar would not accept; ``reason`` says why."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"invalid topic name {name!r}: {reason}")
        self.name = name
        self.reason = reason


def _check_part(kind: str, value: str, full: str, strict: bool) -> None:
    if not value or (strict and not _NAME.fullmatch(value)):
        raise InvalidTopicName(full, f"invalid {kind} name {value!r}")


def _segment(part: str) -> str:
    return quote(part, safe="")


@dataclass(frozen=True, order=True)
class NamespaceName:
    """``tenant/namespace``."""

    tenant: str
    local_name: str

    @classmethod
    def parse(cls, name: str, *, strict: bool = True) -> NamespaceName:
        """Parse ``tenant/namespace``; raises :class:`InvalidTopicName`.

        ``strict=False`` checks the shape only and leaves the characters to the server.
        """
        parts = name.split("/")
        if len(parts) != 2:
            raise InvalidTopicName(name, _NAMESPACE_SHAPE)
        for kind, part in zip(("tenant", "namespace"), parts, strict=True):
            if not part:
                raise InvalidTopicName(name, f"invalid {kind} name '' ({_NAMESPACE_SHAPE})")
            _check_part(kind, part, name, strict)
        return cls(parts[0], parts[1])

    def __str__(self) -> str:
        return f"{self.tenant}/{self.local_name}"

    @property
    def rest_path(self) -> str:
        """``tenant/namespace``, each part URL-encoded, as admin REST paths want it."""
        return f"{_segment(self.tenant)}/{_segment(self.local_name)}"

    def topic(self, local_name: str, *, persistent: bool = True) -> TopicName:
        domain = PERSISTENT if persistent else NON_PERSISTENT
        return TopicName.parse(f"{domain}://{self}/{local_name}")


@dataclass(frozen=True, order=True)
class TopicName:
    """A fully qualified topic name; build with :meth:`parse`."""

    domain: str
    tenant: str
    namespace_local: str
    local_name: str

    @classmethod
    def parse(cls, name: str, *, legacy_cluster: bool = False, strict: bool = True) -> TopicName:
        """Parse a short or full name; raises :class:`InvalidTopicName`.

        ``legacy_cluster``: read four parts as ``tenant/cluster/namespace/topic`` (the client's
        binary-protocol view) instead of a local name containing ``/``. ``strict=False`` checks
        the shape only and leaves the characters of tenant and namespace to the server.
        """
        if not isinstance(name, str) or not name:
            raise InvalidTopicName(str(name), "empty topic name")
        domain, sep, rest = name.partition("://")
        if not sep:
            rest, domain = name, PERSISTENT
            if "/" not in rest:
                rest = f"{DEFAULT_TENANT}/{DEFAULT_NAMESPACE}/{rest}"
            elif rest.count("/") < 2:
                raise InvalidTopicName(name, "short names are 'topic' or 'tenant/ns/topic'")
        if domain not in DOMAINS:
            raise InvalidTopicName(name, f"unknown domain {domain!r}")
        parts = rest.split("/", 3 if legacy_cluster else 2)
        if len(parts) < 3:
            raise InvalidTopicName(name, "expected domain://tenant/namespace/topic")
        tenant, namespace, local = parts[0], "/".join(parts[1:-1]), parts[-1]
        _check_part("tenant", tenant, name, strict)
        for part in parts[1:-1]:  # the legacy form's cluster, then the namespace
            _check_part("namespace", part, name, strict)
        if not local or local.strip() != local:
            raise InvalidTopicName(name, "empty or blank topic local name")
        return cls(domain, tenant, namespace, local)

    def __str__(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace_local}/{self.local_name}"

    @property
    def namespace(self) -> NamespaceName:
        return NamespaceName(self.tenant, self.namespace_local)

    @property
    def is_persistent(self) -> bool:
        return self.domain == PERSISTENT

    @property
    def partition_index(self) -> int:
        """The partition number, or -1 for a topic that is not a partition."""
        found = _PARTITION.fullmatch(self.local_name)
        return int(found.group("index")) if found else -1

    @property
    def is_partition(self) -> bool:
        return self.partition_index >= 0

    @property
    def partitioned_topic_name(self) -> TopicName:
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        found = _PARTITION.fullmatch(self.local_name)
        if found is None:
            return self
        return TopicName(self.domain, self.tenant, self.namespace_local, found.group("base"))

    def partition(self, index: int) -> TopicName:
        if index < 0:
            raise InvalidTopicName(str(self), f"negative partition index {index}")
        base = self.partitioned_topic_name
        return TopicName(
            self.domain,
            self.tenant,
            self.namespace_local,
            f"{base.local_name}{PARTITION_SUFFIX}{index}",
        )

    @property
    def encoded_local_name(self) -> str:
        return _segment(self.local_name)

    @property
    def rest_path(self) -> str:
        """``domain/tenant/ns/topic``, each part URL-encoded, as admin REST paths want it."""
        parts = (self.tenant, self.namespace_local, self.local_name)
        return "/".join((self.domain, *(_segment(p) for p in parts)))

    @property
    def managed_ledger_name(self) -> str:
        return f"{self.tenant}/{self.namespace_local}/{self.domain}/{self.encoded_local_name}"

    @classmethod
    def from_managed_ledger_name(cls, name: str) -> TopicName:
        """Inverse of :attr:`managed_ledger_name`."""
        parts = name.split("/")
        if len(parts) != 4:
            raise InvalidTopicName(name, "not a topic's managed ledger name")
        tenant, namespace, domain, local = parts
        return cls.parse(f"{domain}://{tenant}/{namespace}/{unquote(local)}")


def client_topic_name(name: str) -> TopicName:
    """``name`` as a client reads it: the legacy four-part form allowed, the shape checked and
    the characters left to the broker."""
    return TopicName.parse(name, legacy_cluster=True, strict=False)


def full_topic_name(name: str) -> str:
    """``name`` fully qualified, as a client sends it (short names in ``public/default``)."""
    return str(client_topic_name(name))


def partition_name(topic: str, index: int) -> str:
    """The full name of partition ``index`` of the partitioned topic ``topic``.

    The suffix is appended as given (Pulsar clients do the same), unlike
    :meth:`TopicName.partition`, which names a sibling when ``topic`` is a partition itself.
    """
    if index < 0:
        raise InvalidTopicName(topic, f"negative partition index {index}")
    return f"{full_topic_name(topic)}{PARTITION_SUFFIX}{index}"
