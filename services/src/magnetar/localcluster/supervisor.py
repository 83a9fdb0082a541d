"""Start, watch and stop a local cluster's processes; keep its state in ``D/cluster.json``.

The I/O shell around the pure :mod:`.layout`, :mod:`.command` and :mod:`.status`:

- :func:`start_cluster` refuses a data dir whose cluster runs, plans ports on a first start
  (or reuses the stored ones), then starts etcd, the bookies, the brokers and the proxy (when
  the cluster has one), one role at a time, each member in its own session (so a terminal's
  Ctrl-C reaches only this command) with its output appended to its log. It waits until every
  member of a role is ready (etcd's health endpoint; the ready line a bookie prints once
  registered, a broker and a proxy once they serve) before starting the next role. If a
  member exits or is not ready in time, everything started is stopped and
  :class:`~.errors.MemberFailed` carries the member's log tail.
- :func:`stop_cluster` stops the members in reverse order (proxy, brokers, bookies, etcd):
  SIGTERM to every member of a role, then SIGKILL to those still running after the role's
  timeout.
- :func:`serve_foreground` is the foreground: a status line refreshed every couple of seconds until
  SIGINT or SIGTERM, then :func:`stop_cluster`.

Invariants: ``cluster.json`` is replaced atomically; it records each member's pid as soon as
the member is spawned, and none once it is stopped, so ``status`` and ``down`` work from any
shell, even after this command died. Only processes recognised as members
(:func:`~.probe.process_alive`) are ever signalled.

Blocking code for the ``magnetar cluster`` command's one thread; called by
:mod:`magnetar.cli.cluster_cmd` only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from magnetar.localcluster.command import (
    READY_LINES,
    log_path,
    member_command,
    member_dir,
    member_env,
)
from magnetar.localcluster.errors import (
    BadClusterState,
    ClusterRunning,
    EtcdNotInstalled,
    MemberFailed,
    NoCluster,
    PortInUse,
)
from magnetar.localcluster.layout import (
    DEFAULT_CLUSTER_NAME,
    START_ORDER,
    ClusterLayout,
    Member,
    Role,
    check_shape,
    layout_from_json,
    layout_to_json,
    plan_layout,
    with_autorecovery,
    with_proxy,
)
from magnetar.localcluster.ports import any_free_port, port_is_free
from magnetar.localcluster.probe import answers, member_running, probe
from magnetar.localcluster.status import MemberStatus, status_line

Echo = Callable[[str], None]

DEFAULT_BOOKIES = 3
DEFAULT_BROKERS = 2
STOP_TIMEOUT_S: dict[Role, float] = {
    Role.PROXY: 15.0,
    Role.AUTORECOVERY: 20.0,
    Role.BROKER: 30.0,
    Role.BOOKIE: 30.0,
    Role.ETCD: 10.0,
}
LOG_TAIL_CHARS = 3000
_POLL_S = 0.1


def state_path(data_dir: Path) -> Path:
    return data_dir / "cluster.json"


def load_layout(data_dir: Path) -> ClusterLayout | None:
    """The stored layout, or None when ``data_dir`` holds no cluster."""
    path = state_path(data_dir)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        return layout_from_json(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        raise BadClusterState(path, str(exc)) from exc


def require_layout(data_dir: Path) -> ClusterLayout:
    layout = load_layout(data_dir)
    if layout is None:
        raise NoCluster(data_dir)
    return layout


def save_layout(data_dir: Path, layout: ClusterLayout) -> None:
    path = state_path(data_dir)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(layout_to_json(layout), indent=2) + "\n")
    os.replace(tmp, path)


def etcd_binary() -> str:
    found = shutil.which("etcd") or (
        "/usr/bin/etcd" if os.access("/usr/bin/etcd", os.X_OK) else None
    )
    if found is None:
        raise EtcdNotInstalled()
    return found


def cluster_status(data_dir: Path) -> tuple[ClusterLayout, list[MemberStatus]]:
    layout = require_layout(data_dir)
    return layout, [probe(data_dir, m) for m in layout.members]


@dataclass(frozen=True)
class _Started:
    """A member this command spawned: its process and where this start's log output begins."""

    member: Member
    process: subprocess.Popen[bytes]
    log_offset: int


@dataclass
class RunningCluster:
    """What :func:`start_cluster` started: the layout with pids, and the child processes."""

    data_dir: Path
    layout: ClusterLayout
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)


def start_cluster(
    data_dir: Path,
    bookies: int | None,
    brokers: int | None,
    ready_timeout_s: float,
    echo: Echo,
    *,
    proxy: bool = False,
    autorecovery: bool = False,
    cluster_name: str = DEFAULT_CLUSTER_NAME,
) -> RunningCluster:
    """Start the cluster in ``data_dir`` (a new one, or the stored one) and wait until ready.

    ``proxy``: run a proxy too (a stored cluster that has one always runs it); ``autorecovery``
    adds an autorecovery member (kept in the stored layout from then on); ``cluster_name``
    names a new cluster (a stored one keeps its name)."""
    data_dir = data_dir.resolve()
    etcd = etcd_binary()
    layout = load_layout(data_dir)
    if layout is None:
        layout = plan_layout(
            DEFAULT_BOOKIES if bookies is None else bookies,
            DEFAULT_BROKERS if brokers is None else brokers,
            port_is_free,
            any_free_port,
            cluster_name,
            proxy=proxy,
        )
    else:
        running = [m.name for m in layout.members if member_running(data_dir, m)]
        if running:
            raise ClusterRunning(data_dir, running)
        check_shape(layout, bookies, brokers, data_dir)
        layout = layout.stopped()
        if proxy:
            layout = with_proxy(layout, port_is_free, any_free_port)
        for m in layout.members:
            for port in m.ports:
                if not port_is_free(port):
                    raise PortInUse(m.name, port)
    if autorecovery:
        layout = with_autorecovery(layout, any_free_port)
    data_dir.mkdir(parents=True, exist_ok=True)
    save_layout(data_dir, layout)
    cluster = RunningCluster(data_dir, layout)
    try:
        for role in START_ORDER:
            members = layout.by_role(role)
            if not members:
                continue
            echo(f"starting {_plural(role, len(members))}")
            started = [_spawn(cluster, m, etcd) for m in members]
            _wait_ready(cluster, started, time.monotonic() + ready_timeout_s)
    except BaseException:
        stop_cluster(cluster, echo)
        raise
    return cluster


def _plural(role: Role, n: int) -> str:
    if role in (Role.ETCD, Role.PROXY):
        return role.value
    return f"{n} {role.value}{'s' if n != 1 else ''}"


def _spawn(cluster: RunningCluster, member: Member, etcd: str) -> _Started:
    workdir = member_dir(cluster.data_dir, member)
    workdir.mkdir(parents=True, exist_ok=True)
    log = log_path(cluster.data_dir, member)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"=== magnetar cluster: {member.name} starting at {_now()} ===\n".encode())
        out.flush()
        offset = out.tell()
        process = subprocess.Popen(
            member_command(cluster.layout, member, cluster.data_dir, etcd),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env={**os.environ, **member_env(cluster.layout, member)},
            start_new_session=True,
        )
    cluster.processes[member.name] = process
    cluster.layout = cluster.layout.with_pids({member.name: process.pid})
    save_layout(cluster.data_dir, cluster.layout)
    return _Started(cluster.layout.member(member.name), process, offset)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _log_since(data_dir: Path, member: Member, offset: int) -> str:
    try:
        with open(log_path(data_dir, member), "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


def _ready(data_dir: Path, started: _Started) -> bool:
    if started.member.role is Role.ETCD:
        return answers(started.member)
    return READY_LINES[started.member.role] in _log_since(
        data_dir, started.member, started.log_offset
    )


def _wait_ready(cluster: RunningCluster, started: list[_Started], deadline: float) -> None:
    pending = list(started)
    while pending:
        for s in list(pending):
            if _ready(cluster.data_dir, s):
                pending.remove(s)
            elif s.process.poll() is not None:
                raise _failed(cluster, s, f"exited with code {s.process.returncode}")
        if pending and time.monotonic() > deadline:
            raise _failed(cluster, pending[0], "was not ready in time")
        if pending:
            time.sleep(_POLL_S)


def _failed(cluster: RunningCluster, started: _Started, reason: str) -> MemberFailed:
    tail = _log_since(cluster.data_dir, started.member, started.log_offset)[-LOG_TAIL_CHARS:]
    return MemberFailed(
        started.member.name, reason, log_path(cluster.data_dir, started.member), tail
    )


def stop_cluster(cluster: RunningCluster, echo: Echo) -> None:
    """Stop every running member, brokers first, etcd last; record that none runs."""
    for role in reversed(START_ORDER):
        members = [m for m in cluster.layout.by_role(role) if _alive(cluster, m)]
        if not members:
            continue
        echo(f"stopping {_plural(role, len(members))}")
        killed = _terminate(cluster, members, STOP_TIMEOUT_S[role])
        for name in killed:
            echo(f"{name} did not stop within {STOP_TIMEOUT_S[role]:.0f}s: killed")
    cluster.layout = cluster.layout.stopped()
    save_layout(cluster.data_dir, cluster.layout)


def _alive(cluster: RunningCluster, member: Member) -> bool:
    process = cluster.processes.get(member.name)
    if process is not None:
        return process.poll() is None  # reaps our own child
    return member_running(cluster.data_dir, member)


def _signal(members: Iterable[Member], signum: signal.Signals) -> None:
    for m in members:
        if m.pid is not None:
            with suppress(ProcessLookupError):
                os.kill(m.pid, signum)


def _terminate(cluster: RunningCluster, members: list[Member], timeout_s: float) -> list[str]:
    """SIGTERM ``members``, wait up to ``timeout_s``, SIGKILL the rest; return their names."""
    _signal(members, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    remaining = members
    while remaining and time.monotonic() < deadline:
        time.sleep(_POLL_S)
        remaining = [m for m in remaining if _alive(cluster, m)]
    _signal(remaining, signal.SIGKILL)
    kill_deadline = time.monotonic() + 5.0
    while any(_alive(cluster, m) for m in remaining) and time.monotonic() < kill_deadline:
        time.sleep(_POLL_S)
    return [m.name for m in remaining]


def stop_data_dir(data_dir: Path, echo: Echo) -> bool:
    """``cluster down``: stop the cluster ``data_dir`` holds; False if none of it was running."""
    data_dir = data_dir.resolve()
    layout = require_layout(data_dir)
    cluster = RunningCluster(data_dir, layout)
    if not any(member_running(data_dir, m) for m in layout.members):
        save_layout(data_dir, layout.stopped())
        return False
    stop_cluster(cluster, echo)
    return True


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While starting: SIGTERM interrupts like Ctrl-C, so that what started is stopped."""

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve_foreground(
    cluster: RunningCluster, write: Callable[[str, bool], None], echo: Echo, refresh_s: float
) -> None:
    """Show the status line (``write(line, changed)``) every ``refresh_s`` until SIGINT or
    SIGTERM arrives, then stop the cluster; further signals during the stop are ignored."""

    def line() -> str:
        for process in cluster.processes.values():
            process.poll()  # reap a member that died, so that it shows as down
        return status_line([probe(cluster.data_dir, m) for m in cluster.layout.members])

    serve_until_signal(line, write, refresh_s, lambda: stop_cluster(cluster, echo))


def serve_until_signal(
    line: Callable[[], str],
    write: Callable[[str, bool], None],
    refresh_s: float,
    then: Callable[[], None],
) -> None:
    """``write(line(), changed)`` every ``refresh_s`` until SIGINT or SIGTERM arrives, then
    ``then()`` (the stop), during which further signals are ignored."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        last = ""
        while not stop.is_set():
            current = line()
            write(current, current != last)
            last = current
            stop.wait(refresh_s)
        then()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
