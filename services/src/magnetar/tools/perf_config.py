"""What one ``magnetar perf`` run is asked to do and what it reports (sans-I/O).

:class:`PerfConfig` holds the options of ``magnetar perf produce|consume|e2e`` (validated on
construction); :class:`PerfResult` holds the run's total snapshots and renders the final summary
(text or one JSON line). Both clients' runners (:mod:`magnetar.tools.perf` with Magnetar's
client, :mod:`magnetar.tools.perf_official` with the official ``pulsar-client``) share them, so
their numbers are comparable line by line.

Payload stamps: every perf message starts with ``MAGIC`` and the sender's wall clock in
microseconds (big-endian int64), so a consumer measures end-to-end latency at microsecond
resolution (:func:`read_stamp`); messages without a stamp fall back to their publish time.

When consumers stop (:meth:`PerfConfig.consumed_enough`) and which subscription they use
(:meth:`PerfConfig.consumer_subscription`) are decided here once for both runners.
Values and pure functions (bar the random e2e subscription suffix); safe from any thread.
"""

from __future__ import annotations

import json
import struct
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from magnetar.client.settings import TlsOptions
from magnetar.tools.errors import BadInput
from magnetar.tools.perf_report import PerfMeter, Snapshot

Mode = Literal["produce", "consume", "e2e"]
MAGIC = b"MGP\x01"
STAMP = struct.Struct(">4sq")
COMPRESSIONS = ("none", "lz4", "zlib", "zstd", "snappy")  # also what ``magnetar produce`` takes
SUBSCRIPTION_TYPES = ("exclusive", "shared", "failover", "key_shared")
DRAIN_IDLE_S = 10.0  # an e2e run stops waiting for stragglers after this long without one


@dataclass(frozen=True)
class PerfConfig:
    """Options of one perf run; ``count == 0`` and ``time_s == 0`` mean no limit."""

    mode: Mode
    topic: str
    rate: float | None = None
    count: int = 0
    time_s: float = 0.0
    size: int = 1024
    producers: int = 1
    consumers: int = 1
    topics: int = 1
    partitions: int = 0
    batching: bool = True
    batch_max_messages: int = 1000
    batch_delay_ms: int = 10
    compression: str = "none"
    max_pending: int = 1000
    subscription: str = "perf-sub"
    subscription_type: str | None = None
    service_url: str = "pulsar://127.0.0.1:6650"
    admin_url: str = "http://127.0.0.1:8080"
    tls: TlsOptions | None = None  # for pulsar+ssl:// and https:// URLs

    def __post_init__(self) -> None:
        positive = {
            "--producers": self.producers,
            "--consumers": self.consumers,
            "--topics": self.topics,
            "--batch-max-messages": self.batch_max_messages,
            "--max-pending": self.max_pending,
        }
        for option, value in positive.items():
            if value < 1:
                raise BadInput(f"{option} must be at least 1, got {value}")
        if self.count < 0 or self.time_s < 0 or self.partitions < 0 or self.batch_delay_ms < 0:
            raise BadInput("-n, --time, --partitions and --batch-delay-ms cannot be negative")
        if self.size < 1:
            raise BadInput(f"--size must be at least 1 byte, got {self.size}")
        if self.rate is not None and self.rate <= 0:
            raise BadInput(f"--rate must be positive, got {self.rate:g}")
        if self.compression not in COMPRESSIONS:
            raise BadInput(f"unknown compression {self.compression!r}: {', '.join(COMPRESSIONS)}")
        if self.subscription_type is not None and self.subscription_type not in SUBSCRIPTION_TYPES:
            raise BadInput(
                f"unknown subscription type {self.subscription_type!r}:"
                f" {', '.join(SUBSCRIPTION_TYPES)}"
            )

    def topic_names(self) -> list[str]:
        """``--topics N`` suffixes ``-0`` .. ``-(N-1)``; one topic keeps its name."""
        if self.topics == 1:
            return [self.topic]
        return [f"{self.topic}-{i}" for i in range(self.topics)]

    @property
    def effective_subscription_type(self) -> str:
        """Exclusive for one consumer per topic, Shared for several, unless chosen."""
        if self.subscription_type is not None:
            return self.subscription_type
        return "exclusive" if self.consumers == 1 else "shared"

    @property
    def produces(self) -> bool:
        return self.mode in ("produce", "e2e")

    @property
    def consumes(self) -> bool:
        return self.mode in ("consume", "e2e")

    def consumer_subscription(self) -> str:
        """``--subscription``; an e2e run gets a fresh one, so it sees only what it produced."""
        if self.mode == "e2e":
            return f"{self.subscription}-e2e-{uuid.uuid4().hex[:8]}"
        return self.subscription

    def consumed_enough(self, received: int, produced: int | None, idle_s: float) -> bool:
        """Whether consumers are done after ``received`` messages, ``idle_s`` since the last.

        ``produced`` is None while producers still run. In e2e mode, once they are done,
        consumers stop when everything produced arrived or nothing did for ``DRAIN_IDLE_S``;
        otherwise they stop at ``-n`` (never, without one).
        """
        if self.mode == "e2e" and produced is not None:
            return received >= produced or idle_s > DRAIN_IDLE_S
        return bool(self.count) and received >= self.count

    def new_meters(self, now: float) -> dict[str, PerfMeter]:
        """Fresh meters for this mode: ``produce`` and/or ``consume`` (``e2e`` in e2e mode)."""
        labels = ["produce"] if self.produces else []
        if self.consumes:
            labels.append("e2e" if self.mode == "e2e" else "consume")
        return {label: PerfMeter(label, now) for label in labels}

    def deadline(self, now: float) -> float | None:
        """When a run started at ``now`` ends by ``--time`` (None: no time limit)."""
        return now + self.time_s if self.time_s else None

    def producer_rate(self) -> float | None:
        """Each producer's share of ``--rate``."""
        if self.rate is None:
            return None
        return self.rate / (self.producers * self.topics)


def payload_template(size: int) -> bytearray:
    """A payload of ``size`` bytes; :func:`stamp` writes the clock into its head."""
    return bytearray(b"x" * size)


def stamp(template: bytearray, now_us: int) -> bytes:
    """The template with ``MAGIC`` + ``now_us`` in front (when it has room for them)."""
    if len(template) >= STAMP.size:
        STAMP.pack_into(template, 0, MAGIC, now_us)
    return bytes(template)


def read_stamp(data: bytes) -> int | None:
    """The sender's clock (µs) from a stamped payload, else None."""
    if len(data) < STAMP.size or data[:4] != MAGIC:
        return None
    _magic, now_us = STAMP.unpack_from(data)
    return int(now_us)


def e2e_latency_us(data: bytes, publish_time_ms: int, now_us: int) -> int:
    """Receive time minus the stamp, or minus the publish time for unstamped messages."""
    sent = read_stamp(data)
    if sent is None:
        sent = publish_time_ms * 1000
    return max(0, now_us - sent)


@dataclass(frozen=True)
class PerfResult:
    """A finished run: which client, and a total snapshot per meter (produce, consume, e2e)."""

    client: str
    mode: Mode
    snapshots: dict[str, Snapshot] = field(default_factory=dict)

    @property
    def main(self) -> Snapshot:
        """The snapshot the run is about: produce, consume, or e2e."""
        return self.snapshots[self.mode]

    def as_dict(self) -> dict[str, Any]:
        doc = {"client": self.client, "mode": self.mode, **self.main.as_dict()}
        for label, snap in self.snapshots.items():
            if label != self.mode:
                doc[label] = snap.as_dict()
        return doc

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True)

    def summary_text(self) -> str:
        parts = [f"client: {self.client}"]
        parts += [snap.summary_text() for snap in self.snapshots.values()]
        return "\n".join(parts)
