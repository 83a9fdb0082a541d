"""Observe a local cluster's members: is the process there, does it answer on its port.

The I/O half of :mod:`magnetar.localcluster.status`. A member's recorded pid counts only while
a process with that pid runs in the member's working directory (read from ``/proc`` where
there is one), so a pid the system has since given to another program is never taken for a
member, and never signalled. Probes: etcd's ``/health``; a bookie's gRPC port accepts TCP; a
broker's binary port accepts TCP and its admin API answers ``GET /admin/v2/clusters``. Every
probe has a deadline of about a second.

Blocking calls: used from the ``magnetar cluster`` command's one thread (no event loop).
Called by :mod:`magnetar.localcluster.supervisor`.
"""

from __future__ import annotations

import os
import socket
import urllib.error
import urllib.request
from pathlib import Path

from magnetar.localcluster.command import member_dir
from magnetar.localcluster.layout import LOOPBACK, Member, Role
from magnetar.localcluster.status import Health, MemberStatus

PROBE_TIMEOUT_S = 1.0
_PROC = Path("/proc")


def process_alive(pid: int, workdir: Path) -> bool:
    """Whether ``pid`` is a live (not zombie) process running in ``workdir``."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    if not _PROC.is_dir():
        return True
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
        cwd = Path(os.readlink(_PROC / str(pid) / "cwd"))
    except OSError:
        return False
    state = stat.rpartition(")")[2].split()[0]
    return state not in ("Z", "X") and cwd == workdir.resolve()


def port_accepts(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def http_answers(url: str, expect: bytes = b"") -> bool:
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as response:
            return bool(response.status == 200 and expect in response.read())
    except OSError:  # urllib's URLError and HTTPError are OSErrors
        return False


def answers(member: Member) -> bool:
    """Whether ``member`` answers its role's probe."""
    if member.role is Role.ETCD:
        return http_answers(f"http://{LOOPBACK}:{member.port}/health", b'"health":"true"')
    if member.role is Role.BOOKIE:
        return port_accepts(member.port)
    if member.role is Role.PROXY:
        return port_accepts(member.port) and http_answers(
            f"http://{LOOPBACK}:{member.second_port}/status.html"
        )
    if member.role is Role.AUTORECOVERY:
        return http_answers(f"http://{LOOPBACK}:{member.port}/api/v1/autorecovery/is_ready")
    return port_accepts(member.port) and http_answers(
        f"http://{LOOPBACK}:{member.second_port}/admin/v2/clusters"
    )


def member_running(data_dir: Path, member: Member) -> bool:
    return member.pid is not None and process_alive(member.pid, member_dir(data_dir, member))


def probe(data_dir: Path, member: Member) -> MemberStatus:
    if not member_running(data_dir, member):
        return MemberStatus(member, Health.DOWN)
    return MemberStatus(member, Health.HEALTHY if answers(member) else Health.UNRESPONSIVE)
