"""Sans-I/O subscription cores: consumer selection, permits, pending acks, redelivery, plans.

No sockets, no asyncio, no managed ledger: the subscription's task (``magnetar.broker``
data plane) owns these objects, feeds them SUBSCRIBE / FLOW / ACK / REDELIVER / close events and
entries read from the cursor, and sends what they decide.

* :mod:`.consumers` — ConsumerInfo, SubType, KeySharedMeta, HashRange, Permits (FLOW rules).
* :mod:`.selectors` — Exclusive, Failover (ACTIVE_CONSUMER_CHANGE events), Shared membership.
* :mod:`.key_shared` — AUTO_SPLIT / STICKY selectors, the recently-joined ordering rule.
* :mod:`.sticky_key` — Murmur3_32 sticky-key hash into 0..65535, as Pulsar computes it.
* :mod:`.pending_acks` — delivered-but-unacked entries, individual/cumulative/batch-index acks.
* :mod:`.redelivery` — replay queue, redelivery counts, negative-ack schedule, DLQ hook.
* :mod:`.delayed` — the delayed-delivery index (entries held until their deliver-at time).
* :mod:`.dispatcher` — ``plan_dispatch``: who gets which entries; which replays to read.
* :mod:`.chunks` — Shared: every chunk of a chunked message to one consumer.
* :mod:`.errors` — ConsumerBusy, ConsumerAssignError (mapped to ServerError codes).
"""

from magnetar.broker.dispatch.chunks import ChunkAffinity, ChunkTag
from magnetar.broker.dispatch.consumers import (
    ConsumerInfo,
    ConsumerKey,
    HashRange,
    KeySharedMeta,
    KeySharedMode,
    Permits,
    SubType,
)
from magnetar.broker.dispatch.delayed import DelayedDeliveryIndex
from magnetar.broker.dispatch.dispatcher import (
    Candidate,
    ConsumerSlot,
    DispatchPlan,
    KeySharedView,
    key_shared_replayable,
    plan_dispatch,
)
from magnetar.broker.dispatch.errors import ConsumerAssignError, ConsumerBusy, DispatchError
from magnetar.broker.dispatch.key_shared import (
    AutoSplitSelector,
    KeySharedSelector,
    RecentlyJoined,
    StickySelector,
    make_key_shared_selector,
)
from magnetar.broker.dispatch.pending_acks import (
    AckOutcome,
    PendingAck,
    PendingAcks,
    ack_set_to_mask,
    mask_to_ack_set,
)
from magnetar.broker.dispatch.redelivery import (
    AckTimeoutTracker,
    NegativeAckSchedule,
    RedeliveryCounts,
    RedeliveryQueue,
    dead_letter_due,
)
from magnetar.broker.dispatch.selectors import (
    ActiveConsumerChange,
    ExclusiveSelector,
    FailoverChange,
    FailoverSelector,
    SharedSelector,
    check_sub_type,
)
from magnetar.broker.dispatch.sticky_key import sticky_key_hash

__all__ = [
    "AckOutcome",
    "AckTimeoutTracker",
    "ActiveConsumerChange",
    "AutoSplitSelector",
    "Candidate",
    "ChunkAffinity",
    "ChunkTag",
    "ConsumerAssignError",
    "ConsumerBusy",
    "ConsumerInfo",
    "ConsumerKey",
    "ConsumerSlot",
    "DelayedDeliveryIndex",
    "DispatchError",
    "DispatchPlan",
    "ExclusiveSelector",
    "FailoverChange",
    "FailoverSelector",
    "HashRange",
    "KeySharedMeta",
    "KeySharedMode",
    "KeySharedSelector",
    "KeySharedView",
    "NegativeAckSchedule",
    "PendingAck",
    "PendingAcks",
    "Permits",
    "RecentlyJoined",
    "RedeliveryCounts",
    "RedeliveryQueue",
    "SharedSelector",
    "StickySelector",
    "SubType",
    "ack_set_to_mask",
    "check_sub_type",
    "dead_letter_due",
    "key_shared_replayable",
    "make_key_shared_selector",
    "mask_to_ack_set",
    "plan_dispatch",
    "sticky_key_hash",
]
