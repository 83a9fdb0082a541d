"""Magnetar: a Pulsar-compatible messaging platform written in Python.

Packages, bottom up (see docs/architecture.md): the shared bottom (``errors``, ``ids``,
``backoff``, ``cancellation``; then ``naming`` and ``policies``, as Pulsar's pulsar-common),
``wire`` (generated protobuf code), ``telemetry``, ``metadata`` and ``protocol``, ``bookie`` and
``ledger``, ``managed_ledger``, the services (``broker``, ``client``), ``admin`` and ``tools``,
``standalone`` (the composition of a broker and a bookie) and ``cli``. Dependencies point
downward only; ``lint-imports`` enforces it.
"""

__version__ = "0.1.0"
