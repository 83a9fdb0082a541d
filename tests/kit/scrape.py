"""Read a process's Prometheus ``/metrics`` in tests.

::

    samples = scrape(sa.web_url)                       # every sample of every family
    value(samples, "pulsar_in_messages_total", topic=t)  # one sample's value (by labels)

Blocking (urllib, 10 s deadline): from a test's event loop call it with ``asyncio.to_thread``.
"""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


def scrape(base_url: str) -> list[Sample]:
    with urllib.request.urlopen(base_url + "/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def value(samples: list[Sample], name: str, **labels: str) -> float:
    """The value of the one sample named ``name`` whose labels include ``labels``."""
    found = [
        s.value
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, f"{name} {labels}: {len(found)} samples"
    return found[0]
