#!/usr/bin/env python3
"""Magnetar on a real Kubernetes: kind, the image, the chart, a PulsarCluster, the official client.

What it does, printing each step as it starts (``[n/N] ...``) with the commands it runs:

- check that docker (with a running daemon), kind and kubectl are there
- create a kind cluster (or reuse it with --reuse-cluster)
- build the image (``docker build``) and load it into the kind nodes
- install the chart (Helm v4's Go SDK through helm-python-sdk: no helm binary needed)
- apply crds/examples/pulsarcluster-minimal.yaml (with the e2e image) and wait for Ready
- apply the example Tenant, Namespace and Topic and wait for each to be Ready
- port-forward the proxy Service and produce and consume with the official pulsar-client
- scale bookies 3 -> 4 -> 3 (the scale-down waits for the operator's decommission)
- roll a new image tag through the cluster and use the client again
- delete the Topic and check through the admin API that the topic is gone
- delete the kind cluster (unless --keep)

``--dry-run`` prints every step and command without running any. Needs Docker, kind and
kubectl on PATH, and `make setup`'s .venv (pulsar-client, helm-python-sdk, PyYAML).
Exit code 0 when every step passed; 1 with the failing step's name otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "magnetar"
EXAMPLES = ROOT / "crds" / "examples"
# The roles a PulsarCluster runs; tests/deploy/test_roles.py checks each is a CLI command.
ROLES = ("broker", "bookie", "proxy", "autorecovery")
GROUP = "pulsar.magnetar.dev"


class StepFailed(Exception):
    """A step did not reach its goal; the message says what was expected and seen."""


@dataclass
class Options:
    cluster: str = "magnetar-e2e"
    namespace: str = "pulsar"
    operator_namespace: str = "magnetar-system"
    image: str = "magnetar:e2e"
    timeout: float = 900.0
    keep: bool = False
    reuse_cluster: bool = False
    dry_run: bool = False

    @property
    def context(self) -> str:
        return f"kind-{self.cluster}"

    @property
    def rolled_image(self) -> str:
        return f"{self.image}-roll"


@dataclass
class Shell:
    """Runs commands (or, in a dry run, only prints them) and polls with deadlines."""

    options: Options
    log: Callable[[str], None] = print
    background: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def run(self, *argv: str, stdin: str | None = None, check: bool = True) -> str:
        self.log(f"    $ {shlex.join(argv)}" + (" < (generated manifest)" if stdin else ""))
        if self.options.dry_run:
            return ""
        result = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, check=False, timeout=1800
        )
        if check and result.returncode != 0:
            raise StepFailed(f"`{' '.join(argv)}` exited {result.returncode}: {result.stderr}")
        return result.stdout

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        return self.run(
            "kubectl", "--context", self.options.context, *args, stdin=stdin, check=check
        )

    def get(self, kind: str, name: str) -> dict[str, Any]:
        if self.options.dry_run:
            return {}
        out = self.kubectl("-n", self.options.namespace, "get", kind, name, "-o", "json")
        resource: dict[str, Any] = json.loads(out)
        return resource

    def wait_until(self, what: str, check: Callable[[], str | None]) -> None:
        """Poll ``check`` (None: done; else what is still awaited) until the deadline."""
        self.log(f"    waiting for {what}")
        if self.options.dry_run:
            return
        deadline = time.monotonic() + self.options.timeout
        last = ""
        while True:
            try:
                pending = check()
            except (StepFailed, ValueError) as exc:  # kubectl hiccup or not there yet
                pending = f"not readable yet: {exc}"
            if pending is None:
                return
            if pending != last:
                self.log(f"      ... {pending}")
                last = pending
            if time.monotonic() > deadline:
                raise StepFailed(f"{what}: still {pending} after {self.options.timeout:.0f}s")
            time.sleep(3)

    @contextlib.contextmanager
    def port_forward(self, service: str, port: int) -> Iterator[int]:
        """``kubectl port-forward`` a Service's port to a free loopback port."""
        local = _free_port()
        argv = ["kubectl", "--context", self.options.context, "-n", self.options.namespace]
        argv += ["port-forward", "--address", "127.0.0.1", f"service/{service}", f"{local}:{port}"]
        self.log(f"    $ {shlex.join(argv)} &")
        if self.options.dry_run:
            yield local
            return
        with tempfile.TemporaryFile() as errors:
            process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errors)
            try:
                _wait_for_port(local, timeout=30)
            except StepFailed as exc:
                process.kill()
                process.wait(timeout=10)
                errors.seek(0)
                raise StepFailed(f"{exc}: {errors.read().decode(errors='replace')}") from None
            try:
                yield local
            finally:
                process.terminate()
                process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_for_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise StepFailed(f"port-forward to 127.0.0.1:{port} never accepted") from None
            time.sleep(0.2)


# ------------------------------------------------------------------ pure helpers


def load_example(kind: str) -> dict[str, Any]:
    """The first object of ``kind`` in crds/examples/*.yaml (the minimal PulsarCluster)."""
    import yaml

    for path in sorted(EXAMPLES.glob("*.yaml")):
        if kind == "PulsarCluster" and "minimal" not in path.name:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == kind:
                found: dict[str, Any] = doc
                return found
    raise StepFailed(f"crds/examples/ has no {kind}")


def condition(resource: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in resource.get("status", {}).get("conditions", []):
        if cond.get("type") == kind:
            found: dict[str, Any] = cond
            return found
    return None


def ready_pending(resource: dict[str, Any]) -> str | None:
    """None when the resource is Ready for its current generation; else what is missing."""
    generation = resource.get("metadata", {}).get("generation")
    observed = resource.get("status", {}).get("observedGeneration")
    if generation is not None and observed != generation:
        return f"observedGeneration {observed} (generation {generation})"
    ready = condition(resource, "Ready")
    if ready is None or ready.get("status") != "True":
        found = ready or {}
        reason = found.get("reason", "no Ready condition yet")
        return f"Ready={found.get('status', 'absent')} ({reason}: {found.get('message', '')})"
    return None


def service_from_url(url: str, default: str) -> str:
    """``pulsar://demo-proxy.pulsar.svc:6650`` -> ``demo-proxy``."""
    host = url.split("://", 1)[-1].split(":", 1)[0].split("/", 1)[0]
    return host.split(".", 1)[0] or default


def topic_name(topic: dict[str, Any]) -> str:
    spec = topic["spec"]
    scheme = "persistent" if spec.get("persistent", True) else "non-persistent"
    return f"{scheme}://{spec['namespace']}/{spec.get('name') or topic['metadata']['name']}"


# ------------------------------------------------------------------ the steps


def check_tools(sh: Shell) -> None:
    missing = [tool for tool in ("docker", "kind", "kubectl") if shutil.which(tool) is None]
    if missing and not sh.options.dry_run:
        raise StepFailed(f"not on PATH: {', '.join(missing)} (install them, then retry)")
    sh.run("docker", "info", "--format", "{{.ServerVersion}}")


def create_cluster(sh: Shell) -> None:
    if sh.options.reuse_cluster and not sh.options.dry_run:
        existing = sh.run("kind", "get", "clusters").split()
        if sh.options.cluster in existing:
            sh.log(f"    reusing kind cluster {sh.options.cluster}")
            return
    sh.run("kind", "create", "cluster", "--name", sh.options.cluster, "--wait", "120s")


def build_and_load(sh: Shell) -> None:
    sh.run("docker", "build", "-t", sh.options.image, str(ROOT))
    sh.run("kind", "load", "docker-image", sh.options.image, "--name", sh.options.cluster)


def install_chart(sh: Shell) -> None:
    repository, _, tag = sh.options.image.rpartition(":")
    values = {"image": {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}}
    sh.log(
        f"    helm install magnetar {CHART.relative_to(ROOT)} -n {sh.options.operator_namespace}"
    )
    if sh.options.dry_run:
        return
    import helm_python as helm

    with helm.Config(
        kube_context=sh.options.context, namespace=sh.options.operator_namespace
    ) as cfg:
        cfg.install(
            str(CHART),
            "magnetar",
            values,
            namespace=sh.options.operator_namespace,
            create_namespace=True,
            wait="watcher",
            timeout=int(sh.options.timeout),
        )


def apply(sh: Shell, resource: dict[str, Any]) -> None:
    sh.kubectl("-n", sh.options.namespace, "apply", "-f", "-", stdin=json.dumps(resource))


def wait_ready(
    sh: Shell, kind: str, name: str, extra: Callable[[dict[str, Any]], str | None] | None = None
) -> None:
    def pending() -> str | None:
        resource = sh.get(kind, name)
        return ready_pending(resource) or (extra(resource) if extra else None)

    sh.wait_until(f"{kind}/{name} Ready", pending)


def apply_cluster(sh: Shell) -> str:
    cluster = load_example("PulsarCluster")
    cluster["spec"]["image"] = sh.options.image
    sh.kubectl("create", "namespace", sh.options.namespace, check=False)
    apply(sh, cluster)
    name: str = cluster["metadata"]["name"]
    wait_ready(sh, "pulsarclusters." + GROUP, name)
    return name


def apply_pulsar_resources(sh: Shell) -> dict[str, Any]:
    for kind in ("Tenant", "Namespace", "Topic"):
        resource = load_example(kind)
        apply(sh, resource)
        wait_ready(sh, f"{kind.lower()}s.{GROUP}", resource["metadata"]["name"])
    return load_example("Topic")


def produce_and_consume(sh: Shell, cluster: str, topic: str, tag: str) -> None:
    status = sh.get("pulsarclusters." + GROUP, cluster).get("status", {})
    url = status.get("endpoints", {}).get("serviceUrl", "")
    service = service_from_url(url, f"{cluster}-proxy")
    with sh.port_forward(service, 6650) as port:
        sh.log(f"    pulsar-client: produce 10 and consume 10 on {topic} via 127.0.0.1:{port}")
        if sh.options.dry_run:
            return
        import pulsar

        client = pulsar.Client(f"pulsar://127.0.0.1:{port}", operation_timeout_seconds=30)
        try:
            consumer = client.subscribe(
                topic, f"e2e-{tag}", initial_position=pulsar.InitialPosition.Earliest
            )
            producer = client.create_producer(topic)
            sent = {f"{tag}-{i}".encode() for i in range(10)}
            for payload in sorted(sent):
                producer.send(payload)
            received: set[bytes] = set()  # earlier runs' messages come first: skip them
            while not sent <= received:
                message = consumer.receive(timeout_millis=30_000)
                consumer.acknowledge(message)
                received.add(message.data())
        finally:
            client.close()


def scale_bookies(sh: Shell, cluster: str, replicas: int) -> None:
    patch = {"spec": {"bookies": {"replicas": replicas}}}
    sh.kubectl(
        "-n", sh.options.namespace, "patch", "pulsarclusters." + GROUP, cluster,
        "--type", "merge", "-p", json.dumps(patch),
    )  # fmt: skip

    def bookies(resource: dict[str, Any]) -> str | None:
        ready = resource.get("status", {}).get("bookies", {}).get("readyReplicas")
        return None if ready == replicas else f"{ready} bookies ready, want {replicas}"

    wait_ready(sh, "pulsarclusters." + GROUP, cluster, bookies)


def roll_image(sh: Shell, cluster: str) -> None:
    new = sh.options.rolled_image
    sh.run("docker", "tag", sh.options.image, new)
    sh.run("kind", "load", "docker-image", new, "--name", sh.options.cluster)
    patch = {"spec": {"image": new}}
    sh.kubectl(
        "-n", sh.options.namespace, "patch", "pulsarclusters." + GROUP, cluster,
        "--type", "merge", "-p", json.dumps(patch),
    )  # fmt: skip
    repository = sh.options.image.rpartition(":")[0]

    def rolled(_: dict[str, Any]) -> str | None:
        pods = json.loads(sh.kubectl("-n", sh.options.namespace, "get", "pods", "-o", "json"))
        stale = sorted(
            pod["metadata"]["name"]
            for pod in pods["items"]
            for c in pod["spec"]["containers"]
            if c["image"].rpartition(":")[0] == repository and c["image"] != new
        )
        return f"pods still on the old image: {', '.join(stale)}" if stale else None

    wait_ready(sh, "pulsarclusters." + GROUP, cluster, rolled)


def delete_topic(sh: Shell, cluster: str, topic: dict[str, Any]) -> None:
    name = topic["metadata"]["name"]
    sh.kubectl("-n", sh.options.namespace, "delete", "topics." + GROUP, name, "--wait=true")
    endpoints = sh.get("pulsarclusters." + GROUP, cluster).get("status", {}).get("endpoints", {})
    web = endpoints.get("brokerWebUrl") or endpoints.get("webUrl", "")
    service = service_from_url(web, f"{cluster}-broker")
    full = topic_name(topic)
    scheme, _, path = full.partition("://")
    tenant_ns = path.rsplit("/", 1)[0]
    with sh.port_forward(service, 8080) as port:
        base = f"http://127.0.0.1:{port}/admin/v2/{scheme}/{tenant_ns}"
        sh.log(f"    GET {base} and {base}/partitioned must not list {full}")
        if sh.options.dry_run:
            return
        listed: list[str] = []
        for url in (base, f"{base}/partitioned"):
            with urllib.request.urlopen(url, timeout=30) as response:
                listed += json.loads(response.read())
        left = [t for t in listed if t == full or t.startswith(f"{full}-partition-")]
        if left:
            raise StepFailed(f"{full} is still listed after its Topic was deleted: {left}")


def delete_cluster(sh: Shell) -> None:
    if sh.options.keep:
        sh.log(f"    keeping kind cluster {sh.options.cluster} (--keep)")
        return
    sh.run("kind", "delete", "cluster", "--name", sh.options.cluster, check=False)


def steps(sh: Shell) -> list[tuple[str, Callable[[], None]]]:
    """The run, in order; later steps read what earlier ones learnt through ``state``."""
    state: dict[str, Any] = {}

    def cluster() -> None:
        state["cluster"] = apply_cluster(sh)

    def resources() -> None:
        state["topic"] = apply_pulsar_resources(sh)

    def client(tag: str) -> Callable[[], None]:
        return lambda: produce_and_consume(sh, state["cluster"], topic_name(state["topic"]), tag)

    return [
        ("check docker, kind and kubectl", lambda: check_tools(sh)),
        ("create the kind cluster", lambda: create_cluster(sh)),
        ("build the image and load it into kind", lambda: build_and_load(sh)),
        ("install the chart", lambda: install_chart(sh)),
        ("apply a PulsarCluster and wait for Ready", cluster),
        ("apply a Tenant, Namespace and Topic", resources),
        ("produce and consume through the proxy", client("first")),
        ("scale bookies 3 -> 4", lambda: scale_bookies(sh, state["cluster"], 4)),
        ("scale bookies 4 -> 3", lambda: scale_bookies(sh, state["cluster"], 3)),
        ("roll a new image", lambda: roll_image(sh, state["cluster"])),
        ("produce and consume after the roll", client("rolled")),
        ("delete the Topic", lambda: delete_topic(sh, state["cluster"], state["topic"])),
        ("delete the kind cluster", lambda: delete_cluster(sh)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
        epilog=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    defaults = Options()
    parser.add_argument("--cluster", default=defaults.cluster, help="kind cluster name")
    parser.add_argument("--namespace", default=defaults.namespace, help="for the PulsarCluster")
    parser.add_argument("--image", default=defaults.image, help="image to build, REPO:TAG")
    parser.add_argument(
        "--timeout", type=float, default=defaults.timeout, help="seconds for each wait"
    )
    parser.add_argument("--keep", action="store_true", help="keep the kind cluster at the end")
    parser.add_argument(
        "--reuse-cluster", action="store_true", help="use the kind cluster if it exists"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the steps, run nothing")
    args = parser.parse_args(argv)
    if ":" not in args.image:
        parser.error(f"--image {args.image!r} needs a tag (REPO:TAG), e.g. magnetar:e2e")
    options = Options(
        cluster=args.cluster,
        namespace=args.namespace,
        image=args.image,
        timeout=args.timeout,
        keep=args.keep,
        reuse_cluster=args.reuse_cluster,
        dry_run=args.dry_run,
    )
    sh = Shell(options, log=lambda line: print(line, flush=True))
    plan = steps(sh)
    for number, (title, action) in enumerate(plan, start=1):
        print(f"[{number}/{len(plan)}] {title}", flush=True)
        started = time.monotonic()
        try:
            action()
        except Exception as exc:  # a script's last word: name the step, keep the cluster
            print(f"FAILED at step {number} ({title}): {exc!r}", file=sys.stderr, flush=True)
            if number > 2:
                print(
                    f"    the kind cluster {options.cluster} is left for inspection: "
                    f"kind delete cluster --name {options.cluster}",
                    file=sys.stderr,
                )
            return 1
        print(f"    done in {time.monotonic() - started:.0f}s", flush=True)
    print("e2e passed" if not options.dry_run else "dry run: nothing was run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
