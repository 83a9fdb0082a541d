"""Backlog quota arithmetic without I/O: effective quotas, backlog size estimate, limits,
eviction target, and the ServerError codes the official client maps to its exceptions."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from magnetar.broker.backlog_quota import (
    Backlog,
    BacklogQuotaConfig,
    BacklogQuotaManager,
    LedgerSize,
    backlog_bytes,
    effective_quotas,
    eviction_position,
    exceeded,
)
from magnetar.broker.errors import (
    ProducerBlockedQuotaExceededError,
    ProducerBlockedQuotaExceededException,
)
from magnetar.broker.persistent_topic import PersistentTopic
from magnetar.managed_ledger.position import position
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import BacklogQuota, Policies
from magnetar.protocol.errors import server_error_for
from magnetar.wire import pulsar_api_pb2 as pb

LEDGERS = [LedgerSize(1, 10, 1000), LedgerSize(2, 0, 0), LedgerSize(3, 4, 400)]


def test_backlog_bytes_estimates_partial_ledgers_by_average_entry_size() -> None:
    assert backlog_bytes(LEDGERS, position(1, -1)) == 1400
    assert backlog_bytes(LEDGERS, position(1, 4)) == 500 + 400
    assert backlog_bytes(LEDGERS, position(1, 9)) == 400
    assert backlog_bytes(LEDGERS, position(3, 3)) == 0


def test_eviction_position_leaves_at_most_the_target_behind() -> None:
    assert eviction_position(LEDGERS, 10_000) is None
    target = eviction_position(LEDGERS, 600)
    assert target is not None
    assert backlog_bytes(LEDGERS, target) <= 600
    assert backlog_bytes(LEDGERS, target.before()) > 600
    assert backlog_bytes(LEDGERS, eviction_position(LEDGERS, 0) or position(0, 0)) == 0


def test_exceeded_by_size_and_age() -> None:
    quotas = {
        "destination_storage": BacklogQuota(limit_size=100, policy="producer_exception"),
        "message_age": BacklogQuota(limit_time=5, policy="consumer_backlog_eviction"),
    }
    assert exceeded(quotas, Backlog(100, 5.0)) == []
    kinds = [k for k, _ in exceeded(quotas, Backlog(101, 6.0))]
    assert kinds == ["destination_storage", "message_age"]


def test_effective_quotas_namespace_over_broker_defaults() -> None:
    config = BacklogQuotaConfig(default_limit_bytes=50)
    assert effective_quotas(Policies(), BacklogQuotaConfig()) == {}
    assert effective_quotas(Policies(), config)["destination_storage"].limit_size == 50
    own = Policies().with_backlog_quota("destination_storage", BacklogQuota(limit_size=7))
    assert effective_quotas(own, config)["destination_storage"].limit_size == 7
    unlimited = Policies().with_backlog_quota("destination_storage", BacklogQuota())
    assert effective_quotas(unlimited, config) == {}


def test_server_error_codes_are_pulsars() -> None:
    hold = ProducerBlockedQuotaExceededError("t", "destination_storage")
    fail = ProducerBlockedQuotaExceededException("t", "destination_storage")
    assert server_error_for(hold) == pb.ProducerBlockedQuotaExceededError
    assert server_error_for(fail) == pb.ProducerBlockedQuotaExceededException
    assert hold.retryable
    assert not fail.retryable


async def test_new_producer_without_durable_subscription_reads_no_policies() -> None:
    """No durable subscription, no backlog: even a 0-byte quota cannot refuse the producer, so
    check_new_producer must not pay a namespace read (it runs on every producer creation)."""
    reads: list[NamespaceName] = []

    async def policies(ns: NamespaceName) -> Policies:
        reads.append(ns)
        return Policies()

    config = BacklogQuotaConfig(default_limit_bytes=0, default_limit_s=0)
    manager = BacklogQuotaManager(lambda: (), policies, config)
    reader_only = SimpleNamespace(
        name=TopicName.parse("persistent://t/ns/x"),
        subscriptions={"reader": SimpleNamespace(durable=False)},
    )
    await manager.check_new_producer(cast(PersistentTopic, reader_only))
    assert reads == []
