"""The proxy reads the brokers' registration JSON without importing the broker: this pins the
two sides together (what BrokerLookupData writes is what RegisteredBroker reads)."""

from __future__ import annotations

from magnetar.broker.broker_registry import BrokerLookupData
from magnetar.broker.listeners import parse_advertised_listeners
from magnetar.proxy.discovery import RegisteredBroker


def test_the_proxy_reads_what_a_broker_registers() -> None:
    written = BrokerLookupData(
        "10.0.0.5:6650",
        "pulsar://10.0.0.5:6650",
        "http://10.0.0.5:8080",
        advertised_listeners=parse_advertised_listeners(
            "external:pulsar://lb.example:16650,external:http://lb.example:18080"
        ),
    )
    read = RegisteredBroker.from_json(written.broker_id, written.to_json())
    assert read.pulsar_service_url == written.pulsar_service_url
    assert read.web_service_url == written.web_service_url
    assert read.answers_at("10.0.0.5:6650")
    assert read.answers_at("lb.example:16650")
    assert not read.answers_at("lb.example:18080")  # an http listener is no relay target
