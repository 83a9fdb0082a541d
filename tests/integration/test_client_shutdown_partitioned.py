"""The official client shuts down promptly after producing to a partitioned topic.

Steps of the report: a producer on a partitioned topic, one message, ``Client.shutdown()``.
Each run is a fresh interpreter under a deadline, because a hang there holds the GIL inside
the C++ client and nothing in-process could time it out.

With a Python ``logging.Logger`` the bare ``shutdown()`` deadlocks inside pulsar-client 3.13
(C++ 4.2.0) whatever the broker does: cancelling the partitions-update timer runs its handler,
which starts a partition-metadata lookup on a listener thread; that thread's first log call
waits for the GIL held by ``shutdown()``, which waits for the lookup cache's lock the listener
thread holds. The broker sends nothing at that moment (its last frame is the SEND_RECEIPT).
So that variant closes the client instead (CLOSE_PRODUCER for every partition, each answered by
the broker), which a close the broker never answers would catch; the default logger (C++ side,
no GIL) runs the report's bare steps.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.kit.standalone import StandaloneProcess, admin_call, topic_name

RUNS = 5
DEADLINE_S = 20.0

STEPS = """
import logging, os, sys
import pulsar
url, topic, variant = sys.argv[1:4]
kwargs = {}
if variant == "python-logger":
    logging.basicConfig(level=logging.INFO)
    kwargs["logger"] = logging.getLogger("pulsar")
client = pulsar.Client(url, operation_timeout_seconds=10, **kwargs)
producer = client.create_producer(topic)
producer.send(b"one")
if variant == "python-logger":
    client.close()  # not followed by shutdown(): the C++ client aborts on that sequence
    print("shutdown returned", flush=True)
    # Leave without running the C++ client's destructors: with a Python logger they abort
    # now and then at interpreter exit ("terminate called without an active exception"),
    # after close() has returned; the broker has no part in that.
    os._exit(0)
client.shutdown()
print("shutdown returned")
"""


@pytest.mark.parametrize("variant", ["default-logger", "python-logger"])
def test_shutdown_returns_after_producing_to_a_partitioned_topic(
    standalone: StandaloneProcess, variant: str
) -> None:
    for run in range(RUNS):
        topic = topic_name("shutdown")
        admin_call(standalone, "PUT", f"/admin/v2/{topic.replace('://', '/')}/partitions", 3)
        try:
            done = subprocess.run(
                [sys.executable, "-c", STEPS, standalone.service_url, topic, variant],
                capture_output=True,
                text=True,
                timeout=DEADLINE_S,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"run {run}: shutdown did not return within {DEADLINE_S} s: {exc.stderr}")
        assert done.returncode == 0, done.stderr[-2000:]
        assert "shutdown returned" in done.stdout
