"""The event-loop adapter: asyncio's default, uvloop's loop, a clear error otherwise."""

from __future__ import annotations

import asyncio

import pytest

from magnetar.cli.event_loop import loop_factory


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
