"""The load reporter: publish this broker's load report, carry out the leader's unload requests.

Every ``load_balancer_report_update_interval_s`` (Pulsar's report interval, kept simple: a fixed
period), the reporter of a cluster member:

1. unloads each bundle the load manager's leader asked it to (``keys.unload_request`` under
   this broker's id, written by :mod:`.load_manager`'s shedding) and deletes the request; a
   request for a bundle this broker no longer owns is just deleted;
2. builds the report (:class:`~.load_report.LoadReport`) from the owned bundles, the loaded
   topics' rate meters over ``window_s`` and the process's CPU and memory
   (:mod:`.resource_usage`), and publishes it in the registry key
   (:meth:`~.broker_registry.BrokerRegistry.publish`).

A failed round is logged and the next one tries again. Concurrency: one task on the broker's
loop, made by :meth:`LoadReporter.start` and cancelled by :meth:`LoadReporter.close`; the admin's
``broker-stats/load-report`` calls :meth:`LoadReporter.report` from a request task.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from magnetar.broker.broker_registry import BrokerRegistry
from magnetar.broker.bundles import NamespaceBundle
from magnetar.broker.errors import BrokerError
from magnetar.broker.load_report import AnyTopic, BundleStats, LoadReport, stats_by_bundle
from magnetar.broker.resource_usage import ResourceSampler
from magnetar.cancellation import cancel_and_wait
from magnetar.metadata import keys
from magnetar.metadata.errors import MetadataError, NotFound
from magnetar.metadata.store import MetadataStore
from magnetar.telemetry import get_logger

log = get_logger(__name__)


class OwnedBundles(Protocol):
    """What the reporter needs from ownership (:class:`~.ownership.BundleOwnership`)."""

    @property
    def owned(self) -> Sequence[NamespaceBundle]: ...

    async def unload(self, bundle: NamespaceBundle) -> bool: ...


class LoadedTopics(Protocol):
    @property
    def topics(self) -> Mapping[str, AnyTopic]: ...


def per_bundle_stats(
    owned: Sequence[NamespaceBundle], topics: Mapping[str, AnyTopic], window_s: float
) -> dict[str, BundleStats]:
    """Each owned bundle's stats by full name (a bundle with no loaded topic has zeros)."""
    return {str(b): s for b, s in stats_by_bundle(owned, topics.values(), window_s).items()}


def current_report(
    owned: Sequence[NamespaceBundle],
    topics: LoadedTopics,
    window_s: float,
    sampler: ResourceSampler,
) -> LoadReport:
    """The report of a broker owning ``owned``, as of now (CPU since the sampler's last call)."""
    return LoadReport.of(
        per_bundle_stats(owned, topics.topics, window_s),
        cpu=sampler.cpu(),
        memory=sampler.memory(),
        now_ms=int(time.time() * 1000),
    )


class LoadReporter:
    """This broker's periodic load report and unload-request handling (module docstring)."""

    def __init__(
        self,
        store: MetadataStore,
        registry: BrokerRegistry,
        ownership: OwnedBundles,
        topics: LoadedTopics,
        *,
        interval_s: float,
        window_s: float,
        sampler: ResourceSampler | None = None,
    ) -> None:
        self._store = store
        self._registry = registry
        self._ownership = ownership
        self._topics = topics
        self._interval_s = interval_s
        self._window_s = window_s
        self._sampler = sampler or ResourceSampler()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="load-reporter")

    async def close(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    def report(self) -> LoadReport:
        """The report as of now (CPU since the previous report)."""
        return current_report(self._ownership.owned, self._topics, self._window_s, self._sampler)

    async def report_once(self) -> None:
        await self.handle_unload_requests()
        await self._registry.publish(self.report())

    async def handle_unload_requests(self) -> int:
        """Unload the bundles the leader asked for; the number unloaded."""
        me = self._registry.data.broker_id
        owned = {str(b): b for b in self._ownership.owned}
        unloaded = 0
        for key in await self._store.list_keys(keys.unload_requests_prefix(me)):
            name = keys.unload_request_bundle_of(me, key)
            bundle = owned.get(name)
            if bundle is not None and await self._ownership.unload(bundle):
                unloaded += 1
                log.info("load_shedding_bundle_unloaded", bundle=name)
            with contextlib.suppress(NotFound):
                await self._store.delete(key)
        return unloaded

    async def _run(self) -> None:
        while True:
            try:
                await self.report_once()
            except (BrokerError, MetadataError) as exc:
                log.warning("load_report_failed", error=str(exc))
            await asyncio.sleep(self._interval_s)
