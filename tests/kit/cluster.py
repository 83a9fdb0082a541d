"""A real cluster on loopback, and helpers for tests against several brokers (holds no tests).

:class:`Cluster` starts one etcd, ``bookie_count`` bookie processes, ``broker_count`` broker
processes and ``autorecovery_count`` autorecovery processes (none by default; ``bookie_racks``
gives bookie ``i`` the rack ``bookie_racks[i]``), each its own OS process on free ports, with a
short session timeout (2 s by default) so that a killed or frozen member's leases run out
quickly. ``broker_env`` reaches every broker (the managed ledger's ensemble settings, say).
The shape every module fixture wants::

    @pytest.fixture(scope="module")
    def cluster(tmp_path_factory):
        with Cluster(tmp_path_factory.mktemp("split"), journal_sync=False).running() as running:
            yield running                    # stopped with SIGTERM at the end (resumed first)

Besides it: one admin call (:func:`http`), the official client pointed at several brokers as a
user would point it at a cluster (:func:`client_on`, :meth:`Cluster.client`), reading a topic
back to its end (:func:`read_all`), a fresh topic name and a bounded wait for a condition.
Blocking: call them from the test's thread.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulsar

from magnetar.broker.bundles import NamespaceBundles, topic_hash
from magnetar.naming import NamespaceName, TopicName
from tests.kit.autorecovery import AutorecoveryProcess
from tests.kit.bookie import BookieProcess
from tests.kit.broker import BrokerProcess
from tests.kit.etcd import EtcdServer
from tests.kit.proxy import ProxyProcess

SESSION_TIMEOUT_S = 2.0


@dataclass
class Cluster:
    """etcd, bookies and brokers on free loopback ports; built here, started by :meth:`start`."""

    base: Path
    bookie_count: int = 3
    broker_count: int = 2
    session_timeout_s: float = SESSION_TIMEOUT_S  # of every bookie and broker
    journal_sync: bool = True
    broker_env: dict[str, str] = field(default_factory=dict)
    broker_log_level: str = "info"
    proxy: bool = False
    proxy_env: dict[str, str] = field(default_factory=dict)
    autorecovery_count: int = 0
    bookie_racks: tuple[str, ...] = ()
    # Reach every bookie / autorecovery process (bookie authentication, say).
    bookie_env: dict[str, str] = field(default_factory=dict)
    autorecovery_env: dict[str, str] = field(default_factory=dict)
    etcd: EtcdServer = field(init=False)
    bookies: list[BookieProcess] = field(init=False)
    brokers: list[BrokerProcess] = field(init=False)
    proxy_process: ProxyProcess | None = field(init=False, default=None)
    autorecoveries: list[AutorecoveryProcess] = field(init=False)

    def __post_init__(self) -> None:
        self.etcd = EtcdServer(data_dir=self.base / "etcd")
        self.bookies = [
            BookieProcess(
                self.base / f"bookie-{i}",
                self.etcd.url,
                session_timeout_s=self.session_timeout_s,
                journal_sync=self.journal_sync,
                extra_args=["--rack", self.bookie_racks[i]] if i < len(self.bookie_racks) else [],
                env=dict(self.bookie_env),
            )
            for i in range(self.bookie_count)
        ]
        self.autorecoveries = [
            self.new_autorecovery(f"autorecovery-{i}") for i in range(self.autorecovery_count)
        ]
        self.brokers = [
            BrokerProcess(
                self.base / f"broker-{i}",
                self.etcd.url,
                session_timeout_s=self.session_timeout_s,
                log_level=self.broker_log_level,
                env=dict(self.broker_env),
            )
            for i in range(self.broker_count)
        ]
        if self.proxy:
            self.proxy_process = self.new_proxy("proxy")

    def new_proxy(self, name: str) -> ProxyProcess:
        """A proxy in front of this cluster (not started): :attr:`proxy_process` is the one
        ``proxy=True`` starts; tests of several proxies make more."""
        return ProxyProcess(self.base / name, self.etcd.url, env=dict(self.proxy_env))

    def new_autorecovery(self, name: str, **options: Any) -> AutorecoveryProcess:
        """An autorecovery process of this cluster (not started; ``options``: its fields)."""
        options.setdefault("env", dict(self.autorecovery_env))
        return AutorecoveryProcess(
            self.base / name,
            self.etcd.url,
            session_timeout_s=self.session_timeout_s,
            **options,
        )

    def members(self) -> list[BookieProcess | BrokerProcess | AutorecoveryProcess]:
        return [*self.bookies, *self.brokers, *self.autorecoveries]

    def start(self) -> None:
        """etcd, then the bookies, the brokers, autorecovery, then the proxy, each waited for
        until ready."""
        self.etcd.start()
        for process in self.members():
            process.start()
        if self.proxy_process is not None:
            self.proxy_process.start()

    def stop(self, *, graceful: bool = True) -> None:
        """The proxy, autorecovery, brokers, bookies, then etcd. ``graceful``: SIGTERM (a
        paused broker is resumed first, so that it can exit); otherwise SIGKILL, for tests whose
        teardown must be quick and that check a clean stop elsewhere."""
        if self.proxy_process is not None:
            if graceful:
                self.proxy_process.stop()
            else:
                self.proxy_process.kill()
        for process in (*self.autorecoveries, *self.brokers, *self.bookies):
            if not graceful:
                process.kill()
                continue
            if isinstance(process, BrokerProcess):
                process.resume()
            process.stop()
        self.etcd.stop()

    @contextmanager
    def running(self, *, graceful_stop: bool = True) -> Iterator[Cluster]:
        """:meth:`start`, yield, then :meth:`stop` (also when a member failed to start)."""
        try:
            self.start()
            yield self
        finally:
            self.stop(graceful=graceful_stop)

    @property
    def service_url(self) -> str:
        return "pulsar://" + ",".join(b.broker_id for b in self.brokers)

    def client(self, operation_timeout_s: int = 30) -> pulsar.Client:
        return pulsar.Client(
            self.service_url,
            operation_timeout_seconds=operation_timeout_s,
            # Refused connections to a killed broker are expected: keep them out of the output.
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(self.base / "client.log")),
        )

    @property
    def the_proxy(self) -> ProxyProcess:
        assert self.proxy_process is not None, "built without proxy=True"
        return self.proxy_process

    def proxy_client(self, operation_timeout_s: int = 30) -> pulsar.Client:
        """The official client that knows only the proxy's address."""
        return pulsar.Client(
            self.the_proxy.service_url,
            operation_timeout_seconds=operation_timeout_s,
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Info, str(self.base / "client.log")),
        )

    def live_broker(self) -> BrokerProcess:
        return next(b for b in self.brokers if b.running)

    def owner_of(self, topic: str) -> BrokerProcess:
        """The broker that serves ``topic`` now (an HTTP lookup on a live broker)."""
        path = topic.replace("://", "/")
        status, body = http(self.live_broker(), "GET", f"/lookup/v2/topic/{path}")
        assert status == 200, body
        return next(b for b in self.brokers if b.service_url == body["brokerUrl"])


def http(
    broker: BrokerProcess | ProxyProcess, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    """One admin call: (status, JSON body, or text when it is not JSON, or the error's reason).
    urllib follows a GET's 307 to the owner (a proxy follows every 307 itself)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(broker.web_url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            try:
                return response.status, json.loads(raw) if raw else None
            except ValueError:
                return response.status, raw.decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def client_on(
    *brokers: BrokerProcess,
    operation_timeout_s: int = 20,
    log_level: pulsar.LoggerLevel = pulsar.LoggerLevel.Warn,
) -> pulsar.Client:
    """The official client with a service URL that lists ``brokers`` (``pulsar://h:p1,h:p2``)."""
    return pulsar.Client(
        "pulsar://" + ",".join(b.broker_id for b in brokers),
        operation_timeout_seconds=operation_timeout_s,
        logger=pulsar.ConsoleLogger(log_level),
    )


def read_all(
    client: pulsar.Client, topic: str, expected: int, *, first_ms: int = 15000, quiet_ms: int = 3000
) -> list[bytes]:
    """Every payload of ``topic`` from the start: wait up to ``first_ms`` for each message until
    ``expected`` arrived, then stop after ``quiet_ms`` without one (so extras are seen too)."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got: list[bytes] = []
    try:
        while True:
            try:
                got.append(reader.read_next(quiet_ms if len(got) >= expected else first_ms).data())
            except pulsar.Timeout:
                return got
    finally:
        reader.close()


def fresh_topic(prefix: str) -> str:
    """A new persistent topic in ``public/default``."""
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """Poll ``condition`` every 0.1 s; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout_s:g}s: {what}"
        time.sleep(0.1)


def dedup_namespace(broker: BrokerProcess, name: str) -> str:
    """Create ``public/<name>`` with deduplication on; its name."""
    ns = f"public/{name}"
    status, body = http(broker, "PUT", f"/admin/v2/namespaces/{ns}")
    assert status == 204, body
    status, body = http(broker, "POST", f"/admin/v2/namespaces/{ns}/deduplication", True)
    assert status == 204, body
    return ns


def topics_in(ns: NamespaceName, lower: int, upper: int, count: int = 1) -> list[str]:
    """``count`` topic names of ``ns`` (``t0``, ``t1``, ...) whose hash falls in
    ``[lower, upper)``: topics served by one bundle of that range."""
    found = []
    for i in range(100_000):
        name = f"persistent://{ns}/t{i}"
        if lower <= topic_hash(TopicName.parse(name)) < upper:
            found.append(name)
            if len(found) == count:
                return found
    raise AssertionError(f"no {count} topics of {ns} hash into [{lower:#x}, {upper:#x})")


def one_topic_per_bundle(ns: NamespaceName) -> list[str]:
    """One topic for each of the default bundles of ``ns``."""
    return [
        topics_in(ns, b.range.lower, b.range.upper)[0] for b in NamespaceBundles.even(ns).bundles
    ]
