"""A local cluster's layout: its members, their ports and directories, and the JSON that keeps them.

Pure values and functions, no I/O: :func:`plan_layout` assigns ports once, on a cluster's first
start, asking the caller which ports are free; :func:`check_shape` decides whether a stored
layout may be restarted with the counts the user asked for; :func:`layout_to_json` and
:func:`layout_from_json` are the ``cluster.json`` document, which also records each member's
pid while the cluster runs.

Invariants: member names are unique and stable (``etcd``, ``bookie-1``..``bookie-N``,
``broker-1``..``broker-M``, ``proxy``, ``autorecovery-1`` with ``cluster up --autorecovery``),
and so are their ports: a restart on the same data dir reuses both, so bookie ids, ledger
metadata and the URLs clients were given stay valid. No two members share a port. The service
URL names every broker, the admin URL the first — or, when the cluster has a proxy, both are
the proxy's (clients use the front door). The front door (the proxy if any, else the first
broker) gets 6650/8080, etcd 2379/2380 and bookie ``i``
3181+i-1 (gRPC) and 8000+i-1 (HTTP) when those are free; any other port is one the caller found
free. A proxy added to a stored cluster gets free ports (the brokers keep theirs).

Called by :mod:`magnetar.localcluster.supervisor` (and the unit tests).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from magnetar.localcluster.errors import ClusterShapeChanged

STATE_VERSION = 1
DEFAULT_CLUSTER_NAME = "local"
LOOPBACK = "127.0.0.1"


class Role(enum.StrEnum):
    """What a member runs; also the order members start in (and stop in, reversed)."""

    ETCD = "etcd"
    BOOKIE = "bookie"
    BROKER = "broker"
    PROXY = "proxy"
    AUTORECOVERY = "autorecovery"


START_ORDER: tuple[Role, ...] = (
    Role.ETCD,
    Role.BOOKIE,
    Role.BROKER,
    Role.AUTORECOVERY,
    Role.PROXY,
)


@dataclass(frozen=True)
class Member:
    """One process of the cluster. ``port`` is etcd's client port, a bookie's gRPC port, a
    broker's or the proxy's binary protocol port or autorecovery's HTTP port (``/metrics``,
    health); ``second_port`` is etcd's peer port, a bookie's HTTP port (``/metrics``,
    ``/api/v1/bookie/state``) or a broker's or the proxy's web port (autorecovery has none).
    ``pid`` is the running process, None when stopped."""

    name: str
    role: Role
    port: int
    second_port: int | None = None
    pid: int | None = None

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.port,) if self.second_port is None else (self.port, self.second_port)


@dataclass(frozen=True)
class ClusterLayout:
    cluster_name: str
    members: tuple[Member, ...] = field(default_factory=tuple)

    def by_role(self, role: Role) -> tuple[Member, ...]:
        return tuple(m for m in self.members if m.role is role)

    def member(self, name: str) -> Member:
        for m in self.members:
            if m.name == name:
                return m
        raise KeyError(name)

    @property
    def etcd(self) -> Member:
        return self.by_role(Role.ETCD)[0]

    @property
    def first_broker(self) -> Member:
        return self.by_role(Role.BROKER)[0]

    @property
    def proxy(self) -> Member | None:
        found = self.by_role(Role.PROXY)
        return found[0] if found else None

    @property
    def shape(self) -> tuple[int, int]:
        """(bookies, brokers)."""
        return len(self.by_role(Role.BOOKIE)), len(self.by_role(Role.BROKER))

    @property
    def metadata_url(self) -> str:
        return f"etcd://{LOOPBACK}:{self.etcd.port}"

    @property
    def service_url(self) -> str:
        """The proxy's, when there is one; else every broker, in the clients' multi-host form
        (``pulsar://h:p1,h:p2``): a client looks up through the next one when the first is
        gone."""
        if self.proxy is not None:
            return f"pulsar://{LOOPBACK}:{self.proxy.port}"
        return self.brokers_service_url

    @property
    def brokers_service_url(self) -> str:
        hosts = ",".join(f"{LOOPBACK}:{m.port}" for m in self.by_role(Role.BROKER))
        return f"pulsar://{hosts}"

    @property
    def admin_url(self) -> str:
        """The proxy's web service, else the first broker's: ``magnetar admin`` takes one
        host."""
        if self.proxy is not None:
            return f"http://{LOOPBACK}:{self.proxy.second_port}"
        return self.brokers_admin_url

    @property
    def brokers_admin_url(self) -> str:
        return f"http://{LOOPBACK}:{self.first_broker.second_port}"

    def with_pids(self, pids: Mapping[str, int | None]) -> ClusterLayout:
        """This layout with the given members' pids replaced (the others kept)."""
        members = tuple(replace(m, pid=pids[m.name]) if m.name in pids else m for m in self.members)
        return replace(self, members=members)

    def stopped(self) -> ClusterLayout:
        return self.with_pids({m.name: None for m in self.members})


def plan_layout(
    bookies: int,
    brokers: int,
    is_free: Callable[[int], bool],
    any_free_port: Callable[[], int],
    cluster_name: str = DEFAULT_CLUSTER_NAME,
    *,
    proxy: bool = False,
) -> ClusterLayout:
    """Ports for a new cluster: the preferred port of each slot if ``is_free`` says so, else
    one from ``any_free_port`` (asked again while it returns a port already assigned)."""
    if bookies < 1 or brokers < 1:
        raise ValueError("a cluster needs at least one bookie and one broker")
    assign = _assigner(set(), is_free, any_free_port)
    members = []
    if proxy:  # the front door gets the well-known ports
        members.append(Member("proxy", Role.PROXY, assign(6650), assign(8080)))
    members.append(Member("etcd", Role.ETCD, assign(2379), assign(2380)))
    members += [
        Member(f"bookie-{i}", Role.BOOKIE, assign(3180 + i), assign(7999 + i))
        for i in range(1, bookies + 1)
    ]
    members += [
        Member(
            f"broker-{i}",
            Role.BROKER,
            assign(6650 if i == 1 and not proxy else None),
            assign(8080 if i == 1 and not proxy else None),
        )
        for i in range(1, brokers + 1)
    ]
    members.sort(key=lambda m: START_ORDER.index(m.role))
    return ClusterLayout(cluster_name, tuple(members))


def with_proxy(
    layout: ClusterLayout, is_free: Callable[[int], bool], any_free_port: Callable[[], int]
) -> ClusterLayout:
    """``layout`` with a proxy (the stored one if it has one; else one on free ports)."""
    if layout.proxy is not None:
        return layout
    assign = _assigner({p for m in layout.members for p in m.ports}, is_free, any_free_port)
    proxy = Member("proxy", Role.PROXY, assign(None), assign(None))
    return replace(layout, members=(*layout.members, proxy))


def _assigner(
    taken: set[int], is_free: Callable[[int], bool], any_free_port: Callable[[], int]
) -> Callable[[int | None], int]:
    def assign(preferred: int | None) -> int:
        if preferred is not None and preferred not in taken and is_free(preferred):
            port = preferred
        else:
            port = any_free_port()
            while port in taken:
                port = any_free_port()
        taken.add(port)
        return port

    return assign


def with_autorecovery(layout: ClusterLayout, any_free_port: Callable[[], int]) -> ClusterLayout:
    """``layout`` with one autorecovery member (unchanged if it has one): its HTTP port is one
    ``any_free_port`` gives that no member uses. Once added, it stays in the stored layout."""
    if layout.by_role(Role.AUTORECOVERY):
        return layout
    assign = _assigner({p for m in layout.members for p in m.ports}, lambda _: False, any_free_port)
    member = Member("autorecovery-1", Role.AUTORECOVERY, assign(None))
    return replace(layout, members=(*layout.members, member))


def check_shape(
    layout: ClusterLayout, bookies: int | None, brokers: int | None, data_dir: Path
) -> None:
    """Refuse a restart asking for other counts than the stored cluster has (None: any)."""
    stored = layout.shape
    asked = (stored[0] if bookies is None else bookies, stored[1] if brokers is None else brokers)
    if asked != stored:
        raise ClusterShapeChanged(data_dir, stored, asked)


def layout_to_json(layout: ClusterLayout) -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "cluster_name": layout.cluster_name,
        "members": [
            {
                "name": m.name,
                "role": m.role.value,
                "port": m.port,
                "second_port": m.second_port,
                "pid": m.pid,
            }
            for m in layout.members
        ],
    }


def layout_from_json(doc: Mapping[str, Any]) -> ClusterLayout:
    """The layout ``doc`` describes; ValueError (or KeyError/TypeError) when it is not one."""
    if doc.get("version") != STATE_VERSION:
        raise ValueError(f"unknown version {doc.get('version')!r} (expected {STATE_VERSION})")
    members = tuple(
        Member(
            name=str(m["name"]),
            role=Role(m["role"]),
            port=int(m["port"]),
            second_port=None if m["second_port"] is None else int(m["second_port"]),
            pid=None if m["pid"] is None else int(m["pid"]),
        )
        for m in doc["members"]
    )
    layout = ClusterLayout(str(doc["cluster_name"]), members)
    if len(layout.by_role(Role.ETCD)) != 1 or not layout.by_role(Role.BROKER):
        raise ValueError("a cluster has one etcd and at least one broker")
    if not layout.by_role(Role.BOOKIE):
        raise ValueError("a cluster has at least one bookie")
    if len(layout.by_role(Role.PROXY)) > 1:
        raise ValueError("a cluster has at most one proxy")
    return layout
