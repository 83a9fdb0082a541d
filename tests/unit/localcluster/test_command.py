"""Each member's command line and environment, as the supervisor will spawn them."""

from __future__ import annotations

import itertools
from pathlib import Path

from magnetar.localcluster.command import (
    MAGNETAR_COMMAND,
    log_path,
    member_command,
    member_env,
)
from magnetar.localcluster.layout import ClusterLayout, plan_layout

D = Path("/data/c")


def _layout(bookies: int = 3, brokers: int = 2) -> ClusterLayout:
    ports = itertools.count(40000)
    return plan_layout(bookies, brokers, lambda port: True, lambda: next(ports))


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_etcd_listens_on_its_loopback_ports_with_data_under_its_dir() -> None:
    layout = _layout()
    argv = member_command(layout, layout.etcd, D, "/usr/bin/etcd")
    assert argv[0] == "/usr/bin/etcd"
    assert _flag(argv, "--listen-client-urls") == "http://127.0.0.1:2379"
    assert _flag(argv, "--listen-peer-urls") == "http://127.0.0.1:2380"
    assert _flag(argv, "--data-dir") == str(D / "etcd" / "data")


def test_bookies_and_brokers_are_magnetar_commands_on_the_cluster_metadata() -> None:
    layout = _layout()
    bookie = member_command(layout, layout.member("bookie-2"), D, "etcd")
    assert tuple(bookie[: len(MAGNETAR_COMMAND)]) == MAGNETAR_COMMAND
    assert bookie[len(MAGNETAR_COMMAND)] == "bookie"
    assert _flag(bookie, "--metadata") == "etcd://127.0.0.1:2379"
    assert _flag(bookie, "--port") == "3182"
    assert _flag(bookie, "--bookie-id") == "bookie-2"
    assert _flag(bookie, "--data-dir") == str(D / "bookie-2" / "data")
    broker = member_command(layout, layout.first_broker, D, "etcd")
    assert broker[len(MAGNETAR_COMMAND)] == "broker"
    assert (_flag(broker, "--broker-port"), _flag(broker, "--web-port")) == ("6650", "8080")
    assert _flag(broker, "--metadata") == "etcd://127.0.0.1:2379"
    assert log_path(D, layout.first_broker) == D / "logs" / "broker-1.log"


def test_brokers_name_the_cluster_and_fit_quorums_to_fewer_than_three_bookies() -> None:
    layout = _layout(bookies=3)
    assert member_env(layout, layout.first_broker) == {"MAGNETAR_BROKER_CLUSTER_NAME": "local"}
    assert member_env(layout, layout.etcd) == {}
    small = _layout(bookies=1)
    env = member_env(small, small.first_broker)
    assert env["MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE"] == "1"
    assert env["MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM"] == "1"
    assert env["MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM"] == "1"
