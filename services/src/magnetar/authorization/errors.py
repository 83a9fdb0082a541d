"""The authorization error: an authenticated role may not do what it asked.

Pulsar's ``AuthorizationError`` on the binary protocol (PRODUCER, SUBSCRIBE, LOOKUP ...), HTTP
403 on the admin API. The message names the role and the operation, never a credential.
"""

from __future__ import annotations

from magnetar.errors import MagnetarError
from magnetar.protocol.errors import register_server_error
from magnetar.wire import pulsar_api_pb2 as pb


class NotAuthorized(MagnetarError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


register_server_error(NotAuthorized, pb.AuthorizationError)
