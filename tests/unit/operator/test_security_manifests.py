"""What ``spec.tls`` and ``spec.auth`` put into the rendered pods: the Secret volumes and mounts,
the TLS ports, and settings whose names the real settings classes have (no drift between the
operator and the processes); no secret value in any rendered object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_settings import BaseSettings

from magnetar.authentication.jwt_tokens import create_secret_key, create_token, signing_key
from magnetar.autorecovery.settings import AutorecoverySettings
from magnetar.bookie.settings import BookieSettings
from magnetar.broker.settings import BrokerSettings
from magnetar.proxy.settings import ProxySettings
from magnetar_operator.manifests import Obj, Stage, cluster_objects, spec_hash
from magnetar_operator.names import service_url_tls, web_url_tls
from magnetar_operator.spec import ClusterSpec, InvalidSpec

SECURE = {
    "bookies": {"replicas": 3},
    "brokers": {"replicas": 2},
    "tls": {"enabled": True, "issuerRef": {"name": "ca"}},
    "auth": {"enabled": True, "superUserRoles": ["admin"]},
}
ROLES: dict[str, type[BaseSettings]] = {
    "BROKER": BrokerSettings,
    "PROXY": ProxySettings,
    "BOOKIE": BookieSettings,
    "AUTORECOVERY": AutorecoverySettings,
}


def _spec(**changes: Any) -> ClusterSpec:
    return ClusterSpec.parse("demo", "pulsar", {**SECURE, **changes})


def _objects(spec: ClusterSpec) -> dict[tuple[str, str], Obj]:
    every = cluster_objects(spec)
    return {(o["kind"], o["metadata"]["name"]): o for s in Stage for o in every[s]}


def _container(obj: Obj) -> Obj:
    pod = obj["spec"]["template"]["spec"]
    return dict(pod["containers"][0])


def _settings(obj: Obj, objects: dict[tuple[str, str], Obj]) -> dict[str, str]:
    """The MAGNETAR_* settings a workload's container gets (env and its ConfigMap)."""
    main = _container(obj)
    found = {e["name"]: e["value"] for e in main.get("env", []) if "value" in e}
    for source in main.get("envFrom", []):
        found |= objects[("ConfigMap", source["configMapRef"]["name"])]["data"]
    return found


def _volumes(obj: Obj) -> dict[str, tuple[str, list[str], str]]:
    """volume name -> (Secret, its keys, where the container mounts it)."""
    pod = obj["spec"]["template"]["spec"]
    mounts = {m["name"]: m["mountPath"] for m in _container(obj).get("volumeMounts", [])}
    return {
        v["name"]: (v["secret"]["secretName"], [i["key"] for i in v["secret"]["items"]],
                    mounts[v["name"]])
        for v in pod.get("volumes", []) if "secret" in v
    }  # fmt: skip


def test_every_security_setting_is_one_the_process_has() -> None:
    objects = _objects(_spec())
    for (kind, name), obj in objects.items():
        if kind not in ("Deployment", "StatefulSet") or name == "demo-etcd":
            continue
        role = name.removeprefix("demo-").upper()
        fields = ROLES[role].model_fields
        for env in _settings(obj, objects):
            prefix = f"MAGNETAR_{role}_"
            if env.startswith(prefix):
                assert env.removeprefix(prefix).lower() in fields, (name, env)


def test_brokers_serve_tls_and_check_tokens_from_the_mounted_files() -> None:
    objects = _objects(_spec())
    brokers = objects[("Deployment", "demo-broker")]
    settings = _settings(brokers, objects)
    b = "MAGNETAR_BROKER_"
    assert settings[b + "BROKER_SERVICE_PORT_TLS"] == "6651"
    assert settings[b + "WEB_SERVICE_PORT_TLS"] == "8443"
    assert settings[b + "TLS_CERTIFICATE_FILE_PATH"] == "/etc/magnetar/tls/tls.crt"
    assert settings[b + "BOOKKEEPER_TLS_TRUST_CERTS_FILE_PATH"] == "/etc/magnetar/tls/ca.crt"
    assert settings[b + "AUTHENTICATION_ENABLED"] == "true"
    assert settings[b + "AUTHORIZATION_ENABLED"] == "true"
    assert settings[b + "SUPER_USER_ROLES"] == "admin,magnetar-operator,magnetar-proxy"
    assert settings[b + "PROXY_ROLES"] == "magnetar-proxy"
    assert settings[b + "TOKEN_SECRET_KEY"] == "file:///etc/magnetar/token-key/signing-key"
    assert _volumes(brokers) == {
        "tls": ("demo-tls", ["tls.crt", "tls.key", "ca.crt"], "/etc/magnetar/tls"),
        "token-key": ("demo-token-key", ["signing-key"], "/etc/magnetar/token-key"),
    }
    ports = {p["port"] for p in objects[("Service", "demo-broker")]["spec"]["ports"]}
    assert ports == {6650, 8080, 6651, 8443}
    assert {p["containerPort"] for p in _container(brokers)["ports"]} == ports


def test_the_proxy_terminates_tls_and_presents_its_own_token() -> None:
    objects = _objects(_spec())
    proxy = objects[("Deployment", "demo-proxy")]
    settings = _settings(proxy, objects)
    p = "MAGNETAR_PROXY_"
    assert settings[p + "SERVICE_PORT_TLS"] == "6651"
    assert settings[p + "TLS_ENABLED_WITH_BROKER"] == "true"
    assert settings[p + "AUTHENTICATION_ENABLED"] == "true"
    assert settings[p + "BROKER_CLIENT_AUTHENTICATION_PLUGIN"] == "token"
    params = settings[p + "BROKER_CLIENT_AUTHENTICATION_PARAMETERS"]
    assert params == "file:///etc/magnetar/proxy-token/proxy"
    assert _volumes(proxy)["proxy-token"] == ("demo-tokens", ["proxy"], "/etc/magnetar/proxy-token")
    ports = {p["port"] for p in objects[("Service", "demo-proxy")]["spec"]["ports"]}
    assert ports == {6650, 8080, 6651, 8443}


def test_bookies_and_autorecovery_use_tls_towards_each_other() -> None:
    objects = _objects(_spec())
    bookies = objects[("StatefulSet", "demo-bookie")]
    settings = _settings(bookies, objects)
    assert settings["MAGNETAR_BOOKIE_TLS_CERTIFICATE_PATH"] == "/etc/magnetar/tls/tls.crt"
    assert settings["MAGNETAR_BOOKIE_TLS_KEY_STORE"] == "/etc/magnetar/tls/tls.key"
    assert set(_volumes(bookies)) == {"tls"}  # the token key only where tokens are checked
    recovery = objects[("Deployment", "demo-autorecovery")]
    trust = _settings(recovery, objects)[
        "MAGNETAR_AUTORECOVERY_BOOKKEEPER_TLS_TRUST_CERTS_FILE_PATH"
    ]
    assert trust == "/etc/magnetar/tls/ca.crt"


def test_the_certificate_names_every_service_and_stateful_pod() -> None:
    cert = _objects(_spec())[("Certificate", "demo-tls")]
    names = cert["spec"]["dnsNames"]
    for host in ("demo-broker.pulsar.svc", "demo-proxy.pulsar.svc.cluster.local",
                 "*.demo-bookie.pulsar.svc", "*.demo-etcd.pulsar.svc"):  # fmt: skip
        assert host in names
    assert cert["spec"]["issuerRef"] == {"name": "ca", "kind": "Issuer", "group": "cert-manager.io"}


def test_a_user_secret_and_a_key_pair_are_mounted_as_named() -> None:
    spec = _spec(
        tls={"enabled": True, "secretName": "my-tls"},
        auth={"enabled": True, "tokenSecretName": "my-key", "algorithm": "RS256"},
    )
    objects = _objects(spec)
    assert not [k for k in objects if k[0] == "Certificate"]  # the user's Secret, no issuer
    brokers = objects[("Deployment", "demo-broker")]
    volumes = _volumes(brokers)
    assert volumes["tls"][0] == "my-tls"
    assert volumes["token-key"] == ("my-key", ["public-key"], "/etc/magnetar/token-key")
    settings = _settings(brokers, objects)
    assert (
        settings["MAGNETAR_BROKER_TOKEN_PUBLIC_KEY"] == "file:///etc/magnetar/token-key/public-key"
    )
    assert settings["MAGNETAR_BROKER_TOKEN_PUBLIC_ALG"] == "RS256"
    assert "MAGNETAR_BROKER_TOKEN_SECRET_KEY" not in settings


def test_without_tls_or_auth_nothing_is_mounted_or_set() -> None:
    objects = _objects(ClusterSpec.parse("demo", "pulsar", {"bookies": {"replicas": 1}}))
    for (kind, _), obj in objects.items():
        assert kind != "Certificate"
        if kind in ("Deployment", "StatefulSet") and obj["metadata"]["name"] != "demo-etcd":
            assert not [v for v in _volumes(obj) if v in ("tls", "token-key", "proxy-token")]
            text = str(_settings(obj, objects))
            assert "TLS" not in text
            assert "AUTHENTICATION" not in text


def test_a_tls_config_change_rolls_the_pods_the_same_config_never_does() -> None:
    def hashes(spec: ClusterSpec) -> list[str]:
        return [spec_hash(o) for (k, _), o in _objects(spec).items() if k == "Deployment"]

    plain = ClusterSpec.parse("demo", "pulsar", {"bookies": {"replicas": 3}})
    assert hashes(_spec()) == hashes(_spec())  # a renewed certificate changes no template
    assert all(a != b for a, b in zip(hashes(_spec()), hashes(plain), strict=True))
    assert service_url_tls(_spec()) == "pulsar+ssl://demo-proxy.pulsar.svc:6651"
    assert web_url_tls(_spec(proxy={"enabled": False})) == "https://demo-broker.pulsar.svc:8443"


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        ({"enabled": True}, r"spec\.tls\.enabled needs either"),
        ({"enabled": True, "secretName": "a", "issuerRef": {"name": "b"}}, "either"),
        ({"enabled": True, "issuerRef": {"name": "b", "kind": "Vault"}}, "ClusterIssuer"),
    ],
)
def test_a_tls_spec_without_one_key_source_names_the_field(
    tls: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidSpec, match=message):
        _spec(tls=tls)


def test_the_init_job_registers_the_tls_urls_with_tls_only() -> None:
    def init_args(spec: ClusterSpec) -> list[str]:
        return list(_container(_objects(spec)[("Job", "demo-init")])["args"])

    args = init_args(_spec())
    assert args[args.index("--service-url-tls") + 1] == "pulsar+ssl://demo-broker.pulsar.svc:6651"
    assert args[args.index("--web-url-tls") + 1] == "https://demo-broker.pulsar.svc:8443"
    assert "--web-url-tls" not in init_args(_spec(tls={}))


@pytest.mark.parametrize("role", ["BROKER", "PROXY"])
def test_the_rendered_settings_load_in_the_real_settings_class(
    role: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The values too (booleans, provider names, file:// references), not only the names: the
    mounted files are laid out under ``tmp_path`` as the pod would see them."""
    raw = create_secret_key()
    (tmp_path / "token-key").mkdir()
    (tmp_path / "token-key" / "signing-key").write_bytes(raw)
    (tmp_path / "proxy-token").mkdir()
    (tmp_path / "proxy-token" / "proxy").write_text(create_token(signing_key(raw, "HS256"), "p"))
    objects = _objects(_spec())  # TLS on too: ports and paths (read when a port opens)
    workload = objects[("Deployment", f"demo-{role.lower()}")]
    for name, value in _settings(workload, objects).items():
        monkeypatch.setenv(name, value.replace("/etc/magnetar", str(tmp_path)))
    loaded: Any = ROLES[role]()
    assert loaded.authentication_enabled is True
    assert loaded.authentication_providers == ("token",)
    assert loaded.web_service_port_tls == 8443
    if role == "BROKER":
        assert loaded.broker_service_port_tls == 6651
        assert loaded.authorization_enabled is True
        assert "magnetar-operator" in loaded.super_user_roles
    else:
        assert loaded.broker_credential() is not None
