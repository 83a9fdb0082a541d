"""The audit's readers of the metadata store and the bookies, as plain rows (no Spark).

Spark's data sources (:mod:`.sources`) call these inside executors, one call per partition,
through :mod:`.bridge`; the driver calls :func:`discover` before planning. Each partition opens
its own store session or bookie channel and closes it when done.

- ledger metadata: one *bucket* of ledger ids per partition, read with one prefix listing
  (:func:`magnetar.metadata.keys.ledger_meta_bucket`); :func:`bucket_plan` picks the buckets;
- managed ledgers: the ledgers each references, and the compacted ledger its compaction cursor
  names (cursor property ``CompactedTopicLedger``);
- bookie listings: ``ListEntries`` streamed chunk by chunk (:func:`stream_entries`).

Errors: a store or bookie that does not answer raises :class:`~.errors.Unreachable`, naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from magnetar.audit.errors import BadAuditInput, Unreachable
from magnetar.errors import MagnetarError
from magnetar.ids import BookieId
from magnetar.ledger.bookie_client import BookieClient
from magnetar.ledger.config import LedgerClientConfig
from magnetar.ledger.errors import BookieUnavailable, InvalidLedgerConfig
from magnetar.ledger.metadata import LedgerMetadataView, LedgerState
from magnetar.metadata import MetadataStore, Versioned, keys, open_store
from magnetar.metadata.factory import parse_etcd_endpoints
from magnetar.wire import bookie_pb2, ledger_pb2

LEDGER_SCHEMA = (
    "ledger_id BIGINT, state STRING, ensemble_size INT, write_quorum INT, ack_quorum INT, "
    "last_entry_id BIGINT, length BIGINT, ctime_ms BIGINT, "
    "segments ARRAY<STRUCT<first_entry_id: BIGINT, last_entry_id: BIGINT, "
    "bookies: ARRAY<STRING>>>, custom MAP<STRING, STRING>"
)
"""A ledger's metadata; a segment's ``last_entry_id`` is null while it can still grow (the
last segment of a ledger not closed). State ``UNREADABLE``: the metadata does not decode."""

ENTRY_SCHEMA = "bookie STRING, ledger_id BIGINT, entry_id BIGINT, length BIGINT, digest BIGINT"
"""One entry a bookie holds, from its listing."""

REFERENCE_SCHEMA = "managed_ledger STRING, ledger_id BIGINT, role STRING"
"""A ledger a managed ledger references: role ``ledger`` (its chain) or ``compacted``."""

COMPACTED_LEDGER_PROPERTY = "CompactedTopicLedger"  # the compaction cursor's (Pulsar's name)
UNREADABLE = "UNREADABLE"
STORE_TIMEOUT_S = 10.0

LedgerRow = tuple[object, ...]


@dataclass(frozen=True)
class ClusterView:
    """What the driver learns before planning: small, collected once."""

    bookies: dict[str, str]  # registered bookie id -> gRPC address
    max_ledger_id: int
    managed_ledgers: int


def check_metadata_url(url: str) -> None:
    """:class:`BadAuditInput` unless ``url`` names an etcd cluster (a standalone's RocksDB
    admits one process and its bookie is in-process: there is nothing to list remotely)."""
    if not url.startswith("etcd://"):
        raise BadAuditInput(
            f"the audit reads a cluster's etcd: give --metadata etcd://host:port[,...], not "
            f"{url!r} (a standalone keeps its bookie in-process and cannot be audited)"
        )
    try:
        parse_etcd_endpoints(url, url.removeprefix("etcd://"))
    except ValueError as exc:
        raise BadAuditInput(str(exc)) from exc


@contextlib.asynccontextmanager
async def metadata_store(url: str) -> AsyncIterator[MetadataStore]:
    """An open store on ``url``; :class:`Unreachable` if it does not answer in time."""
    check_metadata_url(url)
    try:
        async with asyncio.timeout(STORE_TIMEOUT_S):
            store = await open_store(url, session_timeout_s=STORE_TIMEOUT_S)
    except (MagnetarError, OSError, TimeoutError) as exc:
        raise Unreachable("metadata store", url, url, str(exc) or type(exc).__name__) from exc
    try:
        yield store
    except (MagnetarError, OSError, TimeoutError) as exc:
        if isinstance(exc, Unreachable):
            raise
        raise Unreachable("metadata store", url, url, str(exc) or type(exc).__name__) from exc
    finally:
        with contextlib.suppress(Exception):
            await store.close()


async def discover(url: str) -> ClusterView:
    """Registered bookies, the highest ledger id handed out, how many managed ledgers."""
    async with metadata_store(url) as store:
        async with asyncio.timeout(STORE_TIMEOUT_S):
            registered = await store.list(keys.BOOKIE_AVAILABLE_PREFIX)
            idgen = await store.get(keys.LEDGER_ID_GENERATOR)
            managed = await store.list_keys(keys.MANAGED_LEDGER_INFO_PREFIX)
    bookies: dict[str, str] = {}
    for key, versioned in registered:
        registration = ledger_pb2.BookieRegistration()
        try:
            registration.ParseFromString(versioned.value)
        except Exception as exc:  # protobuf's DecodeError: a bookie nobody can reach either
            raise Unreachable(
                "bookie", keys.bookie_id_of(key), "?", f"its registration does not decode: {exc}"
            ) from exc
        bookies[keys.bookie_id_of(key)] = registration.address
    max_id = int(idgen.value.decode()) if idgen is not None else 0
    return ClusterView(bookies, max_id, len(managed))


def _bookie_client(bookie_id: str, address: str, timeout_s: float, auth_token: str) -> BookieClient:
    """A client for one audit call: each call (probe, partition) opens and closes its own."""
    return BookieClient(
        BookieId(bookie_id),
        address,
        LedgerClientConfig(read_timeout_s=timeout_s, auth_token=auth_token),
    )


async def probe_bookie(
    bookie_id: str, address: str, timeout_s: float, auth_token: str = ""
) -> None:
    """:class:`Unreachable` unless the bookie answers ``GetInfo`` within ``timeout_s``
    (``auth_token``: the Bearer token for bookies that authenticate)."""
    client = _bookie_client(bookie_id, address, timeout_s, auth_token)
    try:
        await client.info()
    except BookieUnavailable as exc:
        raise Unreachable("bookie", bookie_id, address, exc.reason) from exc
    finally:
        await client.close()


async def probe_bookies(bookies: dict[str, str], timeout_s: float, auth_token: str = "") -> None:
    """:func:`probe_bookie` on every bookie at once; one unreachable bookie is raised."""
    try:
        async with asyncio.TaskGroup() as group:
            for bookie_id, address in sorted(bookies.items()):
                group.create_task(probe_bookie(bookie_id, address, timeout_s, auth_token))
    except* Unreachable as failed:
        raise failed.exceptions[0] from None


def read_token_file(path: str) -> str:
    """The token in ``path`` ("" for no path); :class:`BadAuditInput` naming the file if it
    cannot be read or is empty (the token itself is never in a message)."""
    if not path:
        return ""
    try:
        token = Path(path).read_text().strip()
    except OSError as exc:
        raise BadAuditInput(
            f"cannot read the bookie token file {path}: {exc.strerror or exc}"
        ) from exc
    if not token:
        raise BadAuditInput(f"the bookie token file {path} is empty")
    return token


# -- ledger metadata ------------------------------------------------------------------------


def bucket_plan(max_ledger_id: int, max_partitions: int) -> tuple[int, list[int]]:
    """(free digits, buckets): the fewest free digits giving at most ``max_partitions``
    buckets over ledger ids 0..max_ledger_id (the last bucket also takes later ids)."""
    free = 0
    while max_ledger_id // 10**free + 1 > max(1, max_partitions):
        free += 1
    return free, list(range(max_ledger_id // 10**free + 1))


def ledger_row(ledger_id: int, view: LedgerMetadataView) -> LedgerRow:
    closed = view.state is LedgerState.CLOSED
    segments = []
    for index, (first, bookies) in enumerate(view.ensembles):
        if index + 1 < len(view.ensembles):
            last: int | None = view.ensembles[index + 1][0] - 1
        else:
            last = view.last_entry_id if closed else None
        segments.append((first, last, list(bookies)))
    custom = {k: v.decode("utf-8", "replace") for k, v in view.custom.items()}
    return (
        ledger_id, view.state.name, view.ensemble_size, view.write_quorum, view.ack_quorum,
        view.last_entry_id, view.length, view.ctime_ms, segments, custom,
    )  # fmt: skip


def unreadable_row(ledger_id: int) -> LedgerRow:
    return (ledger_id, UNREADABLE, 0, 0, 0, -1, 0, 0, [], {})


async def read_ledger_bucket(
    url: str, bucket: int, free_digits: int, last: bool
) -> list[LedgerRow]:
    """The rows of the ledgers in one bucket (``last``: and every later id, by the key order
    of the zero-padded ids, so a ledger created while the audit plans is not missed)."""
    async with metadata_store(url) as store:
        prefix = keys.ledger_meta_bucket(bucket, free_digits)
        async with asyncio.timeout(STORE_TIMEOUT_S):
            found = await store.list(prefix)
            if last:
                found += await _later_ledgers(store, bucket, free_digits)
    rows = []
    for key, versioned in found:
        ledger_id = keys.ledger_id_of(key)
        try:
            rows.append(ledger_row(ledger_id, LedgerMetadataView.decode(versioned.value)))
        except InvalidLedgerConfig:
            rows.append(unreadable_row(ledger_id))
    return rows


async def _later_ledgers(
    store: MetadataStore, bucket: int, free_digits: int
) -> list[tuple[str, Versioned]]:
    """Ledgers past the planned buckets: the few created since planning (one listing of the
    next bucket up; ids grow one by one, so they do not skip a whole bucket)."""
    if free_digits >= 20:
        return []
    nxt = await store.list(keys.ledger_meta_bucket(bucket + 1, free_digits))
    return list(nxt)


# -- managed ledgers ------------------------------------------------------------------------


async def list_managed_ledgers(url: str) -> list[str]:
    async with metadata_store(url) as store:
        async with asyncio.timeout(STORE_TIMEOUT_S):
            found = await store.list_keys(keys.MANAGED_LEDGER_INFO_PREFIX)
    return [keys.managed_ledger_name_of(key) for key in found]


async def read_references(url: str, names: Sequence[str]) -> list[LedgerRow]:
    """(managed ledger, ledger id, role) for each ledger ``names`` reference."""
    rows: list[LedgerRow] = []
    async with metadata_store(url) as store:
        for name in names:
            async with asyncio.timeout(STORE_TIMEOUT_S):
                got = await store.get(keys.managed_ledger_info(name))
                cursors = await store.list(keys.cursors_prefix(name))
            if got is not None:
                info = ledger_pb2.ManagedLedgerInfo()
                info.ParseFromString(got.value)
                rows += [(name, ledger.ledger_id, "ledger") for ledger in info.ledgers]
            for _, versioned in cursors:
                cursor = ledger_pb2.ManagedCursorInfo()
                cursor.ParseFromString(versioned.value)
                compacted = cursor.properties.get(COMPACTED_LEDGER_PROPERTY)
                if compacted is not None:
                    rows.append((name, compacted, "compacted"))
    return rows


# -- bookie listings ------------------------------------------------------------------------


def split_ledger_range(max_ledger_id: int, splits: int) -> list[tuple[int, int]]:
    """Inclusive ledger id ranges covering every id; the last one is open (``last`` 0)."""
    splits = max(1, min(splits, max_ledger_id or 1))
    step = -(-(max_ledger_id + 1) // splits)
    ranges = [(i * step, (i + 1) * step - 1) for i in range(splits)]
    first, _ = ranges[-1]
    ranges[-1] = (first, 0)
    return ranges


async def stream_entries(
    bookie_id: str,
    address: str,
    first_ledger_id: int,
    last_ledger_id: int,
    *,
    chunk_entries: int = 0,
    timeout_s: float = 30.0,
    auth_token: str = "",
) -> AsyncIterator[list[bookie_pb2.EntryInfo]]:
    """The bookie's ``ListEntries`` chunks; :class:`Unreachable` if it stops answering."""
    client = _bookie_client(bookie_id, address, timeout_s, auth_token)
    try:
        async for chunk in client.list_entries(first_ledger_id, last_ledger_id, chunk_entries):
            yield chunk
    except BookieUnavailable as exc:
        raise Unreachable("bookie", bookie_id, address, exc.reason) from exc
    finally:
        await client.close()
