"""Topic and namespace names as Pulsar spells them.

``persistent://tenant/namespace/local-name`` (or ``non-persistent://...``). Short forms are
accepted as Pulsar accepts them: ``local`` means ``persistent://public/default/local`` and
``tenant/ns/local`` means ``persistent://tenant/ns/local``. The local name may itself contain
``/``. A ``-partition-N`` suffix marks one partition of a partitioned topic.

Invariants: a parsed :class:`TopicName` always holds a valid domain, tenant, namespace and a
non-empty local name; ``str(t)`` is the fully qualified name and parses back to ``t``.
``managed_ledger_name`` is ``tenant/ns/persistent/<url-encoded local name>`` (Pulsar's
persistence naming), so the managed ledger of a topic is found from its name alone.

Pure values; safe from any task or thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from magnetar.broker.errors import InvalidTopicName

PERSISTENT = "persistent"
NON_PERSISTENT = "non-persistent"
DOMAINS = (PERSISTENT, NON_PERSISTENT)
PARTITION_SUFFIX = "-partition-"
DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "default"

_NAME = re.compile(r"^[-=:.\w]+$")
_PARTITION = re.compile(r"^(?P<base>.+)-partition-(?P<index>\d+)$")


def _check_part(kind: str, value: str, full: str) -> None:
    if not value or not _NAME.match(value):
        raise InvalidTopicName(full, f"invalid {kind} name {value!r}")


@dataclass(frozen=True, order=True)
class NamespaceName:
    """``tenant/namespace``."""

    tenant: str
    local_name: str

    @classmethod
    def parse(cls, name: str) -> NamespaceName:
        parts = name.split("/")
        if len(parts) != 2:
            raise InvalidTopicName(name, "a namespace is 'tenant/namespace'")
        _check_part("tenant", parts[0], name)
        _check_part("namespace", parts[1], name)
        return cls(parts[0], parts[1])

    def __str__(self) -> str:
        return f"{self.tenant}/{self.local_name}"

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
    def parse(cls, name: str) -> TopicName:
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
        parts = rest.split("/", 2)
        if len(parts) != 3:
            raise InvalidTopicName(name, "expected domain://tenant/namespace/topic")
        tenant, namespace, local = parts
        _check_part("tenant", tenant, name)
        _check_part("namespace", namespace, name)
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
        found = _PARTITION.match(self.local_name)
        return int(found.group("index")) if found else -1

    @property
    def is_partition(self) -> bool:
        return self.partition_index >= 0

    @property
    def partitioned_topic_name(self) -> TopicName:
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        found = _PARTITION.match(self.local_name)
        if found is None:
            return self
        return TopicName(self.domain, self.tenant, self.namespace_local, found.group("base"))

    def partition(self, index: int) -> TopicName:
        if index < 0:
            raise InvalidTopicName(str(self), f"negative partition index {index}")
        base = self.partitioned_topic_name
        return TopicName(
            self.domain, self.tenant, self.namespace_local, f"{base.local_name}-partition-{index}"
        )

    @property
    def encoded_local_name(self) -> str:
        return quote(self.local_name, safe="")

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
