"""A TEST DOUBLE of the broker's TopicService, for HTTP-mapping tests of the admin layer only.

The real implementation is ``magnetar.broker.service.BrokerService``, and every admin path is
verified against it in ``tests/integration/test_admin_paths.py`` (a real standalone process).
This double stays for what the real broker cannot easily produce: a seat for the admin app in
fast unit tests of clusters/tenants/namespaces over a real ``BrokerResources`` (memory store),
and errors injected on demand (``fail_with``) to check the status table (503, 504, 409 on a
lost CAS, 500 with a reason). It keeps topics and subscriptions in dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from magnetar.admin.service import MessageIdSpec
from magnetar.broker.errors import SubscriptionNotFound, TopicNotFound
from magnetar.broker.names import NamespaceName, TopicName
from magnetar.broker.policies import AutoTopicCreationOverride
from magnetar.broker.resource_errors import SubscriptionExists, TopicBusy, TopicExists
from magnetar.broker.resources import BrokerResources


@dataclass
class FakeTopic:
    subscriptions: dict[str, MessageIdSpec] = field(default_factory=dict)
    producers: int = 0


class FakeTopicService:
    def __init__(self, resources: BrokerResources) -> None:
        self._resources = resources
        self.topics: dict[str, FakeTopic] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.fail_with: BaseException | None = None
        self.auto_topic_creation_default = AutoTopicCreationOverride()

    @property
    def resources(self) -> BrokerResources:
        return self._resources

    @property
    def web_service_url(self) -> str:
        return "http://127.0.0.1:8080"

    @property
    def broker_service_url(self) -> str:
        return "pulsar://127.0.0.1:6650"

    def _topic(self, t: TopicName) -> FakeTopic:
        if self.fail_with is not None:
            raise self.fail_with
        found = self.topics.get(str(t))
        if found is None:
            raise TopicNotFound(str(t))
        return found

    def _sub(self, t: TopicName, sub: str) -> None:
        if sub not in self._topic(t).subscriptions:
            raise SubscriptionNotFound(sub)

    async def list_topics(self, ns: NamespaceName, persistent: bool) -> list[str]:
        domain = "persistent" if persistent else "non-persistent"
        return [n for n in self.topics if n.startswith(f"{domain}://{ns}/")]

    async def create_topic(self, t: TopicName) -> None:
        if str(t) in self.topics:
            raise TopicExists(str(t))
        self.topics[str(t)] = FakeTopic()

    async def delete_topic(self, t: TopicName, force: bool) -> None:
        topic = self._topic(t)
        if (topic.producers or topic.subscriptions) and not force:
            raise TopicBusy(str(t))
        del self.topics[str(t)]

    async def topic_stats(self, t: TopicName) -> dict[str, Any]:
        topic = self._topic(t)
        return {
            "msgRateIn": 1.5,
            "msgInCounter": 10,
            "storageSize": 100,
            "publishers": [{"producerName": f"p-{t.local_name}"}] * topic.producers,
            "subscriptions": {
                name: {"msgBacklog": 2, "type": "Exclusive", "consumers": []}
                for name in topic.subscriptions
            },
        }

    async def topic_internal_stats(self, t: TopicName) -> dict[str, Any]:
        self._topic(t)
        return {"entriesAddedCounter": 0, "numberOfEntries": 0, "ledgers": [], "cursors": {}}

    async def list_subscriptions(self, t: TopicName) -> list[str]:
        return sorted(self._topic(t).subscriptions)

    async def create_subscription(self, t: TopicName, sub: str, position: MessageIdSpec) -> None:
        topic = self._topic(t)
        if sub in topic.subscriptions:
            raise SubscriptionExists(str(t), sub)
        topic.subscriptions[sub] = position

    async def delete_subscription(self, t: TopicName, sub: str, force: bool) -> None:
        self._sub(t, sub)
        del self._topic(t).subscriptions[sub]

    async def skip_messages(self, t: TopicName, sub: str, n: int) -> None:
        self._sub(t, sub)
        self.calls.append(("skip", str(t), sub, n))

    async def skip_all(self, t: TopicName, sub: str) -> None:
        self._sub(t, sub)
        self.calls.append(("skip_all", str(t), sub))

    async def reset_cursor_to_time(self, t: TopicName, sub: str, timestamp_ms: int) -> None:
        self._sub(t, sub)
        self.calls.append(("reset_time", str(t), sub, timestamp_ms))

    async def reset_cursor_to_id(
        self, t: TopicName, sub: str, ledger_id: int, entry_id: int
    ) -> None:
        self._sub(t, sub)
        self.calls.append(("reset_id", str(t), sub, ledger_id, entry_id))

    async def expire_messages(self, t: TopicName, sub: str, seconds: int) -> None:
        self._sub(t, sub)
        self.calls.append(("expire", str(t), sub, seconds))

    async def unload_topic(self, t: TopicName) -> None:
        self._topic(t)
        self.calls.append(("unload", str(t)))

    async def auto_topic_creation(self, ns: NamespaceName) -> AutoTopicCreationOverride:
        override = (await self.resources.get_policies(ns)).auto_topic_creation_override
        return override or self.auto_topic_creation_default

    async def policies_changed(self, ns: NamespaceName) -> None:
        self.calls.append(("policies_changed", str(ns)))
