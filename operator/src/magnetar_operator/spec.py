"""A PulsarCluster's spec as frozen values, with the CRD's defaults.

The API server fills the CRD's schema defaults before the operator sees an object; these
defaults repeat them so that an object stored without them (an older CRD, a test's API mock)
means the same thing. ``tests/unit/operator/test_spec.py`` checks that both agree.

Pure: parsing only, no I/O; a malformed spec raises :class:`InvalidSpec` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_IMAGE = "magnetar:0.1.0"
DEFAULT_ETCD_IMAGE = "quay.io/coreos/etcd:v3.5.17"


class InvalidSpec(ValueError):
    """A spec the operator cannot act on; the message names the field."""


def _obj(value: object, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidSpec(f"{where} must be an object, got {value!r:.80}")
    return value


def _int(doc: Mapping[str, Any], key: str, default: int, where: str, minimum: int = 0) -> int:
    value = doc.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InvalidSpec(f"{where}.{key} must be an integer >= {minimum}, got {value!r:.80}")
    return value


def _bool(doc: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    value = doc.get(key, default)
    if not isinstance(value, bool):
        raise InvalidSpec(f"{where}.{key} must be true or false, got {value!r:.80}")
    return value


def _str(doc: Mapping[str, Any], key: str, default: str, where: str) -> str:
    value = doc.get(key, default)
    if not isinstance(value, str):
        raise InvalidSpec(f"{where}.{key} must be a string, got {value!r:.80}")
    return value


def _opt_str(doc: Mapping[str, Any], key: str, where: str) -> str | None:
    value = doc.get(key)
    if value is None:
        return None
    return _str(doc, key, "", where)


def _str_map(doc: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in _obj(doc.get(key), f"{where}.{key}").items()}


def _plain(value: object) -> Any:
    """A JSON-like copy (resources, tolerations ... pass through as the user wrote them)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Volume:
    size: str
    storage_class: str | None

    @classmethod
    def parse(cls, doc: object, default_size: str, where: str) -> Volume:
        d = _obj(doc, where)
        return cls(str(d.get("size", default_size)), _opt_str(d, "storageClassName", where))


@dataclass(frozen=True)
class Etcd:
    replicas: int = 3
    image: str = DEFAULT_ETCD_IMAGE
    storage: Volume = Volume("2Gi", None)
    resources: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MetadataStore:
    mode: str = "Managed"  # or "External"
    etcd: Etcd = Etcd()
    external_endpoints: tuple[str, ...] = ()

    @property
    def managed(self) -> bool:
        return self.mode == "Managed"


@dataclass(frozen=True)
class Bookies:
    replicas: int
    journal: Volume = Volume("10Gi", None)
    ledgers: Volume = Volume("50Gi", None)
    resources: dict[str, Any] = field(default_factory=dict)
    retain_volumes: bool = True
    config: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Quorums:
    ensemble_size: int = 2
    write_quorum: int = 2
    ack_quorum: int = 2


@dataclass(frozen=True)
class Brokers:
    replicas: int
    resources: dict[str, Any] = field(default_factory=dict)
    defaults: Quorums = Quorums()
    config: dict[str, str] = field(default_factory=dict)
    termination_grace_s: int = 60


@dataclass(frozen=True)
class Proxy:
    enabled: bool = True
    replicas: int = 1
    service_type: str = "ClusterIP"
    service_annotations: dict[str, str] = field(default_factory=dict)
    resources: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AutoRecovery:
    enabled: bool = True
    replicas: int = 1
    resources: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scheduling:
    anti_affinity: str = "Preferred"  # Required, None
    topology_spread: tuple[dict[str, Any], ...] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()
    priority_class: str | None = None


@dataclass(frozen=True)
class Audit:
    enabled: bool = False
    schedule: str = "0 3 * * *"
    spark_version: str = "4.0.0"
    image: str | None = None
    driver_cores: int = 1
    driver_memory: str = "1g"
    executor_instances: int = 2
    executor_cores: int = 1
    executor_memory: str = "2g"


@dataclass(frozen=True)
class IssuerRef:
    """A cert-manager issuer (``Issuer`` in the cluster's namespace, or a ``ClusterIssuer``)."""

    name: str
    kind: str = "Issuer"
    group: str = "cert-manager.io"


@dataclass(frozen=True)
class Tls:
    """TLS on 6651/8443 (brokers, proxy) and on the bookies' gRPC port, from a Secret with
    ``tls.crt``, ``tls.key`` and ``ca.crt``: the user's (``secret_name``) or the one a
    cert-manager Certificate from ``issuer`` writes."""

    enabled: bool = False
    secret_name: str | None = None
    issuer: IssuerRef | None = None
    duration: str | None = None
    renew_before: str | None = None

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> Tls:
        w = "spec.tls"
        ref = doc.get("issuerRef")
        issuer = None
        if ref is not None:
            r = _obj(ref, f"{w}.issuerRef")
            name = _str(r, "name", "", f"{w}.issuerRef")
            if not name:
                raise InvalidSpec(f"{w}.issuerRef.name must name a cert-manager issuer")
            kind = _str(r, "kind", "Issuer", f"{w}.issuerRef")
            if kind not in ("Issuer", "ClusterIssuer"):
                raise InvalidSpec(f"{w}.issuerRef.kind must be Issuer or ClusterIssuer: {kind!r}")
            issuer = IssuerRef(name, kind, _str(r, "group", "cert-manager.io", f"{w}.issuerRef"))
        tls = cls(
            enabled=_bool(doc, "enabled", False, w),
            secret_name=_opt_str(doc, "secretName", w),
            issuer=issuer,
            duration=_opt_str(doc, "duration", w),
            renew_before=_opt_str(doc, "renewBefore", w),
        )
        if tls.enabled and (tls.secret_name is None) == (tls.issuer is None):
            raise InvalidSpec(f"{w}.enabled needs either {w}.secretName or {w}.issuerRef")
        return tls


@dataclass(frozen=True)
class Auth:
    """JWT authentication and authorization. The signing key is the user's Secret
    (``token_secret_name``: ``signing-key`` for HS256, or ``private-key`` and ``public-key``
    for RS256) or one the operator generates once."""

    enabled: bool = False
    token_secret_name: str | None = None
    super_user_roles: tuple[str, ...] = ()
    algorithm: str = "HS256"  # or RS256, ES256 (a key pair)

    @property
    def symmetric(self) -> bool:
        return self.algorithm == "HS256"

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> Auth:
        roles = doc.get("superUserRoles") or ()
        if not isinstance(roles, list | tuple) or not all(isinstance(r, str) for r in roles):
            raise InvalidSpec(f"spec.auth.superUserRoles must be a list of roles: {roles!r:.80}")
        algorithm = _str(doc, "algorithm", "HS256", "spec.auth")
        if algorithm not in ("HS256", "RS256", "ES256"):
            raise InvalidSpec(f"spec.auth.algorithm must be HS256, RS256 or ES256: {algorithm!r}")
        return cls(
            enabled=_bool(doc, "enabled", False, "spec.auth"),
            token_secret_name=_opt_str(doc, "tokenSecretName", "spec.auth"),
            super_user_roles=tuple(roles),
            algorithm=algorithm,
        )


@dataclass(frozen=True)
class ClusterSpec:
    """Everything the manifest builders read of a PulsarCluster."""

    name: str  # metadata.name
    namespace: str  # the Kubernetes namespace
    cluster_name: str  # the Pulsar cluster name
    bookies: Bookies
    brokers: Brokers
    image: str = DEFAULT_IMAGE
    image_pull_policy: str = "IfNotPresent"
    image_pull_secrets: tuple[str, ...] = ()
    metadata_store: MetadataStore = MetadataStore()
    proxy: Proxy = Proxy()
    autorecovery: AutoRecovery = AutoRecovery()
    tls: Tls = Tls()
    auth: Auth = Auth()
    scheduling: Scheduling = Scheduling()
    prometheus_annotations: bool = True
    paused: bool = False
    max_unavailable_bookies: int = 1
    audit: Audit = Audit()
    manual_roll: str = ""  # the manual-rolling-update annotation's value

    @classmethod
    def parse(
        cls,
        name: str,
        namespace: str,
        spec: Mapping[str, Any],
        annotations: Mapping[str, str] | None = None,
    ) -> ClusterSpec:
        """The spec of the PulsarCluster ``namespace/name``; raises :class:`InvalidSpec`."""
        from magnetar_operator.annotations import MANUAL_ROLL, PAUSE, is_true

        annotations = annotations or {}
        spec = _obj(spec, "spec")
        meta = _obj(spec.get("metadataStore"), "spec.metadataStore")
        etcd = _obj(meta.get("etcd"), "spec.metadataStore.etcd")
        mode = _str(meta, "mode", "Managed", "spec.metadataStore")
        endpoints = _obj(meta.get("external"), "spec.metadataStore.external").get("endpoints", [])
        if mode not in ("Managed", "External"):
            raise InvalidSpec(f"spec.metadataStore.mode must be Managed or External: {mode!r}")
        if mode == "External" and not endpoints:
            raise InvalidSpec("spec.metadataStore.mode External needs external.endpoints")
        bookies = _obj(spec.get("bookies"), "spec.bookies")
        brokers = _obj(spec.get("brokers"), "spec.brokers")
        defaults = _obj(brokers.get("defaults"), "spec.brokers.defaults")
        w = "spec.brokers.defaults"
        quorums = Quorums(
            _int(defaults, "ensembleSize", 2, w, 1),
            _int(defaults, "writeQuorum", 2, w, 1),
            _int(defaults, "ackQuorum", 2, w, 1),
        )
        if not quorums.ack_quorum <= quorums.write_quorum <= quorums.ensemble_size:
            raise InvalidSpec(f"{w} needs ackQuorum <= writeQuorum <= ensembleSize")
        proxy = _obj(spec.get("proxy"), "spec.proxy")
        recovery = _obj(spec.get("autorecovery"), "spec.autorecovery")
        tls = _obj(spec.get("tls"), "spec.tls")
        auth = _obj(spec.get("auth"), "spec.auth")
        sched = _obj(spec.get("scheduling"), "spec.scheduling")
        rollout = _obj(spec.get("rollout"), "spec.rollout")
        audit = _obj(spec.get("audit"), "spec.audit")
        driver = _obj(audit.get("driver"), "spec.audit.driver")
        executor = _obj(audit.get("executor"), "spec.audit.executor")
        monitoring = _obj(spec.get("monitoring"), "spec.monitoring")
        secrets = spec.get("imagePullSecrets") or []
        spread = tuple(_plain(c) for c in sched.get("topologySpreadConstraints") or ())
        paused = _bool(rollout, "paused", False, "spec.rollout") or is_true(annotations.get(PAUSE))
        return cls(
            name=name,
            namespace=namespace,
            cluster_name=_str(spec, "clusterName", name, "spec") or name,
            image=_str(spec, "image", DEFAULT_IMAGE, "spec"),
            image_pull_policy=_str(spec, "imagePullPolicy", "IfNotPresent", "spec"),
            image_pull_secrets=tuple(str(_obj(s, "imagePullSecrets[]")["name"]) for s in secrets),
            metadata_store=MetadataStore(
                mode=mode,
                etcd=Etcd(
                    replicas=_int(etcd, "replicas", 3, "spec.metadataStore.etcd", 1),
                    image=_str(etcd, "image", DEFAULT_ETCD_IMAGE, "spec.metadataStore.etcd"),
                    storage=Volume.parse(etcd.get("storage"), "2Gi", "spec.metadataStore.etcd"),
                    resources=_plain(etcd.get("resources") or {}),
                ),
                external_endpoints=tuple(str(e) for e in endpoints),
            ),
            bookies=Bookies(
                replicas=_int(bookies, "replicas", 3, "spec.bookies", 1),
                journal=Volume.parse(bookies.get("journal"), "10Gi", "spec.bookies.journal"),
                ledgers=Volume.parse(bookies.get("ledgers"), "50Gi", "spec.bookies.ledgers"),
                resources=_plain(bookies.get("resources") or {}),
                retain_volumes=_bool(bookies, "retainVolumesOnDelete", True, "spec.bookies"),
                config=_str_map(bookies, "config", "spec.bookies"),
            ),
            brokers=Brokers(
                replicas=_int(brokers, "replicas", 2, "spec.brokers", 1),
                resources=_plain(brokers.get("resources") or {}),
                defaults=quorums,
                config=_str_map(brokers, "config", "spec.brokers"),
                termination_grace_s=_int(
                    brokers, "terminationGracePeriodSeconds", 60, "spec.brokers", 5
                ),
            ),
            proxy=Proxy(
                enabled=_bool(proxy, "enabled", True, "spec.proxy"),
                replicas=_int(proxy, "replicas", 1, "spec.proxy", 1),
                service_type=_str(proxy, "serviceType", "ClusterIP", "spec.proxy"),
                service_annotations=_str_map(proxy, "serviceAnnotations", "spec.proxy"),
                resources=_plain(proxy.get("resources") or {}),
            ),
            autorecovery=AutoRecovery(
                enabled=_bool(recovery, "enabled", True, "spec.autorecovery"),
                replicas=_int(recovery, "replicas", 1, "spec.autorecovery", 1),
                resources=_plain(recovery.get("resources") or {}),
            ),
            tls=Tls.parse(tls),
            auth=Auth.parse(auth),
            scheduling=Scheduling(
                anti_affinity=_str(sched, "podAntiAffinity", "Preferred", "spec.scheduling"),
                topology_spread=spread,
                node_selector=_str_map(sched, "nodeSelector", "spec.scheduling"),
                tolerations=tuple(_plain(t) for t in sched.get("tolerations") or ()),
                priority_class=_opt_str(sched, "priorityClassName", "spec.scheduling"),
            ),
            prometheus_annotations=_bool(
                monitoring, "prometheusAnnotations", True, "spec.monitoring"
            ),
            paused=paused,
            max_unavailable_bookies=_int(rollout, "maxUnavailableBookies", 1, "spec.rollout", 1),
            audit=Audit(
                enabled=_bool(audit, "enabled", False, "spec.audit"),
                schedule=_str(audit, "schedule", "0 3 * * *", "spec.audit"),
                spark_version=_str(audit, "sparkVersion", "4.0.0", "spec.audit"),
                image=_opt_str(audit, "image", "spec.audit"),
                driver_cores=_int(driver, "cores", 1, "spec.audit.driver", 1),
                driver_memory=_str(driver, "memory", "1g", "spec.audit.driver"),
                executor_instances=_int(executor, "instances", 2, "spec.audit.executor", 1),
                executor_cores=_int(executor, "cores", 1, "spec.audit.executor", 1),
                executor_memory=_str(executor, "memory", "2g", "spec.audit.executor"),
            ),
            manual_roll=annotations.get(MANUAL_ROLL, ""),
        )
