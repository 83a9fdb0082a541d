"""A remote cluster's multi-host service URL, split into the hosts a replicator tries in turn."""

from __future__ import annotations

from magnetar.geo.remote_clusters import service_hosts


def test_a_multi_host_url_gives_one_url_per_host() -> None:
    assert service_hosts("pulsar://h1:6650, h2:6651") == ["pulsar://h1:6650", "pulsar://h2:6651"]


def test_a_single_host_url_is_itself() -> None:
    assert service_hosts("pulsar+ssl://h:6651") == ["pulsar+ssl://h:6651"]
    assert service_hosts("h:6650") == ["h:6650"]
