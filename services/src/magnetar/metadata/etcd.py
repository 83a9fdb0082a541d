"""The etcd backend (work in progress)."""

from __future__ import annotations

from magnetar.metadata.store import MetadataStore


class EtcdMetadataStore:
    @classmethod
    async def open(cls, endpoints: list[str], *, session_timeout_s: float = 10.0) -> MetadataStore:
        raise NotImplementedError("etcd backend is being written")
