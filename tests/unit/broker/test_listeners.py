"""Named advertised listeners: the setting's parser, the registration and owner-record round
trips, and the lookup answer per listener name."""

from __future__ import annotations

import pytest

from magnetar.broker.broker_registry import BrokerLookupData
from magnetar.broker.listeners import (
    AdvertisedListener,
    UnknownListener,
    parse_advertised_listeners,
)
from magnetar.broker.load_manager import LeaderBroker
from magnetar.broker.ownership import LookupResult, owner_of_record, owner_record

SETTING = (
    "internal:pulsar://10.0.0.5:6650, internal:http://10.0.0.5:8080,"
    "external:pulsar://lb.example:16650,external:pulsar+ssl://lb.example:16651"
)


def _broker() -> BrokerLookupData:
    return BrokerLookupData(
        "10.0.0.5:6650",
        "pulsar://10.0.0.5:6650",
        "http://10.0.0.5:8080",
        advertised_listeners=parse_advertised_listeners(SETTING),
    )


def test_the_setting_parses_into_listeners() -> None:
    listeners = parse_advertised_listeners(SETTING)
    assert listeners == {
        "internal": AdvertisedListener("pulsar://10.0.0.5:6650", None, "http://10.0.0.5:8080"),
        "external": AdvertisedListener(
            "pulsar://lb.example:16650", "pulsar+ssl://lb.example:16651"
        ),
    }
    assert parse_advertised_listeners("") == {}


@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ("internal", "name:scheme"),
        (":pulsar://h:1", "name:scheme"),
        ("a:ftp://h:1", "pulsar://, pulsar\\+ssl://"),
        ("a:pulsar://h", "with a host and a port"),
        ("a:pulsar://h:1,a:pulsar://g:2", "two pulsar://"),
        ("a:http://h:1", "no pulsar://"),
    ],
)
def test_a_bad_setting_names_what_is_wrong(setting: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_advertised_listeners(setting)


def test_listeners_survive_the_registration_the_owner_record_and_the_leader_record() -> None:
    broker = _broker()
    assert BrokerLookupData.from_json(broker.broker_id, broker.to_json()) == broker
    from_record = owner_of_record(owner_record(broker)).broker
    assert from_record is not None
    assert from_record.advertised_listeners == broker.advertised_listeners
    leader = LeaderBroker.from_json(LeaderBroker.of(broker).to_json())
    assert leader.as_lookup_data().advertised_listeners == broker.advertised_listeners


def test_a_lookup_answers_with_the_named_listener() -> None:
    found = LookupResult.connect(_broker())
    assert found.for_listener(None) is found
    external = found.for_listener("external")
    assert external.pulsar_service_url == "pulsar://lb.example:16650"
    assert external.web_service_url == "http://10.0.0.5:8080"  # no http:// URL of its own
    internal = LookupResult.redirect_to(_broker(), authoritative=False).for_listener("internal")
    assert (internal.pulsar_service_url, internal.redirect) == ("pulsar://10.0.0.5:6650", True)
    with pytest.raises(UnknownListener, match="'nowhere'"):
        found.for_listener("nowhere")
