"""Structured logging through structlog.

Log calls use a stable event name and key-value fields, never f-strings::

    log = get_logger(__name__)
    log.info("ledger_closed", ledger_id=lid, last_entry_id=last)

:func:`configure_logging` is called once by each process entry point; until then structlog's
defaults apply (which is what tests see).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog


def configure_logging(level: str = "info", json: bool = False) -> None:
    """Route structlog and stdlib logging to stderr, as JSON lines or readable key=value lines."""
    numeric = logging.getLevelNamesMapping().get(level.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}: use debug, info, warning or error")
    renderer: Any = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=numeric, stream=sys.stderr, format="%(name)s %(message)s")


def get_logger(name: str, **initial: Any) -> structlog.typing.FilteringBoundLogger:
    """A bound structlog logger named for its module."""
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name, **initial)
    return logger
