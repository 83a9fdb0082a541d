"""Magnetar: a Pulsar-compatible messaging platform written in Python.

Packages, bottom up (see DESIGN.md §2): ``wire`` (generated protobuf code), ``telemetry``,
``metadata`` and ``protocol``, ``bookie`` and ``ledger``, ``managed_ledger``, then the services
and ``cli``. Dependencies point downward only; ``lint-imports`` enforces it.
"""

__version__ = "0.1.0"
