"""The standalone: a broker, one in-process bookie and RocksDB metadata in one process.

A composition of services, above them in the layers: :mod:`.settings` holds the process's one
settings object, :mod:`.process` starts the parts in order and stops them in reverse. Called by
``magnetar standalone`` (:mod:`magnetar.cli.standalone_cmd`) only.
"""

from magnetar.standalone.process import serve_standalone
from magnetar.standalone.settings import StandaloneSettings

__all__ = ["StandaloneSettings", "serve_standalone"]
