"""Durations, sizes and retention as pulsar-admin reads them (magnetar.client.admin_units)."""

from __future__ import annotations

import pytest

from magnetar.client.admin_units import (
    format_duration_s,
    format_size_bytes,
    parse_duration_ms,
    parse_duration_s,
    parse_size_bytes,
    retention_of,
)
from magnetar.policies import RetentionPolicies


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0),
        ("120", 120),
        ("45s", 45),
        ("10m", 600),
        ("10M", 600),
        ("1h", 3600),
        ("2d", 172800),
        ("1w", 604800),
        ("1y", 365 * 86400),
        (" 3h ", 10800),
    ],
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "10x", "1.5h", "-5m", "10 m", "-1"])
def test_bad_durations_say_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"e\.g\. 10m"):
        parse_duration_s(text)


@pytest.mark.parametrize(("text", "ms"), [("0", 0), ("500ms", 500), ("2MS", 2), ("1s", 1000)])
def test_durations_in_milliseconds(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "ms", "soon", "-5ms", "1.5s"])
def test_bad_millisecond_durations_say_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"ms/s/m.*e\.g\. 500ms"):
        parse_duration_ms(text)


def test_unlimited_duration_only_where_allowed() -> None:
    assert parse_duration_s("-1", allow_unlimited=True) == -1
    with pytest.raises(ValueError, match="-1 for unlimited"):
        parse_duration_s("-2", allow_unlimited=True)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4096", 4096),
        ("1k", 1024),
        ("10M", 10 << 20),
        ("10m", 10 << 20),
        ("1G", 1 << 30),
        ("3T", 3 << 40),
        ("-1", -1),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size_bytes(text) == size


@pytest.mark.parametrize("text", ["", "G", "1.5G", "10MB", "-3"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError, match=r"e\.g\. 10M"):
        parse_size_bytes(text)


def test_no_unlimited_size_when_not_allowed() -> None:
    with pytest.raises(ValueError):
        parse_size_bytes("-1", allow_unlimited=False)


@pytest.mark.parametrize(
    ("time", "size", "expected"),
    [
        ("2d", "1G", RetentionPolicies(2880, 1024)),
        ("-1", "-1", RetentionPolicies(-1, -1)),
        ("120", "10M", RetentionPolicies(2, 10)),
        ("59", "1023k", RetentionPolicies(0, 0)),  # truncated like pulsar-admin
        ("0", "0", RetentionPolicies(0, 0)),
    ],
)
def test_retention_like_pulsar_admin(time: str, size: str, expected: RetentionPolicies) -> None:
    assert retention_of(time, size) == expected


def test_formatting_picks_the_largest_exact_unit() -> None:
    assert [format_duration_s(s) for s in (0, 59, 600, 3600, 5400, 172800, -1)] == [
        "0s",
        "59s",
        "10m",
        "1h",
        "90m",
        "2d",
        "unlimited",
    ]
    assert [format_size_bytes(b) for b in (0, 1000, 1 << 20, 3 << 30, -1)] == [
        "0",
        "1000",
        "1M",
        "3G",
        "unlimited",
    ]


@pytest.mark.parametrize("seconds", [1, 59, 60, 3600, 86400, 7 * 86400, 12345, 365 * 86400])
def test_format_then_parse_round_trips(seconds: int) -> None:
    assert parse_duration_s(format_duration_s(seconds)) == seconds
