"""Port assignment, the restart shape check and the cluster.json round trip, without processes."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from magnetar.localcluster.errors import ClusterShapeChanged
from magnetar.localcluster.layout import (
    START_ORDER,
    Role,
    check_shape,
    layout_from_json,
    layout_to_json,
    plan_layout,
    with_autorecovery,
    with_proxy,
)


def _counter(start: int = 40000) -> Callable[[], int]:
    ports = itertools.count(start)
    return lambda: next(ports)


def test_a_new_cluster_gets_the_pulsar_default_ports_when_free() -> None:
    layout = plan_layout(3, 2, lambda port: True, _counter())
    assert [m.name for m in layout.members] == [
        "etcd", "bookie-1", "bookie-2", "bookie-3", "broker-1", "broker-2",
    ]  # fmt: skip
    assert layout.service_url == "pulsar://127.0.0.1:6650,127.0.0.1:40000"  # every broker
    assert layout.admin_url == "http://127.0.0.1:8080"
    assert layout.metadata_url == "etcd://127.0.0.1:2379"
    assert [m.port for m in layout.by_role(Role.BOOKIE)] == [3181, 3182, 3183]
    assert layout.by_role(Role.BROKER)[1].ports == (40000, 40001)
    assert all(m.pid is None for m in layout.members)


def test_taken_preferred_ports_are_replaced_by_free_ones() -> None:
    taken = {6650, 8080, 2379, 3182}
    layout = plan_layout(3, 1, lambda port: port not in taken, _counter())
    assert layout.first_broker.ports == (40002, 40003)
    assert layout.etcd.ports == (40000, 2380)
    assert [m.port for m in layout.by_role(Role.BOOKIE)] == [3181, 40001, 3183]


def test_no_two_members_share_a_port_even_if_the_system_repeats_one() -> None:
    repeated = iter([50000, 50000, 50001, 50002, 50002, 50003, 50004, 50004, 50005, 50006, 50007])
    layout = plan_layout(1, 2, lambda port: False, lambda: next(repeated))
    ports = [p for m in layout.members for p in m.ports]
    assert sorted(ports) == list(range(50000, 50008))  # etcd, bookie, 2 brokers: 2 ports each


def test_a_cluster_needs_a_bookie_and_a_broker() -> None:
    with pytest.raises(ValueError):
        plan_layout(0, 1, lambda port: True, _counter())
    with pytest.raises(ValueError):
        plan_layout(1, 0, lambda port: True, _counter())


def test_the_state_document_round_trips_with_pids() -> None:
    layout = plan_layout(2, 2, lambda port: True, _counter()).with_pids({"bookie-2": 4242})
    assert layout_from_json(layout_to_json(layout)) == layout
    assert layout.member("bookie-2").pid == 4242
    assert layout.stopped().member("bookie-2").pid is None


@pytest.mark.parametrize(
    "doc",
    [
        {"version": 99, "cluster_name": "x", "members": []},
        {"version": 1, "cluster_name": "x", "members": []},
        {"version": 1, "cluster_name": "x", "members": [{"name": "etcd", "role": "proxy"}]},
    ],
)
def test_a_document_that_is_not_a_cluster_is_refused(doc: dict[str, object]) -> None:
    with pytest.raises((ValueError, KeyError)):
        layout_from_json(doc)


def test_a_restart_keeps_the_stored_shape_unless_told_otherwise() -> None:
    layout = plan_layout(3, 2, lambda port: True, _counter())
    check_shape(layout, None, None, Path("d"))
    check_shape(layout, 3, 2, Path("d"))
    with pytest.raises(ClusterShapeChanged, match="3 bookies and 2 brokers, not 5 and 2"):
        check_shape(layout, 5, None, Path("d"))


def test_members_start_etcd_first_and_the_proxy_last() -> None:
    assert START_ORDER == (Role.ETCD, Role.BOOKIE, Role.BROKER, Role.AUTORECOVERY, Role.PROXY)


def test_a_proxy_takes_the_front_door_ports_and_urls() -> None:
    layout = plan_layout(1, 2, lambda port: True, _counter(), proxy=True)
    assert [m.name for m in layout.members] == ["etcd", "bookie-1", "broker-1", "broker-2", "proxy"]
    proxy = layout.member("proxy")
    assert (proxy.port, proxy.second_port) == (6650, 8080)
    assert 6650 not in layout.member("broker-1").ports
    assert layout.service_url == "pulsar://127.0.0.1:6650"
    assert layout.admin_url == "http://127.0.0.1:8080"
    brokers = ",".join(f"127.0.0.1:{m.port}" for m in layout.by_role(Role.BROKER))
    assert layout.brokers_service_url == f"pulsar://{brokers}"
    assert layout_from_json(layout_to_json(layout)) == layout


def test_a_proxy_added_to_a_stored_cluster_keeps_every_other_port() -> None:
    layout = plan_layout(1, 1, lambda port: True, _counter())
    grown = with_proxy(layout, lambda port: True, _counter(50000))
    assert grown.members[:-1] == layout.members
    assert grown.member("proxy").ports == (50000, 50001)
    assert with_proxy(grown, lambda port: True, _counter(60000)) == grown
    assert layout.service_url == layout.brokers_service_url


def test_autorecovery_joins_once_on_a_port_no_member_uses() -> None:
    layout = plan_layout(1, 1, lambda p: True, iter(range(40000, 40100)).__next__)
    ports = iter([2379, 3181, 45000])  # two taken ones first
    added = with_autorecovery(layout, ports.__next__)
    (member,) = added.by_role(Role.AUTORECOVERY)
    assert member.name == "autorecovery-1"
    assert member.port == 45000
    assert with_autorecovery(added, ports.__next__) == added
    assert layout_from_json(layout_to_json(added)) == added
