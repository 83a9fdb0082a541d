"""Durations and sizes written the way pulsar-admin takes them, and the retention arithmetic.

* Durations (``parse_duration_s``): a whole number with an optional unit suffix ``s``, ``m``,
  ``h``, ``d``, ``w`` or ``y`` (case-insensitive, no suffix = seconds): ``120``, ``10m``, ``1h``,
  ``2d``. ``-1`` (where the policy allows it) means "unlimited". ``parse_duration_ms`` also
  takes ``ms`` (``500ms``), for the policies kept in milliseconds (delayed delivery).
* Sizes (``parse_size_bytes``): a whole number with an optional suffix ``k``, ``m``, ``g`` or
  ``t`` (case-insensitive, powers of 1024, no suffix = bytes): ``4096``, ``10M``, ``1G``. ``-1``
  means "unlimited".
* ``retention_of(time, size)`` turns the two into Pulsar's ``RetentionPolicies`` exactly as
  pulsar-admin's ``set-retention`` does: seconds are truncated to whole minutes, bytes to whole
  MiB, and -1 stays -1.

Pure functions; raise ``ValueError`` with a message fit for a user.
"""

from __future__ import annotations

import re

from magnetar.policies import RetentionPolicies

UNLIMITED = -1

DURATION_UNITS_S = {
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 7 * 86400,
    "y": 365 * 86400,
}
SIZE_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_MIB = 1 << 20

_DURATION = re.compile(r"(\d+)([smhdwy]?)", re.IGNORECASE)
_SIZE = re.compile(r"(\d+)([kmgt]?)", re.IGNORECASE)


def parse_duration_s(text: str, *, allow_unlimited: bool = False) -> int:
    """Seconds in ``text`` (``10m`` -> 600); ``-1`` only when ``allow_unlimited``."""
    value = text.strip()
    if allow_unlimited and value == "-1":
        return UNLIMITED
    match = _DURATION.fullmatch(value)
    if match is None:
        units = "/".join(DURATION_UNITS_S)
        more = " or -1 for unlimited" if allow_unlimited else ""
        raise ValueError(f"invalid duration {text!r}: use a number with {units} (e.g. 10m){more}")
    return int(match.group(1)) * DURATION_UNITS_S[(match.group(2) or "s").lower()]


def parse_duration_ms(text: str) -> int:
    """Milliseconds in ``text``: ``500ms``, or any :func:`parse_duration_s` form (``1s``)."""
    value = text.strip()
    if value.lower().endswith("ms") and value[:-2].isdigit():
        return int(value[:-2])
    try:
        return parse_duration_s(value) * 1000
    except ValueError:
        units = "ms/" + "/".join(DURATION_UNITS_S)
        raise ValueError(
            f"invalid duration {text!r}: use a number with {units} (e.g. 500ms, 1s)"
        ) from None


def parse_size_bytes(text: str, *, allow_unlimited: bool = True) -> int:
    """Bytes in ``text`` (``10M`` -> 10485760); ``-1`` when ``allow_unlimited``."""
    value = text.strip()
    if allow_unlimited and value == "-1":
        return UNLIMITED
    match = _SIZE.fullmatch(value)
    if match is None:
        more = " or -1 for unlimited" if allow_unlimited else ""
        raise ValueError(f"invalid size {text!r}: use a number with k/M/G/T (e.g. 10M){more}")
    suffix = match.group(2).lower()
    return int(match.group(1)) * (SIZE_UNITS[suffix] if suffix else 1)


def retention_of(time: str, size: str) -> RetentionPolicies:
    """pulsar-admin's ``set-retention --time T --size S``."""
    seconds = parse_duration_s(time, allow_unlimited=True)
    size_bytes = parse_size_bytes(size, allow_unlimited=True)
    return RetentionPolicies(
        retention_time_in_minutes=UNLIMITED if seconds == UNLIMITED else seconds // 60,
        retention_size_in_mb=UNLIMITED if size_bytes == UNLIMITED else size_bytes // _MIB,
    )


def format_duration_s(seconds: int) -> str:
    """The largest unit dividing ``seconds`` exactly (``600`` -> ``10m``); -1 is ``unlimited``."""
    if seconds < 0:
        return "unlimited"
    for unit, size in sorted(DURATION_UNITS_S.items(), key=lambda kv: -kv[1]):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def format_size_bytes(size: int) -> str:
    """The largest unit dividing ``size`` exactly (``10485760`` -> ``10M``); -1 is ``unlimited``."""
    if size < 0:
        return "unlimited"
    for unit, factor in sorted(SIZE_UNITS.items(), key=lambda kv: -kv[1]):
        if size and size % factor == 0:
            return f"{size // factor}{unit.upper()}"
    return str(size)
