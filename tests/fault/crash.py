"""The fault injector of the broker crash tests: a seed, and kill -9 of a standalone at a seeded
moment (holds no tests).

:func:`fault_rng` takes the seed from ``MAGNETAR_FAULT_SEED`` or draws one, and prints it, so a
failing run can be repeated exactly (pytest shows captured output on failure).
:func:`kill_and_restart` is the crash: SIGKILL (no shutdown at all, sends possibly in flight)
and a restart on the same data dir and ports. The *moment* is the test's to draw from the rng:
after how many acknowledged sends, or between which steps of the workload.
"""

from __future__ import annotations

import os
import random

from tests.kit.standalone import StandaloneProcess


def fault_rng() -> tuple[int, random.Random]:
    seed = int(os.environ.get("MAGNETAR_FAULT_SEED", random.randrange(2**32)))
    print(f"MAGNETAR_FAULT_SEED={seed}")
    return seed, random.Random(seed)


def kill_and_restart(process: StandaloneProcess) -> None:
    """SIGKILL ``process`` and start it again on the same data dir (waits until ready)."""
    process.kill()
    process.start()
