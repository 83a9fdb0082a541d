"""Every public `magnetar` command answers --help.

The whole command tree is walked in-process with typer's runner (one subprocess per command
would cost most of a minute); a few commands also run as the installed `magnetar` executable,
as a user runs them, to prove the entry point and lazy imports work.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from magnetar.cli.main import app

MAGNETAR = str(Path(sys.executable).parent / "magnetar")


def _command_paths(command: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    # typer vendors its own click; groups are recognised by their ``commands`` mapping.
    paths = [prefix]
    subcommands = getattr(command, "commands", None)
    if isinstance(subcommands, dict):
        for name, sub in subcommands.items():
            paths += _command_paths(sub, (*prefix, name))
    return paths


COMMANDS = _command_paths(typer.main.get_command(app))


def test_the_roles_are_commands() -> None:
    assert ("bookie",) in COMMANDS
    assert ("version",) in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "magnetar")
def test_each_command_has_help(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
    # A command without a description is not documented.
    assert len(result.output.strip().splitlines()) > 3, result.output


@pytest.mark.parametrize("path", [(), ("standalone",), ("admin", "topics", "stats")])
def test_the_installed_command_answers_help(path: tuple[str, ...]) -> None:
    result = subprocess.run(
        [MAGNETAR, *path, "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout
