"""Every command the operator renders (container args, the init Job, the audit's arguments)
names a real ``magnetar`` sub-command and only flags that command has: no drift between the
manifests and the CLI. Proxy and autorecovery are checked the same way (they must exist)."""

from __future__ import annotations

from typing import Any

import pytest
import typer
import yaml

from magnetar.cli.main import app
from magnetar_operator.manifests import Stage, audit_args, cluster_objects
from magnetar_operator.spec import ClusterSpec
from tests.kit.crd import EXAMPLES_DIR

CLI = typer.main.get_command(app)


def _resolve(args: list[str]) -> tuple[Any, list[str]]:
    """The (sub-)command ``magnetar ARGS`` runs and the arguments left for it (typer vendors
    click, so commands are told apart by what they have: a group has ``commands``)."""
    command: Any = CLI
    rest = list(args)
    while hasattr(command, "commands"):
        assert rest, f"magnetar {' '.join(args)}: no sub-command"
        name = rest.pop(0)
        sub = command.commands.get(name)
        assert sub is not None, f"magnetar has no sub-command {name!r} (in {args})"
        command = sub
    return command, rest


def _check_flags(command: Any, rest: list[str], args: list[str]) -> None:
    options = {opt: p for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    i = 0
    while i < len(rest):
        flag = rest[i]
        assert flag.startswith("--"), f"unexpected argument {flag!r} in magnetar {args}"
        name, eq, _ = flag.partition("=")
        param = options.get(name)
        assert param is not None, f"magnetar {args[0]} has no option {name} ({args})"
        takes_value = not getattr(param, "is_flag", False)
        i += 1 if eq or not takes_value else 2


def _commands(spec: ClusterSpec) -> list[list[str]]:
    found: list[list[str]] = []
    for stage in Stage:
        for obj in cluster_objects(spec)[stage]:
            template: Any = obj.get("spec", {}).get("template", {})
            for container in template.get("spec", {}).get("containers", []):
                if container.get("command") == ["magnetar"]:
                    found.append(container["args"])
    return found


def _full_spec() -> ClusterSpec:
    doc = yaml.safe_load((EXAMPLES_DIR / "pulsarcluster-full.yaml").read_text())
    return ClusterSpec.parse("prod", "pulsar", doc["spec"])


def test_every_role_is_rendered() -> None:
    roles = sorted({args[0] for args in _commands(_full_spec())})
    assert roles == ["autorecovery", "bookie", "broker", "cluster", "proxy"]


@pytest.mark.parametrize("role", ["bookie", "broker", "cluster", "proxy", "autorecovery"])
def test_rendered_commands_exist_with_their_flags(role: str) -> None:
    for args in _commands(_full_spec()):
        if args[0] == role:
            command, rest = _resolve(args)
            _check_flags(command, rest, args)


def test_audit_arguments_name_a_real_command() -> None:
    command, rest = _resolve(audit_args(_full_spec()))
    _check_flags(command, rest, audit_args(_full_spec()))


def test_the_check_refuses_an_unknown_flag() -> None:
    """A control: the checker is not a no-op."""
    command, rest = _resolve(["bookie", "--no-such-flag", "1"])
    with pytest.raises(AssertionError, match="no option --no-such-flag"):
        _check_flags(command, rest, ["bookie", "--no-such-flag", "1"])
    with pytest.raises(AssertionError, match="no sub-command 'nope'"):
        _resolve(["nope"])


SPARK_EXAMPLES = sorted((EXAMPLES_DIR / "spark").glob("*.yaml"))


@pytest.mark.parametrize("path", SPARK_EXAMPLES, ids=lambda p: p.name)
def test_spark_examples_run_a_real_audit_command(path: Any) -> None:
    """The SparkApplication examples run `magnetar audit ...` with flags it has, from the script
    the operator's ScheduledSparkApplication names too."""
    from magnetar_operator.manifests.audit import MAGNETAR_SCRIPT, SPARK_API

    (doc,) = list(yaml.safe_load_all(path.read_text()))
    assert doc["apiVersion"] == SPARK_API
    spec = doc["spec"].get("template", doc["spec"])
    assert spec["mainApplicationFile"] == MAGNETAR_SCRIPT
    args = [str(a) for a in spec["arguments"]]
    assert args[:2] == ["audit", "ledgers"]
    command, rest = _resolve(args)
    _check_flags(command, rest, args)


def test_there_are_spark_examples() -> None:
    assert {p.name for p in SPARK_EXAMPLES} >= {
        "audit-ledgers.yaml",
        "audit-ledgers-scheduled.yaml",
    }
