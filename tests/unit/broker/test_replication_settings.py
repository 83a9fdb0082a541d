"""Geo-replication's broker settings reach the broker config under Pulsar's meanings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from magnetar.broker.settings import BrokerSettings
from magnetar.managed_ledger import InitialPosition


def test_defaults_follow_pulsar() -> None:
    config = BrokerSettings().broker_config()
    assert config.replication_start_at is InitialPosition.LATEST
    assert config.replicator.window_entries == 1000
    assert config.cluster_name == "standalone"


def test_settings_map_onto_the_replicator_config() -> None:
    settings = BrokerSettings(
        cluster_name="us-east",
        replication_start_at="earliest",
        replication_producer_queue_size=10,
        replication_max_in_flight_mbytes=2,
    )
    config = settings.broker_config()
    assert config.cluster_name == "us-east"
    assert config.replication_start_at is InitialPosition.EARLIEST
    assert config.replicator.window_entries == 10
    assert config.replicator.window_bytes == 2 * 1024 * 1024


def test_a_bad_start_position_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="replication_start_at"):
        BrokerSettings(replication_start_at="middle")  # type: ignore[arg-type]
