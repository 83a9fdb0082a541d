"""Admin REST v2 and ``/lookup/v2``: Pulsar's HTTP API for clusters, tenants, namespaces,
policies and topics, as a FastAPI app (the only package that imports fastapi).

* :mod:`.app` — ``create_app(service, metrics)``; error handling (Pulsar's ``{"reason": ...}``
  bodies).
* :mod:`.service` — the ``TopicService`` protocol the broker implements for topic operations.
* :mod:`.errors` — admin errors and THE table from domain errors to HTTP statuses.
* :mod:`.clusters`, :mod:`.tenants`, :mod:`.namespaces`, :mod:`.topics`, :mod:`.lookup` — routes.
* :mod:`.probes` — ``/admin/v2/brokers/health`` and ``/metrics``.
* :mod:`.broker_stats` — ``/admin/v2/broker-stats/topics`` and ``/broker-stats/metrics``.
"""

from magnetar.admin.app import create_app
from magnetar.admin.service import TopicService

__all__ = ["TopicService", "create_app"]
