"""Micro-benchmark: what an idle gap before it does to the cost of the same piece of code.

Usage::

    python -m tests.bench.idle_gap_cost [--calls 2000] [--gaps 0,0.2,1,5]

Decodes one official-client-like SEND frame (1 KiB payload) with the broker's
:class:`~magnetar.protocol.frame.FrameDecoder`, ``--calls`` times per gap, sleeping the gap (in
milliseconds) before each call, and prints the thread CPU time of one decode, p50 and mean.
With no gap the decoder's code and data stay in the core's caches and branch predictors; after
a sleep the thread runs again on a core that did something else meanwhile (on a VM, perhaps
another guest). The ratio between the rows is what a paced load pays on this machine for every
message whose work starts after a wake-up, beside what the same work costs at full speed: why
the broker's CPU per message at 5,000 msg/s is several times its full-speed figure (the
figures are in docs/benchmarks.md, "Issue 17, session 11"). Not a test.
"""

from __future__ import annotations

import argparse
import time

from magnetar.protocol import commands
from magnetar.protocol.frame import FrameDecoder, encode_payload_command
from magnetar.wire import pulsar_api_pb2 as pb
from tests.bench.report import header, percentile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=2000, help="decodes per gap")
    parser.add_argument("--gaps", default="0,0.2,1,5", help="idle gaps in ms, comma-separated")
    args = parser.parse_args()
    print(header(vars(args)), flush=True)
    metadata = pb.MessageMetadata(
        producer_name="standalone-0-12", sequence_id=12345, publish_time=1_733_000_000_000
    )
    frame = encode_payload_command(commands.send(1, 12345), metadata, b"x" * 1024)
    decoder = FrameDecoder()
    for gap_ms in (float(gap) for gap in args.gaps.split(",")):
        costs: list[float] = []
        for _ in range(args.calls):
            if gap_ms:
                time.sleep(gap_ms / 1000)
            started = time.thread_time_ns()
            decoder.feed(frame)
            for _decoded in decoder.frames():
                pass
            costs.append((time.thread_time_ns() - started) / 1000)
        costs.sort()
        mean = sum(costs) / len(costs)
        print(
            f"gap {gap_ms:5.1f} ms: one decode p50 {percentile(costs, 0.5):6.1f} us"
            f"  mean {mean:6.1f} us",
            flush=True,
        )


if __name__ == "__main__":
    main()
