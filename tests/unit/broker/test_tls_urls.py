"""The broker's TLS URLs in what it publishes and answers: registration and owner-record
round trips, the lookup answer's TLS fields (default and per named listener), and which web
URL a redirect asked over HTTPS goes to."""

from __future__ import annotations

from magnetar.broker.broker_registry import BrokerLookupData
from magnetar.broker.listeners import parse_advertised_listeners
from magnetar.broker.load_manager import LeaderBroker
from magnetar.broker.ownership import LookupResult, owner_of_record, owner_record
from magnetar.broker.service import BrokerConfig, broker_lookup_data


def _broker() -> BrokerLookupData:
    config = BrokerConfig(
        advertised_address="10.0.0.5",
        broker_service_port=6650,
        web_service_port=8080,
        broker_service_port_tls=6651,
        web_service_port_tls=8443,
        advertised_listeners=parse_advertised_listeners(
            "external:pulsar+ssl://lb.example:16651,external:https://lb.example:18443,"
            "internal:pulsar://10.0.0.5:6650"
        ),
    )
    return broker_lookup_data(config)


def test_a_broker_with_tls_ports_publishes_its_tls_urls() -> None:
    broker = _broker()
    assert broker.pulsar_service_url_tls == "pulsar+ssl://10.0.0.5:6651"
    assert broker.web_service_url_tls == "https://10.0.0.5:8443"
    assert BrokerLookupData.from_json(broker.broker_id, broker.to_json()) == broker


def test_a_broker_without_tls_ports_publishes_empty_tls_urls() -> None:
    broker = broker_lookup_data(BrokerConfig())
    assert (broker.pulsar_service_url_tls, broker.web_service_url_tls) == ("", "")
    assert b'"pulsarServiceUrlTls": ""' in broker.to_json()


def test_the_owner_record_carries_the_tls_urls() -> None:
    found = owner_of_record(owner_record(_broker()))
    assert found.pulsar_service_url_tls == "pulsar+ssl://10.0.0.5:6651"
    assert found.web_service_url_tls == "https://10.0.0.5:8443"


def test_lookup_answers_carry_the_tls_urls_per_listener() -> None:
    here = LookupResult.connect(_broker())
    assert here.pulsar_service_url_tls == "pulsar+ssl://10.0.0.5:6651"
    external = here.for_listener("external")
    assert external.pulsar_service_url == "pulsar+ssl://lb.example:16651"
    assert external.pulsar_service_url_tls == "pulsar+ssl://lb.example:16651"
    assert external.web_service_url_tls == "https://lb.example:18443"
    internal = here.for_listener("internal")
    assert internal.pulsar_service_url == "pulsar://10.0.0.5:6650"
    assert internal.pulsar_service_url_tls == ""  # the listener has no pulsar+ssl:// URL


def test_redirects_asked_over_https_go_to_the_https_url() -> None:
    there = LookupResult.redirect_to(_broker())
    assert there.web_url(https=True) == "https://10.0.0.5:8443"
    assert there.web_url(https=False) == "http://10.0.0.5:8080"
    plain = LookupResult.redirect_to(broker_lookup_data(BrokerConfig()))
    assert plain.web_url(https=True) == "http://127.0.0.1:8080"  # no https: the only one


def test_a_redirect_to_the_load_managers_leader_keeps_the_tls_urls() -> None:
    leader = LeaderBroker.from_json(LeaderBroker.of(_broker()).to_json())
    assert leader.as_lookup_data() == _broker()
    there = LookupResult.redirect_to(leader.as_lookup_data())
    assert there.pulsar_service_url_tls == "pulsar+ssl://10.0.0.5:6651"
    assert there.web_url(https=True) == "https://10.0.0.5:8443"
