"""``magnetar admin namespaces ...``: namespaces and their policies, as pulsar-admin names them.

Durations (``--time``, ``--ttl``, ``--limit-time``) take ``120``, ``10m``, ``1h``, ``2d``; sizes
(``--size``, ``--limit``) take ``4096``, ``10M``, ``1G`` (see ``magnetar.client.admin_units``).
Wiring only; see :mod:`magnetar.cli.admin_cmd` for the output and exit-code rules.
"""

from __future__ import annotations

from typing import Annotated

import typer

from magnetar.cli.admin_output import render_fields, render_table
from magnetar.cli.admin_session import (
    ForceOpt,
    JsonValue,
    NamespaceArg,
    call,
    emit,
    emit_names,
    usage_value,
)
from magnetar.client.admin_units import (
    format_duration_s,
    format_size_bytes,
    parse_duration_ms,
    parse_duration_s,
    parse_size_bytes,
    retention_of,
)
from magnetar.policies import (
    BACKLOG_QUOTA_POLICIES,
    BACKLOG_QUOTA_TYPES,
    AutoTopicCreationOverride,
    BacklogQuota,
    DelayedDeliveryPolicies,
    InvalidPolicies,
    PersistencePolicies,
)

namespaces = typer.Typer(help="Namespaces and their policies.", no_args_is_help=True)

QuotaType = Annotated[
    str, typer.Option("--type", "-t", help=f"Backlog quota type: {', '.join(BACKLOG_QUOTA_TYPES)}.")
]
NOT_SET = "(not set)"


def _emit_policy(ctx: typer.Context, value: JsonValue | None) -> None:
    """A policy document as ``name  value`` lines (or JSON); ``(not set)`` when absent."""
    emit(
        ctx,
        value,
        lambda: NOT_SET if value is None else render_fields(list(value.to_json().items())),
    )


@namespaces.command("list")
def ns_list(ctx: typer.Context, tenant: Annotated[str, typer.Argument(help="The tenant.")]) -> None:
    """List the namespaces of a tenant."""
    emit_names(ctx, call(ctx, lambda a: a.list_namespaces(tenant)))


BundleOpt = Annotated[
    str, typer.Option("--bundle", "-b", help="A bundle range, e.g. 0x00000000_0x40000000.")
]


@namespaces.command("create")
def ns_create(
    ctx: typer.Context,
    namespace: NamespaceArg,
    bundles: Annotated[
        int | None,
        typer.Option("--bundles", "-b", min=1, max=65536, help="Number of bundles (hash ranges)."),
    ] = None,
) -> None:
    """Create a namespace. Example: magnetar admin namespaces create acme/orders --bundles 8"""
    body = None if bundles is None else {"bundles": {"numBundles": bundles}}
    call(ctx, lambda a: a.create_namespace(namespace, body))


@namespaces.command("delete")
def ns_delete(ctx: typer.Context, namespace: NamespaceArg, force: ForceOpt = False) -> None:
    """Delete a namespace (with --force also its topics)."""
    call(ctx, lambda a: a.delete_namespace(namespace, force=force))


@namespaces.command("policies")
def ns_policies(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show all the policies of a namespace (JSON)."""
    emit(ctx, call(ctx, lambda a: a.get_policies(namespace)))


# ------------------------------------------------------------------ retention


@namespaces.command("set-retention")
def ns_set_retention(
    ctx: typer.Context,
    namespace: NamespaceArg,
    time: Annotated[
        str, typer.Option("--time", "-t", help="Retention time: 10m, 3h, 2d, 5w; -1 unlimited.")
    ],
    size: Annotated[
        str, typer.Option("--size", "-s", help="Retention size: 10M, 16G, 3T; -1 unlimited.")
    ],
) -> None:
    """Keep acknowledged messages for a time and up to a size. Example: -t 2d -s 1G"""
    policies = usage_value(lambda t: retention_of(t, size), time, "--time/--size")
    call(ctx, lambda a: a.set_retention(namespace, policies))


@namespaces.command("get-retention")
def ns_get_retention(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show the retention of a namespace."""
    value = call(ctx, lambda a: a.get_retention(namespace))

    def table() -> str:
        if value is None:
            return NOT_SET
        minutes = value.retention_time_in_minutes
        mb = value.retention_size_in_mb
        return render_fields(
            [
                ("retentionTime", format_duration_s(minutes * 60 if minutes >= 0 else -1)),
                ("retentionSize", format_size_bytes(mb << 20 if mb >= 0 else -1)),
            ]
        )

    emit(ctx, value, table)


@namespaces.command("remove-retention")
def ns_remove_retention(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Remove the namespace's retention (the broker default applies)."""
    call(ctx, lambda a: a.remove_retention(namespace))


# ------------------------------------------------------------------ persistence


def _persistence(e: int, w: int, a: int, rate: float) -> PersistencePolicies:
    try:
        return PersistencePolicies(e, w, a, rate)
    except InvalidPolicies as exc:
        raise typer.BadParameter(exc.reason, param_hint="-e/-w/-a/-r") from exc


@namespaces.command("set-persistence")
def ns_set_persistence(
    ctx: typer.Context,
    namespace: NamespaceArg,
    ensemble: Annotated[
        int, typer.Option("--bookkeeper-ensemble", "-e", help="Bookies each ledger uses (E).")
    ],
    write_quorum: Annotated[
        int,
        typer.Option("--bookkeeper-write-quorum", "-w", help="Copies of each entry (Wq <= E)."),
    ],
    ack_quorum: Annotated[
        int,
        typer.Option(
            "--bookkeeper-ack-quorum",
            "-a",
            help="Copies durable before a publish is acknowledged (Aq <= Wq).",
        ),
    ],
    mark_delete_rate: Annotated[
        float,
        typer.Option(
            "--ml-mark-delete-max-rate",
            "-r",
            help="Mark-delete operations per second (stored, not applied yet); 0: no limit.",
        ),
    ] = 0.0,
) -> None:
    """Set the ensemble and quorums of the namespace's new ledgers. Example: -e 3 -w 3 -a 2"""
    policy = _persistence(ensemble, write_quorum, ack_quorum, mark_delete_rate)
    call(ctx, lambda a: a.set_persistence(namespace, policy))


@namespaces.command("get-persistence")
def ns_get_persistence(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show the persistence policy of a namespace (not set: the broker's defaults apply)."""
    value = call(ctx, lambda a: a.get_persistence(namespace))
    _emit_policy(ctx, value)


@namespaces.command("remove-persistence")
def ns_remove_persistence(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Remove the namespace's persistence policy (the broker's defaults apply)."""
    call(ctx, lambda a: a.remove_persistence(namespace))


# ------------------------------------------------------------------ message TTL


@namespaces.command("set-message-ttl")
def ns_set_ttl(
    ctx: typer.Context,
    namespace: NamespaceArg,
    ttl: Annotated[
        str, typer.Option("--ttl", "--messageTTL", help="Time to live: 120, 10m, 1h, 2d.")
    ],
) -> None:
    """Expire unacknowledged messages older than the TTL. Example: --ttl 1h"""
    seconds = usage_value(parse_duration_s, ttl, "--ttl")
    call(ctx, lambda a: a.set_message_ttl(namespace, seconds))


@namespaces.command("get-message-ttl")
def ns_get_ttl(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show the message TTL of a namespace, in seconds."""
    value = call(ctx, lambda a: a.get_message_ttl(namespace))
    emit(ctx, value, lambda: NOT_SET if value is None else str(value))


@namespaces.command("remove-message-ttl")
def ns_remove_ttl(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Remove the namespace's message TTL."""
    call(ctx, lambda a: a.remove_message_ttl(namespace))


# ------------------------------------------------------------------ compaction threshold


@namespaces.command("set-compaction-threshold")
def ns_set_compaction_threshold(
    ctx: typer.Context,
    namespace: NamespaceArg,
    threshold: Annotated[
        str,
        typer.Option(
            "--threshold", "-t", help="Backlog size that starts a compaction: 100M, 1G; 0 for none."
        ),
    ],
) -> None:
    """Compact topics automatically once this much is published after the last compaction.
    Example: -t 100M"""
    size = usage_value(parse_size_bytes, threshold, "--threshold")
    call(ctx, lambda a: a.set_compaction_threshold(namespace, size))


@namespaces.command("get-compaction-threshold")
def ns_get_compaction_threshold(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show the compaction threshold of a namespace, in bytes."""
    value = call(ctx, lambda a: a.get_compaction_threshold(namespace))
    emit(ctx, value, lambda: NOT_SET if value is None else str(value))


@namespaces.command("remove-compaction-threshold")
def ns_remove_compaction_threshold(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Remove the namespace's compaction threshold (the broker default applies)."""
    call(ctx, lambda a: a.remove_compaction_threshold(namespace))


# ------------------------------------------------------------------ backlog quotas


@namespaces.command("set-backlog-quota")
def ns_set_quota(
    ctx: typer.Context,
    namespace: NamespaceArg,
    limit: Annotated[
        str, typer.Option("--limit", "-l", help="Size limit: 10M, 16G; -1 for none.")
    ] = "-1",
    limit_time: Annotated[
        str, typer.Option("--limit-time", "--limitTime", help="Age limit: 10m, 1h, 2d; -1 none.")
    ] = "-1",
    policy: Annotated[
        str, typer.Option("--policy", "-p", help=f"One of {', '.join(BACKLOG_QUOTA_POLICIES)}.")
    ] = "producer_request_hold",
    quota_type: QuotaType = "destination_storage",
) -> None:
    """Limit the backlog. Example: -l 1G -p producer_exception"""
    size = usage_value(parse_size_bytes, limit, "--limit")
    seconds = usage_value(
        lambda t: parse_duration_s(t, allow_unlimited=True), limit_time, "--limit-time"
    )
    quota = BacklogQuota(size, seconds, policy)
    call(ctx, lambda a: a.set_backlog_quota(namespace, quota, quota_type))


@namespaces.command("get-backlog-quotas")
def ns_get_quotas(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show the backlog quotas of a namespace by type."""
    quotas = call(ctx, lambda a: a.get_backlog_quotas(namespace))
    rows = [
        (kind, format_size_bytes(q.limit_size), format_duration_s(q.limit_time), q.policy)
        for kind, q in quotas.items()
    ]
    emit(ctx, quotas, lambda: render_table(["TYPE", "LIMIT_SIZE", "LIMIT_TIME", "POLICY"], rows))


@namespaces.command("remove-backlog-quota")
def ns_remove_quota(
    ctx: typer.Context, namespace: NamespaceArg, quota_type: QuotaType = "destination_storage"
) -> None:
    """Remove one backlog quota of a namespace."""
    call(ctx, lambda a: a.remove_backlog_quota(namespace, quota_type))


# ------------------------------------------------------------------ switches

Enable = Annotated[
    bool, typer.Option("--enable/--disable", "-e/-d", help="Turn it on or off.", show_default=False)
]


@namespaces.command("set-deduplication")
def ns_set_dedup(ctx: typer.Context, namespace: NamespaceArg, enable: Enable) -> None:
    """Turn producer deduplication on or off. Example: --enable"""
    call(ctx, lambda a: a.set_deduplication(namespace, enable))


@namespaces.command("get-deduplication")
def ns_get_dedup(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show whether deduplication is set on the namespace."""
    value = call(ctx, lambda a: a.get_deduplication(namespace))
    emit(ctx, value, lambda: NOT_SET if value is None else str(value).lower())


@namespaces.command("set-delayed-delivery")
def ns_set_delayed(
    ctx: typer.Context,
    namespace: NamespaceArg,
    enable: Enable,
    tick: Annotated[
        str,
        typer.Option(
            "--time", "-t", help="Tick time: how late a delayed message may be (500ms, 1s)."
        ),
    ] = "1s",
    max_delay: Annotated[
        str,
        typer.Option(
            "--maxDelay", "--max-delay", "-md", help="Longest delay a producer may ask; 0: none."
        ),
    ] = "0",
) -> None:
    """Hold messages sent with deliver_at/deliver_after until their time (Shared and
    Key_Shared subscriptions). Example: --enable --time 1s --maxDelay 1d"""
    tick_ms = usage_value(parse_duration_ms, tick, "--time")
    max_ms = usage_value(parse_duration_ms, max_delay, "--maxDelay")
    if tick_ms < 1:
        raise typer.BadParameter("the tick time must be at least 1ms", param_hint="--time")
    policy = DelayedDeliveryPolicies(enable, tick_ms, max_ms)
    call(ctx, lambda a: a.set_delayed_delivery(namespace, policy))


@namespaces.command("get-delayed-delivery")
def ns_get_delayed(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show the namespace's delayed delivery policy (not set: the broker's defaults apply)."""
    value = call(ctx, lambda a: a.get_delayed_delivery(namespace))
    _emit_policy(ctx, value)


@namespaces.command("remove-delayed-delivery")
def ns_remove_delayed(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Remove the namespace's delayed delivery policy (the broker's defaults apply)."""
    call(ctx, lambda a: a.remove_delayed_delivery(namespace))


@namespaces.command("set-auto-topic-creation")
def ns_set_auto(
    ctx: typer.Context,
    namespace: NamespaceArg,
    enable: Enable,
    topic_type: Annotated[
        str, typer.Option("--type", "-t", help="partitioned or non-partitioned.")
    ] = "non-partitioned",
    num_partitions: Annotated[
        int | None,
        typer.Option("--num-partitions", "-n", help="Partitions of auto-created topics."),
    ] = None,
) -> None:
    """Allow or forbid creating topics on first use. Example: -e -t partitioned -n 4"""
    override = AutoTopicCreationOverride(enable, topic_type, num_partitions)
    call(ctx, lambda a: a.set_auto_topic_creation(namespace, override))


@namespaces.command("get-auto-topic-creation")
def ns_get_auto(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show the namespace's auto topic creation override."""
    value = call(ctx, lambda a: a.get_auto_topic_creation(namespace))
    _emit_policy(ctx, value)


@namespaces.command("remove-auto-topic-creation")
def ns_remove_auto(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Remove the override (the broker default applies)."""
    call(ctx, lambda a: a.remove_auto_topic_creation(namespace))


@namespaces.command("set-schema-compatibility-strategy")
def ns_set_schema(
    ctx: typer.Context,
    namespace: NamespaceArg,
    compatibility: Annotated[
        str,
        typer.Option("--compatibility", "-c", help="E.g. BACKWARD, FULL, ALWAYS_COMPATIBLE."),
    ],
) -> None:
    """Set how new schemas must relate to old ones. Example: -c BACKWARD"""
    call(ctx, lambda a: a.set_schema_compatibility_strategy(namespace, compatibility))


@namespaces.command("get-schema-compatibility-strategy")
def ns_get_schema(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show the schema compatibility strategy of a namespace."""
    value = call(ctx, lambda a: a.get_schema_compatibility_strategy(namespace))
    emit(ctx, value, lambda: value)


# ------------------------------------------------------------------ replication clusters


@namespaces.command("set-clusters")
def ns_set_clusters(
    ctx: typer.Context,
    namespace: NamespaceArg,
    clusters: Annotated[
        str, typer.Option("--clusters", "-c", help="Comma-separated cluster names.")
    ],
) -> None:
    """Replicate a namespace's topics between clusters. Example: -c us-west,us-east"""
    wanted = [c.strip() for c in clusters.split(",") if c.strip()]
    call(ctx, lambda a: a.set_replication_clusters(namespace, wanted))


@namespaces.command("get-clusters")
def ns_get_clusters(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """List the clusters a namespace is replicated to."""
    emit_names(ctx, call(ctx, lambda a: a.get_replication_clusters(namespace)))


# ------------------------------------------------------------------ permissions

Role = Annotated[str, typer.Option("--role", help="The client role.", show_default=False)]


@namespaces.command("grant-permission")
def ns_grant(
    ctx: typer.Context,
    namespace: NamespaceArg,
    role: Role,
    actions: Annotated[
        str, typer.Option("--actions", help="Comma-separated: produce, consume, functions, ...")
    ],
) -> None:
    """Let a role act on a namespace. Example: --role app --actions produce,consume"""
    wanted = [a.strip() for a in actions.split(",") if a.strip()]
    call(ctx, lambda a: a.grant_permission(namespace, role, wanted))


@namespaces.command("revoke-permission")
def ns_revoke(ctx: typer.Context, namespace: NamespaceArg, role: Role) -> None:
    """Take all of a role's permissions on a namespace away."""
    call(ctx, lambda a: a.revoke_permission(namespace, role))


@namespaces.command("permissions")
def ns_permissions(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show the roles granted on a namespace and their actions."""
    grants = call(ctx, lambda a: a.get_permissions(namespace))
    rows = [(role, actions) for role, actions in sorted(grants.items())]
    emit(ctx, grants, lambda: render_table(["ROLE", "ACTIONS"], rows))


# ------------------------------------------------------------------ bundles


@namespaces.command("bundles")
def ns_bundles(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """List the bundles (hash ranges) of a namespace."""
    value = call(ctx, lambda a: a.get_bundles(namespace))
    emit(ctx, value, lambda: "\n".join(value.bundles))


@namespaces.command("split-bundle")
def ns_split_bundle(
    ctx: typer.Context,
    namespace: NamespaceArg,
    bundle: BundleOpt,
    unload: Annotated[
        bool, typer.Option("--unload", "-u", help="Unload the two halves after the split.")
    ] = False,
    algorithm: Annotated[
        str | None,
        typer.Option(
            "--split-algorithm-name",
            help="range_equally_divide (default) or topic_count_equally_divide.",
        ),
    ] = None,
) -> None:
    """Split one bundle in two. Example: -b 0x00000000_0x40000000 --unload"""
    call(
        ctx,
        lambda a: a.split_namespace_bundle(namespace, bundle, unload=unload, algorithm=algorithm),
    )


@namespaces.command("unload")
def ns_unload(
    ctx: typer.Context,
    namespace: NamespaceArg,
    bundle: Annotated[
        str | None, typer.Option("--bundle", "-b", help="Only this bundle (default: all).")
    ] = None,
) -> None:
    """Unload a namespace's bundles (or one): their topics move on the next lookup."""
    if bundle is None:
        call(ctx, lambda a: a.unload_namespace(namespace))
    else:
        call(ctx, lambda a: a.unload_namespace_bundle(namespace, bundle))
