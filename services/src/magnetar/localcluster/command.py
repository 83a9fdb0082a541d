"""What each member of a local cluster runs: its command line, environment, directory and log.

Pure functions of a :class:`~magnetar.localcluster.layout.ClusterLayout`, no I/O. Every member
is its own OS process: etcd is the ``etcd`` binary; bookies, brokers, the proxy and autorecovery
are this interpreter running ``magnetar bookie`` / ``broker`` / ``proxy`` / ``autorecovery``
(:data:`MAGNETAR_COMMAND`), so
the cluster composes the services through their command lines and never imports them.

Directories, under the cluster's data dir ``D``: ``D/<member>`` is each member's working
directory (and data: etcd's database, a bookie's journal and ledgers; a broker keeps none),
``D/logs/<member>.log`` its output, appended across restarts. A member's working directory is
also how the supervisor recognises its process after a restart of the machine's pid counter.

Managed ledgers use Magnetar's default quorums (E=3, Wq=3, Aq=2), cut down to the number of
bookies when there are fewer. Called by :mod:`magnetar.localcluster.supervisor`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from magnetar.localcluster.layout import LOOPBACK, ClusterLayout, Member, Role

MAGNETAR_COMMAND: tuple[str, ...] = (
    sys.executable,
    "-c",
    "from magnetar.cli.main import app; app()",
)
"""``magnetar`` as this interpreter runs it (no installed console script needed)."""

READY_LINES: dict[Role, str] = {
    Role.BOOKIE: "magnetar bookie ready",
    Role.BROKER: "magnetar broker ready",
    Role.PROXY: "magnetar proxy ready",
    Role.AUTORECOVERY: "magnetar autorecovery ready",
}


def member_dir(data_dir: Path, member: Member) -> Path:
    return data_dir / member.name


def log_path(data_dir: Path, member: Member) -> Path:
    return data_dir / "logs" / f"{member.name}.log"


def member_command(
    layout: ClusterLayout, member: Member, data_dir: Path, etcd_binary: str
) -> list[str]:
    """The argv that runs ``member`` (``etcd_binary``: the path of the etcd server)."""
    if member.role is Role.ETCD:
        client = f"http://{LOOPBACK}:{member.port}"
        peer = f"http://{LOOPBACK}:{member.second_port}"
        return [
            etcd_binary,
            "--name", layout.cluster_name,
            "--data-dir", str(member_dir(data_dir, member) / "data"),
            "--listen-client-urls", client,
            "--advertise-client-urls", client,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"{layout.cluster_name}={peer}",
            "--log-level", "warn",
        ]  # fmt: skip
    if member.role is Role.BOOKIE:
        return [
            *MAGNETAR_COMMAND, "bookie",
            "--data-dir", str(member_dir(data_dir, member) / "data"),
            "--port", str(member.port),
            "--metadata", layout.metadata_url,
            "--bookie-id", member.name,
            "--bind-address", LOOPBACK,
            *http_port_flag(member),
        ]  # fmt: skip
    if member.role is Role.PROXY:
        return [
            *MAGNETAR_COMMAND, "proxy",
            "--metadata", layout.metadata_url,
            "--service-port", str(member.port),
            "--web-service-port", str(member.second_port),
            "--advertised-address", LOOPBACK,
            "--bind-address", LOOPBACK,
        ]  # fmt: skip
    if member.role is Role.AUTORECOVERY:
        return [
            *MAGNETAR_COMMAND, "autorecovery",
            "--metadata", layout.metadata_url,
            "--http-server-port", str(member.port),
            "--autorecovery-id", member.name,
            "--bind-address", LOOPBACK,
        ]  # fmt: skip
    return [
        *MAGNETAR_COMMAND, "broker",
        "--metadata", layout.metadata_url,
        "--broker-port", str(member.port),
        "--web-port", str(member.second_port),
        "--advertised-address", LOOPBACK,
        "--bind-address", LOOPBACK,
    ]  # fmt: skip


def http_port_flag(member: Member) -> tuple[str, ...]:
    """A bookie's ``--http-server-port`` (every bookie defaults to 8000: they would collide)."""
    return () if member.second_port is None else ("--http-server-port", str(member.second_port))


def member_env(layout: ClusterLayout, member: Member) -> dict[str, str]:
    """Environment variables ``member`` gets on top of the caller's own."""
    if member.role is not Role.BROKER:
        return {}
    env = {"MAGNETAR_BROKER_CLUSTER_NAME": layout.cluster_name}
    bookies = layout.shape[0]
    if bookies < 3:
        # Magnetar's default quorums need three bookies; fewer would block every new ledger.
        env |= {
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ENSEMBLE_SIZE": str(bookies),
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_WRITE_QUORUM": str(bookies),
            "MAGNETAR_BROKER_MANAGED_LEDGER_DEFAULT_ACK_QUORUM": str(min(2, bookies)),
        }
    return env
