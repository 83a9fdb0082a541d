"""``magnetar admin topics ...``: topics, partitions, stats and subscriptions, as pulsar-admin.

A TOPIC is ``persistent://tenant/ns/topic``, ``tenant/ns/topic`` or a bare name in
``public/default``. Stats print as JSON (they are nested); lists one name per line.
Wiring only; see :mod:`magnetar.cli.admin_cmd` for the output and exit-code rules.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from magnetar.cli.admin_output import render_fields, render_messages, render_table
from magnetar.cli.admin_session import (
    ForceOpt,
    NamespaceArg,
    SubscriptionOpt,
    TopicArg,
    call,
    emit,
    emit_fields,
    emit_names,
    usage_value,
)
from magnetar.client.admin_units import parse_duration_s
from magnetar.policies.message_id import LATEST, MessageIdData

if TYPE_CHECKING:
    from magnetar.client.admin import AdminClient

topics = typer.Typer(help="Topics, partitions, stats and subscriptions.", no_args_is_help=True)

Partitions = Annotated[
    int, typer.Option("--partitions", "-p", help="Number of partitions.", show_default=False)
]


@topics.command("list")
def topics_list(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """List the topics and partitions of a namespace (persistent and non-persistent)."""
    emit_names(ctx, call(ctx, lambda a: a.list_topics(namespace)))


@topics.command("list-partitioned-topics")
def topics_list_partitioned(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """List the partitioned topics of a namespace."""
    emit_names(ctx, call(ctx, lambda a: a.list_partitioned_topics(namespace)))


@topics.command("create")
def topics_create(ctx: typer.Context, topic: TopicArg) -> None:
    """Create a non-partitioned topic. Example: magnetar admin topics create acme/orders/in"""
    call(ctx, lambda a: a.create_topic(topic))


@topics.command("create-partitioned-topic")
def topics_create_partitioned(ctx: typer.Context, topic: TopicArg, partitions: Partitions) -> None:
    """Create a partitioned topic. Example: ... create-partitioned-topic acme/orders/in -p 4"""
    call(ctx, lambda a: a.create_partitioned_topic(topic, partitions))


@topics.command("get-partitioned-topic-metadata")
def topics_get_partitions(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the number of partitions of a topic (0: not partitioned)."""
    meta = call(ctx, lambda a: a.get_partitioned_topic_metadata(topic))
    emit(ctx, meta, lambda: render_fields([("partitions", meta.partitions)]))


@topics.command("update-partitioned-topic")
def topics_update_partitioned(ctx: typer.Context, topic: TopicArg, partitions: Partitions) -> None:
    """Raise the number of partitions of a partitioned topic (it never shrinks)."""
    call(ctx, lambda a: a.update_partitioned_topic(topic, partitions))


@topics.command("delete")
def topics_delete(ctx: typer.Context, topic: TopicArg, force: ForceOpt = False) -> None:
    """Delete a non-partitioned topic (with --force even with clients or subscriptions)."""
    call(ctx, lambda a: a.delete_topic(topic, force=force))


@topics.command("delete-partitioned-topic")
def topics_delete_partitioned(ctx: typer.Context, topic: TopicArg, force: ForceOpt = False) -> None:
    """Delete a partitioned topic and its partitions."""
    call(ctx, lambda a: a.delete_partitioned_topic(topic, force=force))


@topics.command("stats")
def topics_stats(ctx: typer.Context, topic: TopicArg) -> None:
    """Show a topic's (or one partition's) stats: rates, backlog, publishers, subscriptions."""
    emit(ctx, call(ctx, lambda a: a.get_stats(topic)))


@topics.command("partitioned-stats")
def topics_partitioned_stats(
    ctx: typer.Context,
    topic: TopicArg,
    per_partition: Annotated[
        bool, typer.Option("--per-partition", help="Also each partition's own stats.")
    ] = False,
) -> None:
    """Show a partitioned topic's stats summed over its partitions."""
    emit(ctx, call(ctx, lambda a: a.get_partitioned_stats(topic, per_partition=per_partition)))


@topics.command("internal-stats")
def topics_internal_stats(ctx: typer.Context, topic: TopicArg) -> None:
    """Show a topic's managed ledger: ledgers, cursors, mark-delete positions."""
    emit(ctx, call(ctx, lambda a: a.get_internal_stats(topic)))


@topics.command("subscriptions")
def topics_subscriptions(ctx: typer.Context, topic: TopicArg) -> None:
    """List the subscriptions of a topic."""
    emit_names(ctx, call(ctx, lambda a: a.get_subscriptions(topic)))


MessageIdOpt = Annotated[
    str | None,
    typer.Option(
        "--message-id", "--messageId", "-m", help="ledgerId:entryId[:partition], earliest, latest."
    ),
]


@topics.command("create-subscription")
def topics_create_subscription(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubscriptionOpt,
    message_id: MessageIdOpt = None,
) -> None:
    """Create a durable subscription at a position (default latest). Example: -s a -m earliest"""
    position = LATEST if message_id is None else usage_value(MessageIdData.parse, message_id, "-m")
    call(ctx, lambda a: a.create_subscription(topic, subscription, position))


@topics.command("unsubscribe")
def topics_unsubscribe(
    ctx: typer.Context, topic: TopicArg, subscription: SubscriptionOpt, force: ForceOpt = False
) -> None:
    """Delete a subscription (with --force even with connected consumers)."""
    call(ctx, lambda a: a.delete_subscription(topic, subscription, force=force))


@topics.command("skip")
def topics_skip(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubscriptionOpt,
    count: Annotated[int, typer.Option("--count", "-n", help="Messages to skip.", min=0)],
) -> None:
    """Skip the next N messages of a subscription's backlog. Example: -s audit -n 10"""
    call(ctx, lambda a: a.skip_messages(topic, subscription, count))


@topics.command("clear-backlog")
def topics_clear_backlog(
    ctx: typer.Context, topic: TopicArg, subscription: SubscriptionOpt
) -> None:
    """Skip every message in a subscription's backlog."""
    call(ctx, lambda a: a.clear_backlog(topic, subscription))


@topics.command("reset-cursor")
def topics_reset_cursor(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubscriptionOpt,
    time_ago: Annotated[
        str | None, typer.Option("--time", "-t", help="Go back this long: 10m, 1h, 2d.")
    ] = None,
    message_id: MessageIdOpt = None,
) -> None:
    """Move a subscription back (or forward) by time or to a message id. Example: -s a -t 1h"""
    if (time_ago is None) == (message_id is None):
        raise typer.BadParameter("give exactly one of --time and --message-id")
    if time_ago is not None:
        back_s = usage_value(parse_duration_s, time_ago, "--time")
        timestamp_ms = int(time.time() * 1000) - back_s * 1000

        async def by_time(a: AdminClient) -> None:
            await a.reset_cursor(topic, subscription, timestamp_ms)

        call(ctx, by_time)
    else:
        assert message_id is not None
        position = usage_value(MessageIdData.parse, message_id, "--message-id")
        call(ctx, lambda a: a.reset_cursor_to_message_id(topic, subscription, position))


@topics.command("expire-messages")
def topics_expire(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubscriptionOpt,
    expire_time: Annotated[
        str, typer.Option("--expire-time", "--expireTime", "-t", help="Age: 120, 10m, 1h, 2d.")
    ],
) -> None:
    """Skip a subscription's messages older than the given age. Example: -s audit -t 1h"""
    seconds = usage_value(parse_duration_s, expire_time, "--expire-time")
    call(ctx, lambda a: a.expire_messages(topic, subscription, seconds))


@topics.command("expire-messages-all-subscriptions")
def topics_expire_all(
    ctx: typer.Context,
    topic: TopicArg,
    expire_time: Annotated[
        str, typer.Option("--expire-time", "--expireTime", "-t", help="Age: 120, 10m, 1h, 2d.")
    ],
) -> None:
    """Skip the messages older than the given age on every subscription of a topic."""
    seconds = usage_value(parse_duration_s, expire_time, "--expire-time")
    call(ctx, lambda a: a.expire_messages_all_subscriptions(topic, seconds))


@topics.command("unload")
def topics_unload(ctx: typer.Context, topic: TopicArg) -> None:
    """Unload a topic: close it on its broker; the next client reloads it."""
    call(ctx, lambda a: a.unload_topic(topic))


@topics.command("terminate")
def topics_terminate(ctx: typer.Context, topic: TopicArg) -> None:
    """Terminate a topic: no more messages may be published to it, ever."""
    last = call(ctx, lambda a: a.terminate_topic(topic))
    emit(ctx, last.to_json(), lambda: f"Topic terminated at {last.ledger_id}:{last.entry_id}")


@topics.command("compact")
def topics_compact(ctx: typer.Context, topic: TopicArg) -> None:
    """Start compacting a topic: readers with read_compacted then see each key's latest value."""
    call(ctx, lambda a: a.compact_topic(topic))


@topics.command("compaction-status")
def topics_compaction_status(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the status of a topic's last compaction: NOT_RUN, RUNNING, SUCCESS or ERROR."""
    status = call(ctx, lambda a: a.compaction_status(topic))
    emit(
        ctx,
        status,
        lambda: status["status"] + (f": {status['lastError']}" if status["lastError"] else ""),
    )


@topics.command("lookup")
def topics_lookup(ctx: typer.Context, topic: TopicArg) -> None:
    """Show which broker serves a topic."""
    emit_fields(ctx, call(ctx, lambda a: a.lookup_topic(topic)))


@topics.command("peek-messages")
def topics_peek(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubscriptionOpt,
    count: Annotated[int, typer.Option("--count", "-n", help="Messages to show.", min=1)] = 1,
) -> None:
    """Show the next messages of a subscription's backlog without consuming them."""
    found = call(ctx, lambda a: a.peek_messages(topic, subscription, count))
    emit(ctx, [m.to_json() for m in found], lambda: render_messages(found))


@topics.command("examine-message")
def topics_examine(
    ctx: typer.Context,
    topic: TopicArg,
    initial: Annotated[
        str,
        typer.Option(
            "--initialPosition", "-i", help="Count from 'earliest' or back from 'latest'."
        ),
    ] = "latest",
    position: Annotated[
        int, typer.Option("--messagePosition", "-m", help="Which message (1 is the first).", min=1)
    ] = 1,
) -> None:
    """Show a stored message counted from the first or back from the last."""
    if initial.lower() not in ("earliest", "latest"):
        raise typer.BadParameter("must be earliest or latest", param_hint="--initialPosition")
    found = call(ctx, lambda a: a.examine_message(topic, initial.lower(), position))
    emit(ctx, [m.to_json() for m in found], lambda: render_messages(found))


@topics.command("get-message-by-id")
def topics_get_message_by_id(
    ctx: typer.Context,
    topic: TopicArg,
    ledger_id: Annotated[int, typer.Option("--ledgerId", "-l", help="Ledger of the message.")],
    entry_id: Annotated[int, typer.Option("--entryId", "-e", help="Entry of the message.")],
) -> None:
    """Show the message stored at LEDGER:ENTRY (a batch: all its messages)."""
    found = call(ctx, lambda a: a.get_message_by_id(topic, ledger_id, entry_id))
    emit(ctx, [m.to_json() for m in found], lambda: render_messages(found))


@topics.command("last-message-id")
def topics_last_message_id(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the id of the last message published to a topic."""
    last = call(ctx, lambda a: a.get_last_message_id(topic))
    emit(ctx, last.to_json(), lambda: f"{last.ledger_id}:{last.entry_id}")


# ------------------------------------------------------------------ permissions

RoleOpt = Annotated[str, typer.Option("--role", help="The client role.", show_default=False)]


@topics.command("grant-permission")
def topics_grant(
    ctx: typer.Context,
    topic: TopicArg,
    role: RoleOpt,
    actions: Annotated[
        str, typer.Option("--actions", help="Comma-separated: produce, consume, functions, ...")
    ],
) -> None:
    """Let a role act on a topic. Example: --role app --actions produce"""
    wanted = [a.strip() for a in actions.split(",") if a.strip()]
    call(ctx, lambda a: a.grant_topic_permission(topic, role, wanted))


@topics.command("revoke-permission")
def topics_revoke(ctx: typer.Context, topic: TopicArg, role: RoleOpt) -> None:
    """Take a role's topic-level permissions away (its namespace grants stay)."""
    call(ctx, lambda a: a.revoke_topic_permission(topic, role))


@topics.command("permissions")
def topics_permissions(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the roles allowed on a topic (namespace grants included) and their actions."""
    grants = call(ctx, lambda a: a.get_topic_permissions(topic))
    rows = [(role, ",".join(sorted(actions))) for role, actions in sorted(grants.items())]
    emit(ctx, {r: sorted(a) for r, a in grants.items()},
         lambda: render_table(["ROLE", "ACTIONS"], rows))  # fmt: skip
