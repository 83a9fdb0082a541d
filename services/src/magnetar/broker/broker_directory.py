"""What the admin API's ``brokers`` and ``broker-stats`` resources read about the cluster's brokers.

:class:`BrokerDirectory` answers, for one broker process:

- the live brokers (the registry, :func:`~.broker_registry.live_brokers`; the standalone lists
  itself alone);
- the load manager's leader (``keys.LOAD_BALANCE_LEADER``; the standalone is its own leader);
- the bundles this broker owns (a cluster member's ownership table; the standalone, which
  serves every bundle, lists the bundles of its loaded topics, as Pulsar's standalone lists
  the bundles it has been asked for);
- this broker's load report, computed now (:mod:`.load_report`), and its loaded topics and
  stats window (for ``broker-stats``).

Built once per process by :meth:`BrokerDirectory.of` from the broker service (the command
line's admin app factory does it). Concurrency: read from the admin's request tasks on the
broker's loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from magnetar.broker.broker_registry import BrokerLookupData, live_brokers
from magnetar.broker.bundles import NamespaceBundle, NamespaceBundles
from magnetar.broker.load_manager import LeaderBroker, current_leader
from magnetar.broker.load_report import LoadReport
from magnetar.broker.load_reporter import LoadedTopics, current_report
from magnetar.broker.ownership import BundleOwnership
from magnetar.broker.resource_usage import ResourceSampler
from magnetar.broker.service import BrokerService
from magnetar.metadata.store import MetadataStore


class BrokerDirectory:
    """The brokers, the leader, this broker's bundles and load (module docstring)."""

    def __init__(
        self,
        store: MetadataStore,
        cluster_name: str,
        me: Callable[[], BrokerLookupData],
        owned: Callable[[], Sequence[NamespaceBundle]],
        topics: LoadedTopics,
        *,
        clustered: bool,
        window_s: float,
    ) -> None:
        self._store = store
        self.cluster_name = cluster_name
        self._me = me
        self._owned = owned
        self._topics = topics
        self._clustered = clustered
        self._window_s = window_s
        self._sampler = ResourceSampler()

    @classmethod
    def of(cls, service: BrokerService) -> BrokerDirectory:
        ownership = service.ownership
        config = service.config
        if isinstance(ownership, BundleOwnership):
            return cls(
                service.store,
                config.cluster_name,
                lambda: ownership.me,
                lambda: ownership.owned,
                service,
                clustered=True,
                window_s=config.stats_window_s,
            )

        def loaded_bundles() -> list[NamespaceBundle]:
            count = config.default_number_of_namespace_bundles
            found = {
                NamespaceBundles.even(t.name.namespace, count).find(t.name)
                for t in service.topics.values()
            }
            return sorted(found, key=str)

        return cls(
            service.store,
            config.cluster_name,
            lambda: service.lookup_data,
            loaded_bundles,
            service,
            clustered=False,
            window_s=config.stats_window_s,
        )

    @property
    def me(self) -> BrokerLookupData:
        return self._me()

    async def brokers(self) -> list[BrokerLookupData]:
        if not self._clustered:
            return [self.me]
        return await live_brokers(self._store)

    async def leader(self) -> LeaderBroker | None:
        if not self._clustered:
            return LeaderBroker.of(self.me)
        return await current_leader(self._store)

    def owned_bundles(self) -> list[NamespaceBundle]:
        return list(self._owned())

    @property
    def loaded_topics(self) -> LoadedTopics:
        return self._topics

    @property
    def stats_window_s(self) -> float:
        return self._window_s

    def load_report(self) -> LoadReport:
        return current_report(self._owned(), self._topics, self._window_s, self._sampler)
