"""The MetadataStore contract, run against every backend: memory, RocksDB and a real etcd.

Each test gets its own key prefix (a uuid), so tests share the session's etcd safely. Stores are
opened through ``open_store`` exactly as services do. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from magnetar.metadata import (
    BadVersion,
    DistributedLock,
    EventType,
    KeyExists,
    LeaderElection,
    MetadataStore,
    NotFound,
    SessionEvent,
    StoreClosed,
    Watch,
    WatchEvent,
    current_leader,
    open_store,
    update,
)
from tests.kit.etcd import EtcdServer

OpenStore = Callable[..., Awaitable[MetadataStore]]
WAIT = 10.0


@pytest.fixture(params=["memory", "rocksdb", "etcd"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return f"memory://contract-{uuid.uuid4().hex}"
    if request.param == "rocksdb":
        return f"rocksdb://{tmp_path / 'meta'}"
    server: EtcdServer = request.getfixturevalue("etcd_server")
    return server.url


@pytest.fixture
async def open_client(store_url: str) -> AsyncIterator[OpenStore]:
    opened: list[MetadataStore] = []

    async def open_one(session_timeout_s: float = 10.0) -> MetadataStore:
        store = await open_store(store_url, session_timeout_s=session_timeout_s)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        await store.close()


@pytest.fixture
async def store(open_client: OpenStore) -> MetadataStore:
    return await open_client()


@pytest.fixture
def p() -> str:
    """This test's own key prefix."""
    return f"/test/{uuid.uuid4().hex}/"


async def take(watch: Watch, n: int) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    async with asyncio.timeout(WAIT):
        async for event in watch:
            out.append(event)
            if len(out) == n:
                break
    return out


async def until_deleted(watch: Watch, key: str) -> None:
    async with asyncio.timeout(WAIT):
        async for event in watch:
            if event.key == key and event.type is EventType.DELETE:
                return


# ---------------------------------------------------------------- key-value semantics


async def test_create_get_put_versions(store: MetadataStore, p: str) -> None:
    key = p + "a"
    assert await store.get(key) is None
    assert await store.create(key, b"v0") == 0
    got = await store.get(key)
    assert got is not None
    assert (got.value, got.version) == (b"v0", 0)
    assert await store.put(key, b"v1") == 1
    assert await store.put(key, b"v2", expected_version=1) == 2
    got = await store.get(key)
    assert got is not None
    assert (got.value, got.version) == (b"v2", 2)


async def test_unconditional_put_creates_at_version_zero(store: MetadataStore, p: str) -> None:
    assert await store.put(p + "new", b"x") == 0
    assert await store.put(p + "new", b"") == 1
    got = await store.get(p + "new")
    assert got is not None
    assert got.value == b""


async def test_cas_conflicts(store: MetadataStore, p: str) -> None:
    key = p + "k"
    with pytest.raises(BadVersion) as missing:
        await store.put(key, b"x", expected_version=0)
    assert missing.value.actual is None
    await store.create(key, b"x")
    with pytest.raises(KeyExists):
        await store.create(key, b"y")
    await store.put(key, b"y")
    with pytest.raises(BadVersion) as stale:
        await store.put(key, b"z", expected_version=0)
    assert (stale.value.expected, stale.value.actual) == (0, 1)
    with pytest.raises(BadVersion):
        await store.delete(key, expected_version=0)
    await store.delete(key, expected_version=1)
    with pytest.raises(NotFound):
        await store.delete(key)
    with pytest.raises(NotFound):
        await store.delete(key, expected_version=1)
    got = await store.get(key)
    assert got is None


async def test_recreated_key_starts_again_at_version_zero(store: MetadataStore, p: str) -> None:
    await store.put(p + "k", b"1")
    await store.put(p + "k", b"2")
    await store.delete(p + "k")
    assert await store.create(p + "k", b"3") == 0


async def test_list_by_prefix_sorted(store: MetadataStore, p: str) -> None:
    for name in ["b", "a", "c/x", "ab", "c/a"]:
        await store.put(p + name, name.encode())
    await store.put(p[:-1] + "-sibling", b"not under the prefix")
    assert await store.list_keys(p) == [p + n for n in ["a", "ab", "b", "c/a", "c/x"]]
    listed = await store.list(p + "c/")
    assert [(k, v.value, v.version) for k, v in listed] == [
        (p + "c/a", b"c/a", 0),
        (p + "c/x", b"c/x", 0),
    ]
    assert await store.list(p + "zzz/") == []


async def test_bad_input_is_rejected(store: MetadataStore, p: str) -> None:
    with pytest.raises(ValueError, match="must start with '/'"):
        await store.get("")
    with pytest.raises(ValueError, match="must start with '/'"):
        await store.put("no-slash", b"x")
    with pytest.raises(TypeError, match="must be bytes"):
        await store.put(p + "k", "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be bytes"):
        await store.create(p + "k", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be str"):
        await store.delete(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expected_version"):
        await store.put(p + "k", b"x", expected_version=-1)
    with pytest.raises(ValueError, match="prefix"):
        await store.list("relative/")
    assert await store.get(p + "k") is None


async def test_closed_store_refuses_calls(open_client: OpenStore, p: str) -> None:
    store = await open_client()
    await store.close()
    with pytest.raises(StoreClosed):
        await store.get(p + "k")
    await store.close()  # idempotent


# ---------------------------------------------------------------- watches


async def test_watch_sees_puts_and_deletes_in_order(open_client: OpenStore, p: str) -> None:
    writer, watcher = await open_client(), await open_client()
    async with watcher.watch(p) as watch:
        await writer.create(p + "a", b"1")
        await writer.put(p + "a", b"2")
        await writer.put(p[:-1] + "-other", b"outside the prefix")
        await writer.create(p + "b", b"3")
        await writer.delete(p + "a")
        events = await take(watch, 4)
    assert [(e.type, e.key, e.value, e.version) for e in events] == [
        (EventType.PUT, p + "a", b"1", 0),
        (EventType.PUT, p + "a", b"2", 1),
        (EventType.PUT, p + "b", b"3", 0),
        (EventType.DELETE, p + "a", None, None),
    ]


async def test_closed_watch_ends_iteration(store: MetadataStore, p: str) -> None:
    watch = store.watch(p)
    await watch.close()
    async with asyncio.timeout(WAIT):
        assert [e async for e in watch] == []


# ---------------------------------------------------------------- sessions and ephemeral keys


async def test_ephemeral_key_vanishes_when_session_closes(open_client: OpenStore, p: str) -> None:
    owner, observer = await open_client(), await open_client()
    await owner.create(p + "eph", b"me", ephemeral=True)
    await owner.create(p + "durable", b"stays")
    async with observer.watch(p) as watch:
        await owner.close()
        await until_deleted(watch, p + "eph")
    assert await observer.get(p + "eph") is None
    assert await observer.get(p + "durable") is not None


async def test_put_keeps_a_key_ephemeral(open_client: OpenStore, p: str) -> None:
    owner, observer = await open_client(), await open_client()
    await owner.create(p + "eph", b"1", ephemeral=True)
    assert await owner.put(p + "eph", b"2") == 1
    await owner.close()
    assert await observer.get(p + "eph") is None


async def test_ephemeral_key_vanishes_on_session_expiry(open_client: OpenStore, p: str) -> None:
    owner = await open_client(session_timeout_s=1.0)
    observer = await open_client()
    events: list[SessionEvent] = []
    expired, reconnected = asyncio.Event(), asyncio.Event()

    def listen(event: SessionEvent) -> None:
        events.append(event)
        if event is SessionEvent.EXPIRED:
            expired.set()
        if event is SessionEvent.RECONNECTED:
            reconnected.set()

    owner.add_session_listener(listen)
    await owner.create(p + "eph", b"me", ephemeral=True)
    async with observer.watch(p) as watch:
        owner.suspend_keepalive()  # type: ignore[attr-defined]
        await until_deleted(watch, p + "eph")
    assert await observer.get(p + "eph") is None
    async with asyncio.timeout(WAIT):
        await expired.wait()
    assert SessionEvent.RECONNECTED not in events  # no new session while "hung"
    owner.resume_keepalive()  # type: ignore[attr-defined]
    async with asyncio.timeout(WAIT):
        await reconnected.wait()
    assert events == [SessionEvent.EXPIRED, SessionEvent.RECONNECTED]
    await owner.create(p + "eph", b"again", ephemeral=True)  # the new session works


# ---------------------------------------------------------------- concurrency, locks, elections


async def test_concurrent_cas_increments_lose_nothing(open_client: OpenStore, p: str) -> None:
    clients = [await open_client(), await open_client()]
    n = 24

    def incr(old: bytes | None) -> bytes:
        return str(int(old or b"0") + 1).encode()

    async with asyncio.timeout(60):
        await asyncio.gather(*(update(clients[i % 2], p + "counter", incr) for i in range(n)))
    got = await clients[0].get(p + "counter")
    assert got is not None
    assert int(got.value) == n
    assert got.version == n - 1


async def test_lock_is_mutually_exclusive(open_client: OpenStore, p: str) -> None:
    clients = [await open_client(), await open_client(), await open_client()]
    name = f"lock-{uuid.uuid4().hex}"
    holders = 0
    max_holders = 0
    order: list[int] = []

    async def worker(i: int) -> None:
        nonlocal holders, max_holders
        lock = DistributedLock(clients[i], name)
        async with lock:
            assert lock.held
            holders += 1
            max_holders = max(max_holders, holders)
            await asyncio.sleep(0.02)
            holders -= 1
            order.append(i)
        assert not lock.held

    async with asyncio.timeout(30):
        await asyncio.gather(*(worker(i) for i in range(3)))
    assert max_holders == 1
    assert sorted(order) == [0, 1, 2]


async def test_lock_passes_on_when_holder_session_expires(open_client: OpenStore) -> None:
    holder_store = await open_client(session_timeout_s=1.0)
    waiter_store = await open_client()
    name = f"lock-{uuid.uuid4().hex}"
    holder = DistributedLock(holder_store, name)
    waiter = DistributedLock(waiter_store, name)
    await holder.acquire()
    assert not await waiter.try_acquire()
    holder_store.suspend_keepalive()  # type: ignore[attr-defined]
    async with asyncio.timeout(WAIT):
        await waiter.acquire()
    assert waiter.held
    assert not holder.held  # the holder learnt it lost the lock with its session
    holder_store.resume_keepalive()  # type: ignore[attr-defined]
    await waiter.release()


def leading(election: LeaderElection) -> bool:
    return election.is_leader


async def test_election_fails_over_on_session_expiry(open_client: OpenStore) -> None:
    store_a = await open_client(session_timeout_s=1.0)
    store_b = await open_client(session_timeout_s=1.0)
    observer = await open_client()
    name = f"election-{uuid.uuid4().hex}"
    a = LeaderElection(store_a, name, b"a")
    b = LeaderElection(store_b, name, b"b")
    try:
        a.start()
        async with asyncio.timeout(WAIT):
            await a.wait_until_leader()
        b.start()
        await asyncio.sleep(0.2)
        assert leading(a)
        assert not leading(b)
        assert await current_leader(observer, name) == b"a"

        store_a.suspend_keepalive()  # type: ignore[attr-defined]
        async with asyncio.timeout(WAIT):
            await b.wait_until_leader()
        assert not leading(a)
        assert await current_leader(observer, name) == b"b"

        store_a.resume_keepalive()  # type: ignore[attr-defined]
        await b.resign()
        async with asyncio.timeout(WAIT):
            await a.wait_until_leader()  # a campaigns again after its new session
        assert await current_leader(observer, name) == b"a"
    finally:
        await a.close()
        await b.close()
    assert await current_leader(observer, name) is None
