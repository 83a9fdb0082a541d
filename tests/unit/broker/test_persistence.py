"""The broker's side of a namespace persistence policy: its bounds (Pulsar's
``managedLedgerMax*``) and the managed-ledger config a topic gets from it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magnetar.broker.persistence import check_persistence, with_persistence
from magnetar.broker.settings import BrokerSettings
from magnetar.managed_ledger import ManagedLedgerConfig
from magnetar.policies import InvalidPolicies, PersistencePolicies


def test_the_bounds_are_the_settings_with_pulsars_defaults() -> None:
    defaults = BrokerSettings().policy_defaults()
    assert (defaults.max_ensemble_size, defaults.max_write_quorum, defaults.max_ack_quorum) == (
        5,
        5,
        5,
    )
    small = BrokerSettings(
        managed_ledger_max_ensemble_size=3, managed_ledger_max_ack_quorum=1
    ).policy_defaults()
    assert check_persistence(PersistencePolicies(3, 2, 1), small) == PersistencePolicies(3, 2, 1)
    with pytest.raises(InvalidPolicies, match=r"^Bookkeeper-Ensemble must be <= 3 and > 0\.$"):
        check_persistence(PersistencePolicies(4, 2, 1), small)
    with pytest.raises(InvalidPolicies, match=r"^Bookkeeper-AckQuorum must be <= 1 and > 0\.$"):
        check_persistence(PersistencePolicies(3, 2, 2), small)


@given(
    st.integers(1, 9).flatmap(
        lambda e: st.tuples(st.just(e), st.integers(1, e)).flatmap(
            lambda ew: st.tuples(st.just(ew[0]), st.just(ew[1]), st.integers(1, ew[1]))
        )
    ),
    st.booleans(),
)
def test_a_topic_gets_the_policy_else_the_broker_defaults(
    quorums: tuple[int, int, int], set_here: bool
) -> None:
    default = ManagedLedgerConfig(ensemble_size=3, write_quorum=3, ack_quorum=2)
    current = ManagedLedgerConfig(
        ensemble_size=7, write_quorum=1, ack_quorum=1, retention_time_s=60
    )
    policy = PersistencePolicies(*quorums) if set_here else None
    config = with_persistence(current, policy, default)
    want = quorums if set_here else (3, 3, 2)
    assert (config.ensemble_size, config.write_quorum, config.ack_quorum) == want
    assert config.retention_time_s == 60  # the rest of the topic's config is kept
