"""A TEST DOUBLE of the broker's TopicService, for HTTP-mapping tests of the admin layer only.

The real implementation is ``magnetar.broker.topic_admin.TopicAdmin``, and every admin path
(topics, subscriptions, cursor operations, stats, lookup) is verified against it in
``tests/integration/test_admin_paths.py`` (a real standalone process). This double keeps only
what the unit tests here still need the broker for: a seat for the admin app in fast tests of
clusters/tenants/namespaces over a real ``BrokerResources`` (memory store), topics to make a
namespace non-empty, the ``policies_changed`` announcement, the standalone's real
``LocalOwnership`` (lookup answers and bundles), and errors injected on demand
(``fail_with``, raised by ``topic_stats``) to check the status table (503, 504, 409 on a lost
CAS, 500 with a reason). Any other TopicService method is deliberately absent: a unit test that
reaches one fails loudly (500) instead of passing against a stand-in.
"""

from __future__ import annotations

from typing import Any

from magnetar.broker.broker_registry import BrokerLookupData
from magnetar.broker.bundle_factory import NamespaceBundleFactory
from magnetar.broker.bundles import NamespaceBundle
from magnetar.broker.errors import TopicExists, TopicNotFound
from magnetar.broker.ownership import LocalOwnership
from magnetar.broker.resources import BrokerResources
from magnetar.naming import NamespaceName, TopicName
from magnetar.policies import Policies


class FakeTopicService:
    def __init__(self, resources: BrokerResources) -> None:
        self._resources = resources
        self.topics: set[str] = set()
        self.calls: list[tuple[Any, ...]] = []
        self.fail_with: BaseException | None = None
        self.announced: Policies | None = None
        me = BrokerLookupData("127.0.0.1:6650", self.broker_service_url, self.web_service_url)
        # The standalone's real ownership: lookups answer this broker, bundles are Pulsar's 4.
        factory = NamespaceBundleFactory(resources.store, 4)
        self._ownership = LocalOwnership(me, self, factory)

    @property
    def ownership(self) -> LocalOwnership:
        return self._ownership

    async def close_bundle_topics(self, bundle: NamespaceBundle) -> int:
        self.calls.append(("close_bundle_topics", str(bundle)))
        return 0

    @property
    def resources(self) -> BrokerResources:
        return self._resources

    @property
    def web_service_url(self) -> str:
        return "http://127.0.0.1:8080"

    @property
    def broker_service_url(self) -> str:
        return "pulsar://127.0.0.1:6650"

    async def list_topics(self, ns: NamespaceName, persistent: bool) -> list[str]:
        domain = "persistent" if persistent else "non-persistent"
        return [n for n in self.topics if n.startswith(f"{domain}://{ns}/")]

    async def topic_exists(self, t: TopicName) -> bool:
        return str(t) in self.topics

    async def create_topic(self, t: TopicName) -> None:
        if str(t) in self.topics:
            raise TopicExists(str(t))
        self.topics.add(str(t))

    async def delete_topic(self, t: TopicName, force: bool) -> None:
        if str(t) not in self.topics:
            raise TopicNotFound(str(t))
        self.topics.remove(str(t))

    async def topic_stats(self, t: TopicName) -> dict[str, Any]:
        if self.fail_with is not None:
            raise self.fail_with
        if str(t) not in self.topics:
            raise TopicNotFound(str(t))
        return {}

    async def policies_changed(self, ns: NamespaceName, policies: Policies) -> None:
        self.calls.append(("policies_changed", str(ns)))
        self.announced = policies
