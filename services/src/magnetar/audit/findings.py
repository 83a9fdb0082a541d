"""What an audit reports: the kinds of finding, their row shape, the verdict and exit codes.

Pure values, no Spark: the Spark checks (:mod:`.checks`) produce rows of
:data:`FINDINGS_SCHEMA`; the report (:mod:`.report`) and the command read them back through
:class:`Summary`.

Exit codes (documented in docs/audit.md): 0 every check passed, 1 findings, 2 bad input (as
Typer's usage errors), 3 a bookie or the metadata store could not be reached (the verdict is
unknown; never a pass).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class ExitCode(enum.IntEnum):
    PASSED = 0
    FINDINGS = 1
    BAD_INPUT = 2  # as Typer's usage errors
    UNREACHABLE = 3


class Kind(enum.StrEnum):
    """The ledger checks, one finding kind each."""

    MISSING_ENTRIES = "missing_entries"
    """Entries of a closed ledger absent from a registered bookie of their write set."""
    DIGEST_MISMATCH = "digest_mismatch"
    """Replicas of an entry hold different digests; the bookie is the one out of the majority
    (every holder when there is no majority)."""
    EXTRA_ENTRIES = "extra_entries"
    """Entries a bookie holds that no ledger needs (no metadata, past a closed ledger's last
    entry, or outside the entry's write set)."""
    UNREFERENCED_LEDGER = "unreferenced_ledger"
    """A ledger that no managed ledger (nor a topic's compacted view) references."""
    MISSING_LEDGER = "missing_ledger"
    """A managed ledger references a ledger that has no metadata."""
    UNDER_REPLICATED = "under_replicated"
    """Entries of a closed ledger below their write quorum because a bookie of their write set
    is gone (not registered)."""
    UNREADABLE_METADATA = "unreadable_metadata"
    """Ledger metadata that does not decode."""


class GeoKind(enum.StrEnum):
    """The geo checks, one finding kind each (per topic and cluster)."""

    MISSING_MESSAGE = "missing_message"
    """A message (origin, producer, sequence id) absent from an audited cluster."""
    DUPLICATED_MESSAGE = "duplicated_message"
    """A message stored more than once in one cluster."""
    DIGEST_MISMATCH = "digest_mismatch"
    """A copy whose payload differs from the origin cluster's."""


FINDINGS_SCHEMA = (
    "kind STRING, ledger_id BIGINT, first_entry BIGINT, last_entry BIGINT, entries BIGINT, "
    "bookie STRING, managed_ledger STRING, detail STRING"
)
"""One finding: an entry range (inclusive; null for ledger-level kinds) of one ledger on one
bookie (null when no bookie is concerned)."""

UNDER_REPLICATION_KINDS = (Kind.MISSING_ENTRIES, Kind.UNDER_REPLICATED)
"""The kinds counted as under-replication per bookie in the report's plot."""


@dataclass(frozen=True)
class KindCount:
    findings: int
    entries: int


@dataclass(frozen=True)
class Summary:
    """What summary.json holds; built by the job from small aggregates only."""

    audit: str
    target: str
    duration_s: float
    findings: Mapping[str, KindCount]
    scanned: Mapping[str, Any] = field(default_factory=dict)
    # ledgers: under-replicated entries per bookie; geo: missing messages per cluster
    under_replicated_by_bookie: Mapping[str, int] = field(default_factory=dict)
    sample: tuple[Mapping[str, Any], ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)  # audit-specific, e.g. lag

    @property
    def per_target_key(self) -> str:
        """The JSON name of :attr:`under_replicated_by_bookie` for this audit."""
        return (
            "missingMessagesByCluster" if self.audit == "geo" else "underReplicatedEntriesByBookie"
        )

    @property
    def total_findings(self) -> int:
        return sum(c.findings for c in self.findings.values())

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDINGS if self.total_findings else ExitCode.PASSED

    @property
    def verdict(self) -> str:
        return "pass" if self.exit_code is ExitCode.PASSED else "fail"

    def to_json(self) -> dict[str, Any]:
        return {
            "audit": self.audit,
            "target": self.target,
            "verdict": self.verdict,
            "exitCode": int(self.exit_code),
            "durationSeconds": round(self.duration_s, 3),
            "findings": {
                kind: {"findings": c.findings, "entries": c.entries}
                for kind, c in sorted(self.findings.items())
            },
            "totalFindings": self.total_findings,
            "scanned": dict(self.scanned),
            self.per_target_key: dict(sorted(self.under_replicated_by_bookie.items())),
            "sample": [dict(row) for row in self.sample],
            **self.details,
        }
