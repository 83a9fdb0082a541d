"""The audit's Spark Python data sources (``pyspark.sql.datasource``) over a Magnetar cluster.

Three sources, each partitioned so that executors read in parallel and stream (nothing but
what a partition yields passes through an executor at a time, and nothing reaches the driver):

- ``magnetar_ledgers`` (:data:`~.scans.LEDGER_SCHEMA`): ledger metadata, one partition per
  bucket of ledger ids (:func:`~.scans.bucket_plan`); options ``metadata``, ``max_ledger_id``,
  ``partitions``;
- ``magnetar_references`` (:data:`~.scans.REFERENCE_SCHEMA`): what each managed ledger
  references; the managed ledger names are listed when planning and dealt out to partitions;
  options ``metadata``, ``partitions``;
- ``magnetar_bookie_entries`` (:data:`~.scans.ENTRY_SCHEMA`): every registered bookie's
  ``ListEntries``, split by ledger id ranges (``splits_per_bookie`` partitions per bookie), one
  Arrow batch per listing chunk; options ``bookies`` (JSON id -> address), ``max_ledger_id``,
  ``splits_per_bookie``, ``chunk_entries``, ``timeout_s``.

A bookie or store that does not answer fails the partition with
:class:`~.errors.Unreachable`, whose message the driver finds in Spark's failure.

Concurrency: Spark calls ``partitions()`` on the driver side and ``read()`` in Python workers;
each ``read()`` runs its own event loop (``asyncio.run``, or :mod:`.bridge` for a stream).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from magnetar.audit import bridge, scans
from magnetar.wire import bookie_pb2

LEDGERS = "magnetar_ledgers"
REFERENCES = "magnetar_references"
BOOKIE_ENTRIES = "magnetar_bookie_entries"

_ENTRY_ARROW = pa.schema(
    [
        ("bookie", pa.string()),
        ("ledger_id", pa.int64()),
        ("entry_id", pa.int64()),
        ("length", pa.int64()),
        ("digest", pa.int64()),
    ]
)


@dataclass(frozen=True)
class _Bucket(InputPartition):
    bucket: int
    free_digits: int
    last: bool


@dataclass(frozen=True)
class _Names(InputPartition):
    names: tuple[str, ...]


@dataclass(frozen=True)
class _BookieRange(InputPartition):
    bookie: str
    address: str
    first_ledger_id: int
    last_ledger_id: int


class _LedgersReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self._url = options["metadata"]
        self._max_id = int(options.get("max_ledger_id", "0"))
        self._partitions = int(options.get("partitions", "16"))

    def partitions(self) -> list[InputPartition]:
        free, buckets = scans.bucket_plan(self._max_id, self._partitions)
        return [_Bucket(b, free, b == buckets[-1]) for b in buckets]

    def read(self, partition: InputPartition) -> Iterator[tuple[object, ...]]:
        assert isinstance(partition, _Bucket)
        yield from asyncio.run(
            scans.read_ledger_bucket(
                self._url, partition.bucket, partition.free_digits, partition.last
            )
        )


class LedgersSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return LEDGERS

    def schema(self) -> str:
        return scans.LEDGER_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return _LedgersReader(self.options)


class _ReferencesReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self._url = options["metadata"]
        self._partitions = int(options.get("partitions", "8"))

    def partitions(self) -> list[InputPartition]:
        found = asyncio.run(scans.list_managed_ledgers(self._url))
        count = max(1, min(self._partitions, len(found)))
        return [_Names(tuple(found[i::count])) for i in range(count)]

    def read(self, partition: InputPartition) -> Iterator[tuple[object, ...]]:
        assert isinstance(partition, _Names)
        yield from asyncio.run(scans.read_references(self._url, partition.names))


class ReferencesSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return REFERENCES

    def schema(self) -> str:
        return scans.REFERENCE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return _ReferencesReader(self.options)


class _BookieEntriesReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self._bookies: dict[str, str] = json.loads(options["bookies"])
        self._max_id = int(options.get("max_ledger_id", "0"))
        self._splits = int(options.get("splits_per_bookie", "2"))
        self._chunk = int(options.get("chunk_entries", "0"))
        self._timeout_s = float(options.get("timeout_s", "30"))
        self._token_file = options.get("auth_token_file", "")

    def partitions(self) -> list[InputPartition]:
        ranges = scans.split_ledger_range(self._max_id, self._splits)
        return [
            _BookieRange(bookie, address, first, last)
            for bookie, address in sorted(self._bookies.items())
            for first, last in ranges
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _BookieRange)
        chunk_entries, timeout_s = self._chunk, self._timeout_s
        token = scans.read_token_file(self._token_file)

        def stream() -> AsyncIterator[list[bookie_pb2.EntryInfo]]:
            return scans.stream_entries(
                partition.bookie,
                partition.address,
                partition.first_ledger_id,
                partition.last_ledger_id,
                chunk_entries=chunk_entries,
                timeout_s=timeout_s,
                auth_token=token,
            )

        for chunk in bridge.iterate(stream):
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([partition.bookie] * len(chunk), pa.string()),
                    pa.array([e.ledger_id for e in chunk], pa.int64()),
                    pa.array([e.entry_id for e in chunk], pa.int64()),
                    pa.array([e.length for e in chunk], pa.int64()),
                    pa.array([e.digest for e in chunk], pa.int64()),
                ],
                schema=_ENTRY_ARROW,
            )


class BookieEntriesSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return BOOKIE_ENTRIES

    def schema(self) -> str:
        return scans.ENTRY_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return _BookieEntriesReader(self.options)


SOURCES = (LedgersSource, ReferencesSource, BookieEntriesSource)
