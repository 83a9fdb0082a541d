"""``magnetar admin schemas ...``: a topic's schemas, as pulsar-admin's ``schemas`` verbs.

``get`` prints the latest version (``--version N``: one version, ``--all-versions``: all since
the last deletion) as JSON; ``upload`` takes a file in pulsar-admin's format
``{"type": "AVRO", "schema": "<definition>", "properties": {}}`` and prints the version the
schema got; ``delete`` marks the schema deleted (``--force``: removes the whole history);
``compatibility`` says whether the topic would accept a file's schema.
Wiring only; see :mod:`magnetar.cli.admin_cmd` for the output and exit-code rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from magnetar.cli.admin_session import ForceOpt, TopicArg, call, emit

if TYPE_CHECKING:
    from magnetar.client.admin import AdminClient

schemas = typer.Typer(help="A topic's schemas (get, upload, delete).", no_args_is_help=True)

SchemaFile = Annotated[
    Path,
    typer.Option(
        "--filename",
        "-f",
        help='A JSON file {"type": "AVRO", "schema": "<definition>", "properties": {}}.',
        show_default=False,
    ),
]


def _payload(path: Path) -> dict[str, Any]:
    """The upload file, or a usage error that names the file and what is wrong."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint="-f") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise typer.BadParameter(f"{path} is not JSON: {exc}", param_hint="-f") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("type"), str):
        raise typer.BadParameter(
            f'{path} must hold {{"type": ..., "schema": ..., "properties": ...}}',
            param_hint="-f",
        )
    if not isinstance(doc.get("schema", ""), str):  # pulsar-admin's files carry it as text
        doc["schema"] = json.dumps(doc["schema"])
    return doc


@schemas.command("get")
def schemas_get(
    ctx: typer.Context,
    topic: TopicArg,
    version: Annotated[
        int | None, typer.Option("--version", help="One version instead of the latest.")
    ] = None,
    all_versions: Annotated[
        bool, typer.Option("--all-versions", help="Every version since the last deletion.")
    ] = False,
) -> None:
    """Print a topic's schema. Example: magnetar admin schemas get acme/orders/in"""
    if all_versions:
        emit(ctx, call(ctx, lambda a: a.get_all_schemas(topic)))
        return

    async def get(a: AdminClient) -> Any:
        return await a.get_schema(topic, version)

    emit(ctx, call(ctx, get))


@schemas.command("upload")
def schemas_upload(ctx: typer.Context, topic: TopicArg, filename: SchemaFile) -> None:
    """Upload a schema file. Example: magnetar admin schemas upload acme/orders/in -f user.json"""
    payload = _payload(filename)
    version = call(ctx, lambda a: a.upload_schema(topic, payload))
    emit(ctx, {"version": version}, lambda: f"version {version}")


@schemas.command("delete")
def schemas_delete(ctx: typer.Context, topic: TopicArg, force: ForceOpt = False) -> None:
    """Delete a topic's schema (--force: its whole history)."""
    version = call(ctx, lambda a: a.delete_schema(topic, force=force))
    emit(ctx, {"version": version}, lambda: "" if version is None else f"version {version}")


@schemas.command("compatibility")
def schemas_compatibility(ctx: typer.Context, topic: TopicArg, filename: SchemaFile) -> None:
    """Would the topic accept this schema file under its compatibility strategy?"""
    payload = _payload(filename)
    emit(ctx, call(ctx, lambda a: a.test_schema_compatibility(topic, payload)))
