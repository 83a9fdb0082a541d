"""The proxy's broker credential and the CONNECT it sends for an authenticated client."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.proxy.credentials import BrokerCredential, broker_credential
from magnetar.proxy.handshake import broker_connect
from magnetar.wire import pulsar_api_pb2 as pb


def test_credential_forms(tmp_path: Path) -> None:
    token_file = tmp_path / "proxy.token"
    token_file.write_text("abc.def.ghi\n")
    assert broker_credential("", "") is None
    assert broker_credential("token", "token:xyz") == BrokerCredential("token", b"xyz")
    plugin = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
    assert broker_credential(plugin, f"file://{token_file}") == BrokerCredential(
        "token", b"abc.def.ghi"
    )
    assert "xyz" not in repr(broker_credential("token", "xyz"))
    with pytest.raises(ValueError, match="not supported"):
        broker_credential("kerberos", "x")
    with pytest.raises(ValueError, match="cannot read"):
        broker_credential("token", f"file://{tmp_path}/missing")
    with pytest.raises(ValueError, match="no token"):
        broker_credential("token", "token:")


def client_connect() -> pb.CommandConnect:
    return pb.CommandConnect(
        client_version="c",
        auth_method_name="token",
        auth_data=b"client-token",
        proxy_to_broker_url="127.0.0.1:6650",
    )


def test_authenticated_client_is_named_and_the_proxy_authenticates() -> None:
    proxy = BrokerCredential("token", b"proxy-token")
    sent = broker_connect(
        client_connect(), client_role="app", credential=proxy, forward_credentials=False
    ).connect
    assert (sent.auth_data, sent.original_principal) == (b"proxy-token", "app")
    assert not sent.HasField("original_auth_data")
    assert not sent.HasField("proxy_to_broker_url")
    forwarded = broker_connect(client_connect(), client_role="app", credential=proxy).connect
    assert forwarded.original_auth_data == "client-token"


def test_without_proxy_authentication_the_clients_credential_goes_through() -> None:
    sent = broker_connect(client_connect()).connect
    assert sent.auth_data == b"client-token"
    assert not sent.HasField("original_principal")
