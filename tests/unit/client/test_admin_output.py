"""Tables and JSON as ``magnetar admin`` prints them (magnetar.cli.admin_output)."""

from __future__ import annotations

import json

from magnetar.cli.admin_output import render_fields, render_json, render_table
from magnetar.policies import BacklogQuota, TenantInfo


def test_table_columns_are_aligned_without_trailing_blanks() -> None:
    text = render_table(
        ["TYPE", "LIMIT", "POLICY"],
        [("destination_storage", "10M", "producer_exception"), ("message_age", None, "x")],
    )
    assert text.splitlines() == [
        "TYPE                 LIMIT  POLICY",
        "destination_storage  10M    producer_exception",
        "message_age          -      x",
    ]


def test_an_empty_table_still_has_its_header() -> None:
    assert render_table(["ROLE", "ACTIONS"], []) == "ROLE  ACTIONS"


def test_cells_render_sets_booleans_and_none() -> None:
    text = render_fields(
        [("roles", frozenset({"b", "a"})), ("on", True), ("none", None), ("empty", [])]
    )
    assert text.splitlines() == ["roles  a,b", "on     true", "none   -", "empty  -"]
    assert render_fields([]) == ""


def test_json_uses_pulsar_field_names() -> None:
    value = {"t": TenantInfo(frozenset({"r"}), frozenset()), "q": [BacklogQuota(1, 2)]}
    assert json.loads(render_json(value)) == {
        "t": {"adminRoles": ["r"], "allowedClusters": []},
        "q": [{"limitSize": 1, "limitTime": 2, "policy": "producer_request_hold"}],
    }
    assert render_json(None) == "null"
    assert json.loads(render_json(frozenset({"b", "a"}))) == ["a", "b"]
