"""The automatic bundle split: every interval, measure the owned bundles and split the busy ones.

Pulsar's bundle split task, run by each owner over its own bundles (only the owner may split a
bundle, :mod:`.ownership`). A pass measures every owned bundle from its loaded topics
(:func:`measure`: topics, producers + consumers, msg/s and bytes/s in + out over the broker's
stats window), asks the pure :func:`~magnetar.broker.bundle_split.bundles_to_split` which to
split, and splits each with the configured algorithm. With
``load_balancer_auto_unload_split_bundles_enabled`` (Pulsar's default, true) the halves are
unloaded at once, so the next lookups may place them on other brokers; their clients reconnect
after a lookup.

Concurrency: on the broker's loop. The splitter owns one task (:meth:`BundleSplitter.start`,
cancelled by :meth:`BundleSplitter.close`, which the broker calls before it hands its bundles
over); a failed split is logged and retried on the next pass, never stops the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from magnetar.broker.bundle_factory import NamespaceBundleFactory
from magnetar.broker.bundle_split import BundleSplitConfig, BundleStats, bundles_to_split, overload
from magnetar.broker.bundles import NamespaceBundle, split_boundary, topic_hash
from magnetar.broker.load_report import stats_by_bundle
from magnetar.broker.stats import DEFAULT_WINDOW_S
from magnetar.broker.topic_admin import AnyTopic
from magnetar.cancellation import cancel_and_wait
from magnetar.errors import MagnetarError
from magnetar.telemetry import get_logger

log = get_logger(__name__)


class SplittingOwnership(Protocol):
    """What the splitter needs from the ownership (``BundleOwnership`` provides it)."""

    @property
    def owned(self) -> Sequence[NamespaceBundle]: ...

    @property
    def bundle_factory(self) -> NamespaceBundleFactory: ...

    async def split(
        self, bundle: NamespaceBundle, boundary: int, unload: bool
    ) -> tuple[NamespaceBundle, NamespaceBundle] | None: ...


def measure(
    owned: Sequence[NamespaceBundle], topics: Iterable[AnyTopic], window_s: float
) -> list[BundleStats]:
    """The load of each owned bundle, summed over its loaded, open topics."""
    open_topics = (t for t in topics if t.is_open)
    return [
        BundleStats(
            bundle,
            topics=s.topics,
            sessions=s.producer_count + s.consumer_count,
            msg_rate=s.msg_rate,
            throughput=s.msg_throughput_in + s.msg_throughput_out,
        )
        for bundle, s in stats_by_bundle(owned, open_topics, window_s).items()
    ]


class BundleSplitter:
    """Splits this broker's overloaded bundles every ``config.interval_s`` (see the docstring)."""

    def __init__(
        self,
        ownership: SplittingOwnership,
        topics: Callable[[], Iterable[AnyTopic]],
        config: BundleSplitConfig,
        *,
        unload_split_bundles: bool = True,
        window_s: float = DEFAULT_WINDOW_S,
    ) -> None:
        self._ownership = ownership
        self._topics = topics
        self._config = config
        self._unload = unload_split_bundles
        self._window_s = window_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the periodic passes (idempotent; a no-op when the split is disabled)."""
        if self._config.enabled and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._run(), name="bundle-splitter")

    async def close(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._config.interval_s)
            await self.check_once()

    async def check_once(self) -> list[NamespaceBundle]:
        """One pass: the bundles split (their old names)."""
        topics = list(self._topics())
        stats = measure(self._ownership.owned, topics, self._window_s)
        candidates = [s for s in stats if overload(s, self._config) > 1.0]
        if not candidates:
            return []
        factory = self._ownership.bundle_factory
        counts = {}
        for ns in {s.bundle.namespace for s in candidates}:
            counts[ns] = (await factory.bundles(ns, fresh=True)).count
        done = []
        for bundle in bundles_to_split(candidates, counts, self._config):
            # split_boundary keeps the hashes inside the bundle's range itself
            hashes = [topic_hash(t.name) for t in topics if t.name.namespace == bundle.namespace]
            try:
                boundary = split_boundary(bundle.range, self._config.algorithm, hashes)
                if await self._ownership.split(bundle, boundary, self._unload) is not None:
                    done.append(bundle)
                    log.info("bundle_auto_split", bundle=str(bundle), boundary=f"{boundary:#x}")
            except (MagnetarError, ValueError) as exc:
                log.warning("bundle_auto_split_failed", bundle=str(bundle), error=repr(exc))
        return done
