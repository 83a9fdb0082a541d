"""The audit's SparkSession and its progress lines.

:func:`session` builds (or reuses) the one SparkSession of the process with the audit's
defaults: the given master (``local[*]`` by default, spark-submit's under spark-submit), the
Spark UI off, a small number of
shuffle partitions, Python workers on this interpreter (so that they import ``magnetar``), and
the data sources of :mod:`.sources` registered. Under ``spark-submit`` (Kubernetes) the master
and resources come from the submission; :func:`session` then only adds what is unset.

:class:`Progress` prints, every few seconds while Spark works, the stages running and their
tasks done: the audit is never silent for long.

Concurrency: :class:`Progress` runs a daemon thread reading Spark's status tracker; everything
else runs on the driver's main thread.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from types import TracebackType

from pyspark.sql import SparkSession

from magnetar.audit.errors import find_unreachable
from magnetar.audit.findings import ExitCode, Summary
from magnetar.audit.geo_sources import TopicMessagesSource
from magnetar.audit.sources import SOURCES

DEFAULT_MASTER = "local[*]"

Say = Callable[[str], None]


def run_on_spark(
    spark: SparkSession | None,
    master: str | None,
    audit: Callable[[SparkSession], Summary],
    report: Callable[[Summary], None],
    say: Say,
) -> ExitCode:
    """The shell both audits share: ``audit`` on the given session (left running) or on one
    built here (stopped at the end), with progress lines; an unreachable bookie, metadata
    store or cluster met by Spark's tasks is ``UNREACHABLE`` (named, no report); otherwise
    ``report`` gets the summary and its exit code is the audit's."""
    own = spark is None
    active = spark or session(master)
    try:
        with Progress(active, say):
            summary = audit(active)
    except Exception as exc:
        unreachable = find_unreachable(str(exc))
        if unreachable is None:
            raise
        say(f"audit: {unreachable.describe()}")
        return ExitCode.UNREACHABLE
    finally:
        active.catalog.clearCache()
        if own:
            active.stop()
    report(summary)
    return summary.exit_code


def session(
    master: str | None = None,
    app_name: str = "magnetar-audit",
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """The process's SparkSession with the audit's sources registered. ``master`` None: the
    one spark-submit gave (it starts Python with a gateway to its JVM), else ``local[*]``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = DEFAULT_MASTER
    if master:
        builder = builder.master(master)
    defaults = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.adaptive.enabled": "true",
    }
    for key, value in {**defaults, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for source in (*SOURCES, TopicMessagesSource):
        spark.dataSource.register(source)
    return spark


class Progress:
    """While entered, print the running stages' task counts every ``period_s`` (when they
    changed) through ``say``."""

    def __init__(self, spark: SparkSession, say: Callable[[str], None], period_s: float = 2.0):
        self._tracker = spark.sparkContext.statusTracker()
        self._say = say
        self._period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="audit-progress", daemon=True)
        self._last = ""

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=self._period_s * 2)

    def _run(self) -> None:
        while not self._stop.wait(self._period_s):
            try:
                line = self._line()
            except Exception:  # the context may be stopping: progress is best effort
                return
            if line and line != self._last:
                self._say(line)
                self._last = line

    def _line(self) -> str:
        parts = []
        for stage_id in sorted(self._tracker.getActiveStageIds()):
            info = self._tracker.getStageInfo(stage_id)
            if info is not None:
                parts.append(f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks")
        return "progress: " + "; ".join(parts) if parts else ""
