"""Topic compaction (Pulsar's two-phase compactor and compacted topic reads).

- :mod:`.messages` — the keys of a stored entry's messages (pure);
- :mod:`.key_map` — phase one and phase two over those keys (pure);
- :mod:`.compacted_entry` — the format of a compacted ledger's entries (pure);
- :mod:`.compacted_view` — a compacted ledger opened for reading, searched by position;
- :mod:`.compactor` — one run: read, write the compacted ledger, switch the ``__compaction``
  cursor, delete the previous ledger;
- :mod:`.topic_compaction` — a topic's runs and status, and the reads of read_compacted
  subscriptions;
- :mod:`.threshold` — the periodic check of the automatic compaction threshold.
"""

from magnetar.broker.compaction.compactor import COMPACTION_CURSOR, LEDGER_PROPERTY
from magnetar.broker.compaction.topic_compaction import (
    CompactedReads,
    CompactionStatus,
    TopicCompaction,
    delete_compacted_ledgers,
)

__all__ = [
    "COMPACTION_CURSOR",
    "LEDGER_PROPERTY",
    "CompactedReads",
    "CompactionStatus",
    "TopicCompaction",
    "delete_compacted_ledgers",
]
