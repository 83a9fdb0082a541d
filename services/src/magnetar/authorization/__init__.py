"""Authorization: what an authenticated role may do (Pulsar's model, as pure rules).

:mod:`.rules` holds the decisions; :mod:`.errors` the one error. The broker loads the tenant
and namespace policies they read (``magnetar.broker.authorization``).
"""

from magnetar.authorization.errors import NotAuthorized
from magnetar.authorization.rules import (
    CONSUME,
    LOOKUP,
    PRODUCE,
    AuthorizationRules,
    Caller,
    may_administer_tenant,
    may_use_namespace,
    may_use_topic,
    role_may_use_topic,
    topic_actions,
    topic_grants,
)

__all__ = [
    "CONSUME",
    "LOOKUP",
    "PRODUCE",
    "AuthorizationRules",
    "Caller",
    "NotAuthorized",
    "may_administer_tenant",
    "may_use_namespace",
    "may_use_topic",
    "role_may_use_topic",
    "topic_actions",
    "topic_grants",
]
