"""keys.py: every name round-trips, and no name can reach into another name's subtree."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from magnetar.ids import BookieId, LedgerId
from magnetar.metadata import keys
from magnetar.metadata.store import check_key

names = st.text(min_size=1, max_size=40)
# Names made of the characters that could confuse a path: separators, escapes, dots.
tricky = st.text(alphabet="/%.a2F", min_size=1, max_size=12)
any_name = st.one_of(names, tricky)


@given(any_name)
def test_managed_ledger_name_round_trips(name: str) -> None:
    key = keys.managed_ledger_info(name)
    check_key(key)
    assert keys.managed_ledger_name_of(key) == name
    assert "/" not in key[len(keys.MANAGED_LEDGER_INFO_PREFIX) :]


@given(any_name, any_name)
def test_cursor_name_round_trips(ml: str, cursor: str) -> None:
    key = keys.cursor(ml, cursor)
    check_key(key)
    assert key.startswith(keys.cursors_prefix(ml))
    assert keys.cursor_name_of(ml, key) == cursor


@given(any_name)
def test_bookie_id_round_trips(bookie: str) -> None:
    bid = BookieId(bookie)
    assert keys.bookie_id_of(keys.bookie_available(bid)) == bid
    assert keys.bookie_id_of(keys.bookie_cookie(bid)) == bid


@given(st.integers(min_value=0, max_value=10**20 - 1), st.integers(0, 10**20 - 1))
def test_ledger_keys_round_trip_and_sort_in_id_order(a: int, b: int) -> None:
    ka, kb = keys.ledger_meta(LedgerId(a)), keys.ledger_meta(LedgerId(b))
    assert keys.ledger_id_of(ka) == a
    assert (ka < kb) == (a < b)


@given(any_name, any_name, any_name)
def test_a_name_never_reaches_into_another_names_subtree(a: str, b: str, cursor: str) -> None:
    assume(a != b)
    assert keys.managed_ledger_info(a) != keys.managed_ledger_info(b)
    assert not keys.managed_ledger_info(a).startswith(keys.managed_ledger_info(b) + "/")
    assert not keys.cursor(a, cursor).startswith(keys.cursors_prefix(b))
    assert not keys.cursors_prefix(a).startswith(keys.cursors_prefix(b))
    assert keys.lock(a) != keys.lock(b)
    assert not keys.lock(a).startswith(keys.lock(b) + "/")


def test_empty_names_are_rejected() -> None:
    for build in (keys.managed_ledger_info, keys.lock, keys.cursors_prefix):
        with pytest.raises(ValueError, match="non-empty"):
            build("")


@given(any_name, any_name, any_name)
def test_bundle_owner_key_round_trips(tenant: str, ns: str, bundle: str) -> None:
    assert keys.bundle_owner_of(keys.bundle_owner(tenant, ns, bundle)) == (tenant, ns, bundle)
