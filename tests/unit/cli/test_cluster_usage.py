"""``magnetar cluster``'s refusals, which need no process: what a user sees and the exit code."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from magnetar.cli.main import app


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["cluster", *args])
    return result.exit_code, result.output


def test_status_and_down_of_a_data_dir_without_a_cluster_say_how_to_start_one(
    tmp_path: Path,
) -> None:
    for verb in ("status", "down"):
        code, output = _run(verb, "--data-dir", str(tmp_path))
        assert code == 1
        assert "no cluster in" in output
        assert "magnetar cluster up --data-dir" in output


def test_a_state_file_that_is_not_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "cluster.json").write_text('{"version": 7}')
    code, output = _run("status", "--data-dir", str(tmp_path))
    assert code == 1
    assert "cluster.json is not a cluster state file" in output
    assert "unknown version 7" in output


def test_counts_below_one_are_usage_errors(tmp_path: Path) -> None:
    code, _ = _run("up", "--data-dir", str(tmp_path), "--bookies", "0")
    assert code == 2
