"""The etcd backend, for a cluster: ``etcd://host:port[,host:port...]``.

The only module of this package that imports ``etcd3aio``. Mapping of the store's contract:

* version: etcd's per-key ``version`` is 1 at creation, +1 per put; ours is 0-based, so
  ``ours = etcd_version - 1``. CAS is a transaction comparing ``version`` (``create_revision
  == 0`` for create). A put keeps the key's lease (``ignore_lease``), so an ephemeral key
  stays ephemeral when rewritten, as in ZooKeeper.
* session: an etcd lease (TTL rounded up to whole seconds; etcd may raise it to its minimum),
  renewed by :class:`~magnetar.metadata.session.SessionKeeper`; ephemeral keys carry it.
* watch: an etcd watch by prefix from the revision after the last one this client has seen, so
  ``list`` followed by ``watch`` misses nothing (it may also replay changes other clients made
  between that revision and the ``watch`` call: a superset, never a gap). A compacted start
  revision or a cancelled watch ends the watch with :class:`WatchOverflow` (re-list and
  re-watch) rather than a gap.

Every call has a deadline (``call_timeout_s``). Mutations are sent once (a retried CAS could
report a conflict with itself); reads are retried by etcd3aio on transient errors. gRPC and
etcd3aio errors become :class:`StoreUnavailable` (or :class:`SessionExpired` for a lost lease).

Concurrency: one client per store; every method runs on the store's loop. Each watch has one
pump task, owned by the store and cancelled on close.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import ipaddress
import math
import socket
from collections.abc import Callable, Iterator
from typing import Any

import etcd3aio
import grpc

from magnetar.cancellation import cancel_and_wait
from magnetar.metadata.errors import (
    BadVersion,
    KeyExists,
    NotFound,
    SessionExpired,
    StoreClosed,
    StoreUnavailable,
    WatchOverflow,
)
from magnetar.metadata.session import SessionKeeper
from magnetar.metadata.store import (
    EventType,
    SessionEvent,
    Versioned,
    Watch,
    WatchEvent,
    check_key,
    check_prefix,
    check_value,
    check_version,
)
from magnetar.metadata.watch import WatchChannel
from magnetar.telemetry import get_logger
from magnetar.tls import PemFiles

log = get_logger(__name__)

# etcd rpc.proto Compare.CompareResult and mvccpb Event.EventType values.
_EQUAL = 0
_GREATER = 1
_EVENT_DELETE = 1

DEFAULT_CALL_TIMEOUT_S = 5.0


@contextlib.contextmanager
def _wrapped(operation: str, key: str) -> Iterator[None]:
    """Turn etcd3aio/gRPC/deadline errors into metadata errors."""
    try:
        yield
    except grpc.aio.AioRpcError as exc:
        details = exc.details() or ""
        if exc.code() == grpc.StatusCode.NOT_FOUND and "lease" in details:
            raise SessionExpired(f"etcd {operation} {key!r}: {details}") from exc
        raise StoreUnavailable(f"etcd {operation} {key!r}: {exc.code().name} {details}") from exc
    except etcd3aio.EtcdError as exc:
        raise StoreUnavailable(f"etcd {operation} {key!r}: {exc}") from exc
    except TimeoutError as exc:
        raise StoreUnavailable(f"etcd {operation} {key!r}: deadline exceeded") from exc


async def resolve_endpoints(endpoints: builtins.list[str]) -> builtins.list[str]:
    """``host:port`` endpoints as ``IPv4:port``, resolved now.

    etcd3aio dials one gRPC ``ipv4:`` target, which takes IPv4 literals only, so a host name
    (a Kubernetes Service or pod DNS name) would never connect. Each name becomes all of its
    IPv4 addresses; a name that does not resolve yet (an etcd pod not yet scheduled) is skipped
    while another endpoint resolves. The addresses are fixed for the store's life: an etcd
    member that comes back on a new address is reached again after the process restarts.
    """
    loop = asyncio.get_running_loop()
    resolved: builtins.list[str] = []
    unresolved: builtins.list[str] = []
    for endpoint in endpoints:
        host, _, port = endpoint.rpartition(":")
        try:
            addresses = [str(ipaddress.IPv4Address(host))]
        except ValueError:
            try:
                infos = await loop.getaddrinfo(
                    host, int(port), family=socket.AF_INET, type=socket.SOCK_STREAM
                )
            except OSError as exc:
                unresolved.append(f"{host} ({exc})")
                continue
            addresses = [str(info[4][0]) for info in infos]
        for address in addresses:
            if f"{address}:{port}" not in resolved:
                resolved.append(f"{address}:{port}")
    if not resolved:
        raise StoreUnavailable(f"no etcd endpoint resolves to an IPv4 address: {unresolved}")
    if unresolved:
        log.warning("metadata_etcd_unresolved", unresolved=unresolved, using=resolved)
    return resolved


class EtcdMetadataStore:
    """A MetadataStore over an etcd cluster; see the module docstring."""

    def __init__(
        self,
        client: Any,
        *,
        session_timeout_s: float,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        self._client = client
        self._timeout = call_timeout_s
        self._ttl = max(1, math.ceil(session_timeout_s))
        self._revision = 0
        self._closed = False
        self._pumps: dict[WatchChannel, asyncio.Task[None]] = {}
        self._session = SessionKeeper(
            backend="etcd", grant=self._grant, renew=self._renew, revoke=self._revoke
        )

    @classmethod
    async def open(
        cls,
        endpoints: builtins.list[str],
        *,
        session_timeout_s: float = 10.0,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        tls: PemFiles | None = None,
    ) -> EtcdMetadataStore:
        """Connect to ``endpoints`` (host names resolved first: etcd3aio dials addresses); with
        ``tls``, over TLS (etcd3aio's ``ca_cert``, ``cert_chain`` and ``cert_key``), so the
        server certificate must name the resolved address (an IP SAN)."""
        addresses = await resolve_endpoints(endpoints)
        pem = PemFiles() if tls is None else tls  # no ca_cert: etcd3aio's plain channel
        client = etcd3aio.Etcd3Client(
            addresses, ca_cert=pem.trust_certs, cert_chain=pem.cert_chain, cert_key=pem.private_key
        )
        await client.connect()
        store = cls(client, session_timeout_s=session_timeout_s, call_timeout_s=call_timeout_s)
        try:
            await store.list_keys("/cluster/")  # reachability; the revision watches start at
            await store._session.start()
        except BaseException:
            await client.close()
            raise
        log.info("metadata_etcd_opened", endpoints=",".join(endpoints), ttl=store._ttl)
        return store

    # ---------------------------------------------------------------- plumbing

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("metadata store is closed")

    def _seen(self, response: Any) -> None:
        self._revision = max(self._revision, response.header.revision)

    async def _txn(
        self, key: str, compare: list[Any], success: list[Any], failure: list[Any]
    ) -> Any:
        self._check_open()
        with _wrapped("txn", key):
            response = await self._client.kv.txn(
                compare, success, failure, timeout=self._timeout, max_attempts=1
            )
        self._seen(response)
        return response

    def _put_op(self, key: str, value: bytes, *, keep_lease: bool, lease: int = 0) -> Any:
        op = self._client.kv.txn_op_put(key, value, lease=lease, prev_kv=keep_lease)
        op.request_put.ignore_lease = keep_lease
        return op

    # ---------------------------------------------------------------- session

    async def _grant(self) -> tuple[int, float]:
        with _wrapped("lease grant", ""):
            response = await self._client.lease.grant(self._ttl, timeout=self._timeout)
        return int(response.ID), float(response.TTL)

    async def _renew(self, lease_id: int) -> bool:
        with _wrapped("lease keep-alive", ""):
            stream = self._client.lease.keep_alive(lease_id)
            try:
                async with asyncio.timeout(self._timeout):
                    async for response in stream:
                        return bool(response.TTL > 0)
            finally:
                stream.cancel()
        return False

    async def _revoke(self, lease_id: int) -> None:
        try:
            with _wrapped("lease revoke", ""):
                await self._client.lease.revoke(lease_id, timeout=self._timeout, max_attempts=1)
        except SessionExpired:
            pass  # already gone

    # ---------------------------------------------------------------- key-value

    async def get(self, key: str) -> Versioned | None:
        self._check_open()
        check_key(key)
        with _wrapped("get", key):
            response = await self._client.kv.get(key, timeout=self._timeout)
        self._seen(response)
        if not response.kvs:
            return None
        kv = response.kvs[0]
        return Versioned(bytes(kv.value), kv.version - 1)

    async def put(self, key: str, value: bytes, expected_version: int | None = None) -> int:
        check_key(key), check_value(value), check_version(expected_version)
        kv = self._client.kv
        if expected_version is None:
            response = await self._txn(
                key,
                [kv.txn_compare_version(key, 0, result=_GREATER)],
                [self._put_op(key, value, keep_lease=True)],
                [self._put_op(key, value, keep_lease=False)],
            )
            if not response.succeeded:
                return 0
            return int(response.responses[0].response_put.prev_kv.version)
        response = await self._txn(
            key,
            [kv.txn_compare_version(key, expected_version + 1)],
            [self._put_op(key, value, keep_lease=True)],
            [kv.txn_op_get(key)],
        )
        if not response.succeeded:
            found = response.responses[0].response_range.kvs
            raise BadVersion(key, expected_version, found[0].version - 1 if found else None)
        return expected_version + 1

    async def create(self, key: str, value: bytes, *, ephemeral: bool = False) -> int:
        check_key(key), check_value(value)
        lease = self._session.require_lease() if ephemeral else 0
        kv = self._client.kv
        response = await self._txn(
            key,
            [kv.txn_compare_create_revision(key, 0)],
            [self._put_op(key, value, keep_lease=False, lease=lease)],
            [],
        )
        if not response.succeeded:
            raise KeyExists(key)
        return 0

    async def delete(self, key: str, expected_version: int | None = None) -> None:
        check_key(key), check_version(expected_version)
        kv = self._client.kv
        compare = (
            kv.txn_compare_version(key, 0, result=_GREATER)
            if expected_version is None
            else kv.txn_compare_version(key, expected_version + 1)
        )
        response = await self._txn(key, [compare], [kv.txn_op_delete(key)], [kv.txn_op_get(key)])
        if not response.succeeded:
            found = response.responses[0].response_range.kvs
            if not found or expected_version is None:
                raise NotFound(key)
            raise BadVersion(key, expected_version, found[0].version - 1)

    async def _range(self, prefix: str, *, keys_only: bool) -> Any:
        self._check_open()
        check_prefix(prefix)
        with _wrapped("list", prefix):
            response = await self._client.kv.get(
                prefix,
                etcd3aio.prefix_range_end(prefix.encode()),
                sort_order=etcd3aio.SortOrder.ASCEND,
                sort_target=etcd3aio.SortTarget.KEY,
                keys_only=keys_only,
                timeout=self._timeout,
            )
        self._seen(response)
        return response

    async def list(self, prefix: str) -> builtins.list[tuple[str, Versioned]]:
        response = await self._range(prefix, keys_only=False)
        return [
            (kv.key.decode(), Versioned(bytes(kv.value), kv.version - 1)) for kv in response.kvs
        ]

    async def list_keys(self, prefix: str) -> builtins.list[str]:
        response = await self._range(prefix, keys_only=True)
        return [kv.key.decode() for kv in response.kvs]

    # ---------------------------------------------------------------- watch

    def watch(self, prefix: str) -> Watch:
        self._check_open()
        check_prefix(prefix)
        channel = WatchChannel(prefix, on_close=self._stop_pump)
        start = self._revision + 1
        self._pumps[channel] = asyncio.create_task(
            self._pump(channel, start), name=f"metadata-etcd-watch-{prefix}"
        )
        return channel

    async def _pump(self, channel: WatchChannel, start_revision: int) -> None:
        prefix = channel.prefix
        try:
            stream = self._client.watch.watch(
                prefix, etcd3aio.prefix_range_end(prefix.encode()), start_revision=start_revision
            )
            async for response in stream:
                if response.compact_revision > 0 or response.canceled:
                    channel.fail(
                        WatchOverflow(
                            f"etcd watch on {prefix!r} lost events (compacted to "
                            f"{response.compact_revision}); re-list and re-watch"
                        )
                    )
                    return
                for event in response.events:
                    kv = event.kv
                    if event.type == _EVENT_DELETE:
                        channel.offer(WatchEvent(EventType.DELETE, kv.key.decode(), None, None))
                    else:
                        channel.offer(
                            WatchEvent(
                                EventType.PUT, kv.key.decode(), bytes(kv.value), kv.version - 1
                            )
                        )
        except (grpc.aio.AioRpcError, etcd3aio.EtcdError) as exc:
            log.warning("metadata_etcd_watch_failed", prefix=prefix, error=str(exc))
            channel.fail(StoreUnavailable(f"etcd watch on {prefix!r} failed: {exc}"))
            return
        channel.fail(StoreUnavailable(f"etcd watch stream on {prefix!r} ended"))

    async def _stop_pump(self, channel: WatchChannel) -> None:
        task = self._pumps.pop(channel, None)
        await cancel_and_wait(task)

    # ---------------------------------------------------------------- session API

    def add_session_listener(self, listener: Callable[[SessionEvent], None]) -> None:
        self._session.add_listener(listener)

    def suspend_keepalive(self) -> None:
        """For tests/fault injection: stop renewing the lease, as a hung process would."""
        self._session.suspend()

    def resume_keepalive(self) -> None:
        """For tests/fault injection: renew again; a new lease is granted if the old expired."""
        self._session.resume()

    async def close(self) -> None:
        if self._closed:
            return
        try:
            for channel in builtins.list(self._pumps):
                await channel.close()
            await self._session.close()
        finally:
            self._closed = True
            await self._client.close()
