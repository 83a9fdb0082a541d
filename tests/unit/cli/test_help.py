"""Every public `magnetar` command answers --help, as a user would run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MAGNETAR = str(Path(sys.executable).parent / "magnetar")


def _commands() -> list[str]:
    out = subprocess.run(
        [MAGNETAR, "--help"], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    # typer/rich lists commands inside the "Commands" panel as "│ name   description │".
    names: list[str] = []
    in_commands = False
    for line in out.splitlines():
        if "Commands" in line:
            in_commands = True
            continue
        if in_commands and line.startswith("│"):
            word = line.strip("│ ").split(" ")[0]
            if word:
                names.append(word)
    return names


def test_top_level_help_lists_commands() -> None:
    names = _commands()
    assert "version" in names


@pytest.mark.parametrize("command", _commands())
def test_each_command_has_help(command: str) -> None:
    result = subprocess.run(
        [MAGNETAR, command, "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout
