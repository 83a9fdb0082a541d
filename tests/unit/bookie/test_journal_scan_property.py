"""Property: whatever damage the tail of a segment takes, the scan returns exactly the intact
records before it — never a damaged one, never fewer than the undamaged prefix."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from magnetar.bookie.journal_record import JournalRecord, RecordKind, frame, scan_segment

records_st = st.lists(
    st.builds(
        JournalRecord,
        kind=st.sampled_from(list(RecordKind)),
        ledger_id=st.integers(0, 2**64 - 1),
        entry_id=st.integers(-1, 2**63 - 1),
        lac=st.integers(-1, 2**63 - 1),
        digest=st.integers(0, 2**32 - 1),
        master_key=st.binary(max_size=32),
        payload=st.binary(max_size=300),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=150, deadline=None)
@given(records=records_st, data=st.data())
def test_damaged_tail_keeps_intact_prefix(
    records: list[JournalRecord], data: st.DataObject
) -> None:
    frames = [frame(r.encode()) for r in records]
    blob = b"".join(frames)
    last_start = len(blob) - len(frames[-1])
    damage = data.draw(st.sampled_from(["truncate", "flip"]))
    if damage == "truncate":
        cut = data.draw(st.integers(last_start, len(blob) - 1))
        damaged = blob[:cut]
    else:
        pos = data.draw(st.integers(last_start, len(blob) - 1))
        bit = data.draw(st.integers(0, 7))
        damaged = blob[:pos] + bytes([blob[pos] ^ (1 << bit)]) + blob[pos + 1 :]
    decoded, end = scan_segment(damaged, 0)
    assert decoded == records[:-1]
    assert end == last_start


@settings(max_examples=50, deadline=None)
@given(records=records_st)
def test_intact_segment_scans_whole(records: list[JournalRecord]) -> None:
    blob = b"".join(frame(r.encode()) for r in records)
    assert scan_segment(blob, 0) == (records, len(blob))
