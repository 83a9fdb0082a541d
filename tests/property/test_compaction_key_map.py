"""The two-phase compaction core against a model, over random topics.

A topic is a list of entries, each one or more messages (a batch) with a key or none and a value
or a tombstone. The model: a compacted topic keeps every message without a key, and each key's
last message unless that is a tombstone — in the original order. The checks: one compaction
matches the model; compacting a prefix and then the compacted view plus the rest (what the
broker does run after run) ends in the same view; compacting a compacted view changes nothing.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from magnetar.broker.compaction.key_map import KeyMap, full_mask
from magnetar.broker.compaction.messages import MessageKey
from magnetar.managed_ledger import Position
from magnetar.managed_ledger.position import position

Message = tuple[str | None, bool]  # key, tombstone
Entry = tuple[Position, list[Message]]
View = list[tuple[Position, list[Message], int | None]]

messages = st.lists(
    st.tuples(st.none() | st.sampled_from("abcde"), st.booleans()), min_size=1, max_size=5
)
topics = st.lists(messages, max_size=30).map(
    lambda entries: [(position(1 + i // 7, i % 7), m) for i, m in enumerate(entries)]
)


def keys_of(ms: list[Message]) -> list[MessageKey]:
    return [MessageKey(k, empty=t) for k, t in ms]


def compact(view: View, tail: list[Entry]) -> View:
    """What :class:`~magnetar.broker.compaction.compactor.Compactor` does, without I/O."""
    items = view + [(pos, ms, None) for pos, ms in tail]
    key_map = KeyMap()
    for pos, ms, prior in items:
        key_map.add(pos, keys_of(ms), prior)
    out: View = []
    for pos, ms, prior in items:
        mask = key_map.retained(pos, keys_of(ms), prior)
        if mask:
            out.append((pos, ms, None if mask == full_mask(len(ms)) else mask))
    return out


def surviving(view: View) -> list[tuple[Position, int]]:
    """(entry, batch index) of every message a read_compacted reader gets."""
    return [
        (pos, i) for pos, ms, mask in view for i in range(len(ms)) if mask is None or mask >> i & 1
    ]


def model(topic: list[Entry]) -> list[tuple[Position, int]]:
    last: dict[str, tuple[Position, int]] = {}
    for pos, ms in topic:
        for i, (key, _) in enumerate(ms):
            if key is not None:
                last[key] = (pos, i)
    out = []
    for pos, ms in topic:
        for i, (key, tombstone) in enumerate(ms):
            if key is None or (last[key] == (pos, i) and not tombstone):
                out.append((pos, i))
    return out


@given(topics)
def test_one_compaction_keeps_the_latest_value_of_each_key(topic: list[Entry]) -> None:
    assert surviving(compact([], topic)) == model(topic)


@given(topics, st.data())
def test_compaction_in_steps_ends_where_one_compaction_does(
    topic: list[Entry], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(topic)))
    stepwise = compact(compact([], topic[:cut]), topic[cut:])
    assert surviving(stepwise) == model(topic)


@given(topics)
def test_compacting_a_compacted_view_changes_nothing(topic: list[Entry]) -> None:
    once = compact([], topic)
    assert compact(once, []) == once
