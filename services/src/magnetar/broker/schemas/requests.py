"""The schema commands of a ServerCnx: GET_SCHEMA and GET_OR_CREATE_SCHEMA.

The connection (:mod:`magnetar.broker.connection`) calls :meth:`SchemaRequests.handle` from its
reader; each request is answered by request id from a task of the connection. Errors travel
inside the command's own response (the C++ client does not match ERROR to a GET_SCHEMA): a topic
without a schema, or without that version, gets ``TopicNotFound`` as the Java broker answers;
a refused GET_OR_CREATE_SCHEMA gets ``IncompatibleSchema`` with the reason. With authorization
on, reading a schema needs lookup rights on the topic and adding one needs ``produce``
(``AuthorizationError`` in the response).

Concurrency: on the broker's loop; no state of its own.
"""

from __future__ import annotations

from magnetar.authorization import LOOKUP, PRODUCE
from magnetar.broker.schemas.registry import SchemaRegistry
from magnetar.broker.schemas.wire import schema_of, to_proto
from magnetar.broker.transport_cnx import TransportCnx
from magnetar.naming import TopicName
from magnetar.protocol import commands
from magnetar.protocol.frame import Frame
from magnetar.schema import InvalidSchema, decode_version, encode_version
from magnetar.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


class SchemaRequests:
    """GET_SCHEMA and GET_OR_CREATE_SCHEMA for one connection."""

    def __init__(self, cnx: TransportCnx, registry: SchemaRegistry) -> None:
        self._cnx = cnx
        self._registry = registry

    async def handle(self, frame: Frame) -> bool:
        """Handle a schema command; False if ``frame`` is not one."""
        cmd = frame.command
        if cmd.type == T.GET_SCHEMA:
            await self._get(cmd.get_schema)
        elif cmd.type == T.GET_OR_CREATE_SCHEMA:
            await self._get_or_create(cmd.get_or_create_schema)
        else:
            return False
        return True

    async def _get(self, request: pb.CommandGetSchema) -> None:
        async def work() -> pb.BaseCommand:
            topic = TopicName.parse(request.topic)
            await self._cnx.authorize(topic, LOOKUP)
            if request.HasField("schema_version") and request.schema_version:
                entry = await self._registry.version(topic, decode_version(request.schema_version))
            else:
                entry = await self._registry.latest(topic)
            assert entry.schema is not None  # the registry never returns a deletion marker
            name = topic.partitioned_topic_name.local_name
            return commands.get_schema_response(
                request.request_id, to_proto(entry.schema, name), encode_version(entry.version)
            )

        await self._cnx.request(request.request_id, work, commands.get_schema_error)

    async def _get_or_create(self, request: pb.CommandGetOrCreateSchema) -> None:
        async def work() -> pb.BaseCommand:
            topic = TopicName.parse(request.topic)
            await self._cnx.authorize(topic, PRODUCE)
            schema = schema_of(request.schema)
            if schema is None:
                raise InvalidSchema("GET_OR_CREATE_SCHEMA needs a schema other than BYTES/NONE")
            version = await self._registry.add(topic, schema)
            return commands.get_or_create_schema_response(
                request.request_id, encode_version(version)
            )

        await self._cnx.request(request.request_id, work, commands.get_or_create_schema_error)
