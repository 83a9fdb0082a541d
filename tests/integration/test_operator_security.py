"""The operator's side of a PulsarCluster's ``tls`` and ``auth``: the real operator (kmock API)
makes the signing key and tokens once and keeps them; the Tenant/Namespace/Topic handlers use
its token against a real ``magnetar standalone`` with authentication and authorization on, and
say clearly why they cannot without it. No key or token in a status or an Event.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

from magnetar.authentication.jwt_tokens import (
    create_secret_key,
    public_verification_key,
    secret_verification_key,
    verify_token,
)
from magnetar.client.admin import AdminClient
from magnetar_operator.credentials import CredentialsError, ensure_credentials, secret_value
from magnetar_operator.kube import Kube
from magnetar_operator.manifests.brokers import broker_config
from magnetar_operator.manifests.security import OPERATOR_ROLE, PROXY_ROLE
from magnetar_operator.spec import ClusterSpec
from tests.integration.operator_kit import (
    NAMESPACES,
    PC,
    TENANTS,
    TOPICS,
    resource,
    running_operator,
    wait_ready,
)
from tests.kit.kube_mock import KubeView, kube_api
from tests.kit.ports import free_port
from tests.kit.process import running
from tests.kit.security import log_mark, wait_for_log
from tests.kit.standalone import StandaloneProcess
from tests.kit.tls import TestPki

NS = "secure"
SECRETS = ("v1", "secrets")


def cluster_spec(**extra: Any) -> dict[str, Any]:
    return {"clusterName": "standalone", "bookies": {"replicas": 1},
            "brokers": {"replicas": 1}, **extra}  # fmt: skip


def user_key_secret(name: str, raw: bytes) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "type": "Opaque", "data": {"signing-key": base64.b64encode(raw).decode()}}  # fmt: skip


@pytest.fixture
async def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Kube]:
    """The operator's Kubernetes client on a kmock API (no operator running)."""
    async with kube_api(tmp_path) as (_, _url, kubeconfig):
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        client = Kube.from_environment()
        try:
            yield client
        finally:
            client.close()


def _spec(**auth: Any) -> ClusterSpec:
    return ClusterSpec.parse("demo", NS, cluster_spec(auth={"enabled": True, **auth}))


async def _secret(kube: Kube, name: str) -> dict[str, Any]:
    found = await kube.get("v1", "Secret", NS, name)
    assert found is not None, name
    return found


async def test_the_generated_key_and_tokens_are_made_once_and_follow_a_new_key(
    kube: Kube,
) -> None:
    spec = _spec()
    token = await ensure_credentials(kube, spec, lambda _: None)
    key = await _secret(kube, "demo-token-key")
    tokens = await _secret(kube, "demo-tokens")
    raw = secret_value(key, "signing-key")
    assert raw is not None
    assert len(raw) == 32
    assert token is not None
    assert verify_token(token, secret_verification_key(raw))["sub"] == OPERATOR_ROLE
    proxy = secret_value(tokens, "proxy")
    assert proxy is not None
    assert verify_token(proxy.decode(), secret_verification_key(raw))["sub"] == PROXY_ROLE

    # a second (third ...) reconcile changes nothing: same key, same tokens, no write
    for _ in range(2):
        assert await ensure_credentials(kube, spec, lambda _: None) == token
    assert (await _secret(kube, "demo-token-key"))["data"] == key["data"]
    again = await _secret(kube, "demo-tokens")
    assert again["data"] == tokens["data"]
    assert again["metadata"]["resourceVersion"] == tokens["metadata"]["resourceVersion"]

    # the user replaces the key: the tokens are minted again with it
    new = create_secret_key()
    patch = {"data": {"signing-key": base64.b64encode(new).decode()}}
    where = {"name": "demo-token-key", "namespace": NS}
    await kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": where, **patch})
    fresh = await ensure_credentials(kube, spec, lambda _: None)
    assert fresh is not None
    assert fresh != token
    assert verify_token(fresh, secret_verification_key(new))["sub"] == OPERATOR_ROLE


async def test_a_paused_cluster_gets_no_secrets_but_keeps_its_token(kube: Kube) -> None:
    spec = _spec()
    assert await ensure_credentials(kube, spec, lambda _: None, write=False) is None
    assert await kube.get("v1", "Secret", NS, "demo-token-key") is None
    token = await ensure_credentials(kube, spec, lambda _: None)
    assert token is not None
    assert await ensure_credentials(kube, spec, lambda _: None, write=False) == token


async def test_a_key_pair_is_generated_and_only_its_public_half_verifies(kube: Kube) -> None:
    spec = _spec(algorithm="ES256")
    token = await ensure_credentials(kube, spec, lambda _: None)
    key = await _secret(kube, "demo-token-key")
    assert set(key["data"]) == {"private-key", "public-key"}
    public = secret_value(key, "public-key")
    assert public is not None
    assert token is not None
    assert verify_token(token, public_verification_key(public, "ES256"))["sub"] == OPERATOR_ROLE


async def test_a_missing_or_wrong_user_key_secret_is_a_clear_error(kube: Kube) -> None:
    spec = _spec(tokenSecretName="mine")
    with pytest.raises(CredentialsError) as missing:
        await ensure_credentials(kube, spec, lambda _: None)
    assert missing.value.reason == "TokenKeySecretNotFound"
    assert f"Secret {NS}/mine" in str(missing.value)
    assert await kube.get("v1", "Secret", NS, "mine") is None  # never generated in its place

    wrong = user_key_secret("mine", b"x" * 32)
    wrong["metadata"]["namespace"] = NS
    wrong["data"] = {"private-key": wrong["data"]["signing-key"]}
    await kube.create(wrong)
    with pytest.raises(CredentialsError) as invalid:
        await ensure_credentials(kube, spec, lambda _: None)
    assert invalid.value.reason == "TokenKeyInvalid"
    assert "'signing-key'" in str(invalid.value)


async def test_the_cluster_handler_makes_the_certificate_and_secrets_and_hides_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_operator(tmp_path, monkeypatch, resources=False, namespace=NS) as url:
        view = KubeView(url, NS)
        try:
            spec = cluster_spec(
                tls={"enabled": True, "issuerRef": {"name": "pulsar-ca"}},
                auth={"enabled": True, "superUserRoles": ["admin"]},
            )
            await view.create(*PC, resource("PulsarCluster", "demo", spec))
            cert = await view.wait_for(
                "the Certificate",
                lambda: view.get("cert-manager.io/v1", "certificates", "demo-tls"),
            )
            assert cert["spec"]["issuerRef"] == {
                "name": "pulsar-ca", "kind": "Issuer", "group": "cert-manager.io"}  # fmt: skip
            assert cert["spec"]["secretName"] == "demo-tls"
            tokens = await view.wait_for("the tokens", lambda: view.get(*SECRETS, "demo-tokens"))
            key = await view.get(*SECRETS, "demo-token-key")
            assert key is not None
            for owned in (cert, tokens, key):  # deleted with the cluster
                assert owned["metadata"]["ownerReferences"][0]["name"] == "demo"
            secrets = [base64.b64decode(v).decode("latin-1") for v in tokens["data"].values()]
            secrets.append(key["data"]["signing-key"])

            # a user key Secret that does not exist: Ready=False saying which, nothing made
            await view.create(
                *PC,
                resource(
                    "PulsarCluster",
                    "byok",
                    cluster_spec(auth={"enabled": True, "tokenSecretName": "byok-key"}),
                ),
            )
            cond = await wait_ready(view, PC, "byok", "TokenKeySecretNotFound")
            assert f"Secret {NS}/byok-key" in cond["message"]
            assert await view.get(*SECRETS, "byok-tokens") is None

            shown = json.dumps(
                [
                    await view.get(*PC, "demo"),
                    await view.get(*PC, "byok"),
                    await view.list("v1", "events"),
                ]
            )
            for secret in secrets:
                assert secret not in shown
        finally:
            await view.close()


async def test_a_broker_with_the_rendered_settings_serves_tls_and_takes_the_generated_token(
    kube: Kube, tmp_path: Path
) -> None:
    """The broker settings the operator renders, run by a real process (a standalone takes
    the broker's settings under its own prefix), with the files laid out as the pod mounts
    them: the official client connects over ``pulsar+ssl://`` with the operator's generated
    token, and is refused without it."""
    spec = ClusterSpec.parse("demo", NS, cluster_spec(
        tls={"enabled": True, "secretName": "demo-tls"}, auth={"enabled": True}))  # fmt: skip
    token = await ensure_credentials(kube, spec, lambda _: None)
    assert token is not None
    raw = secret_value(await _secret(kube, "demo-token-key"), "signing-key")
    assert raw is not None
    # /etc/magnetar as the pod sees it: the TLS Secret and the signing key
    pki = TestPki.create(tmp_path / "pki")
    server = pki.issue("broker")
    root = tmp_path / "etc"
    (root / "tls").mkdir(parents=True)
    (root / "tls" / "tls.crt").write_bytes(server.cert_file.read_bytes())
    (root / "tls" / "tls.key").write_bytes(server.key_file.read_bytes())
    (root / "tls" / "ca.crt").write_bytes(pki.ca_file.read_bytes())
    (root / "token-key").mkdir()
    (root / "token-key" / "signing-key").write_bytes(raw)
    tls_port = free_port()
    env = {
        name.replace("MAGNETAR_BROKER_", "MAGNETAR_STANDALONE_"): value.replace(
            "/etc/magnetar", str(root)
        )
        for name, value in broker_config(spec).items()
        if "BOOKKEEPER_TLS" not in name  # the standalone's bookie is in the process
    }
    env |= {
        "MAGNETAR_STANDALONE_BROKER_SERVICE_PORT_TLS": str(tls_port),  # 6651 in the pod
        "MAGNETAR_STANDALONE_WEB_SERVICE_PORT_TLS": str(free_port()),
        "MAGNETAR_STANDALONE_CLUSTER_NAME": "standalone",
        # one bookie in a standalone
        **{f"MAGNETAR_STANDALONE_MANAGED_LEDGER_DEFAULT_{q}_QUORUM": "1" for q in ("WRITE", "ACK")},
        "MAGNETAR_STANDALONE_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": "1",
    }
    assert env["MAGNETAR_STANDALONE_AUTHORIZATION_ENABLED"] == "true"
    url = f"pulsar+ssl://127.0.0.1:{tls_port}"
    topic = f"persistent://public/default/op-{uuid.uuid4().hex[:8]}"

    def client(auth: object, timeout_s: int = 10) -> pulsar.Client:
        return pulsar.Client(url, authentication=auth, operation_timeout_seconds=timeout_s,
                             tls_trust_certs_file_path=str(pki.ca_file),
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))  # fmt: skip

    with running(StandaloneProcess(data_dir=tmp_path / "data", env=env)) as process:
        good = client(pulsar.AuthenticationToken(token))
        try:
            consumer = good.subscribe(topic, "s")
            good.create_producer(topic).send(b"over tls")
            assert consumer.receive(timeout_millis=10_000).data() == b"over tls"
        finally:
            good.close()
        mark = log_mark(process)
        anonymous = client(None, timeout_s=3)
        try:
            with pytest.raises(pulsar.PulsarException):
                anonymous.create_producer(topic)
        finally:
            anonymous.close()
        wait_for_log(process, "authentication_failed", since=mark)
        assert token not in process.log_text()


# ------------------------------------------------------- Tenant/Namespace/Topic with auth on


@pytest.fixture(scope="module")
def signing_key_raw() -> bytes:
    return create_secret_key()


@pytest.fixture(scope="module")
def secure_standalone(
    tmp_path_factory: pytest.TempPathFactory, signing_key_raw: bytes
) -> Iterator[StandaloneProcess]:
    """A standalone that requires a token and authorizes by role, with the key the test's
    PulsarCluster names (``spec.auth.tokenSecretName``)."""
    base = tmp_path_factory.mktemp("secure-sa")
    (base / "signing.key").write_bytes(signing_key_raw)
    p = "MAGNETAR_STANDALONE_"
    env = {
        p + "AUTHENTICATION_ENABLED": "true",
        p + "AUTHENTICATION_PROVIDERS": "token",
        p + "TOKEN_SECRET_KEY": f"file://{base / 'signing.key'}",
        p + "AUTHORIZATION_ENABLED": "true",
        p + "SUPER_USER_ROLES": f"admin,{OPERATOR_ROLE},{PROXY_ROLE}",
    }
    with running(StandaloneProcess(data_dir=base / "data", env=env)) as process:
        yield process


async def test_resource_handlers_use_the_operator_token_and_say_why_without_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    secure_standalone: StandaloneProcess,
    signing_key_raw: bytes,
) -> None:
    url_ = secure_standalone.web_url
    async with running_operator(tmp_path, monkeypatch, broker_admin_url=url_, namespace=NS) as url:
        view = KubeView(url, NS)
        tenant = f"t{uuid.uuid4().hex[:8]}"
        try:
            # the cluster handler mints the tokens from the user's key Secret
            await view.create(*SECRETS, user_key_secret("demo-key", signing_key_raw))
            auth = {"enabled": True, "tokenSecretName": "demo-key"}
            await view.create(*PC, resource("PulsarCluster", "demo", cluster_spec(auth=auth)))
            await view.wait_for("the tokens", lambda: view.get(*SECRETS, "demo-tokens"))

            await view.create(*TENANTS, resource("Tenant", tenant, {"clusterRef": "demo"}))
            ns_spec = {"clusterRef": "demo", "tenant": tenant, "name": "orders",
                       "messageTTLSeconds": 600}  # fmt: skip
            await view.create(*NAMESPACES, resource("Namespace", f"{tenant}-orders", ns_spec))
            topic = {"clusterRef": "demo", "namespace": f"{tenant}/orders", "name": "in",
                     "partitions": 2}  # fmt: skip
            await view.create(*TOPICS, resource("Topic", f"{tenant}-in", topic))
            await wait_ready(view, TENANTS, tenant)
            await wait_ready(view, NAMESPACES, f"{tenant}-orders")
            await wait_ready(view, TOPICS, f"{tenant}-in")

            # really there: read with a super-user token of the same key
            tokens = await view.get(*SECRETS, "demo-tokens")
            assert tokens is not None
            token = secret_value(tokens, "operator")
            assert token is not None
            async with AdminClient(url_, timeout_s=10, auth_token=token.decode()) as admin:
                assert await admin.get_message_ttl(f"{tenant}/orders") == 600
                meta = await admin.get_partitioned_topic_metadata(
                    f"persistent://{tenant}/orders/in"
                )
                assert meta.partitions == 2

            # a PulsarCluster without auth pointing at the same brokers: refused, and said so
            await view.create(*PC, resource("PulsarCluster", "open", cluster_spec()))
            other = f"o{uuid.uuid4().hex[:8]}"
            await view.create(*TENANTS, resource("Tenant", other, {"clusterRef": "open"}))
            cond = await wait_ready(view, TENANTS, other, "Unauthorized")
            assert other in cond["message"]
            assert token.decode() not in json.dumps(await view.list("v1", "events"))
        finally:
            await view.close()
