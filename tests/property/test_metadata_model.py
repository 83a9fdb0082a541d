"""A stateful Hypothesis machine: the memory store against a dict model.

Random sequences of put / CAS put / create / delete (with right and wrong versions) must give
the same results and errors as a plain dict of (value, version), and a listing must always
equal the model. Runs the real store on a private event loop, one rule at a time.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from magnetar.metadata import BadVersion, KeyExists, MetadataStore, NotFound, open_store

T = TypeVar("T")
key_names = st.sampled_from(["/m/a", "/m/b", "/m/b/c", "/m/bb", "/n/a"])
values = st.binary(max_size=8)
version_guess = st.integers(min_value=0, max_value=4)


class StoreVersusDict(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.store: MetadataStore = self.run(open_store(f"memory://model-{uuid.uuid4().hex}"))
        self.model: dict[str, tuple[bytes, int]] = {}

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 5))

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()

    @rule(key=key_names, value=values)
    def put(self, key: str, value: bytes) -> None:
        old = self.model.get(key)
        version = 0 if old is None else old[1] + 1
        assert self.run(self.store.put(key, value)) == version
        self.model[key] = (value, version)

    @rule(key=key_names, value=values, expected=version_guess)
    def cas_put(self, key: str, value: bytes, expected: int) -> None:
        old = self.model.get(key)
        if old is None or old[1] != expected:
            with pytest.raises(BadVersion) as conflict:
                self.run(self.store.put(key, value, expected_version=expected))
            assert conflict.value.actual == (None if old is None else old[1])
            return
        assert self.run(self.store.put(key, value, expected_version=expected)) == expected + 1
        self.model[key] = (value, expected + 1)

    @rule(key=key_names, value=values)
    def create(self, key: str, value: bytes) -> None:
        if key in self.model:
            with pytest.raises(KeyExists):
                self.run(self.store.create(key, value))
            return
        assert self.run(self.store.create(key, value)) == 0
        self.model[key] = (value, 0)

    @rule(key=key_names, expected=st.none() | version_guess)
    def delete(self, key: str, expected: int | None) -> None:
        old = self.model.get(key)
        try:
            self.run(self.store.delete(key, expected_version=expected))
        except NotFound:
            assert old is None
        except BadVersion:
            assert old is not None
            assert expected != old[1]
        else:
            assert old is not None
            assert expected in (None, old[1])
            del self.model[key]

    @invariant()
    def listing_matches_model(self) -> None:
        listed = self.run(self.store.list("/m/"))
        want = sorted((k, v) for k, v in self.model.items() if k.startswith("/m/"))
        assert [(k, (v.value, v.version)) for k, v in listed] == want


TestStoreVersusDict = StoreVersusDict.TestCase
TestStoreVersusDict.settings = settings(max_examples=30, stateful_step_count=30, deadline=None)
