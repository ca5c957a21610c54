"""Chat channels: the operator's pairing codes and list of paired people, and Slack's Events API
(`POST /channels/slack/NAME/events`, proven by the app's request signature, not a bearer token)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from agent_runtime.protocol import ErrorBody
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.conversations import PairingCode, Person
from orchestrator.conversations.router import PairingRefused
from orchestrator.conversations.slack import SlackRefused

router = APIRouter(tags=["channels"])


class PairingIn(BaseModel):
    agent: str | None = None


@router.post("/api/v1/channels/{channel}/pairings", status_code=201)
async def issue_pairing(channel: str, body: PairingIn, _: OperatorDep, services: ServicesDep) -> PairingCode:
    """A one-time code for one person: sent to the channel's bot, it pairs its sender."""
    try:
        return services.conversations.pair_code(channel, body.agent)
    except PairingRefused as refused:
        raise ApiError(404, "not_found", str(refused)) from None


@router.get("/api/v1/channels/people")
async def list_people(
    _: OperatorDep,
    services: ServicesDep,
    channel: Annotated[str | None, Query(description="only this channel's")] = None,
) -> list[Person]:
    """The people paired with the fleet's chat channels."""
    return services.conversations.people.people(channel)


@router.delete("/api/v1/channels/{channel}/people/{user_id}")
async def unpair(channel: str, user_id: str, _: OperatorDep, services: ServicesDep) -> dict[str, bool]:
    """Take a person off the channel's allow-list: their next message is refused."""
    if not services.conversations.people.unpair(channel, user_id):
        raise ApiError(404, "not_found", f"no person {user_id!r} paired with channel {channel}")
    return {"unpaired": True}


@router.post(
    "/channels/slack/{channel}/events",
    responses={401: {"model": ErrorBody, "description": "missing, wrong or stale signature"}},
)
async def slack_events(channel: str, request: Request, services: ServicesDep) -> Any:
    """Slack's Events API: the url_verification challenge answered, a message handed on."""
    body = await request.body()
    headers = {name.lower(): value for name, value in request.headers.items()}
    try:
        return services.slack.receive(channel, headers, body).body
    except SlackRefused as refused:
        error = ErrorBody(error=refused.code, message=refused.message)
        return JSONResponse(error.model_dump(), status_code=refused.status)
