"""The annotations and labels the operator reads and writes (one place for every key).

Pure constants and one parser; safe from anywhere.
"""

from __future__ import annotations

GROUP = "pulsar.magnetar.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

# On a PulsarCluster: "true" stops every change to its children until removed.
PAUSE = f"{GROUP}/pause-reconciliation"
# On a PulsarCluster: any new value rolls every pod, in the safe order (etcd excluded).
MANUAL_ROLL = f"{GROUP}/manual-rolling-update"
# On pod templates: a hash of the template, so a changed spec is a changed template.
SPEC_HASH = f"{GROUP}/spec-hash"
# On pod templates: a hash of the ConfigMap data the pods read as environment.
CONFIG_HASH = f"{GROUP}/config-hash"
# The kopf finalizer and progress-storage prefix (not kopf's default kopf.zalando.org).
FINALIZER = f"{GROUP}/finalizer"
PREFIX = GROUP

NAME = "app.kubernetes.io/name"
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
MANAGED_BY = "app.kubernetes.io/managed-by"
PART_OF = "app.kubernetes.io/part-of"
OPERATOR = "magnetar-operator"


def is_true(value: str | None) -> bool:
    """An annotation switched on: ``true``, ``yes``, ``1`` or ``on`` (any case)."""
    return (value or "").strip().lower() in {"true", "yes", "1", "on"}
