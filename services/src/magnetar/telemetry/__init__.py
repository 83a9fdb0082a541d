"""Observability: structured logging now; OpenTelemetry metrics and traces as they arrive."""

from magnetar.telemetry.logging import configure_logging, get_logger

__all__ = ["configure_logging", "get_logger"]
