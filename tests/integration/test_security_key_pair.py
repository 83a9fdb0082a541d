"""Key-pair (ES256) tokens made by ``magnetar tokens`` on a standalone, used by the official
client, our client and the CLI tools (``--auth-token`` / ``--auth-token-file``).

The keys and tokens come from the CLI itself, in Pulsar's formats (PKCS#8 / X.509 DER keys,
``{"alg":"ES256"}`` headers), so this also checks that ``magnetar tokens`` output is what the
broker accepts. Authorization is off here: any valid token may produce and consume.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from magnetar.client import AuthenticationToken, Client
from tests.kit.process import MAGNETAR_CLI, running
from tests.kit.security import token_client
from tests.kit.standalone import StandaloneProcess, topic_name


def magnetar(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MAGNETAR_CLI, *args], capture_output=True, text=True, timeout=60, check=False
    )


def ok(*args: str) -> str:
    done = magnetar(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@dataclass(frozen=True)
class Made:
    public_key: Path
    token: str
    token_file: Path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    d = tmp_path_factory.mktemp("pair")
    private, public = d / "private.der", d / "public.der"
    ok("tokens", "create-key-pair", "-a", "ES256",
       "--output-private-key", str(private), "--output-public-key", str(public))  # fmt: skip
    token = ok("tokens", "create", "--private-key", f"file://{private}", "-a", "ES256",
               "--subject", "svc", "--expiry-time", "1h").strip()  # fmt: skip
    token_file = d / "svc.token"
    token_file.write_text(token + "\n")
    return Made(public, token, token_file)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory, made: Made) -> Iterator[StandaloneProcess]:
    sa = StandaloneProcess(
        data_dir=tmp_path_factory.mktemp("keyed") / "data",
        extra_args=[
            "--authentication-enabled",
            "--authentication-providers",
            "token",
            "--token-public-key",
            f"file://{made.public_key}",
        ],
        env={"MAGNETAR_STANDALONE_TOKEN_PUBLIC_ALG": "ES256"},
    )
    with running(sa) as process:
        yield process


def test_tokens_cli_shows_and_validates_in_pulsars_format(made: Made) -> None:
    header, sep, claims = ok("tokens", "show", made.token).splitlines()
    assert (json.loads(header), sep) == ({"alg": "ES256"}, "---")
    assert json.loads(claims)["sub"] == "svc"
    valid = ok("tokens", "validate", "--public-key", f"file://{made.public_key}", "-a", "ES256",
               "--token-file", str(made.token_file))  # fmt: skip
    assert json.loads(valid)["sub"] == "svc"
    forged = made.token[:-4] + ("AAAA" if not made.token.endswith("AAAA") else "BBBB")
    bad = magnetar("tokens", "validate", "--public-key", f"file://{made.public_key}",
                   "-a", "ES256", forged)  # fmt: skip
    assert bad.returncode == 1
    assert "invalid token" in bad.stderr


def test_official_client_with_an_es256_token(keyed: StandaloneProcess, made: Made) -> None:
    topic = topic_name("es256")
    client = token_client(keyed.service_url, made.token)
    try:
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(b"signed")
        assert consumer.receive(timeout_millis=10_000).data() == b"signed"
    finally:
        client.close()


async def test_our_client_with_an_es256_token(keyed: StandaloneProcess, made: Made) -> None:
    topic = topic_name("ours")
    async with Client(
        keyed.service_url, operation_timeout_s=10, auth=AuthenticationToken(made.token)
    ) as client:
        consumer = await client.subscribe(topic, "s")
        producer = await client.create_producer(topic)
        await producer.send(b"ours")
        message = await consumer.receive(timeout_s=10)
        assert message.data == b"ours"


def test_cli_tools_take_a_token(keyed: StandaloneProcess, made: Made) -> None:
    topic, url = topic_name("tools"), keyed.service_url
    out = ok("produce", topic, "-m", "a", "--service-url", url,
             "--auth-token-file", str(made.token_file))  # fmt: skip
    assert out.splitlines()[-1] == "1 message produced"
    got = ok("consume", topic, "-s", "s", "-n", "1", "--position", "earliest", "--timeout",
             "10", "--service-url", url, "--auth-token", made.token)  # fmt: skip
    assert "content:a" in got
    refused = magnetar("produce", topic, "-m", "b", "--service-url", url)
    assert refused.returncode == 1
    assert "refused access" in refused.stderr
    assert "authentication is required" in refused.stderr
    assert "--auth-token" in refused.stderr  # what to do about it


def test_perf_takes_a_token_for_both_clients_and_the_admin_api(
    keyed: StandaloneProcess, made: Made
) -> None:
    common = ["--service-url", keyed.service_url, "--admin-url", keyed.web_url,
              "--auth-token-file", str(made.token_file), "--json"]  # fmt: skip
    ours = magnetar("perf", "produce", topic_name("perf"), "-n", "20", "--partitions", "2", *common)
    assert ours.returncode == 0, ours.stderr
    official = magnetar("perf", "produce", topic_name("perf-official"), "-n", "20",
                        "--use-official-client", *common)  # fmt: skip
    assert official.returncode == 0, official.stderr
