"""The bookies of the cluster in the admin API: list, under-replicated ledgers, decommission.

Pulsar's ``/admin/v2/bookies/all`` shape, plus Magnetar's decommission resource (the contract
the Kubernetes operator's safe scale-down codes against):

- ``GET /admin/v2/bookies/all`` -> ``{"bookies": [{"bookieId", "address", "rack", "readOnly",
  "available", "decommissioning"}, ...]}``: every bookie that registered at least once;
- ``GET /admin/v2/bookies/underreplicated`` -> ``{"count": N, "ledgers": [{"ledgerId",
  "missingBookies"}, ...]}``: the auditor's marks;
- ``POST /admin/v2/bookies/{bookieId}/decommission`` -> 202 (idempotent; 404 with a reason for a
  bookie that never registered);
- ``GET /admin/v2/bookies/{bookieId}/decommission`` -> ``{"bookieId", "state"
  (InProgress|Done|Failed), "ledgersRemaining", "message"}``; 404 when none was requested;
- ``DELETE /admin/v2/bookies/{bookieId}/decommission`` -> 204: cancel it (404 when none).

The work is :class:`~magnetar.autorecovery.BookieAdmin`'s (metadata reads and one create);
errors map to statuses through THE table in :mod:`magnetar.admin.errors`. Handlers run on the
broker's loop.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from magnetar.autorecovery import BookieAdmin
from magnetar.ids import BookieId

ACCEPTED = 202
NO_CONTENT = 204


def router(admin: BookieAdmin) -> APIRouter:
    api = APIRouter(prefix="/admin/v2/bookies", tags=["bookies"])

    @api.get("/all", summary="Every bookie of the cluster")
    async def all_bookies() -> dict[str, Any]:
        return {"bookies": [b.to_json() for b in await admin.bookies()]}

    @api.get("/underreplicated", summary="Ledgers marked under-replicated")
    async def under_replicated() -> dict[str, Any]:
        marks = await admin.under_replicated()
        return {
            "count": len(marks),
            "ledgers": [
                {"ledgerId": m.ledger_id, "missingBookies": list(m.missing)} for m in marks
            ],
        }

    @api.post(
        "/{bookie_id}/decommission",
        summary="Decommission a bookie: move everything it holds elsewhere",
        status_code=ACCEPTED,
        response_class=Response,
    )
    async def decommission(bookie_id: str) -> Response:
        await admin.decommission(BookieId(bookie_id))
        return Response(status_code=ACCEPTED)

    @api.delete(
        "/{bookie_id}/decommission",
        summary="Cancel a bookie's decommission",
        status_code=NO_CONTENT,
        response_class=Response,
    )
    async def cancel_decommission(bookie_id: str) -> Response:
        await admin.cancel_decommission(BookieId(bookie_id))
        return Response(status_code=NO_CONTENT)

    @api.get("/{bookie_id}/decommission", summary="A bookie's decommission status")
    async def decommission_status(bookie_id: str) -> dict[str, object]:
        return (await admin.decommission_status(BookieId(bookie_id))).to_json()

    return api
