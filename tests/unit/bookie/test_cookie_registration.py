"""Cookies and registration against the in-memory metadata store."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from magnetar.bookie.cookie import verify_or_create_cookie
from magnetar.bookie.errors import CookieMismatch
from magnetar.bookie.registration import Registration
from magnetar.ids import BookieId
from magnetar.metadata import MetadataStore, keys
from magnetar.metadata.factory import open_store
from magnetar.wire import ledger_pb2

BID = BookieId("bookie-1")


@pytest.fixture
async def store() -> AsyncIterator[MetadataStore]:
    s = await open_store(f"memory://{uuid.uuid4().hex}", session_timeout_s=1.0)
    yield s
    await s.close()


async def check(store: MetadataStore, data_dir: Path, bookie_id: str = BID) -> None:
    await verify_or_create_cookie(
        store, BookieId(bookie_id), data_dir, data_dir / "journal", data_dir / "ledgers"
    )


async def test_first_start_creates_then_verifies(store: MetadataStore, tmp_path: Path) -> None:
    await check(store, tmp_path)
    assert (tmp_path / "cookie").exists()
    remote = await store.get(keys.bookie_cookie(BID))
    assert remote is not None
    instance = await store.get(keys.CLUSTER_INSTANCE_ID)
    assert instance is not None
    cookie = ledger_pb2.BookieCookie.FromString(remote.value)
    assert (cookie.bookie_id, cookie.instance_id) == (BID, instance.value.decode())
    await check(store, tmp_path)  # a restart verifies


async def test_wiped_data_dir(store: MetadataStore, tmp_path: Path) -> None:
    await check(store, tmp_path)
    (tmp_path / "cookie").unlink()
    with pytest.raises(CookieMismatch, match="has a cookie in metadata"):
        await check(store, tmp_path)


async def test_data_dir_of_another_bookie(store: MetadataStore, tmp_path: Path) -> None:
    await check(store, tmp_path)
    with pytest.raises(CookieMismatch, match="belongs to bookie 'bookie-1'"):
        await check(store, tmp_path, "bookie-2")


async def test_data_dir_of_another_cluster(store: MetadataStore, tmp_path: Path) -> None:
    await check(store, tmp_path)
    other = await open_store(f"memory://{uuid.uuid4().hex}")
    try:
        with pytest.raises(CookieMismatch, match="cluster instance"):
            await check(other, tmp_path)
    finally:
        await other.close()


async def test_moved_directories(store: MetadataStore, tmp_path: Path) -> None:
    await check(store, tmp_path / "a")
    (tmp_path / "a").rename(tmp_path / "b")
    with pytest.raises(CookieMismatch, match="directories moved"):
        await check(store, tmp_path / "b")


async def test_a_journal_on_its_own_volume_holds_a_cookie_copy_that_must_match(
    store: MetadataStore, tmp_path: Path
) -> None:
    data, journal, ledgers = tmp_path / "data", tmp_path / "journal-volume", tmp_path / "ledgers"

    async def start(journal_dir: Path = journal) -> None:
        await verify_or_create_cookie(store, BID, data, journal_dir, ledgers)

    await start()
    assert (journal / "cookie").read_bytes() == (data / "cookie").read_bytes()
    assert (ledgers / "cookie").exists()
    await start()  # a restart verifies every copy
    with pytest.raises(CookieMismatch, match="directories moved"):
        await start(tmp_path / "another-volume")
    (journal / "cookie").unlink()  # the journal volume came back empty (replaced, unmounted)
    with pytest.raises(CookieMismatch, match=f"the journal dir {journal} is empty"):
        await start()
    (journal / "cookie").write_bytes(b"")  # another bookie's (here: an empty one)
    with pytest.raises(CookieMismatch, match="is not this bookie's"):
        await start()


async def test_a_dir_set_up_before_cookie_copies_gets_one_an_empty_one_is_refused(
    store: MetadataStore, tmp_path: Path
) -> None:
    await check(store, tmp_path)
    for name in ("journal", "ledgers"):
        (tmp_path / name / "cookie").unlink()  # as an earlier release left them
    (tmp_path / "journal" / "00000001.log").write_bytes(b"")
    (tmp_path / "ledgers" / "lost+found").mkdir()  # a fresh volume's: not data
    with pytest.raises(CookieMismatch, match=r"the ledger dir .* is empty"):
        await check(store, tmp_path)
    (tmp_path / "ledgers" / "index").mkdir()
    await check(store, tmp_path)
    assert (tmp_path / "journal" / "cookie").read_bytes() == (tmp_path / "cookie").read_bytes()
    assert (tmp_path / "ledgers" / "cookie").exists()


async def registration_value(store: MetadataStore) -> ledger_pb2.BookieRegistration | None:
    current = await store.get(keys.bookie_available(BID))
    return None if current is None else ledger_pb2.BookieRegistration.FromString(current.value)


async def test_registration_lifecycle(store: MetadataStore) -> None:
    registration = Registration(store, BID, "127.0.0.1:1234")
    task = asyncio.create_task(registration.run())
    try:
        async with asyncio.timeout(5):
            await registration.wait_registered()
        value = await registration_value(store)
        assert value is not None
        assert (value.address, value.read_only) == ("127.0.0.1:1234", False)

        registration.set_read_only(True)
        async with asyncio.timeout(5):
            while (value := await registration_value(store)) is None or not value.read_only:  # noqa: ASYNC110
                await asyncio.sleep(0.02)

        # The session expires (a hung process): the key goes; a new session re-registers it.
        store.suspend_keepalive()  # type: ignore[attr-defined]
        async with asyncio.timeout(5):
            while await registration_value(store) is not None:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        store.resume_keepalive()  # type: ignore[attr-defined]
        async with asyncio.timeout(5):
            while (value := await registration_value(store)) is None:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert value.read_only

        await registration.unregister()
        assert await registration_value(store) is None
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_stale_registration_is_replaced(store: MetadataStore) -> None:
    # A previous process's key, still there because its session has not expired yet.
    await store.create(keys.bookie_available(BID), b"stale", ephemeral=True)
    other = Registration(store, BID, "127.0.0.1:9")
    await other.register()
    value = await registration_value(store)
    assert value is not None
    assert value.address == "127.0.0.1:9"
