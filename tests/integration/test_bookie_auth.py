"""Bookie gRPC authentication with real processes: a ``magnetar bookie`` with token
authentication and ``bookie_allowed_roles`` refuses calls and streams without a token, with a
forged one and with a role it does not allow (UNAUTHENTICATED / PERMISSION_DENIED, with the
reason), and serves the BookKeeper client holding the right token; the token never reaches the
bookie's log."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from magnetar.ledger import BookKeeper, LedgerClientConfig
from magnetar.ledger.errors import LedgerError
from magnetar.metadata import MetadataStore
from magnetar.wire import bookie_pb2 as pb
from magnetar.wire import bookie_pb2_grpc as pb_grpc
from tests.kit.bookie import BookieProcess, client_seeing, written_and_read
from tests.kit.etcd import EtcdServer
from tests.kit.process import running
from tests.kit.security import TokenKeys
from tests.kit.tls import TestPki, bookie_tls_args

pytestmark = pytest.mark.etcd

QUICK = {"add_timeout_s": 2.0, "read_timeout_s": 2.0, "ensemble_change_timeout_s": 2.0}
BOOKIE_ROLE = "broker"


@pytest.fixture(scope="module")
def auth_bookie(
    etcd_server: EtcdServer, tmp_path_factory: pytest.TempPathFactory, keys: TokenKeys
) -> Iterator[BookieProcess]:
    process = BookieProcess(
        tmp_path_factory.mktemp("auth-bookie") / "data",
        etcd_server.url,
        journal_sync=False,
        extra_args=["--bookie-allowed-roles", f"{BOOKIE_ROLE},autorecovery"],
        env=keys.env("BOOKIE"),
    )
    with running(process) as started:
        yield started


async def _info(bookie: BookieProcess, token: str | None) -> pb.BookieInfo:
    metadata = (("authorization", f"Bearer {token}"),) if token is not None else None
    async with grpc.aio.insecure_channel(bookie.address) as channel:
        response: pb.BookieInfo = await pb_grpc.BookieStub(channel).GetInfo(
            pb.BookieInfoRequest(), timeout=10, metadata=metadata
        )
        return response


def _forged(keys: TokenKeys, tmp_path: Path) -> str:
    return TokenKeys.hmac(tmp_path).token(BOOKIE_ROLE)


@pytest.mark.parametrize(
    ("credential", "code", "reason"),
    [
        ("none", grpc.StatusCode.UNAUTHENTICATED, "authentication is required"),
        ("forged", grpc.StatusCode.UNAUTHENTICATED, "signature"),
        ("malformed", grpc.StatusCode.UNAUTHENTICATED, "token"),
        ("other role", grpc.StatusCode.PERMISSION_DENIED, "'app' may not call this bookie"),
    ],
)
async def test_unary_call_refused(
    auth_bookie: BookieProcess,
    keys: TokenKeys,
    tmp_path: Path,
    credential: str,
    code: grpc.StatusCode,
    reason: str,
) -> None:
    token = {
        "none": None,
        "forged": _forged(keys, tmp_path),
        "malformed": "not-a-jwt",
        "other role": keys.token("app"),
    }[credential]
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _info(auth_bookie, token)
    assert refused.value.code() == code
    assert reason in (refused.value.details() or "")


async def test_unary_call_with_the_right_token(auth_bookie: BookieProcess, keys: TokenKeys) -> None:
    info = await _info(auth_bookie, keys.token(BOOKIE_ROLE))
    assert info.bookie_id == auth_bookie.bookie_id


async def test_add_stream_refused_without_token(auth_bookie: BookieProcess) -> None:
    # Refused when the stream opens, before any request: the bookie reads none of them.
    async with grpc.aio.insecure_channel(auth_bookie.address) as channel:
        call = pb_grpc.BookieStub(channel).AddEntries(timeout=10)
        assert await call.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "authentication is required" in (await call.details() or "")


async def _client(store: MetadataStore, bookie: BookieProcess, token: str) -> BookKeeper:
    """A client whose registry holds exactly this bookie (other tests' bookies expire)."""
    config = LedgerClientConfig(auth_token=token, bookie_wait_s=15, **QUICK)
    return await client_seeing(store, config, {bookie.bookie_id})


async def test_ledger_written_and_read_with_the_token(
    auth_bookie: BookieProcess, store: MetadataStore, keys: TokenKeys
) -> None:
    token = keys.token(BOOKIE_ROLE)
    bk = await _client(store, auth_bookie, token)
    try:
        payloads = [b"auth-%d" % i for i in range(5)]
        assert await written_and_read(bk, payloads) == payloads
    finally:
        await bk.close()
    assert token not in auth_bookie.log_text()
    assert keys.token("app") not in auth_bookie.log_text()


async def test_ledger_client_without_token_refused(
    auth_bookie: BookieProcess, store: MetadataStore
) -> None:
    bk = await _client(store, auth_bookie, "")
    try:
        wh = await bk.create_ledger(1, 1, 1)
        with pytest.raises(LedgerError):
            await asyncio.wait_for(wh.append(b"refused"), 20)
    finally:
        await bk.close()
    assert "bookie_call_refused" in auth_bookie.log_text()


@pytest.fixture(scope="module")
def mtls_bookie(
    etcd_server: EtcdServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[BookieProcess, TestPki]]:
    pki = TestPki.create(tmp_path_factory.mktemp("bookie-auth-pki"))
    args = [
        *bookie_tls_args(pki, pki.issue("bookie")),
        "--authentication-enabled", "--authentication-providers", "tls",
        "--bookie-allowed-roles", BOOKIE_ROLE,
    ]  # fmt: skip
    process = BookieProcess(
        tmp_path_factory.mktemp("mtls-auth-bookie") / "data",
        etcd_server.url,
        journal_sync=False,
        extra_args=args,
    )
    with running(process) as started:
        yield started, pki


@pytest.mark.parametrize(("common_name", "allowed"), [(BOOKIE_ROLE, True), ("app", False)])
async def test_tls_provider_takes_the_certificates_common_name(
    mtls_bookie: tuple[BookieProcess, TestPki], common_name: str, allowed: bool
) -> None:
    bookie, pki = mtls_bookie
    client = pki.issue(common_name, client=True)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=pki.ca_file.read_bytes(),
        private_key=client.key_file.read_bytes(),
        certificate_chain=client.cert_file.read_bytes(),
    )
    async with grpc.aio.secure_channel(bookie.address, credentials) as channel:
        call = pb_grpc.BookieStub(channel).GetInfo(pb.BookieInfoRequest(), timeout=10)
        if allowed:
            assert (await call).bookie_id == bookie.bookie_id
            return
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "'app' may not call this bookie" in (refused.value.details() or "")


async def test_audit_bookie_scans_send_the_token(
    auth_bookie: BookieProcess, keys: TokenKeys, tmp_path: Path
) -> None:
    """The audit's probe and ``ListEntries`` listing (what its Spark tasks run) with the token
    of ``--bookie-auth-token-file``; without it the bookie is named unreachable, with the
    bookie's reason."""
    from magnetar.audit import scans
    from magnetar.audit.errors import BadAuditInput, Unreachable

    token_file = tmp_path / "audit.token"
    token_file.write_text(keys.token(BOOKIE_ROLE) + "\n")
    token = scans.read_token_file(str(token_file))
    await scans.probe_bookie(auth_bookie.bookie_id, auth_bookie.address, 10, token)
    chunks = [
        chunk
        async for chunk in scans.stream_entries(
            auth_bookie.bookie_id, auth_bookie.address, 0, 0, auth_token=token
        )
    ]
    assert all(isinstance(chunk, list) for chunk in chunks)
    with pytest.raises(Unreachable, match="authentication is required"):
        await scans.probe_bookie(auth_bookie.bookie_id, auth_bookie.address, 10)
    with pytest.raises(BadAuditInput, match="cannot read the bookie token file"):
        scans.read_token_file(str(tmp_path / "missing"))
