"""resolve_endpoints: etcd3aio dials IPv4 literals only, so host names become addresses first
(loopback names only here: no lookup leaves the machine)."""

from __future__ import annotations

from magnetar.metadata.etcd import resolve_endpoints


async def test_literals_pass_through_and_names_resolve_without_duplicates() -> None:
    resolved = await resolve_endpoints(["127.0.0.1:2379", "localhost:2379", "127.0.0.1:2380"])
    assert resolved == ["127.0.0.1:2379", "127.0.0.1:2380"]
