"""``magnetar admin ...`` against a real standalone, as a user runs it and command by command.

The ``test_process_*`` tests start the real command as a subprocess and check what a user sees:
the tables, the ``--json`` output, ``MAGNETAR_ADMIN_URL``, and the exit codes (0 ok, 1 with
``error: <reason> (HTTP <status>)`` on stderr, 2 for a bad argument). A subprocess costs ~0.5 s
of CPU, so those cover the behaviours and independent ones run in parallel; ``test_every_command``
then walks every command in-process (typer's runner, the same code after ``main``) for breadth.
Effects on messages are read back with the typed ``AdminClient``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from typing import Any

from typer.testing import CliRunner

from magnetar.cli.main import app
from magnetar.client.admin import AdminClient
from tests.kit.ports import free_port
from tests.kit.process import MAGNETAR_CLI
from tests.kit.standalone import StandaloneProcess


def magnetar_admin(
    standalone: StandaloneProcess | None, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    url = [] if standalone is None else ["--admin-url", standalone.web_url]
    return subprocess.run(
        [*MAGNETAR_CLI, "admin", *url, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def in_parallel(
    standalone: StandaloneProcess, *commands: tuple[str, ...]
) -> list[subprocess.CompletedProcess[str]]:
    """Independent commands at once, told the admin URL by ``MAGNETAR_ADMIN_URL``."""
    env = {**os.environ, "MAGNETAR_ADMIN_URL": standalone.web_url}
    procs = [
        subprocess.Popen(
            [*MAGNETAR_CLI, "admin", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for args in commands
    ]
    results = []
    for args, proc in zip(commands, procs, strict=True):
        out, err = proc.communicate(timeout=60)
        results.append(subprocess.CompletedProcess(list(args), proc.returncode, out, err))
    return results


def ok(standalone: StandaloneProcess, *args: str) -> str:
    result = magnetar_admin(standalone, *args)
    assert result.returncode == 0, f"{args}: {result.stderr}"
    return result.stdout


def lines(text: str) -> list[str]:
    return text.strip("\n").splitlines()


async def _backlog(standalone: StandaloneProcess, topic: str, sub: str) -> int:
    async with AdminClient(standalone.web_url, timeout_s=10) as admin:
        stats = await admin.get_stats(topic)
    return int(stats["subscriptions"][sub]["msgBacklog"])


def test_process_tables_json_and_env(standalone: StandaloneProcess) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    ns = f"{tenant}/orders"
    ok(standalone, "tenants", "create", tenant, "-r", "ops,dev")  # clusters default to all
    ok(standalone, "namespaces", "create", ns)
    ok(standalone, "namespaces", "set-retention", ns, "-t", "2d", "-s", "1G")
    ok(standalone, "namespaces", "set-backlog-quota", ns, "-l", "100M", "-p", "producer_exception")
    results = in_parallel(
        standalone,
        ("clusters", "list"),
        ("--json", "clusters", "get", "standalone"),
        ("tenants", "get", tenant),
        ("namespaces", "get-retention", ns),
        ("--json", "namespaces", "get-retention", ns),
        ("namespaces", "get-backlog-quotas", ns),
        ("namespaces", "policies", ns),
    )
    for result in results:
        assert result.returncode == 0, f"{result.args}: {result.stderr}"
        assert result.stderr == ""
    clusters, cluster, tenant_info, retention, retention_json, quotas, policies = (
        r.stdout for r in results
    )
    assert lines(clusters) == ["standalone"]
    assert json.loads(cluster)["brokerServiceUrl"] == standalone.service_url
    assert lines(tenant_info) == ["adminRoles       dev,ops", "allowedClusters  standalone"]
    assert lines(retention) == ["retentionTime  2d", "retentionSize  1G"]
    assert json.loads(retention_json) == {"retentionTimeInMinutes": 2880, "retentionSizeInMB": 1024}
    assert lines(quotas) == [
        "TYPE                 LIMIT_SIZE  LIMIT_TIME  POLICY",
        "destination_storage  100M        unlimited   producer_exception",
    ]
    assert policies.startswith("{\n  ")  # pretty JSON
    assert json.loads(policies)["retention_policies"]["retentionTimeInMinutes"] == 2880
    ok(standalone, "tenants", "delete", tenant, "--force")


async def test_process_topic_stats_and_reset(standalone: StandaloneProcess, client: Any) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{name}"
    ok(standalone, "topics", "create", name)  # a bare name lands in public/default
    ok(standalone, "topics", "create-subscription", topic, "-s", "audit", "-m", "earliest")
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(4)]
    producer.close()
    stats = ok(standalone, "topics", "stats", topic)
    assert stats.startswith("{\n  ")
    assert json.loads(stats)["subscriptions"]["audit"]["msgBacklog"] == 4
    second = f"{ids[1].ledger_id()}:{ids[1].entry_id()}"
    ok(standalone, "topics", "reset-cursor", name, "-s", "audit", "--message-id", second)
    assert await _backlog(standalone, topic, "audit") == 3
    assert topic in json.loads(ok(standalone, "--json", "topics", "list", "public/default"))


def test_process_errors_and_usage(standalone: StandaloneProcess) -> None:
    missing, exists, bad_duration, bad_topic, nobody = in_parallel(
        standalone,
        ("tenants", "get", "no-such-tenant"),
        ("tenants", "create", "public"),
        ("namespaces", "set-message-ttl", "public/default", "--ttl", "10 minutes"),
        ("topics", "stats", "kafka://a/b/c"),
        ("--admin-url", f"http://127.0.0.1:{free_port()}", "tenants", "list"),
    )
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == "error: Tenant no-such-tenant does not exist (HTTP 404)\n"
    assert exists.returncode == 1
    assert exists.stderr.startswith("error: ")
    assert exists.stderr.endswith("(HTTP 409)\n")
    assert bad_duration.returncode == 2
    assert "invalid duration" in bad_duration.stderr
    assert bad_topic.returncode == 2
    assert "domain" in bad_topic.stderr
    assert nobody.returncode == 1
    assert nobody.stderr.startswith("error: cannot reach http://127.0.0.1:")


def _runner(standalone: StandaloneProcess) -> Callable[..., str]:
    runner = CliRunner()

    def cli(*args: str) -> str:
        result = runner.invoke(app, ["admin", "--admin-url", standalone.web_url, *args])
        assert result.exit_code == 0, f"{args}: {result.stderr} {result.exception!r}"
        return result.stdout

    return cli


def test_every_command_in_process(standalone: StandaloneProcess, client: Any) -> None:
    cli = _runner(standalone)
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    ns = f"{tenant}/orders"

    cli("tenants", "create", tenant, "-c", "standalone")
    assert tenant in lines(cli("tenants", "list"))
    cli("tenants", "update", tenant, "-r", "ops")
    assert json.loads(cli("--json", "tenants", "get", tenant))["adminRoles"] == ["ops"]
    assert "serviceUrl" in cli("clusters", "get", "standalone")

    cli("namespaces", "create", ns)
    assert lines(cli("namespaces", "list", tenant)) == [ns]
    cli("namespaces", "set-retention", ns, "--time", "-1", "--size", "-1")
    assert lines(cli("namespaces", "get-retention", ns)) == [
        "retentionTime  unlimited",
        "retentionSize  unlimited",
    ]
    cli("namespaces", "remove-retention", ns)
    assert lines(cli("namespaces", "get-retention", ns)) == ["(not set)"]
    assert json.loads(cli("--json", "namespaces", "get-retention", ns)) is None
    cli("namespaces", "set-message-ttl", ns, "--messageTTL", "2h")
    assert lines(cli("namespaces", "get-message-ttl", ns)) == ["7200"]
    cli("namespaces", "remove-message-ttl", ns)
    assert lines(cli("namespaces", "get-message-ttl", ns)) == ["(not set)"]
    cli("namespaces", "set-backlog-quota", ns, "--limit-time", "1h", "-t", "message_age")
    assert json.loads(cli("--json", "namespaces", "get-backlog-quotas", ns)) == {
        "message_age": {"limitSize": -1, "limitTime": 3600, "policy": "producer_request_hold"}
    }
    cli("namespaces", "remove-backlog-quota", ns, "-t", "message_age")
    assert lines(cli("namespaces", "get-backlog-quotas", ns)) == [
        "TYPE  LIMIT_SIZE  LIMIT_TIME  POLICY"
    ]
    cli("namespaces", "set-deduplication", ns, "--enable")
    assert lines(cli("namespaces", "get-deduplication", ns)) == ["true"]
    cli("namespaces", "set-deduplication", ns, "-d")
    assert lines(cli("namespaces", "get-deduplication", ns)) == ["false"]
    cli("namespaces", "set-delayed-delivery", ns, "-e", "--time", "500ms", "--maxDelay", "1d")
    assert json.loads(cli("--json", "namespaces", "get-delayed-delivery", ns)) == {
        "active": True,
        "tickTime": 500,
        "maxDeliveryDelayInMillis": 86_400_000,
    }
    cli("namespaces", "remove-delayed-delivery", ns)
    assert lines(cli("namespaces", "get-delayed-delivery", ns)) == ["(not set)"]
    cli("namespaces", "set-auto-topic-creation", ns, "-e", "-t", "partitioned", "-n", "2")
    assert (
        lines(cli("namespaces", "get-auto-topic-creation", ns))[-1] == "defaultNumPartitions    2"
    )
    cli("namespaces", "remove-auto-topic-creation", ns)
    assert lines(cli("namespaces", "get-auto-topic-creation", ns)) == ["(not set)"]
    cli("namespaces", "set-persistence", ns, "-e", "1", "-w", "1", "-a", "1", "-r", "2.5")
    assert lines(cli("namespaces", "get-persistence", ns))[0] == "bookkeeperEnsemble              1"
    assert json.loads(cli("--json", "namespaces", "get-persistence", ns)) == {
        "bookkeeperEnsemble": 1,
        "bookkeeperWriteQuorum": 1,
        "bookkeeperAckQuorum": 1,
        "managedLedgerMaxMarkDeleteRate": 2.5,
    }
    bad = CliRunner().invoke(
        app, ["admin", "--admin-url", standalone.web_url, "namespaces", "set-persistence", ns,
              "--bookkeeper-ensemble", "1", "--bookkeeper-write-quorum", "2", "-a", "1"],
    )  # fmt: skip
    assert bad.exit_code == 2, bad.output
    said = " ".join(bad.output.replace("│", " ").split())
    assert "Bookkeeper Ensemble (1) >= WriteQuorum (2) >= AckQuorum (1)" in said
    cli("namespaces", "remove-persistence", ns)
    assert lines(cli("namespaces", "get-persistence", ns)) == ["(not set)"]
    cli("namespaces", "set-schema-compatibility-strategy", ns, "-c", "full")
    assert lines(cli("namespaces", "get-schema-compatibility-strategy", ns)) == ["FULL"]
    cli("namespaces", "grant-permission", ns, "--role", "app", "--actions", "produce,consume")
    assert lines(cli("namespaces", "permissions", ns)) == ["ROLE  ACTIONS", "app   consume,produce"]
    cli("namespaces", "revoke-permission", ns, "--role", "app")
    assert lines(cli("namespaces", "permissions", ns)) == ["ROLE  ACTIONS"]
    assert json.loads(cli("namespaces", "policies", ns))["schema_compatibility_strategy"] == "FULL"

    parts = f"persistent://{ns}/parts"
    cli("topics", "create-partitioned-topic", parts, "-p", "2")
    cli("topics", "update-partitioned-topic", parts, "--partitions", "3")
    assert lines(cli("topics", "get-partitioned-topic-metadata", parts)) == ["partitions  3"]
    assert lines(cli("topics", "list-partitioned-topics", ns)) == [parts]
    assert lines(cli("topics", "list", ns)) == [f"{parts}-partition-{i}" for i in range(3)]
    cli("topics", "create-subscription", parts, "-s", "audit")
    stats = json.loads(cli("topics", "partitioned-stats", parts, "--per-partition"))
    assert (stats["metadata"], len(stats["partitions"])) == ({"partitions": 3}, 3)
    assert json.loads(cli("topics", "partitioned-stats", parts))["partitions"] == {}
    cli("topics", "expire-messages-all-subscriptions", parts, "-t", "1h")
    cli("topics", "unsubscribe", parts, "-s", "audit")
    cli("topics", "delete-partitioned-topic", parts)
    assert lines(cli("topics", "list-partitioned-topics", ns)) == []

    topic = f"persistent://{ns}/one"
    cli("topics", "create", topic)
    cli("topics", "create-subscription", topic, "-s", "audit", "--messageId", "earliest")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(4):
        producer.send(f"m{i}".encode())
    producer.close()
    sent_at = time.monotonic()

    def backlog() -> int:
        stats = json.loads(cli("topics", "stats", topic))
        return int(stats["subscriptions"]["audit"]["msgBacklog"])

    assert backlog() == 4
    cli("topics", "skip", topic, "-s", "audit", "-n", "1")
    assert backlog() == 3
    cli("topics", "clear-backlog", topic, "-s", "audit")
    assert backlog() == 0
    cli("topics", "reset-cursor", topic, "-s", "audit", "-t", "1h")
    assert backlog() == 4
    time.sleep(max(0.0, sent_at + 1.1 - time.monotonic()))  # every message is older than 1 s
    cli("topics", "expire-messages", topic, "-s", "audit", "--expireTime", "1")
    assert backlog() == 0
    assert lines(cli("topics", "subscriptions", topic)) == ["audit"]
    assert json.loads(cli("topics", "internal-stats", topic))["entriesAddedCounter"] == 4
    assert json.loads(cli("--json", "topics", "lookup", topic))["httpUrl"] == standalone.web_url
    cli("topics", "unload", topic)
    cli("topics", "delete", topic, "-f")
    assert lines(cli("topics", "list", ns)) == []

    cli("namespaces", "delete", ns)
    cli("tenants", "delete", tenant)
    assert tenant not in lines(cli("tenants", "list"))


def test_bookies_commands(standalone: StandaloneProcess) -> None:
    listed = magnetar_admin(standalone, "bookies", "list")
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["BOOKIE", "ADDRESS", "RACK", "STATE"]
    assert row.split()[-1] == "writable"
    as_json = magnetar_admin(standalone, "--json", "bookies", "list-underreplicated")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == {"count": 0, "ledgers": []}
    unknown = magnetar_admin(standalone, "bookies", "decommission", "no-such-bookie")
    assert unknown.returncode == 1
    assert "Bookie no-such-bookie is unknown" in unknown.stderr
    assert "(HTTP 404)" in unknown.stderr
    cancel = magnetar_admin(standalone, "bookies", "cancel-decommission", row.split()[0])
    assert cancel.returncode == 1
    assert "No decommission was requested" in cancel.stderr
