"""The managed ledger: a topic's log as a chain of ledgers, with durable cursors.

Pure cores (no I/O, tested without a loop): :mod:`.position`, :mod:`.layout`,
:mod:`.range_set`, :mod:`.cursor_state`, :mod:`.rollover`, :mod:`.trimming`,
:mod:`.entry_cache`, :mod:`.codec`. I/O shells over them: :mod:`.managed_ledger` (with its
:mod:`.add_dispatch`, :mod:`.add_queue` and :mod:`.meta_store`), :mod:`.cursor`,
:mod:`.factory`, typed against :mod:`.ledger_access` (what we need from the BookKeeper client)
and the metadata store.
API: docs/storage-api.md.
"""

from magnetar.managed_ledger.config import (
    InitialPosition,
    ManagedLedgerConfig,
    ManagedLedgerFactoryConfig,
)
from magnetar.managed_ledger.cursor import ManagedCursor
from magnetar.managed_ledger.entry_cache import Entry
from magnetar.managed_ledger.factory import ManagedLedgerFactory
from magnetar.managed_ledger.managed_ledger import ManagedLedger
from magnetar.managed_ledger.position import Position

__all__ = [
    "Entry",
    "InitialPosition",
    "ManagedCursor",
    "ManagedLedger",
    "ManagedLedgerConfig",
    "ManagedLedgerFactory",
    "ManagedLedgerFactoryConfig",
    "Position",
]
