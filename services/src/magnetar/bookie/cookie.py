"""Bookie cookies: tie a bookie id to its data dir and to the cluster, as BookKeeper does.

On first start a bookie writes a ``BookieCookie`` (bookie id, cluster instance id, journal and
ledger dirs) both into ``<data dir>/cookie`` and into the metadata store at
``keys.bookie_cookie(id)``. On every later start both must exist and agree with each other and
with the current configuration. This catches, before any data is served:

* a wiped or replaced data dir under a bookie id that the cluster knows (its entries are gone:
  clients must not count it as holding them),
* a data dir that belongs to another bookie id or another cluster.

* a journal dir or ledger dir (often a volume of its own) that was wiped or replaced: as
  BookKeeper does, each holds a copy of the cookie, which must match; an empty one is refused
  (a bookie whose journal volume came back empty after a crash would otherwise lose the
  acknowledged entries only its journal held). A dir that holds data but no copy was set up
  by an earlier release, which wrote none: it gets its copy at that start.

The cluster instance id lives at ``keys.CLUSTER_INSTANCE_ID`` (created if absent with a uuid).

Concurrency: called once from the entry point before the bookie serves; file I/O is small and
runs in the default executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path

from magnetar.bookie.errors import CookieMismatch, StorageUnavailable
from magnetar.bookie.fileio import replace_durably
from magnetar.ids import BookieId
from magnetar.metadata import KeyExists, MetadataStore, keys
from magnetar.telemetry import get_logger
from magnetar.wire import ledger_pb2

log = get_logger(__name__)

COOKIE_FILE = "cookie"
LAYOUT_VERSION = 1


async def cluster_instance_id(store: MetadataStore) -> str:
    """The cluster's instance id, created (uuid4) by whoever gets there first."""
    current = await store.get(keys.CLUSTER_INSTANCE_ID)
    if current is None:
        with contextlib.suppress(KeyExists):
            await store.create(keys.CLUSTER_INSTANCE_ID, str(uuid.uuid4()).encode())
        current = await store.get(keys.CLUSTER_INSTANCE_ID)
        if current is None:
            raise CookieMismatch("the cluster instance id vanished while it was being created")
    return current.value.decode()


def _read_local(path: Path) -> ledger_pb2.BookieCookie | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    cookie = ledger_pb2.BookieCookie()
    cookie.ParseFromString(data)
    return cookie


def _write_local(path: Path, cookie: ledger_pb2.BookieCookie) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_durably(path, cookie.SerializeToString())
    except OSError as exc:
        raise StorageUnavailable(
            f"cannot write the bookie cookie {path} ({exc.strerror or exc}): check the dir, "
            "its volume (mounted? read-only? full?) and the process's permissions"
        ) from exc


def _describe(cookie: ledger_pb2.BookieCookie) -> str:
    return (
        f"bookie id {cookie.bookie_id!r}, cluster instance {cookie.instance_id!r}, "
        f"journal dir {cookie.journal_dir!r}, ledger dirs {list(cookie.ledger_dirs)!r}"
    )


def _storage_dirs(journal_dir: Path, ledger_dir: Path) -> list[tuple[str, Path]]:
    return [("journal", journal_dir), ("ledger", ledger_dir)]


def _holds_anything(directory: Path) -> bool:
    """Whether ``directory`` holds anything but what a fresh file system has (``lost+found``
    at the root of an ext4 volume)."""
    try:
        return any(path.name != "lost+found" for path in directory.iterdir())
    except FileNotFoundError:
        return False


async def _verify_copy(
    what: str, directory: Path, cookie: ledger_pb2.BookieCookie, bookie_id: BookieId
) -> None:
    """The copy in ``directory`` must be ``cookie``. A dir that holds files but no copy was
    set up before copies were written: it gets one now."""
    loop = asyncio.get_running_loop()
    copy = await loop.run_in_executor(None, _read_local, directory / COOKIE_FILE)
    if copy is None:
        if not await loop.run_in_executor(None, _holds_anything, directory):
            raise CookieMismatch(
                f"the {what} dir {directory} is empty (no cookie, no data), but bookie "
                f"{bookie_id!r} was set up with it ({_describe(cookie)}): the dir was wiped, "
                "replaced or is not mounted, and entries only it held may be lost. Mount the "
                "bookie's original volume there; if its data is truly lost, decommission the "
                "bookie id and start under a new --bookie-id with empty dirs."
            )
        await loop.run_in_executor(None, _write_local, directory / COOKIE_FILE, cookie)
        log.info("bookie_cookie_copy_written", directory=str(directory))
    elif copy != cookie:
        raise CookieMismatch(
            f"the cookie in the {what} dir {directory} ({_describe(copy)}) is not this "
            f"bookie's ({_describe(cookie)}): the dir belongs to another bookie."
        )


async def verify_or_create_cookie(
    store: MetadataStore,
    bookie_id: BookieId,
    data_dir: Path,
    journal_dir: Path,
    ledger_dir: Path,
) -> ledger_pb2.BookieCookie:
    """Check the cookie in ``data_dir`` against metadata, writing both on a first start.

    Pass absolute directories: they are recorded and compared as given.

    Raises :class:`CookieMismatch` with what is wrong and how to fix it, and
    :class:`StorageUnavailable` when a cookie cannot be written.
    """
    loop = asyncio.get_running_loop()
    instance_id = await cluster_instance_id(store)
    expected = ledger_pb2.BookieCookie(
        bookie_id=bookie_id,
        instance_id=instance_id,
        journal_dir=str(journal_dir),
        ledger_dirs=[str(ledger_dir)],
        layout_version=LAYOUT_VERSION,
    )
    path = data_dir / COOKIE_FILE
    local = await loop.run_in_executor(None, _read_local, path)
    key = keys.bookie_cookie(bookie_id)
    remote_v = await store.get(key)
    remote = None
    if remote_v is not None:
        remote = ledger_pb2.BookieCookie()
        remote.ParseFromString(remote_v.value)

    if local is not None and local.bookie_id != bookie_id:
        raise CookieMismatch(
            f"data dir {data_dir} belongs to bookie {local.bookie_id!r}, not {bookie_id!r}. "
            f"Start it with --bookie-id {local.bookie_id}, or point this bookie at its own "
            "data dir."
        )
    if local is not None and local.instance_id != instance_id:
        raise CookieMismatch(
            f"data dir {data_dir} belongs to cluster instance {local.instance_id!r}, but the "
            f"metadata store's cluster is {instance_id!r}: wrong --metadata URL, or a data dir "
            "from another cluster. Use the right metadata store or an empty data dir."
        )
    if local is None and remote is not None:
        raise CookieMismatch(
            f"bookie {bookie_id!r} has a cookie in metadata ({key}) but data dir {data_dir} "
            "has none: its data was wiped or this is the wrong data dir. Clients may count on "
            "entries this bookie no longer holds. Use the bookie's original data dir; or, if "
            "the data is truly lost, decommission the id (delete the metadata key "
            f"{key} after re-replicating its ledgers) or start under a new --bookie-id."
        )
    if local is not None and remote is None:
        raise CookieMismatch(
            f"data dir {data_dir} has a cookie for bookie {bookie_id!r} but the metadata "
            f"store has none at {key}: the metadata was reset or this is another cluster. "
            "Use the right --metadata URL, or an empty data dir to join as a new bookie."
        )
    if local is not None and remote is not None:
        if local != remote:
            raise CookieMismatch(
                f"the cookie in {path} ({_describe(local)}) differs from the one in metadata "
                f"at {key} ({_describe(remote)}): the data dir is not this bookie's."
            )
        if local.journal_dir != expected.journal_dir or list(local.ledger_dirs) != list(
            expected.ledger_dirs
        ):
            raise CookieMismatch(
                f"bookie {bookie_id!r} was set up with {_describe(local)}, now started with "
                f"{_describe(expected)}: its directories moved. Start it on its original paths."
            )
        for what, directory in _storage_dirs(journal_dir, ledger_dir):
            await _verify_copy(what, directory, local, bookie_id)
        log.info("bookie_cookie_verified", bookie_id=bookie_id, instance_id=instance_id)
        return local

    try:
        await store.create(key, expected.SerializeToString())
    except KeyExists as exc:
        raise CookieMismatch(
            f"another bookie with id {bookie_id!r} registered a cookie at {key} while this one "
            "was starting: bookie ids must be unique."
        ) from exc
    for _, directory in _storage_dirs(journal_dir, ledger_dir):
        await loop.run_in_executor(None, _write_local, directory / COOKIE_FILE, expected)
    await loop.run_in_executor(None, _write_local, path, expected)  # last: the dirs are set up
    log.info("bookie_cookie_created", bookie_id=bookie_id, instance_id=instance_id)
    return expected
