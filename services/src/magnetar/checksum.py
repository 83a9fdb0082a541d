"""CRC-32C arithmetic: the checksum of joined bytes from the checksums of their parts.

The bookie checksums every payload twice with different heads in front (the journal record's
and the entry-log record's), and ``crc32c(head + payload)`` needs a pass over the payload each
time. With the payload's own checksum taken once, each seeded checksum follows from it:

    crc32c(a + b) == crc32c_combine(crc32c(a), crc32c(b), len(b))

as zlib's ``crc32_combine`` does for CRC-32: ``crc32c(a)`` is multiplied by x^(8 len(b)) modulo
the Castagnoli polynomial (bit-reflected, as the checksum is) and added to ``crc32c(b)``. The
cost does not grow with the length of ``b``, only with the number of bits set in it.

Pure integer code, compiled with mypyc ([tool.magnetar.mypyc]): about 0.1-0.5 us a combine
compiled against about 7 us interpreted, while a pass of ``crc32c`` over 16 KiB takes 0.7 us
(docs/benchmarks.md, "Per-message costs"). :data:`COMBINE_FROM` is the payload length from
which combining is the cheaper way, in the build that is running.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from mypy_extensions import i64  # native 64-bit ints when compiled; plain int otherwise

# The ``gil_release_mode`` to pass ``crc32c.crc32c``: never release the GIL. The package
# releases it from 32 KiB on by default, which costs more than it gives on the event loop and
# on the journal's writer: the checksum takes microseconds, and taking the GIL back waits for
# whichever thread took it meanwhile, up to the switch interval. Beside a thread spinning in
# Python, a 128 KiB checksum took 64-74 us releasing the GIL and 9-10 us holding it with the
# broker's 0.2 ms interval (python -m tests.bench.gil_checksum; docs/benchmarks.md, "Issue 17,
# session 15").
KEEP_GIL: Final = 0

_POLY: Final = 0x82F63B78  # Castagnoli, bit-reflected
_ONE: Final = 1 << 31  # the polynomial 1 in the reflected representation


def _multiply(a: i64, b: i64) -> i64:
    """a * b modulo the polynomial (both reflected, 32 bits)."""
    bit: i64 = _ONE
    product: i64 = 0
    while True:
        if a & bit:
            product ^= b
            if a & (bit - 1) == 0:
                return product
        bit >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


def _squares() -> list[i64]:
    """x^(2^k) for k = 0..31 (x itself is 1 << 30 reflected)."""
    out: list[i64] = []
    power: i64 = 1 << 30
    for _ in range(32):
        out.append(power)
        power = _multiply(power, power)
    return out


_SQUARES: Final = _squares()


def _shift_of(length: i64) -> i64:
    """x^(8 * length): what appending ``length`` bytes multiplies a checksum by."""
    power: i64 = _ONE
    k: i64 = 3  # 8 = 2^3
    while length:
        if length & 1:
            power = _multiply(_SQUARES[k & 31], power)
        length >>= 1
        k += 1
    return power


def crc32c_combine(crc1: i64, crc2: i64, len2: i64) -> i64:
    """``crc32c(a + b)`` from ``crc1 = crc32c(a)``, ``crc2 = crc32c(b)`` and ``len2 = len(b)``."""
    if len2 <= 0:
        return crc1
    return _multiply(_shift_of(len2), crc1) ^ crc2


# Interpreted, a combine costs what a pass over about 200 KiB does; compiled, what a pass over
# a few KiB does (payloads read back cold from memory make the pass dearer still).
COMBINE_FROM: Final[int] = 256 * 1024 if __file__.endswith(".py") else 8 * 1024
