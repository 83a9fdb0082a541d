"""How the proxy dials a broker: the TLS fields of a registration as the proxy reads them, and
the dial target in plain and TLS modes (a broker without a TLS URL refused, never dialled in
plain). Over the in-memory metadata store, the discovery as the proxy runs it."""

from __future__ import annotations

import ssl
import uuid
from collections.abc import AsyncIterator

import pytest

from magnetar.broker.broker_registry import BrokerLookupData
from magnetar.metadata import keys
from magnetar.metadata.factory import open_store
from magnetar.metadata.store import MetadataStore
from magnetar.proxy.broker_dial import BrokerDial
from magnetar.proxy.discovery import BrokerDiscovery, RegisteredBroker
from magnetar.proxy.errors import BrokerWithoutTls
from magnetar.proxy.lookup import tls_name

WITH_TLS = BrokerLookupData(
    "10.0.0.5:6650",
    "pulsar://10.0.0.5:6650",
    "http://10.0.0.5:8080",
    pulsar_service_url_tls="pulsar+ssl://10.0.0.5:6651",
    web_service_url_tls="https://10.0.0.5:8443",
)
PLAIN = BrokerLookupData("10.0.0.6:6650", "pulsar://10.0.0.6:6650", "http://10.0.0.6:8080")


def test_the_proxy_reads_the_tls_urls() -> None:
    read = RegisteredBroker.from_json(WITH_TLS.broker_id, WITH_TLS.to_json())
    assert read.tls_address == "10.0.0.5:6651"
    assert read.answers_at("10.0.0.5:6651")  # a TLS client names the broker by it
    assert read.web_service_url_tls == "https://10.0.0.5:8443"
    assert RegisteredBroker.from_json(PLAIN.broker_id, PLAIN.to_json()).tls_address is None


def test_tls_name_of_a_plain_broker() -> None:
    assert tls_name("pulsar://10.0.0.6:6650") == "pulsar+ssl://10.0.0.6:6650"


@pytest.fixture
async def discovery() -> AsyncIterator[BrokerDiscovery]:
    store: MetadataStore = await open_store(f"memory://dial-{uuid.uuid4().hex[:8]}")
    for broker in (WITH_TLS, PLAIN):
        await store.put(keys.broker_registration(broker.broker_id), broker.to_json())
    found = BrokerDiscovery(store)
    await found.start()
    try:
        yield found
    finally:
        await found.close()
        await store.close()


async def test_plain_dialling_keeps_the_address(discovery: BrokerDiscovery) -> None:
    target = BrokerDial(discovery, None).target("10.0.0.5:6650")
    assert (target.host, target.port, target.ssl, target.server_hostname) == (
        "10.0.0.5",
        6650,
        None,
        None,
    )


async def test_tls_dialling_takes_the_tls_address(discovery: BrokerDiscovery) -> None:
    context = ssl.create_default_context()
    dial = BrokerDial(discovery, context)
    target = dial.target("10.0.0.5:6650")
    assert (target.host, target.port, target.ssl) == ("10.0.0.5", 6651, context)
    assert target.server_hostname == "10.0.0.5"
    with pytest.raises(BrokerWithoutTls, match=r"10\.0\.0\.6:6650"):
        dial.target("10.0.0.6:6650")
