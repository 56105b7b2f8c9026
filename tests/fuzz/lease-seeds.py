#!/usr/bin/env python3
"""Seeds of fuzz_handler for lease fencing (common/predicates.h's
bft_fenced), written by hand since no recorded workload stores under a
generation below one the server holds: a new holder's claim in a lease
register, then an old holder's STORE and COMPLETE of a block and of the
register (refused), then the new holder's (taken).

    lease-seeds.py OUTDIR

Each seed is [flags 0x0b: HELLO made to match, MACs made valid, replay
checked] and frames of 4-byte big-endian length and msgpack body
(common/wire.h), named by its SHA-1 as libFuzzer names its inputs.
"""
import hashlib
import os
import struct
import sys

N = 4
LEASES = (1 << 24) - 1          # BFT_VOL_LEASES
GEN_SHIFT = 40                  # BFT_GEN_SHIFT


def mp(v):
    """The msgpack of an int, bytes or list (what the wire uses)."""
    if isinstance(v, bytes):
        if len(v) < 256:
            return b"\xc4" + bytes([len(v)]) + v
        return b"\xc5" + struct.pack(">H", len(v)) + v
    if isinstance(v, list):
        assert len(v) < 16
        return bytes([0x90 | len(v)]) + b"".join(mp(x) for x in v)
    assert v >= 0
    if v < 128:
        return bytes([v])
    if v < 1 << 8:
        return b"\xcc" + bytes([v])
    if v < 1 << 16:
        return b"\xcd" + struct.pack(">H", v)
    if v < 1 << 32:
        return b"\xce" + struct.pack(">I", v)
    return b"\xcf" + struct.pack(">Q", v)


def frame(body):
    b = mp(body)
    return struct.pack(">I", len(b)) + b


def ts(gen, seq, wid):
    return [(gen << GEN_SHIFT) + seq, wid, bytes(16)]


def store(rid, block, t, seed):
    # A fragment and a cross-checksum that is not the zero value's.
    return frame([3, rid, block, t, bytes([seed]) * 32, bytes(16 * N),
                  bytes([seed + 1]) * (32 * N), bytes([seed]) * 64])


def complete(rid, block, t, seed):
    return frame([4, rid, block, t, bytes([seed]) * 32, bytes(16 * N)])


def hello():
    return frame([1, 1, 0, bytes(16), N, 1, 65536, 64, 1])


def main():
    out = sys.argv[1]
    reg = LEASES << 40              # volume 0's lease register
    new_claim, old_claim = ts(2, 1, 7), ts(1, 9, 5)
    old, new = ts(1, 4, 5), ts(2, 2, 7)
    seeds = [
        # The takeover: new claim, old holder's block write refused.
        hello() + store(2, reg, new_claim, 10) +
        store(3, 3, old, 20) + complete(4, 3, old, 20) +
        store(5, 3, new, 30) + complete(6, 3, new, 30) +
        complete(7, reg, new_claim, 10),
        # The old holder's renewal of its claim, after the new one.
        hello() + store(2, reg, new_claim, 10) +
        store(3, reg, old_claim, 11) + complete(4, reg, old_claim, 11) +
        complete(5, reg, new_claim, 10),
        # A write before the takeover completes late.
        hello() + store(2, 5, old, 40) + store(3, reg, new_claim, 10) +
        complete(4, 5, old, 40) + complete(5, reg, new_claim, 10),
    ]
    os.makedirs(out, exist_ok=True)
    for s in seeds:
        data = b"\x0b" + s
        name = hashlib.sha1(data).hexdigest()
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        print(name)


if __name__ == "__main__":
    main()
