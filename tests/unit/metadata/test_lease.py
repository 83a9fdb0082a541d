"""The sans-I/O lease table: grant, renew, expiry, attached keys; no clock, no loop."""

from __future__ import annotations

import pytest

from magnetar.metadata.lease import LeaseTable


def test_lease_lives_until_its_deadline_unless_renewed() -> None:
    table = LeaseTable()
    lease = table.grant(2.0, now=100.0)
    assert table.alive(lease, 101.9)
    assert table.keepalive(lease, 101.0)
    assert table.alive(lease, 102.9)  # renewed at 101 -> deadline 103
    assert table.due(102.9) == []
    assert table.due(103.0) == [lease]
    assert not table.keepalive(lease, 103.0)  # too late: the server already expired it


def test_revoke_returns_the_attached_keys_once() -> None:
    table = LeaseTable()
    lease = table.grant(1.0, now=0.0)
    table.attach(lease, "/a")
    table.attach(lease, "/b")
    table.detach(lease, "/b")
    assert table.revoke(lease) == {"/a"}
    assert table.revoke(lease) == set()
    assert not table.alive(lease, 0.0)
    assert len(table) == 0


def test_due_lists_oldest_deadline_first_and_rejects_bad_ttl() -> None:
    table = LeaseTable()
    late = table.grant(5.0, now=0.0)
    early = table.grant(1.0, now=0.0)
    assert table.due(10.0) == [early, late]
    with pytest.raises(ValueError, match="ttl"):
        table.grant(0, now=0.0)
