"""Observability: structured logging, Prometheus metrics and a minimal HTTP responder.

* :mod:`.logging` — ``configure_logging``, ``get_logger`` (re-exported here).
* :mod:`.metric_names` — every metric name, kind and label set, declared once.
* :mod:`.metrics` — the OpenTelemetry SDK + Prometheus exporter adapter (``Metrics``). Imported
  from its module, not re-exported here: every module that logs imports this package, and the
  SDK need not load in client-side processes (the CLI's produce, consume, admin commands).
* :mod:`.http_server` — ``HttpServer``: ``/metrics`` and probes for processes without the
  admin web app (the bookie).
"""

from magnetar.telemetry.logging import configure_logging, get_logger

__all__ = ["configure_logging", "get_logger"]
