"""Token authentication and Pulsar's authorization on a real standalone, through the official
client, our client, the HTTP API and the CLI tools.

One standalone with HS256 tokens, authorization on and super-users ``admin,ops`` (a comma list
from the environment, as broker.conf takes it); one with ES256 key-pair tokens and a 1 s
refresh check. Tokens that expire are short-lived (a few seconds) and every wait is on a
condition with a deadline.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

from magnetar.authentication.jwt_tokens import create_token, signing_key
from magnetar.client import AuthenticationError, AuthenticationToken, AuthorizationError, Client
from tests.kit.process import MAGNETAR_CLI, running
from tests.kit.scrape import scrape, value
from tests.kit.security import TokenKeys, http_as, log_mark, token_client, wait_for_log
from tests.kit.standalone import StandaloneProcess, topic_name


@pytest.fixture(scope="module")
def secured(
    tmp_path_factory: pytest.TempPathFactory, keys: TokenKeys
) -> Iterator[StandaloneProcess]:
    env = keys.env(
        "STANDALONE",
        authorization_enabled="true",
        super_user_roles="admin, ops",
        authentication_refresh_check_seconds="1",
    )
    sa = StandaloneProcess(data_dir=tmp_path_factory.mktemp("secured") / "data", env=env)
    with running(sa) as process:
        yield process


def pulsar_client(
    process: StandaloneProcess, token: object = None, *, timeout_s: int = 10
) -> pulsar.Client:
    return token_client(process.service_url, token, timeout_s=timeout_s)


def http(
    process: StandaloneProcess,
    method: str,
    path: str,
    token: str | None = None,
    body: object = None,
) -> tuple[int, Any]:
    return http_as(process.web_url, method, path, token, body)


def magnetar(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MAGNETAR_CLI, *args], capture_output=True, text=True, timeout=60, check=False
    )


# ------------------------------------------------------------------ binary protocol


def test_super_user_produces_and_consumes_with_the_official_client(
    secured: StandaloneProcess, keys: TokenKeys
) -> None:
    topic = topic_name("tok")
    client = pulsar_client(secured, keys.token("admin"))
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        producer.send(b"hello")
        assert consumer.receive(timeout_millis=10_000).data() == b"hello"
    finally:
        client.close()


def bad_tokens(keys: TokenKeys) -> dict[str, str | None]:
    return {
        "missing": None,
        "garbage": "abc.def.ghi",
        "wrong-key": create_token(signing_key(bytes(32), "HS256"), "admin"),
        "expired": keys.token("admin", expires_in_s=-10),
        "alg-none": "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.",
        "tampered": keys.token("app").replace(".eyJ", ".eyJzdWIiOiJhZG1pbiJ9X", 1),
    }


@pytest.mark.parametrize("case", ["missing", "wrong-key"])
def test_official_client_is_refused_without_a_valid_token(
    secured: StandaloneProcess, keys: TokenKeys, case: str
) -> None:
    # The official (C++) client treats the broker's ERROR before CONNECTED as a failed connection
    # and retries until its operation timeout: the user sees the call fail, never data.
    mark = log_mark(secured)
    client = pulsar_client(secured, bad_tokens(keys)[case], timeout_s=3)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic_name("refused"))
    finally:
        client.close()
    wait_for_log(secured, "authentication_failed", since=mark)


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("missing", "authentication is required"),
        ("garbage", "malformed"),
        ("wrong-key", "signature does not verify"),
        ("expired", "expired"),
        ("alg-none", "algorithm is not accepted"),
        ("tampered", "malformed|signature"),
    ],
)
async def test_bad_credentials_are_refused_on_connect(
    secured: StandaloneProcess, keys: TokenKeys, case: str, reason: str
) -> None:
    token = bad_tokens(keys)[case]
    auth = None if token is None else AuthenticationToken(token)
    async with Client(secured.service_url, operation_timeout_s=5, auth=auth) as client:
        with pytest.raises(AuthenticationError, match=reason):
            await client.create_producer(topic_name("ours"))


def test_produce_and_consume_need_their_grants(secured: StandaloneProcess, keys: TokenKeys) -> None:
    admin = keys.token("admin")
    topic = topic_name("grants")
    local = topic.rsplit("/", 1)[1]
    client = pulsar_client(secured, keys.token("app"))
    try:
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(topic)
        # produce on the namespace: producing works, subscribing does not
        status, _ = http(secured, "POST", "/admin/v2/namespaces/public/default/permissions/app",
                         admin, ["produce"])  # fmt: skip
        assert status == 204
        producer = client.create_producer(topic)
        producer.send(b"granted")
        with pytest.raises(pulsar.AuthorizationError):
            client.subscribe(topic, "s1")
        # consume on this topic only
        path = f"/admin/v2/persistent/public/default/{local}/permissions/app"
        assert http(secured, "POST", path, admin, ["consume"])[0] == 204
        consumer = client.subscribe(topic, "s1", initial_position=pulsar.InitialPosition.Earliest)
        assert consumer.receive(timeout_millis=10_000).data() == b"granted"
        with pytest.raises(pulsar.AuthorizationError):
            client.subscribe(topic_name("other"), "s1")
        # a subscription restricted to other roles
        roles = "/admin/v2/namespaces/public/default/permissions/subscription/billing"
        assert http(secured, "POST", roles, admin, ["billing-app"])[0] == 204
        with pytest.raises(pulsar.AuthorizationError):
            client.subscribe(topic, "billing")
        status, grants = http(secured, "GET", path.rsplit("/", 1)[0], admin)
        assert (status, grants) == (200, {"app": ["consume", "produce"]})
    finally:
        client.close()
        http(secured, "DELETE", "/admin/v2/namespaces/public/default/permissions/app", admin)


def test_revoking_a_grant_closes_the_producers_that_relied_on_it(
    secured: StandaloneProcess, keys: TokenKeys
) -> None:
    admin = keys.token("admin")
    grant = "/admin/v2/namespaces/public/default/permissions/writer"
    assert http(secured, "POST", grant, admin, ["produce"])[0] == 204
    client = pulsar_client(secured, keys.token("writer"), timeout_s=3)
    try:
        producer = client.create_producer(topic_name("revoked"), send_timeout_millis=3000)
        producer.send(b"granted")
        mark = log_mark(secured)
        assert http(secured, "DELETE", grant, admin)[0] == 204
        wait_for_log(secured, "producer_permission_revoked", since=mark)
        with pytest.raises(pulsar.PulsarException):  # its re-attach is refused
            producer.send(b"revoked")
    finally:
        client.close()


async def test_our_client_reports_the_authorization_error(
    secured: StandaloneProcess, keys: TokenKeys
) -> None:
    auth = AuthenticationToken(keys.token("nobody"))
    async with Client(secured.service_url, operation_timeout_s=5, auth=auth) as client:
        with pytest.raises(AuthorizationError, match="'nobody' is not authorized"):
            await client.create_producer(topic_name("ours"))


async def test_schemas_need_lookup_rights_even_without_a_lookup(
    secured: StandaloneProcess, keys: TokenKeys
) -> None:
    # A client speaking the protocol directly may skip LOOKUP: GET_SCHEMA is checked itself.
    from magnetar.protocol import client_commands

    auth = AuthenticationToken(keys.token("nobody"))
    address = secured.service_url.removeprefix("pulsar://")
    async with Client(secured.service_url, operation_timeout_s=5, auth=auth) as client:
        conn = await client.pool.get(address, address)
        request = client_commands.get_schema(conn.new_request_id(), topic_name("schema"))
        with pytest.raises(AuthorizationError, match="not authorized to lookup"):
            await conn.request(request)


def test_expired_token_is_refreshed_through_auth_challenge(
    secured: StandaloneProcess, keys: TokenKeys
) -> None:
    issued: list[str] = []

    def supplier() -> str:
        issued.append(keys.token("ops", expires_in_s=3))
        return issued[-1]

    topic = topic_name("refresh")
    mark = log_mark(secured)
    client = pulsar_client(secured, supplier)
    try:
        producer = client.create_producer(topic)
        producer.send(b"before")
        wait_for_log(secured, "authentication_challenge", since=mark)
        log = wait_for_log(secured, "authentication_refreshed", since=mark)
        assert "role=ops" in log
        producer.send(b"after")  # the same connection, with the refreshed credential
        assert len(issued) >= 2
    finally:
        client.close()


async def test_our_client_refreshes_with_a_token_function(
    secured: StandaloneProcess, keys: TokenKeys
) -> None:
    issued: list[str] = []

    def supplier() -> str:
        issued.append(keys.token("ours-refreshed", expires_in_s=3))
        return issued[-1]

    mark = log_mark(secured)
    topic = topic_name("ours-refresh")
    grant = "/admin/v2/" + topic.replace("://", "/") + "/permissions/ours-refreshed"
    assert http(secured, "POST", grant, keys.token("admin"), ["produce"])[0] == 204
    auth = AuthenticationToken(supplier)
    async with Client(secured.service_url, operation_timeout_s=10, auth=auth) as client:
        producer = await client.create_producer(topic)
        await producer.send(b"before")
        await asyncio.to_thread(wait_for_log, secured, "authentication_refreshed", since=mark)
        await producer.send(b"after")
    assert len(issued) >= 2


def test_a_connection_whose_token_expired_without_refresh_is_closed(
    secured: StandaloneProcess, keys: TokenKeys
) -> None:
    topic = topic_name("stale")
    mark = log_mark(secured)
    client = pulsar_client(secured, keys.token("admin", expires_in_s=6), timeout_s=3)
    try:
        producer = client.create_producer(topic, send_timeout_millis=3000)
        producer.send(b"while valid")
        # The client answers AUTH_CHALLENGE with the same, now expired token: refused, closed.
        wait_for_log(secured, "the token has expired", since=mark)
        with pytest.raises(pulsar.PulsarException):
            producer.send(b"after expiry")
    finally:
        client.close()


# ------------------------------------------------------------------ HTTP


def test_http_needs_a_bearer_token_and_the_right_role(
    secured: StandaloneProcess, keys: TokenKeys
) -> None:
    admin, app = keys.token("admin"), keys.token("app")
    status, body = http(secured, "GET", "/admin/v2/tenants")
    assert status == 401
    assert "Bearer" in body["reason"]
    assert http(secured, "GET", "/admin/v2/tenants", "garbage")[0] == 401
    status, body = http(secured, "GET", "/admin/v2/tenants", app)
    assert status == 403
    assert "'app' is not a super-user" in body["reason"]
    assert http(secured, "GET", "/admin/v2/tenants", admin) == (200, ["public"])
    # probes and metrics stay open
    assert http(secured, "GET", "/admin/v2/brokers/health") == (200, "ok")
    assert http(secured, "GET", "/metrics")[0] == 200
    # lookups need lookup rights on the topic
    lookup = "/lookup/v2/topic/persistent/public/default/" + uuid.uuid4().hex[:8]
    assert http(secured, "GET", lookup, app)[0] == 403
    assert http(secured, "GET", lookup, admin)[0] == 200


def test_tenant_admin_administers_its_tenant_only(
    secured: StandaloneProcess, keys: TokenKeys
) -> None:
    admin, boss, app = keys.token("admin"), keys.token("acme-admin"), keys.token("app")
    tenant = "acme-" + uuid.uuid4().hex[:6]
    info = {"adminRoles": ["acme-admin"], "allowedClusters": ["standalone"]}
    assert http(secured, "PUT", f"/admin/v2/tenants/{tenant}", boss, info)[0] == 403
    assert http(secured, "PUT", f"/admin/v2/tenants/{tenant}", admin, info)[0] == 204
    assert http(secured, "PUT", f"/admin/v2/namespaces/{tenant}/orders", app)[0] == 403
    assert http(secured, "PUT", f"/admin/v2/namespaces/{tenant}/orders", boss)[0] == 204
    assert http(secured, "GET", f"/admin/v2/namespaces/{tenant}", boss) == (
        200,
        [f"{tenant}/orders"],
    )
    assert (
        http(secured, "POST", "/admin/v2/namespaces/public/default/messageTTL", boss, 60)[0] == 403
    )
    # the tenant admin produces and consumes on its tenant without grants
    client = pulsar_client(secured, boss)
    try:
        topic = f"persistent://{tenant}/orders/t"
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(b"mine")
        assert consumer.receive(timeout_millis=10_000).data() == b"mine"
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(topic_name("not-mine"))
    finally:
        client.close()


def test_admin_cli_grants_topic_permissions_with_a_token_file(
    secured: StandaloneProcess, keys: TokenKeys, tmp_path: Path
) -> None:
    token_file = tmp_path / "admin.token"
    token_file.write_text(keys.token("admin") + "\n")
    topic = topic_name("cli")
    base = ["admin", "--admin-url", secured.web_url, "--auth-token-file", str(token_file)]
    done = magnetar(*base, "topics", "grant-permission", topic, "--role", "app",
                    "--actions", "produce,consume")  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = magnetar(*base, "--json", "topics", "permissions", topic)
    assert json.loads(shown.stdout) == {"app": ["consume", "produce"]}
    refused = magnetar("admin", "--admin-url", secured.web_url, "topics", "permissions", topic)
    assert refused.returncode == 1
    assert "(HTTP 401); give a token with --auth-token" in refused.stderr
    done = magnetar(*base, "topics", "revoke-permission", topic, "--role", "app")
    assert done.returncode == 0, done.stderr
    path = "/admin/v2/" + topic.replace("://", "/") + "/permissions/app"
    status, body = http(secured, "DELETE", path, keys.token("admin"))
    assert status == 412
    assert "not set at the topic level" in body["reason"]


def test_runtime_configuration_hides_the_key(secured: StandaloneProcess, keys: TokenKeys) -> None:
    path = "/admin/v2/brokers/configuration/runtime"
    assert http(secured, "GET", path, keys.token("app"))[0] == 403
    status, values = http(secured, "GET", path, keys.token("admin"))
    assert status == 200
    assert values["token_secret_key"] == "******"
    assert values["super_user_roles"] == "admin,ops"
    assert keys.reference.removeprefix("file://") not in json.dumps(values)


def test_authentication_outcomes_are_counted(secured: StandaloneProcess) -> None:
    """After the tests above: accepted tokens, and refused expired and invalid ones."""
    samples = scrape(secured.web_url)
    assert value(samples, "pulsar_authentication_success_total", auth_method="token") > 0
    for reason in ("expired", "invalid"):
        refused = value(
            samples, "pulsar_authentication_failures_total", auth_method="token", reason=reason
        )
        assert refused > 0


def test_no_token_or_key_in_the_log(secured: StandaloneProcess, keys: TokenKeys) -> None:
    """Last in the module: the log of every test above holds no credential."""
    log = secured.log_text()
    secret = Path(keys.reference.removeprefix("file://")).read_bytes()
    import base64

    assert base64.b64encode(secret).decode() not in log
    for role in ("admin", "app", "ops", "acme-admin"):
        signature_free = keys.token(role).rsplit(".", 1)[0]  # header.claims of any such token
        assert signature_free not in log
    assert "eyJ" not in log  # no JWT at all
