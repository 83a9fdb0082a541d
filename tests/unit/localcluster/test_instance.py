"""Named clusters of ``cluster up --clusters``: the names, and the stored instance file."""

from __future__ import annotations

from pathlib import Path

import pytest

from magnetar.localcluster.errors import BadClusterState
from magnetar.localcluster.instance import instance_path, load_instance, parse_cluster_names


def test_names_are_parsed_in_order() -> None:
    assert parse_cluster_names("us-east, eu_west ,ap") == ["us-east", "eu_west", "ap"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a", "2 to 5 names, got 1"),
        ("a,b,c,d,e,f", "2 to 5 names, got 6"),
        ("a,a", "names a cluster twice"),
        ("a,b c", "'b c' is not valid"),
        ("a,1b", "'1b' is not valid"),
        ("a,global/x", "is not valid"),
    ],
)
def test_bad_names_are_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_cluster_names(text)


def test_a_data_dir_without_an_instance_has_none(tmp_path: Path) -> None:
    assert load_instance(tmp_path) is None


def test_a_damaged_instance_file_is_reported(tmp_path: Path) -> None:
    instance_path(tmp_path).write_text('{"clusters": "a"}')
    with pytest.raises(BadClusterState, match="not a list"):
        load_instance(tmp_path)
    instance_path(tmp_path).write_text("{")
    with pytest.raises(BadClusterState):
        load_instance(tmp_path)
