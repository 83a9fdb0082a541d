"""The schema admin API (``/admin/v2/schemas/...``), ``AdminClient`` and ``magnetar admin
schemas`` against a real standalone: upload, get by version, list, compatibility, delete (a
marker, then a fresh history), forced delete and Pulsar's error statuses."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import urllib.error
from pathlib import Path
from typing import Any

import pulsar
import pytest
from pulsar.schema import AvroSchema, Record, String

from magnetar.client.admin import AdminClient
from magnetar.client.admin_errors import Conflict, NotFound
from tests.kit.process import MAGNETAR_CLI
from tests.kit.standalone import StandaloneProcess, admin_call, topic_name


def definition(*fields: str) -> str:
    return json.dumps(
        {
            "type": "record",
            "name": "Order",
            "fields": [{"name": f, "type": "string"} for f in fields],
        }
    )


def payload(*fields: str) -> dict[str, Any]:
    return {"type": "AVRO", "schema": definition(*fields), "properties": {"owner": "ops"}}


async def test_upload_get_delete_through_the_admin_client(standalone: StandaloneProcess) -> None:
    topic = topic_name("adm")
    async with AdminClient(standalone.web_url) as admin:
        with pytest.raises(NotFound):
            await admin.get_schema(topic)
        assert await admin.upload_schema(topic, payload("id")) == 0
        assert await admin.upload_schema(topic, payload("id")) == 0  # the same: same version
        with pytest.raises(Conflict, match="new and has no default"):  # FULL by default
            await admin.upload_schema(topic, payload("id", "sku"))
        verdict = await admin.test_schema_compatibility(topic, payload("id", "sku"))
        assert verdict == {"isCompatibility": False, "schemaCompatibilityStrategy": "FULL"}
        latest = await admin.get_schema(topic)
        assert latest["version"] == 0
        assert latest["properties"] == {"owner": "ops"}
        assert json.loads(latest["data"]) == json.loads(definition("id"))

        assert await admin.delete_schema(topic) == 1  # a deletion marker is a version
        with pytest.raises(NotFound):
            await admin.get_schema(topic)
        # After a deletion any schema may start the history again.
        assert await admin.upload_schema(topic, payload("id", "sku")) == 2
        assert [s["version"] for s in await admin.get_all_schemas(topic)] == [2]
        assert json.loads((await admin.get_schema(topic, 0))["data"])["fields"][0]["name"] == "id"
        with pytest.raises(NotFound):
            await admin.get_schema(topic, 1)  # the marker itself
        assert await admin.delete_schema(topic, force=True) is None
        with pytest.raises(NotFound):
            await admin.get_schema(topic, 0)  # gone with the history
        assert await admin.upload_schema(topic, payload("x")) == 0


def test_bad_uploads_get_pulsar_statuses(standalone: StandaloneProcess) -> None:
    topic = topic_name("bad").removeprefix("persistent://")
    path = f"/admin/v2/schemas/{topic}/schema"
    cases = [
        ({"type": "AVRO", "schema": "{not json"}, 422),
        ({"type": "AVRO", "schema": definition("a").replace("string", "Missing")}, 422),
        ({"type": "NOPE", "schema": ""}, 400),
        ({"type": "BYTES", "schema": ""}, 400),
        (["not", "an", "object"], 400),
    ]
    for body, status in cases:
        with pytest.raises(urllib.error.HTTPError) as refused:
            admin_call(standalone, "POST", path, body)
        assert refused.value.code == status, body
        assert json.loads(refused.value.read())["reason"]
    with pytest.raises(urllib.error.HTTPError) as missing_ns:
        admin_call(standalone, "GET", "/admin/v2/schemas/public/nope/t/schema")
    assert missing_ns.value.code == 404


def test_uploaded_schema_binds_producers(client: Any, standalone: StandaloneProcess) -> None:
    class Order(Record):
        id = String(required=True)

    topic = topic_name("bind")
    admin_call(standalone, "POST", f"/admin/v2/schemas/{topic[13:]}/schema", payload("sku"))
    with pytest.raises(pulsar.IncompatibleSchema):  # "id" is new and has no default
        client.create_producer(topic, schema=AvroSchema(Order))
    admin_call(standalone, "DELETE", f"/admin/v2/schemas/{topic[13:]}/schema")
    producer = client.create_producer(topic, schema=AvroSchema(Order))
    producer.send(Order(id="o-1"))
    assert admin_call(standalone, "GET", f"/admin/v2/schemas/{topic[13:]}/schema")["version"] == 2


def test_cli_upload_get_delete(standalone: StandaloneProcess, tmp_path: Path) -> None:
    topic = topic_name("cli")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MAGNETAR_CLI, "admin", "--admin-url", standalone.web_url, "schemas", *args],
            capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "COLUMNS": "250"},  # one line per message: no box wrapping
        )  # fmt: skip

    good = tmp_path / "order.json"
    good.write_text(json.dumps(payload("id")))
    upload = cli("upload", topic, "-f", str(good))
    assert (upload.returncode, upload.stdout.strip()) == (0, "version 0"), upload.stderr
    got = cli("get", topic)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["type"] == "AVRO"

    worse = tmp_path / "worse.json"
    worse.write_text(json.dumps(payload("id", "sku")))
    refused = cli("upload", topic, "-f", str(worse))
    assert refused.returncode == 1
    assert "has no default" in refused.stderr
    assert "409" in refused.stderr

    broken = tmp_path / "broken.json"
    broken.write_text("{")
    usage = cli("upload", topic, "-f", str(broken))
    assert usage.returncode == 2
    shown = " ".join(usage.stderr.replace("│", " ").split())  # rich wraps it in a box
    assert f"{broken} is not JSON" in shown

    deleted = cli("delete", topic)
    assert (deleted.returncode, deleted.stdout.strip()) == (0, "version 1"), deleted.stderr
    missing = cli("get", topic)
    assert missing.returncode == 1
    assert "404" in missing.stderr


def test_deleting_the_topic_deletes_its_schema(client: Any, standalone: StandaloneProcess) -> None:
    plain, parted = topic_name("del-plain"), topic_name("del-parted")
    admin_call(standalone, "PUT", f"/admin/v2/{parted.replace('://', '/')}/partitions", 2)
    for topic in (plain, parted):
        client.create_producer(topic, schema=AvroSchema(_order_v1())).close()
        assert admin_call(standalone, "GET", f"/admin/v2/schemas/{topic[13:]}/schema")
    admin_call(standalone, "DELETE", f"/admin/v2/{plain.replace('://', '/')}?force=true")
    admin_call(
        standalone, "DELETE", f"/admin/v2/{parted.replace('://', '/')}/partitions?force=true"
    )
    for topic in (plain, parted):
        with pytest.raises(urllib.error.HTTPError) as gone:
            admin_call(standalone, "GET", f"/admin/v2/schemas/{topic[13:]}/schema")
        assert gone.value.code == 404


def _order_v1() -> type[Record]:
    class Order(Record):
        id = String(required=True)

    return Order


async def test_version_of_a_payload(standalone: StandaloneProcess) -> None:
    topic = topic_name("version-of")
    path = f"/admin/v2/schemas/{topic[13:]}"
    await asyncio.to_thread(admin_call, standalone, "POST", f"{path}/schema", payload("id"))
    found = await asyncio.to_thread(
        admin_call, standalone, "POST", f"{path}/version", payload("id")
    )
    assert found == {"version": 0}
    with pytest.raises(urllib.error.HTTPError) as missing:
        await asyncio.to_thread(admin_call, standalone, "POST", f"{path}/version", payload("x"))
    assert missing.value.code == 404
