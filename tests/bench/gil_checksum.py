"""Benchmark: a crc32c checksum on a thread that shares the GIL with a busy one (not a test).

Usage::

    python -m tests.bench.gil_checksum [--kib 128] [--seconds 0.2] [--rounds 3]

The ``crc32c`` package releases the GIL for a buffer of 32 KiB or more unless told not to
(``gil_release_mode``); ``magnetar.checksum.KEEP_GIL`` tells it not to. This script has one
thread spin in Python (as the journal's writer does between its system calls) while the main
thread checksums ``--kib`` KiB as often as it can for ``--seconds``, with the GIL held and
released, at CPython's 5 ms switch interval and at the broker's 0.2 ms
(``gil_switch_interval_ms``), and prints the checksums done and the wall time per checksum.
Released, each checksum hands the GIL to the spinner and waits up to a switch interval for
it back. The figures go to docs/benchmarks.md ("Issue 17, session 15"). They depend on the
set-up: a spinner started afresh for each burst of checksums shares the GIL differently.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import crc32c

from magnetar.checksum import KEEP_GIL
from tests.bench.report import header

_RELEASE_FROM_32_KIB = -1  # the package's default gil_release_mode


def one_run(data: bytes, mode: int, seconds: float) -> int:
    """Checksums of ``data`` done in ``seconds`` beside a spinning thread."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    spinner = threading.Thread(target=spin)
    spinner.start()
    time.sleep(0.01)  # the spinner is running
    done = 0
    started = time.perf_counter()
    try:
        while time.perf_counter() - started < seconds:
            crc32c.crc32c(data, 0, mode)
            done += 1
    finally:
        stop.set()
        spinner.join()
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kib", type=int, default=128, help="bytes checksummed, KiB")
    parser.add_argument("--seconds", type=float, default=0.2, help="length of one run")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds")
    args = parser.parse_args()
    print(header(vars(args)), flush=True)
    data = os.urandom(args.kib * 1024)
    for interval_ms in (5.0, 0.2):
        sys.setswitchinterval(interval_ms / 1000)
        for round_ in range(1, args.rounds + 1):
            for label, mode in (("held", KEEP_GIL), ("released", _RELEASE_FROM_32_KIB)):
                done = one_run(data, mode, args.seconds)
                print(
                    f"switch interval {interval_ms:>3} ms  round {round_}  GIL {label:<8} "
                    f"{done:>7} checksums, {args.seconds / done * 1e6:8.1f} us each",
                    flush=True,
                )


if __name__ == "__main__":
    main()
