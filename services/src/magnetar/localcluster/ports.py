"""Loopback ports for a new local cluster: is a port free, and any free one.

Free means that a server could listen on it now: the check binds with ``SO_REUSEADDR`` as
servers do, so a port left in TIME_WAIT by a cluster that just stopped counts as free (a
restart must get its old ports back), while a port with a listener does not. A port found free
may be taken a moment later; a member that then fails to bind reports it in its log.
Called by :mod:`magnetar.localcluster.supervisor`.
"""

from __future__ import annotations

import socket

from magnetar.localcluster.layout import LOOPBACK


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def any_free_port() -> int:
    """A port the system just picked as free on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port
