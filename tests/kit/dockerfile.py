"""A Dockerfile read as instructions per stage, and the roles the Magnetar image advertises.

Pure: reads the file, runs nothing. Used by tests/deploy (the image and the roles tests).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from tests.kit.kube import ROOT

DOCKERFILE = ROOT / "Dockerfile"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str


def parse_dockerfile(text: str) -> list[list[Instruction]]:
    """The instructions of each stage (continuation lines joined, comments dropped)."""
    stages: list[list[Instruction]] = []
    logical = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue  # Docker drops comment lines, inside a continuation too
        logical = f"{logical} {stripped.removesuffix(chr(92)).strip()}".strip()
        if stripped.endswith(chr(92)):
            continue
        keyword, _, arguments = logical.partition(" ")
        logical = ""
        instruction = Instruction(keyword.upper(), arguments.strip())
        if instruction.keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def final_stage() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text())[-1]


def arguments(stage: list[Instruction], keyword: str) -> list[str]:
    return [i.arguments for i in stage if i.keyword == keyword]


def image_roles() -> list[str]:
    """The roles the image advertises in its ``dev.magnetar.roles`` label."""
    for labels in arguments(final_stage(), "LABEL"):
        for token in shlex.split(labels):
            key, _, value = token.partition("=")
            if key == "dev.magnetar.roles":
                return value.split()
    raise AssertionError("the final stage has no dev.magnetar.roles label")
