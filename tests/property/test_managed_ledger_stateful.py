"""A stateful test of the managed ledger and its cursors over the REAL storage stack.

Memory metadata store + three in-process bookies on 127.0.0.1 + the real BookKeeper client
(tests/kit/stack.py). The model is a list of entries and, per cursor, the set
of acknowledged entry indexes and the index of the next read. Small ledgers
(``max_entries_per_ledger=3``) force rollovers; some examples run with no entry cache so that
reads go to the bookies; close + reopen through a fresh factory must restore every cursor.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Coroutine
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from magnetar.managed_ledger import (
    InitialPosition,
    ManagedCursor,
    ManagedLedger,
    ManagedLedgerConfig,
    ManagedLedgerFactory,
    ManagedLedgerFactoryConfig,
    Position,
)
from tests.kit.stack import Stack, storage_stack

T = TypeVar("T")
NAME = "tenant/ns/persistent/stateful"
CURSORS = ("a", "b")
CONFIG = ManagedLedgerConfig(
    ensemble_size=3, write_quorum=2, ack_quorum=2, max_entries_per_ledger=3
)
STEP_TIMEOUT_S = 30


class ManagedLedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.tmp = Path(tempfile.mkdtemp(prefix="ml-stateful-"))
        self.stack_cm: AbstractAsyncContextManager[Stack] = storage_stack(self.tmp)
        self.stack = self.run(self.stack_cm.__aenter__())
        self.factory: ManagedLedgerFactory | None = None
        self.entries: list[tuple[Position, bytes]] = []
        self.acked: dict[str, set[int]] = {c: set() for c in CURSORS}
        self.read_idx: dict[str, int] = dict.fromkeys(CURSORS, 0)
        self.cache_bytes = 0

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coro, STEP_TIMEOUT_S))

    @property
    def ml(self) -> ManagedLedger:
        assert self.factory is not None
        return self.factory.managed_ledgers[NAME]

    def cursor(self, name: str) -> ManagedCursor:
        return self.ml.cursors[name]

    def md_idx(self, name: str) -> int:
        k = 0
        while k in self.acked[name]:
            k += 1
        return k

    async def _open(self) -> None:
        self.factory = ManagedLedgerFactory(
            self.stack.store, self.stack.bk, ManagedLedgerFactoryConfig(self.cache_bytes)
        )
        ml = await self.factory.open(NAME, CONFIG)
        for c in CURSORS:
            await ml.open_cursor(c, InitialPosition.EARLIEST)

    async def _add_all(self, payloads: list[bytes]) -> list[Position]:
        return list(await asyncio.gather(*(self.ml.add_entry(p) for p in payloads)))

    @initialize(cache=st.sampled_from([0, 1 << 20]))
    def start(self, cache: int) -> None:
        self.cache_bytes = cache
        self.run(self._open())

    # ------------------------------------------------------------------ rules
    @rule(n=st.integers(1, 5))
    def add(self, n: int) -> None:
        payloads = [f"e{len(self.entries) + i}".encode() for i in range(n)]
        positions = self.run(self._add_all(payloads))
        previous = [self.entries[-1][0]] if self.entries else []
        assert [*previous, *positions] == sorted({*previous, *positions})
        self.entries.extend(zip(positions, payloads, strict=True))

    @rule(c=st.sampled_from(CURSORS), n=st.integers(1, 6))
    def read(self, c: str, n: int) -> None:
        got = self.run(self.cursor(c).read_entries(n))
        start = max(self.read_idx[c], self.md_idx(c))
        expected = [i for i in range(start, len(self.entries)) if i not in self.acked[c]][:n]
        assert [(e.position, e.data) for e in got] == [self.entries[i] for i in expected]
        if expected:
            self.read_idx[c] = expected[-1] + 1

    @precondition(lambda self: self.entries)
    @rule(c=st.sampled_from(CURSORS), data=st.data())
    def ack_individual(self, c: str, data: st.DataObject) -> None:
        idxs = data.draw(st.lists(st.integers(0, len(self.entries) - 1), min_size=1, max_size=3))
        self.run(self.cursor(c).delete([self.entries[i][0] for i in idxs]))
        self.acked[c].update(idxs)

    @precondition(lambda self: self.entries)
    @rule(c=st.sampled_from(CURSORS), data=st.data())
    def ack_cumulative(self, c: str, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.entries) - 1))
        self.run(self.cursor(c).mark_delete(self.entries[i][0]))
        self.acked[c].update(range(i + 1))

    @precondition(lambda self: self.entries)
    @rule(c=st.sampled_from(CURSORS), data=st.data())
    def seek(self, c: str, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.entries) - 1))
        self.run(self.cursor(c).seek(self.entries[i][0]))
        self.read_idx[c] = max(i, self.md_idx(c))

    @rule()
    def close_and_reopen(self) -> None:
        assert self.factory is not None
        self.run(self.factory.close())
        self.run(self._open())
        for c in CURSORS:
            self.read_idx[c] = self.md_idx(c)  # the read position is not persisted

    @rule()
    def trim(self) -> None:
        self.run(self.ml.trim_ledgers())
        slowest = min(self.md_idx(c) for c in CURSORS)
        kept = {li.ledger_id for li in self.ml.ledgers}
        for i, (pos, _) in enumerate(self.entries):
            if pos.ledger_id not in kept:
                assert i < slowest, f"entry {i} at {pos} trimmed, slowest mark-delete {slowest}"
        # Every entry some cursor still needs is readable.
        if slowest < len(self.entries):
            got = self.run(self.ml.read_entries(self.entries[slowest][0], len(self.entries)))
            assert [(e.position, e.data) for e in got] == self.entries[slowest:]

    # ------------------------------------------------------------------ invariants
    @invariant()
    def cursors_match_model(self) -> None:
        if self.factory is None:
            return
        for c in CURSORS:
            cursor = self.cursor(c)
            assert cursor.backlog == len(self.entries) - len(self.acked[c])
            k = self.md_idx(c)
            if k > 0:
                assert cursor.mark_delete_position == self.entries[k - 1][0]
            for i in self.acked[c]:
                assert cursor.is_acknowledged(self.entries[i][0])
        last = self.entries[-1][0] if self.entries else None
        if last is not None and last.ledger_id in {li.ledger_id for li in self.ml.ledgers}:
            assert self.ml.last_confirmed_position == last

    def teardown(self) -> None:
        try:
            if self.factory is not None:
                self.run(self.factory.close())
            self.run(self.stack_cm.__aexit__(None, None, None))
        finally:
            self.loop.close()
            shutil.rmtree(self.tmp, ignore_errors=True)


ManagedLedgerMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=25, deadline=None
)
TestManagedLedgerStateful = ManagedLedgerMachine.TestCase
