"""The metrics adapter: specs become Prometheus series with exactly the spec's name."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from magnetar.telemetry import metric_names as names
from magnetar.telemetry.metric_names import Kind, MetricSpec
from magnetar.telemetry.metrics import Metrics, Sample


def families(metrics: Metrics) -> dict[str, str]:
    """Sample name -> family type, from a render."""
    text = metrics.render().decode()
    return {s.name: f.type for f in text_string_to_metric_families(text) for s in f.samples}


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def test_observed_counter_and_gauge_read_at_each_render() -> None:
    metrics = Metrics()
    counter = {"n": 0}
    metrics.observe(
        names.PULSAR_IN_MESSAGES,
        lambda: [Sample(counter["n"], {"cluster": "c", "namespace": "t/n", "topic": "x"})],
    )
    metrics.observe(names.BOOKIE_READ_ONLY, lambda: [Sample(1)])
    counter["n"] = 5
    labels = (("cluster", "c"), ("namespace", "t/n"), ("topic", "x"))
    assert samples(metrics)[("pulsar_in_messages_total", labels)] == 5
    counter["n"] = 7
    got = samples(metrics)
    assert got[("pulsar_in_messages_total", labels)] == 7
    assert got[("bookie_read_only", ())] == 1
    assert families(metrics) == {"pulsar_in_messages_total": "counter", "bookie_read_only": "gauge"}


def test_histogram_buckets_are_the_specs() -> None:
    metrics = Metrics()
    recorder = metrics.histogram(names.BOOKIE_JOURNAL_SYNC_LATENCY)
    recorder.record(0.003)
    got = samples(metrics)
    assert got[("bookie_journal_sync_latency_seconds_count", ())] == 1
    assert got[("bookie_journal_sync_latency_seconds_bucket", (("le", "0.0025"),))] == 0
    assert got[("bookie_journal_sync_latency_seconds_bucket", (("le", "0.005"),))] == 1


def test_a_name_registers_once_and_kinds_are_checked() -> None:
    metrics = Metrics()
    metrics.observe(names.BOOKIE_LEDGERS, lambda: [Sample(1)])
    with pytest.raises(ValueError, match="already registered"):
        metrics.observe(names.BOOKIE_LEDGERS, lambda: [Sample(2)])
    with pytest.raises(ValueError, match="histogram"):
        metrics.observe(names.BOOKIE_JOURNAL_SYNC_LATENCY, list)
    with pytest.raises(ValueError, match="not a histogram"):
        metrics.histogram(names.BOOKIE_READ_ONLY)


def test_processes_do_not_share_series() -> None:
    first, second = Metrics(), Metrics()
    first.observe(names.BOOKIE_LEDGERS, lambda: [Sample(1)])
    second.observe(names.BOOKIE_LEDGERS, lambda: [Sample(2)])
    assert samples(first)[("bookie_ledgers_count", ())] == 1
    assert samples(second)[("bookie_ledgers_count", ())] == 2


async def test_scrape_refreshes_first() -> None:
    metrics = Metrics()
    measured = {"size": 0}

    async def refresh() -> None:
        measured["size"] = 42

    metrics.add_refresh(refresh)
    metrics.observe(names.BOOKIE_LEDGER_STORAGE_SIZE, lambda: [Sample(measured["size"])])
    assert b"bookie_ledger_storage_size_bytes 42.0" in await metrics.scrape()


ALL = names.BROKER_METRICS + names.BOOKIE_METRICS


@pytest.mark.parametrize("spec", ALL, ids=lambda s: s.name)
def test_names_state_their_unit_or_are_pulsars(spec: MetricSpec) -> None:
    pulsar_names = {"pulsar_storage_size", "pulsar_msg_backlog", "pulsar_replication_backlog"}
    if spec.kind is Kind.COUNTER:
        assert spec.name.endswith("_total")
    elif spec.name not in pulsar_names:
        assert spec.name.endswith(("_count", "_seconds", "_bytes", "_read_only"))


def test_names_are_unique() -> None:
    assert len({s.name for s in ALL}) == len(ALL)
