"""Pulsar's admin JSON shapes, shared by the broker, the admin API, the client and the tools.

The bottom layer's counterpart of ``org.apache.pulsar.common.policies.data``: one frozen
dataclass per document, with Pulsar's field names, ``to_json()`` for the body and
``from_json()`` that validates types and ranges and raises :class:`InvalidPolicies`.

* :mod:`.cluster` — ``ClusterData``; :mod:`.tenant` — ``TenantInfo``.
* :mod:`.namespace` — ``Policies`` and its parts (retention, backlog quotas, auto topic
  creation, permissions, delayed delivery) and Pulsar's enum values.
* :mod:`.persistence` — ``PersistencePolicies`` (ensemble, write and ack quorums).
* :mod:`.message_id` — ``MessageIdData``, a position as the admin API carries it.
* :mod:`.fields` — the typed field readers and ``dumps``/``loads``, the stored encoding.

What a policy that is not set means (broker defaults), and checks tied to broker settings, stay
in :mod:`magnetar.broker`. Imports nothing above :mod:`magnetar.errors`.
"""

from magnetar.policies.cluster import ClusterData
from magnetar.policies.errors import InvalidPolicies
from magnetar.policies.fields import dumps, loads
from magnetar.policies.message_id import MessageIdData
from magnetar.policies.namespace import (
    AUTH_ACTIONS,
    BACKLOG_QUOTA_POLICIES,
    BACKLOG_QUOTA_TYPES,
    SCHEMA_COMPATIBILITY_STRATEGIES,
    TOPIC_TYPES,
    AuthPolicies,
    AutoTopicCreationOverride,
    BacklogQuota,
    DelayedDeliveryPolicies,
    Policies,
    RetentionPolicies,
    parse_actions,
)
from magnetar.policies.persistence import PersistencePolicies
from magnetar.policies.tenant import TenantInfo

__all__ = [
    "AUTH_ACTIONS",
    "BACKLOG_QUOTA_POLICIES",
    "BACKLOG_QUOTA_TYPES",
    "SCHEMA_COMPATIBILITY_STRATEGIES",
    "TOPIC_TYPES",
    "AuthPolicies",
    "AutoTopicCreationOverride",
    "BacklogQuota",
    "ClusterData",
    "DelayedDeliveryPolicies",
    "InvalidPolicies",
    "MessageIdData",
    "PersistencePolicies",
    "Policies",
    "RetentionPolicies",
    "TenantInfo",
    "dumps",
    "loads",
    "parse_actions",
]
