"""Kubernetes manifests without a cluster: render the Helm chart, load YAML, validate objects.

- :func:`render_chart` runs Helm v4's own template engine (the Go SDK, through
  ``helm-python-sdk``; PyPI ships no helm binary) on ``charts/magnetar``, exactly as
  ``helm template`` does, values schema included.
- :func:`load_documents` parses YAML strictly: a duplicated mapping key (which Kubernetes would
  silently resolve to the last value) is an error.
- :func:`validate_object` checks a built-in kind against the Kubernetes OpenAPI schemas of
  ``kubernetes-validate`` (``--strict``: unknown fields fail), and one of our custom kinds
  against the ``openAPIV3Schema`` of its CRD in ``crds/``.

Used by the chart, skaffold and e2e-script tests; every function is synchronous and pure apart
from reading files.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "magnetar"
CRDS = ROOT / "crds"
E2E_SCRIPT = ROOT / "e2e" / "run.py"

# kubernetes-validate re-reads its (large) JSON schema files on every call; they never change
# within a run, so read each once. validate() looks the function up as a module global.
kubernetes_validate.utils.schema_contents = functools.cache(  # type: ignore[assignment]
    kubernetes_validate.utils.schema_contents
)

# The newest Kubernetes the schemas know, and the oldest the chart supports (Chart.yaml's
# kubeVersion): rendered objects must be valid on both.
KUBERNETES_VERSIONS = (kubernetes_validate.utils.latest_version(), "1.30.0")


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a mapping with the same key twice."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,  # type: ignore[arg-type]
)


def load_documents(text: str) -> list[dict[str, Any]]:
    """Every non-empty YAML document in ``text``; duplicate keys raise."""
    return [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc]


def load_file(path: Path) -> list[dict[str, Any]]:
    return load_documents(path.read_text())


def render_chart(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = "magnetar",
    namespace: str = "pulsar",
) -> dict[str, str]:
    """``helm template``: the rendered text of each template, keyed by its path in the chart.

    Raises ``helm_python.HelmValuesError`` when the values break ``values.schema.json``.
    """
    import helm_python as helm

    with helm.Chart.load(str(CHART)) as chart:
        rendered: dict[str, str] = chart.render(
            dict(values or {}), name=release, namespace=namespace, is_install=True
        )
        return rendered


def rendered_objects(rendered: Mapping[str, str]) -> list[dict[str, Any]]:
    """The Kubernetes objects of a render (NOTES.txt is text for the user, not an object)."""
    objects: list[dict[str, Any]] = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        objects.extend(load_documents(text))
    return objects


def crd_files() -> list[Path]:
    """The CRD files the repository ships (one per kind, directly in crds/)."""
    return sorted(CRDS.glob("*.yaml"))


@functools.cache
def custom_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """``(apiVersion, kind)`` -> the strict openAPIV3Schema of that version, from crds/*.yaml."""
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in crd_files():
        for crd in load_file(path):
            spec = crd["spec"]
            for version in spec["versions"]:
                key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                schemas[key] = _strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
    return schemas


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Unknown fields fail, as with ``kubectl apply --validate=strict``, except where the CRD
    keeps them (``x-kubernetes-preserve-unknown-fields``); metadata is the API server's."""
    properties = schema.get("properties")
    if properties is not None:
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema.setdefault("additionalProperties", False)
        for name, child in properties.items():
            if name != "metadata":
                _strict(child)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            _strict(schema[key])
    return schema


def _objects_in(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if obj.get("kind", "").endswith("List") and "items" in obj:
        yield from obj["items"]
    else:
        yield obj


def validate_object(obj: dict[str, Any], version: str) -> None:
    """Raise when ``obj`` is not a valid object of its kind on Kubernetes ``version``."""
    custom = custom_schemas()
    for item in _objects_in(obj):
        key = (item["apiVersion"], item["kind"])
        if key in custom:
            jsonschema.validate(item, custom[key])
            meta = item["metadata"]
            assert meta.get("name"), f"{key} without metadata.name"
        else:
            kubernetes_validate.validate(item, version, strict=True)


def load_e2e_script() -> ModuleType:
    """e2e/run.py as a module (e2e/ is no package), for its constants and pure helpers."""
    spec = importlib.util.spec_from_file_location("magnetar_e2e_run", E2E_SCRIPT)
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# The part of cert-manager's Certificate (cert-manager.io/v1) the operator renders, strict:
# from cert-manager's API reference (CertificateSpec, CertificatePrivateKey, IssuerReference).
_STR = {"type": "string", "minLength": 1}
CERTIFICATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "cert-manager.io/v1"},
        "kind": {"const": "Certificate"},
        "metadata": {
            "type": "object",
            "required": ["name", "namespace"],
            "properties": {"name": _STR, "namespace": _STR, "labels": {"type": "object"}},
        },
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["secretName", "issuerRef"],
            "properties": {
                "secretName": _STR,
                "commonName": {"type": "string", "maxLength": 64},
                "dnsNames": {"type": "array", "items": _STR, "minItems": 1},
                "duration": _STR,
                "renewBefore": _STR,
                "usages": {
                    "type": "array",
                    "items": {
                        "enum": [
                            "server auth",
                            "client auth",
                            "digital signature",
                            "key encipherment",
                            "signing",
                        ],
                    },
                },
                "privateKey": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]},
                        "size": {"type": "integer"},
                        "rotationPolicy": {"enum": ["Never", "Always"]},
                        "encoding": {"enum": ["PKCS1", "PKCS8"]},
                    },
                },
                "issuerRef": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name"],
                    "properties": {"name": _STR, "kind": _STR, "group": _STR},
                },
            },
        },
    },
}


def validate_certificate(obj: dict[str, Any]) -> None:
    """Raise when ``obj`` is not a Certificate of the shape cert-manager v1 accepts."""
    jsonschema.validate(obj, CERTIFICATE_SCHEMA)
