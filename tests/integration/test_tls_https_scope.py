"""HTTPS web services hand the client's certificate to the ASGI app (the input of mutual-TLS
authentication on the admin API): a real uvicorn server built by the broker's web service on
a loopback port, an app that echoes what it was given, and clients with and without a
certificate."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from magnetar.broker.web_service import WebServer, build_web_server
from magnetar.tls import ServerTls, TlsServerConfig
from magnetar.tls.https import peer_certificate
from tests.kit.ports import free_port
from tests.kit.tls import TestPki, client_context


async def echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    cert = peer_certificate(scope)
    assert scope["state"]["peer_certificate"] == cert  # request.state.peer_certificate
    tls = scope.get("extensions", {}).get("tls", {})
    body = json.dumps(
        {
            "scheme": scope["scheme"],
            "subject": cert["subject"] if cert else None,
            "chain": len(tls.get("client_cert_chain", [])),
            "name": tls.get("client_cert_name"),
        }
    ).encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def pki(tmp_path: Path) -> TestPki:
    return TestPki.create(tmp_path)


@pytest.fixture
async def server(pki: TestPki) -> AsyncIterator[int]:
    cert = pki.issue("web")
    tls = ServerTls(TlsServerConfig(cert.cert_file, cert.key_file, pki.ca_file))
    port = free_port()
    web: WebServer = build_web_server(echo, "127.0.0.1", port, tls)
    task = asyncio.create_task(web.serve())
    async with asyncio.timeout(10):
        while not web.started:  # noqa: ASYNC110  # uvicorn has no readiness event
            await asyncio.sleep(0.02)
    try:
        yield port
    finally:
        web.should_exit = True
        await asyncio.wait_for(task, 10)


def _get(port: int, pki: TestPki, with_cert: bool) -> dict[str, Any]:
    ctx = client_context(pki, pki.issue("alice", client=True) if with_cert else None)
    with urllib.request.urlopen(f"https://127.0.0.1:{port}/", timeout=10, context=ctx) as r:
        answer: dict[str, Any] = json.loads(r.read())
        return answer


async def test_the_client_certificate_reaches_the_app(server: int, pki: TestPki) -> None:
    got = await asyncio.to_thread(_get, server, pki, True)
    assert got["scheme"] == "https"
    assert got["subject"] == [[["commonName", "alice"]]]
    assert got["chain"] == 1
    assert got["name"] == "commonName=alice"


async def test_no_client_certificate_is_none(server: int, pki: TestPki) -> None:
    got = await asyncio.to_thread(_get, server, pki, False)
    assert got == {"scheme": "https", "subject": None, "chain": 0, "name": None}
