"""Under-replicated ledgers as ``magnetar cluster status`` shows them: a count always, the ids
and missing bookies of the first few, and a plain sentence when the metadata store is silent."""

from __future__ import annotations

from magnetar.ids import BookieId, LedgerId
from magnetar.ledger.replication import UnderReplicatedLedger
from magnetar.localcluster.status import under_replicated_table


def _ledger(ledger_id: int, *missing: str) -> UnderReplicatedLedger:
    return UnderReplicatedLedger(LedgerId(ledger_id), tuple(BookieId(b) for b in missing))


def test_none_under_replicated_is_a_zero_count() -> None:
    assert under_replicated_table([]) == ["under-replicated ledgers: 0"]


def test_each_listed_ledger_shows_its_missing_bookies() -> None:
    table = under_replicated_table([_ledger(3, "bookie-1"), _ledger(12, "bookie-1", "bookie-3")])
    assert table[0] == "under-replicated ledgers: 2"
    assert table[1].split() == ["LEDGER", "MISSING", "BOOKIES"]
    assert table[2].split() == ["3", "bookie-1"]
    assert table[3].split() == ["12", "bookie-1,bookie-3"]
    assert len(table) == 4


def test_past_the_limit_the_rest_are_counted_not_listed() -> None:
    table = under_replicated_table([_ledger(i, "bookie-2") for i in range(5)], limit=2)
    assert table[0] == "under-replicated ledgers: 5"
    assert [row.split()[0] for row in table[2:4]] == ["0", "1"]
    assert table[-1] == "... and 3 more"


def test_no_answer_is_said_plainly() -> None:
    assert under_replicated_table(None) == [
        "under-replicated ledgers: the metadata store did not answer"
    ]
