"""The namespace bundle table: each namespace's bundle boundaries, kept in the metadata store.

Pulsar's NamespaceBundleFactory. A namespace's boundaries live in its LocalPolicies
(``keys.local_policies``, Pulsar's ``/admin/local-policies/{tenant}/{ns}``) as
``{"bundles": {"boundaries": [...], "numBundles": N}}``. A namespace whose key is absent (one
created without ``bundles``, or before bundles were stored) has
``default_number_of_namespace_bundles`` even bundles, the same on every broker; the first split
stores them.

Invariants:

- Boundaries only change by a split, a compare-and-set on the key (the store's ``update()``)
  that fails when the bundle is no longer one of the namespace's bundles
  (:class:`~magnetar.broker.errors.StaleBundle`): two splits never lose each other's boundary.
- The cache is a hint for lookups (:meth:`NamespaceBundleFactory.bundles` with
  ``fresh=False``). It may lag behind a split made by another broker; a caller that acts on a
  bundle's identity (acquiring its owner key, splitting it) checks it with ``fresh=True``,
  which reads the store and refreshes the cache. Since bundles are only ever split, a stale
  bundle is a union of current ones: it is never owned once its owner key is gone, and a
  broker that acquires it finds it gone on the fresh read and gives it up.

Concurrency: on the broker's loop; every method is a coroutine safe from any task. Callers:
the ownership (:mod:`.ownership`), the admin API (namespace create with ``bundles``) and the
broker resources (namespace delete).
"""

from __future__ import annotations

import contextlib
import json

from magnetar.broker.bundles import BundleRange, NamespaceBundle, NamespaceBundles
from magnetar.broker.errors import StaleBundle
from magnetar.metadata import keys
from magnetar.metadata.errors import NotFound
from magnetar.metadata.store import MetadataStore, update
from magnetar.naming import NamespaceName
from magnetar.policies import InvalidPolicies, dumps
from magnetar.telemetry import get_logger

log = get_logger(__name__)


def local_policies_json(bundles: NamespaceBundles) -> bytes:
    """Pulsar's LocalPolicies document holding ``bundles``."""
    return dumps({"bundles": bundles.to_json()})


def bundles_of_local_policies(
    namespace: NamespaceName, raw: bytes, default_count: int
) -> NamespaceBundles:
    """Inverse of :func:`local_policies_json`; InvalidPolicies when the document is malformed."""
    try:
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError("LocalPolicies must be a JSON object")
        return NamespaceBundles.from_json(namespace, doc.get("bundles") or {}, default_count)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidPolicies(f"stored LocalPolicies of {namespace} are malformed: {exc}") from exc


class NamespaceBundleFactory:
    """Reads, caches and splits the bundle boundaries of namespaces (see the module docstring)."""

    def __init__(self, store: MetadataStore, default_count: int) -> None:
        self._store = store
        self.default_count = default_count
        self._cache: dict[NamespaceName, NamespaceBundles] = {}

    @staticmethod
    def _key(namespace: NamespaceName) -> str:
        return keys.local_policies(namespace.tenant, namespace.local_name)

    async def bundles(self, namespace: NamespaceName, *, fresh: bool = False) -> NamespaceBundles:
        """The namespace's bundles: from the cache, or (``fresh``, or not cached) the store."""
        if not fresh:
            cached = self._cache.get(namespace)
            if cached is not None:
                return cached
        found = await self._store.get(self._key(namespace))
        if found is None:
            bundles = NamespaceBundles.even(namespace, self.default_count)
        else:
            bundles = bundles_of_local_policies(namespace, found.value, self.default_count)
        self._cache[namespace] = bundles
        return bundles

    async def bundle_of(self, bundle: NamespaceBundle) -> bool:
        """``bundle`` is one of its namespace's current bundles (read fresh)."""
        return (await self.bundles(bundle.namespace, fresh=True)).has(bundle)

    async def create(self, bundles: NamespaceBundles) -> None:
        """Store a new namespace's boundaries (overwriting any left by a deleted namesake)."""
        await self._store.put(self._key(bundles.namespace), local_policies_json(bundles))
        self._cache[bundles.namespace] = bundles
        log.info("namespace_bundles_created", namespace=str(bundles.namespace), n=bundles.count)

    async def split(
        self, bundle: NamespaceBundle, boundary: int
    ) -> tuple[NamespaceBundle, NamespaceBundle]:
        """Cut ``bundle`` at ``boundary`` with a compare-and-set; the two halves.

        :class:`~magnetar.broker.errors.StaleBundle` when ``bundle`` is not a current bundle;
        ValueError when the boundary is not strictly inside it."""
        namespace = bundle.namespace
        default = NamespaceBundles.even(namespace, self.default_count)
        stored: list[NamespaceBundles] = []

        def apply(raw: bytes | None) -> bytes:
            current = (
                default
                if raw is None
                else bundles_of_local_policies(namespace, raw, self.default_count)
            )
            try:
                stored[:] = [current.split(bundle.range, boundary)]
            except KeyError:
                raise StaleBundle(str(bundle)) from None
            return local_policies_json(stored[0])

        try:
            await update(self._store, self._key(namespace), apply)
        except StaleBundle:
            self._cache.pop(namespace, None)
            raise
        self._cache[namespace] = stored[0]
        low = NamespaceBundle(namespace, BundleRange(bundle.range.lower, boundary))
        high = NamespaceBundle(namespace, BundleRange(boundary, bundle.range.upper))
        log.info("namespace_bundle_split", bundle=str(bundle), low=low.name, high=high.name)
        return low, high

    async def delete(self, namespace: NamespaceName) -> None:
        """Forget a deleted namespace's boundaries."""
        self._cache.pop(namespace, None)
        with contextlib.suppress(NotFound):
            await self._store.delete(self._key(namespace))
