"""Errors of the link to remote clusters."""

from __future__ import annotations

from magnetar.errors import MagnetarError


class RemoteClusterUnusable(MagnetarError):
    """A remote cluster's registration lacks what a replicator needs (its URLs). Retryable:
    the replicator tries again after a backoff, and picks up an updated registration."""

    retryable = True
