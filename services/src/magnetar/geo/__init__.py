"""Geo-replication's link to remote clusters: the broker's replicators on ``magnetar.client``.

The broker declares what a replicator needs (:mod:`magnetar.broker.replication.remote`) and
never imports the client; :class:`ClientRemoteClusters` implements it here, above both, and the
command line (``magnetar broker``, ``magnetar standalone``) hands it to the broker.
"""

from magnetar.geo.errors import RemoteClusterUnusable
from magnetar.geo.remote_clusters import ClientRemoteClusters

__all__ = ["ClientRemoteClusters", "RemoteClusterUnusable"]
