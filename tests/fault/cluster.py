"""A real cluster on loopback for the failover and cluster fault tests (holds no tests).

:class:`Cluster` starts one etcd, ``bookies`` bookie processes and ``brokers`` broker
processes, each its own OS process on free ports, with short session timeouts so that a killed
member's leases run out in about two seconds. ``broker_env`` reaches every broker (the managed
ledger's ensemble settings, say). :meth:`Cluster.client` is the official client with a service
URL that lists every broker, as a user would point it at a cluster. Blocking: call it from the
test's thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pulsar

from tests.kit.bookie import BookieProcess
from tests.kit.broker import BrokerProcess
from tests.kit.cluster import http
from tests.kit.etcd import EtcdServer

SESSION_TIMEOUT_S = 2.0


@dataclass
class Cluster:
    base: Path
    bookie_count: int = 3
    broker_count: int = 2
    broker_env: dict[str, str] = field(default_factory=dict)
    journal_sync: bool = True
    etcd: EtcdServer | None = None
    bookies: list[BookieProcess] = field(default_factory=list)
    brokers: list[BrokerProcess] = field(default_factory=list)

    def start(self) -> None:
        self.etcd = EtcdServer(data_dir=self.base / "etcd")
        self.etcd.start()
        self.bookies = [
            BookieProcess(
                self.base / f"bookie-{i}",
                self.etcd.url,
                session_timeout_s=SESSION_TIMEOUT_S,
                journal_sync=self.journal_sync,
            )
            for i in range(self.bookie_count)
        ]
        self.brokers = [
            BrokerProcess(
                self.base / f"broker-{i}",
                self.etcd.url,
                session_timeout_s=SESSION_TIMEOUT_S,
                env=dict(self.broker_env),
            )
            for i in range(self.broker_count)
        ]
        for process in (*self.bookies, *self.brokers):
            process.start()

    def stop(self) -> None:
        for process in (*self.brokers, *self.bookies):
            process.kill()  # a clean stop is another test's business; this one must be quick
        if self.etcd is not None:
            self.etcd.stop()

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

    def live_broker(self) -> BrokerProcess:
        return next(b for b in self.brokers if b.running)

    def owner_of(self, topic: str) -> BrokerProcess:
        """The broker that serves ``topic`` now (an HTTP lookup on a live broker)."""
        path = topic.replace("://", "/")
        status, body = http(self.live_broker(), "GET", f"/lookup/v2/topic/{path}")
        assert status == 200, body
        return next(b for b in self.brokers if b.service_url == body["brokerUrl"])


def dedup_namespace(broker: BrokerProcess, name: str) -> str:
    """Create ``public/<name>`` with deduplication on; its name."""
    ns = f"public/{name}"
    status, body = http(broker, "PUT", f"/admin/v2/namespaces/{ns}")
    assert status == 204, body
    status, body = http(broker, "POST", f"/admin/v2/namespaces/{ns}/deduplication", True)
    assert status == 204, body
    return ns
