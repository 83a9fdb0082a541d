"""A local cluster's status: each member's health, the one-line summary and the status table.

Pure values and text, no I/O: :mod:`magnetar.localcluster.probe` observes the processes and
ports and builds the :class:`MemberStatus` values, :mod:`magnetar.localcluster.cluster_metadata`
reads the bundle owners and the under-replicated ledgers; this module only counts and formats
them.

Called by :mod:`magnetar.localcluster.supervisor` (the foreground status line) and by
``magnetar cluster status``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from magnetar.ledger.replication import UnderReplicatedLedger
from magnetar.localcluster.layout import START_ORDER, ClusterLayout, Member, Role
from magnetar.localcluster.owners import BundleOwner


class Health(enum.StrEnum):
    HEALTHY = "healthy"  # the process runs and answers its probe
    UNRESPONSIVE = "unresponsive"  # the process runs but its probe fails
    DOWN = "down"  # no process


@dataclass(frozen=True)
class MemberStatus:
    member: Member
    health: Health

    @property
    def up(self) -> bool:
        return self.health is Health.HEALTHY


_PLURAL = {
    Role.ETCD: "etcd",
    Role.BOOKIE: "bookies",
    Role.BROKER: "brokers",
    Role.PROXY: "proxy",
    Role.AUTORECOVERY: "autorecovery",
}


def all_up(statuses: Sequence[MemberStatus]) -> bool:
    return bool(statuses) and all(s.up for s in statuses)


def status_line(statuses: Sequence[MemberStatus]) -> str:
    """``6/6 members up (etcd 1/1, bookies 3/3, brokers 2/2)``."""
    parts = []
    for role in START_ORDER:
        of_role = [s for s in statuses if s.member.role is role]
        if not of_role and role in (Role.PROXY, Role.AUTORECOVERY):
            continue  # an optional role: not shown when the cluster has none
        parts.append(f"{_PLURAL[role]} {sum(s.up for s in of_role)}/{len(of_role)}")
    up = sum(s.up for s in statuses)
    return f"{up}/{len(statuses)} members up ({', '.join(parts)})"


def status_table(statuses: Sequence[MemberStatus]) -> list[str]:
    """One header and one row per member: name, role, pid, ports, health."""
    rows = [("MEMBER", "ROLE", "PID", "PORTS", "HEALTH")]
    for s in statuses:
        m = s.member
        pid = "-" if m.pid is None or s.health is Health.DOWN else str(m.pid)
        rows.append((m.name, m.role.value, pid, ",".join(map(str, m.ports)), s.health.value))
    return _aligned(rows)


def owners_table(owners: Sequence[BundleOwner] | None) -> list[str]:
    """One header and one row per owned bundle: namespace, bundle, owner's service URL."""
    if owners is None:
        return ["bundle owners: the metadata store did not answer"]
    if not owners:
        return ["bundle owners: none (a bundle gets an owner at its first lookup)"]
    rows = [("NAMESPACE", "BUNDLE", "OWNER")]
    rows += [(o.namespace, o.bundle, o.broker_url) for o in owners]
    return _aligned(rows)


UNDER_REPLICATED_SHOWN = 10
"""How many under-replicated ledgers ``status`` lists by id (it counts them all)."""


def under_replicated_table(
    ledgers: Sequence[UnderReplicatedLedger] | None, limit: int = UNDER_REPLICATED_SHOWN
) -> list[str]:
    """The count, then one row per ledger (up to ``limit``): its id and its missing bookies."""
    if ledgers is None:
        return ["under-replicated ledgers: the metadata store did not answer"]
    lines = [f"under-replicated ledgers: {len(ledgers)}"]
    if not ledgers:
        return lines
    rows = [("LEDGER", "MISSING BOOKIES")]
    rows += [(str(u.ledger_id), ",".join(u.missing)) for u in ledgers[:limit]]
    lines += _aligned(rows)
    if len(ledgers) > limit:
        lines.append(f"... and {len(ledgers) - limit} more")
    return lines


def _aligned(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def urls_text(layout: ClusterLayout) -> list[str]:
    """The URLs a user connects to: the front door's first (the proxy's, when there is one)."""
    lines = [
        f"service URL:  {layout.service_url}",
        f"admin URL:    {layout.admin_url}",
        f"metadata URL: {layout.metadata_url}",
    ]
    if layout.proxy is not None:
        lines += [
            f"brokers (behind the proxy): {layout.brokers_service_url}",
            f"first broker's admin URL:   {layout.brokers_admin_url}",
        ]
    return lines
