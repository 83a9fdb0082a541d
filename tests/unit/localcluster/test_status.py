"""The status line and table: counts per role, and no pid shown for a member that is down."""

from __future__ import annotations

import itertools

from magnetar.localcluster.layout import plan_layout
from magnetar.localcluster.status import (
    Health,
    MemberStatus,
    all_up,
    status_line,
    status_table,
    urls_text,
)


def _statuses(down: set[str] = frozenset(), stuck: set[str] = frozenset()) -> list[MemberStatus]:
    ports = itertools.count(40000)
    layout = plan_layout(3, 2, lambda port: True, lambda: next(ports))
    layout = layout.with_pids({m.name: 1000 + i for i, m in enumerate(layout.members)})
    return [
        MemberStatus(
            m,
            Health.DOWN
            if m.name in down
            else Health.UNRESPONSIVE
            if m.name in stuck
            else Health.HEALTHY,
        )
        for m in layout.members
    ]


def test_the_status_line_counts_members_up_per_role() -> None:
    assert status_line(_statuses()) == "6/6 members up (etcd 1/1, bookies 3/3, brokers 2/2)"
    line = status_line(_statuses(down={"bookie-2"}, stuck={"broker-1"}))
    assert line == "4/6 members up (etcd 1/1, bookies 2/3, brokers 1/2)"


def test_all_up_only_when_every_member_is_healthy() -> None:
    assert all_up(_statuses())
    assert not all_up(_statuses(stuck={"etcd"}))
    assert not all_up([])


def test_the_table_shows_pid_ports_and_health_per_member() -> None:
    rows = status_table(_statuses(down={"bookie-1"}))
    assert rows[0].split() == ["MEMBER", "ROLE", "PID", "PORTS", "HEALTH"]
    assert rows[1].split() == ["etcd", "etcd", "1000", "2379,2380", "healthy"]
    assert rows[2].split() == ["bookie-1", "bookie", "-", "3181,8000", "down"]
    assert rows[5].split() == ["broker-1", "broker", "1004", "6650,8080", "healthy"]
    assert len(rows) == 7


def test_the_urls_a_user_connects_to_are_labelled_one_a_line() -> None:
    ports = itertools.count(40000)
    layout = plan_layout(3, 2, lambda port: True, lambda: next(ports))
    lines = urls_text(layout)
    assert [line.split(":", 1)[0] for line in lines] == ["service URL", "admin URL", "metadata URL"]
    assert [line.split()[-1] for line in lines] == [
        layout.service_url,
        layout.admin_url,
        layout.metadata_url,
    ]
