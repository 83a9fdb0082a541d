"""``magnetar admin``: pulsar-admin's everyday verbs over the admin REST v2 API.

``magnetar admin [--admin-url URL] [--json] GROUP VERB ...`` with the groups ``clusters`` and
``tenants`` (here), ``namespaces`` (:mod:`magnetar.cli.admin_namespaces_cmd`), ``topics``
(:mod:`magnetar.cli.admin_topics_cmd`), ``brokers`` and ``broker-stats``
(:mod:`magnetar.cli.admin_brokers_cmd`), ``bookies`` (:mod:`magnetar.cli.admin_bookies_cmd`).
Works against Magnetar or Apache Pulsar. Success prints the answer (a table, or JSON with
``--json``) or nothing for a change; a failure prints
``error: <reason> (HTTP <status>)`` on stderr and exits 1; a bad argument exits 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from magnetar.cli import (
    admin_bookies_cmd,
    admin_brokers_cmd,
    admin_namespaces_cmd,
    admin_schemas_cmd,
    admin_topics_cmd,
)
from magnetar.cli.admin_session import AdminOptions, ForceOpt, call, emit_fields, emit_names
from magnetar.cli.tool_session import (
    AuthTokenFileOpt,
    TlsAllowInsecureOpt,
    TlsCertificateOpt,
    TlsHostnameOpt,
    TlsKeyOpt,
    TlsTrustCertsOpt,
    auth_token_of,
    tls_options,
)
from magnetar.client.admin_models import DEFAULT_WEB_SERVICE_URL
from magnetar.policies import ClusterData, TenantInfo

if TYPE_CHECKING:
    from magnetar.client.admin import AdminClient

admin = typer.Typer(
    help="Administer clusters, tenants, namespaces and topics (like pulsar-admin).",
    no_args_is_help=True,
)
clusters = typer.Typer(help="Clusters known to the metadata store.", no_args_is_help=True)
tenants = typer.Typer(help="Tenants: list, inspect, create, update, delete.", no_args_is_help=True)
admin.add_typer(clusters, name="clusters")
admin.add_typer(tenants, name="tenants")
admin.add_typer(admin_namespaces_cmd.namespaces, name="namespaces")
admin.add_typer(admin_topics_cmd.topics, name="topics")
admin.add_typer(admin_schemas_cmd.schemas, name="schemas")
admin.add_typer(admin_brokers_cmd.brokers, name="brokers")
admin.add_typer(admin_brokers_cmd.broker_stats, name="broker-stats")
admin.add_typer(admin_bookies_cmd.bookies, name="bookies")


@admin.callback()
def admin_options(
    ctx: typer.Context,
    admin_url: Annotated[
        str,
        typer.Option(
            "--admin-url",
            envvar="MAGNETAR_ADMIN_URL",
            help="The broker's or proxy's admin HTTP URL.",
        ),
    ] = DEFAULT_WEB_SERVICE_URL,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print answers as JSON (for scripts).")
    ] = False,
    auth_token: Annotated[
        str | None,
        typer.Option(
            "--auth-token", envvar="MAGNETAR_AUTH_TOKEN", help="A JWT sent as a Bearer token."
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Deadline of each call, in seconds.")] = 30.0,
    auth_token_file: AuthTokenFileOpt = None,
    tls_trust_certs_file_path: TlsTrustCertsOpt = None,
    tls_certificate_file_path: TlsCertificateOpt = None,
    tls_key_file_path: TlsKeyOpt = None,
    tls_allow_insecure_connection: TlsAllowInsecureOpt = False,
    tls_hostname_verification: TlsHostnameOpt = True,
) -> None:
    """Administer clusters, tenants, namespaces and topics (like pulsar-admin)."""
    token = auth_token_of(auth_token, auth_token_file)
    tls = tls_options(
        tls_trust_certs_file_path,
        tls_certificate_file_path,
        tls_key_file_path,
        tls_allow_insecure_connection,
        tls_hostname_verification,
    )
    ctx.obj = AdminOptions(admin_url, json_output, token, timeout, tls)


Name = Annotated[str, typer.Argument(help="Its name.", show_default=False)]


# ------------------------------------------------------------------ clusters


@clusters.command("list")
def clusters_list(ctx: typer.Context) -> None:
    """List the clusters' names."""
    emit_names(ctx, call(ctx, lambda a: a.list_clusters()))


@clusters.command("get")
def clusters_get(ctx: typer.Context, cluster: Name) -> None:
    """Show a cluster's service URLs."""
    emit_fields(ctx, call(ctx, lambda a: a.get_cluster(cluster)))


ServiceUrl = Annotated[
    str | None,
    typer.Option(
        "--url", help="The cluster's web service URL (http://host:8080).", show_default=False
    ),
]
BrokerUrl = Annotated[
    str | None,
    typer.Option(
        "--broker-url",
        help="The cluster's binary service URL (pulsar://host:6650).",
        show_default=False,
    ),
]


AuthPlugin = Annotated[
    str | None,
    typer.Option(
        "--auth-plugin",
        help="How this cluster's geo-replicators authenticate to it: token (or Pulsar's "
        "org.apache.pulsar.client.impl.auth.AuthenticationToken).",
        show_default=False,
    ),
]
AuthParameters = Annotated[
    str | None,
    typer.Option(
        "--auth-parameters",
        help="The credential for --auth-plugin: token:<jwt> or file:///path (a path on the "
        "brokers). Stored, never shown by `clusters get`.",
        show_default=False,
    ),
]


def _cluster_data(
    url: str | None,
    broker_url: str | None,
    auth_plugin: str | None = None,
    auth_parameters: str | None = None,
) -> ClusterData:
    if url is None and broker_url is None:
        raise typer.BadParameter("give --url, --broker-url or both")
    if bool(auth_plugin) != bool(auth_parameters):
        raise typer.BadParameter("give --auth-plugin and --auth-parameters together")
    return ClusterData(
        service_url=url,
        broker_service_url=broker_url,
        authentication_plugin=auth_plugin,
        authentication_parameters=auth_parameters,
    )


@clusters.command("create")
def clusters_create(
    ctx: typer.Context,
    cluster: Name,
    url: ServiceUrl = None,
    broker_url: BrokerUrl = None,
    auth_plugin: AuthPlugin = None,
    auth_parameters: AuthParameters = None,
) -> None:
    """Register a cluster. Example: us-east --url http://e:8080 --broker-url pulsar://e:6650"""
    data = _cluster_data(url, broker_url, auth_plugin, auth_parameters)
    call(ctx, lambda a: a.create_cluster(cluster, data))


@clusters.command("update")
def clusters_update(
    ctx: typer.Context,
    cluster: Name,
    url: ServiceUrl = None,
    broker_url: BrokerUrl = None,
    auth_plugin: AuthPlugin = None,
    auth_parameters: AuthParameters = None,
) -> None:
    """Replace a cluster's service URLs (and its credential: omitted, it is cleared)."""
    data = _cluster_data(url, broker_url, auth_plugin, auth_parameters)
    call(ctx, lambda a: a.update_cluster(cluster, data))


@clusters.command("delete")
def clusters_delete(ctx: typer.Context, cluster: Name) -> None:
    """Forget a cluster."""
    call(ctx, lambda a: a.delete_cluster(cluster))


# ------------------------------------------------------------------ tenants

AdminRoles = Annotated[
    str | None,
    typer.Option("--admin-roles", "-r", help="Comma-separated admin roles.", show_default=False),
]
AllowedClusters = Annotated[
    str | None,
    typer.Option(
        "--allowed-clusters",
        "-c",
        help="Comma-separated clusters the tenant may use (create: all clusters if omitted).",
        show_default=False,
    ),
]


def _split(text: str | None) -> frozenset[str]:
    return frozenset(p.strip() for p in (text or "").split(",") if p.strip())


@tenants.command("list")
def tenants_list(ctx: typer.Context) -> None:
    """List the tenants' names."""
    emit_names(ctx, call(ctx, lambda a: a.list_tenants()))


@tenants.command("get")
def tenants_get(ctx: typer.Context, tenant: Name) -> None:
    """Show a tenant's admin roles and allowed clusters."""
    emit_fields(ctx, call(ctx, lambda a: a.get_tenant(tenant)))


@tenants.command("create")
def tenants_create(
    ctx: typer.Context,
    tenant: Name,
    admin_roles: AdminRoles = None,
    allowed_clusters: AllowedClusters = None,
) -> None:
    """Create a tenant. Example: magnetar admin tenants create acme -c standalone"""

    async def create(a: AdminClient) -> None:
        allowed = _split(allowed_clusters) or frozenset(await a.list_clusters())
        await a.create_tenant(tenant, TenantInfo(_split(admin_roles), allowed))

    call(ctx, create)


@tenants.command("update")
def tenants_update(
    ctx: typer.Context,
    tenant: Name,
    admin_roles: AdminRoles = None,
    allowed_clusters: AllowedClusters = None,
) -> None:
    """Change a tenant's admin roles and/or allowed clusters (what is not given is kept)."""

    async def update(a: AdminClient) -> None:
        info = await a.get_tenant(tenant)
        roles = info.admin_roles if admin_roles is None else _split(admin_roles)
        allowed = info.allowed_clusters if allowed_clusters is None else _split(allowed_clusters)
        await a.update_tenant(tenant, TenantInfo(roles, allowed))

    call(ctx, update)


@tenants.command("delete")
def tenants_delete(ctx: typer.Context, tenant: Name, force: ForceOpt = False) -> None:
    """Delete a tenant (with --force also its namespaces and their topics)."""
    call(ctx, lambda a: a.delete_tenant(tenant, force=force))
