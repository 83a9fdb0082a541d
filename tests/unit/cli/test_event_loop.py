"""The event-loop adapter: asyncio's default, uvloop's loop, a clear error otherwise."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from magnetar.broker.settings import BrokerSettings
from magnetar.cli.event_loop import loop_factory
from magnetar.standalone.settings import StandaloneSettings


def test_asyncio_is_the_default_loop() -> None:
    assert loop_factory("asyncio") is None


def test_uvloop_runs_asyncio_code() -> None:
    factory = loop_factory("uvloop")
    assert factory is not None

    async def work() -> str:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop()).__module__

    with asyncio.Runner(loop_factory=factory) as runner:
        assert runner.run(work()).startswith("uvloop")


def test_an_unknown_loop_is_named() -> None:
    with pytest.raises(ValueError, match="'trio'"):
        loop_factory("trio")


@pytest.mark.parametrize("settings", [BrokerSettings, StandaloneSettings])
def test_the_settings_refuse_an_unknown_loop_by_name(settings: type[BrokerSettings]) -> None:
    # run_server turns this into "magnetar: event_loop: ..." and exit code 2.
    with pytest.raises(ValidationError, match="event_loop"):
        settings(event_loop="trio")  # type: ignore[arg-type]
