"""Errors of ``magnetar cluster``: why a local cluster cannot be started, found or stopped.

Each class names the condition and carries the fields a message needs; ``str(error)`` is the
text the command prints, naming what is wrong and what to do. None is retryable as such: each
needs the user to change something (install etcd, stop the running cluster, free a port).
Raised by :mod:`magnetar.localcluster.layout` and :mod:`magnetar.localcluster.supervisor`;
caught by ``magnetar cluster`` (:mod:`magnetar.cli.cluster_cmd`), which prints them.
"""

from __future__ import annotations

from pathlib import Path

from magnetar.errors import MagnetarError


class LocalClusterError(MagnetarError):
    """Base class of the local cluster's errors."""


class EtcdNotInstalled(LocalClusterError):
    def __init__(self) -> None:
        super().__init__(
            "etcd is not installed: install the Debian package etcd-server "
            "(`apt-get install etcd-server`, or `make setup` in a Magnetar checkout)"
        )


class NoCluster(LocalClusterError):
    def __init__(self, data_dir: Path) -> None:
        super().__init__(
            f"no cluster in {data_dir} (no cluster.json): "
            f"start one with `magnetar cluster up --data-dir {data_dir}`"
        )
        self.data_dir = data_dir


class ClusterRunning(LocalClusterError):
    def __init__(self, data_dir: Path, members: list[str]) -> None:
        super().__init__(
            f"the cluster in {data_dir} is already running ({', '.join(members)}): "
            f"stop it with `magnetar cluster down --data-dir {data_dir}` first"
        )
        self.data_dir = data_dir
        self.members = members


class ClusterShapeChanged(LocalClusterError):
    def __init__(self, data_dir: Path, stored: tuple[int, int], asked: tuple[int, int]) -> None:
        super().__init__(
            f"{data_dir} holds a cluster of {stored[0]} bookies and {stored[1]} brokers, "
            f"not {asked[0]} and {asked[1]}: run `magnetar cluster up` without --bookies and "
            "--brokers to restart it, or use a new --data-dir"
        )
        self.data_dir = data_dir
        self.stored = stored
        self.asked = asked


class BadClusterState(LocalClusterError):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} is not a cluster state file Magnetar can read: {reason}")
        self.path = path
        self.reason = reason


class MemberFailed(LocalClusterError):
    """A member exited or did not get ready in time; ``log_tail`` is the end of its log."""

    def __init__(self, member: str, reason: str, log_path: Path, log_tail: str) -> None:
        super().__init__(f"{member} {reason}; its log is {log_path}, which ends with:\n{log_tail}")
        self.member = member
        self.reason = reason
        self.log_path = log_path
        self.log_tail = log_tail


class PortInUse(LocalClusterError):
    def __init__(self, member: str, port: int) -> None:
        super().__init__(
            f"port {port} of {member} is in use by another program: stop that program, "
            "or start a cluster on a new --data-dir (which picks free ports)"
        )
        self.member = member
        self.port = port


class InstanceMismatch(LocalClusterError):
    """``--clusters`` does not match the named clusters a data dir holds (or names none)."""

    def __init__(self, data_dir: Path, stored: list[str], asked: list[str]) -> None:
        self.data_dir = data_dir
        if not stored and not asked:
            reason = f"{data_dir} holds no named clusters: give --clusters a,b"
        else:
            reason = (
                f"{data_dir} holds clusters {','.join(stored)}, not {','.join(asked)}: "
                "use the same --clusters, or another --data-dir"
            )
        super().__init__(reason)
