"""The automatic compaction decision and the effective threshold (namespace, else broker)."""

from __future__ import annotations

import pytest

from magnetar.broker.compaction.threshold import should_compact
from magnetar.broker.policy_defaults import BrokerPolicyDefaults, effective_compaction_threshold
from magnetar.policies import InvalidPolicies, Policies


@pytest.mark.parametrize(
    ("backlog", "threshold", "running", "expected"),
    [
        (1001, 1000, False, True),
        (1000, 1000, False, False),  # must exceed it
        (10**9, 0, False, False),  # 0 turns it off
        (5000, 1000, True, False),  # one run at a time
    ],
)
def test_should_compact(backlog: int, threshold: int, running: bool, expected: bool) -> None:
    assert should_compact(backlog, threshold, running) is expected


def test_namespace_threshold_wins_over_the_broker_default() -> None:
    defaults = BrokerPolicyDefaults(compaction_threshold_bytes=500)
    assert effective_compaction_threshold(Policies(), defaults) == 500
    assert effective_compaction_threshold(Policies(compaction_threshold=0), defaults) == 0
    assert effective_compaction_threshold(Policies(compaction_threshold=7), defaults) == 7


def test_policies_json_carries_the_threshold() -> None:
    policies = Policies(compaction_threshold=1024)
    assert policies.to_json()["compaction_threshold"] == 1024
    assert Policies.from_json(policies.to_json()) == policies
    with pytest.raises(InvalidPolicies):
        Policies.from_json({"compaction_threshold": -1})
