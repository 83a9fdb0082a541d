"""Every role the deployment artefacts name exists in the CLI: no drift between them and code.

The image advertises its ``magnetar <role>`` commands in its ``dev.magnetar.roles`` label; the
chart runs console scripts in its containers; the e2e script names the roles it drives. Each
must answer ``--help`` with exit 0 from the installed package.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from magnetar.cli.main import app
from tests.kit.dockerfile import image_roles
from tests.kit.kube import ROOT, load_e2e_script, render_chart, rendered_objects

BIN = Path(sys.executable).parent


def _chart_commands() -> set[tuple[str, ...]]:
    """(script,) or ("magnetar", role) for every container the chart renders."""
    commands: set[tuple[str, ...]] = set()
    for obj in rendered_objects(render_chart({"cluster": {"enabled": True}})):
        pod = obj.get("spec", {}).get("template", {}).get("spec", {})
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            command = container.get("command") or ["magnetar", *(container.get("args") or [])]
            commands.add((command[0], command[1]) if command[0] == "magnetar" else (command[0],))
    return commands


def _e2e_roles() -> set[str]:
    return set(load_e2e_script().ROLES)


def _roles() -> list[str]:
    named = set(image_roles()) | _e2e_roles()
    named |= {c[1] for c in _chart_commands() if c[0] == "magnetar"}
    return sorted(named)


def _scripts() -> list[str]:
    return sorted({c[0] for c in _chart_commands() if c[0] != "magnetar"})


@pytest.mark.parametrize("role", _roles())
def test_every_named_role_is_a_magnetar_subcommand(role: str) -> None:
    result = CliRunner().invoke(app, [role, "--help"])
    assert result.exit_code == 0, f"`magnetar {role} --help` failed: {result.output}"
    assert "Usage" in result.output


def test_the_chart_runs_the_operator_console_script() -> None:
    assert _scripts() == ["magnetar-operator"]


@pytest.mark.parametrize("script", _scripts())
def test_every_console_script_the_chart_runs_is_declared_and_installed(script: str) -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert script in scripts, f"{script} is not in [project.scripts] of pyproject.toml"
    executable = BIN / script
    assert executable.exists(), f"{script} is not installed: run `make setup`"
    result = subprocess.run(
        [str(executable), "--help"], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
