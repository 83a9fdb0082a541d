"""The audit image's entrypoint: Spark's Kubernetes container contract, then ``magnetar``.

Spark on Kubernetes (and so the spark-operator's ``SparkApplication``) starts the driver and
executor pods of an application with the image's entrypoint and container arguments
``driver ...`` or ``executor``, passing the rest through environment variables. The project
image's entrypoint is ``magnetar``; the audit image (``docker build --target audit``) runs
``python -m magnetar.audit.container`` instead, which:

- ``driver ARGS``: runs ``spark-submit`` in client mode, bound to the pod's address
  (``SPARK_DRIVER_BIND_ADDRESS``), with ``ARGS`` (the application: the ``magnetar`` script and
  its arguments);
- ``executor``: runs the JVM executor backend with the driver URL, executor id, cores, app id,
  pod IP, resource profile and pod name Spark put in ``SPARK_*`` variables, the JVM options in
  ``SPARK_JAVA_OPT_<n>`` (in order of ``n``) and ``SPARK_EXECUTOR_MEMORY`` as the heap;
- anything else: ``magnetar ARGS`` (so the image still runs every role).

:func:`container_command` is pure (tested without a cluster); :func:`main` execs it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

EXECUTOR_BACKEND = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
_EXECUTOR_FLAGS = (
    ("--driver-url", "SPARK_DRIVER_URL"),
    ("--executor-id", "SPARK_EXECUTOR_ID"),
    ("--cores", "SPARK_EXECUTOR_CORES"),
    ("--app-id", "SPARK_APPLICATION_ID"),
    ("--hostname", "SPARK_EXECUTOR_POD_IP"),
    ("--resourceProfileId", "SPARK_RESOURCE_PROFILE_ID"),
    ("--podName", "SPARK_EXECUTOR_POD_NAME"),
)


class ContainerError(Exception):
    """The container was started without what its role needs; the message says what."""


def _java_options(env: Mapping[str, str]) -> list[str]:
    numbered = []
    for name, value in env.items():
        suffix = name.removeprefix("SPARK_JAVA_OPT_")
        if suffix != name and suffix.isdigit():
            numbered.append((int(suffix), value))
    return [value for _, value in sorted(numbered)]


def container_command(
    args: Sequence[str], env: Mapping[str, str], spark_home: Path, java: str
) -> list[str]:
    """The command line the container runs for ``args`` (see the module docstring)."""
    role, rest = (args[0], list(args[1:])) if args else ("", [])
    if role == "driver":
        bind = env.get("SPARK_DRIVER_BIND_ADDRESS")
        if not bind:
            raise ContainerError("driver: SPARK_DRIVER_BIND_ADDRESS is not set (not run by Spark?)")
        return [
            str(spark_home / "bin" / "spark-submit"),
            "--conf", f"spark.driver.bindAddress={bind}",
            "--conf", f"spark.executorEnv.SPARK_DRIVER_POD_IP={bind}",
            "--deploy-mode", "client",
            *rest,
        ]  # fmt: skip
    if role == "executor":
        missing = [var for _, var in _EXECUTOR_FLAGS if not env.get(var)]
        if missing:
            raise ContainerError(f"executor: {', '.join(missing)} not set (not run by Spark?)")
        memory = env.get("SPARK_EXECUTOR_MEMORY", "1g")
        command = [java, *_java_options(env), f"-Xms{memory}", f"-Xmx{memory}"]
        command += ["-cp", f"{spark_home / 'jars'}/*", EXECUTOR_BACKEND]
        for flag, var in _EXECUTOR_FLAGS:
            command += [flag, env[var]]
        return command
    return ["magnetar", *args]


def main() -> None:
    import pyspark  # the audit extra: only the audit image runs this module

    spark_home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    java = shutil.which("java") or "java"
    try:
        command = container_command(sys.argv[1:], os.environ, spark_home, java)
    except ContainerError as exc:
        print(f"magnetar audit container: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
