#!/usr/bin/python3
"""Writes and checks tagged 64 KiB blocks through NBD, for the lease tests.

Each block written holds a header naming its writer's tag, a sequence
number and the block ("A seq=17 block=3"), then the tag's first letter
to the end, so a read tells whose write a block holds.

    fence-writer.py loop  --uri URI --tag A --log FILE [--blocks 8]
                          [--max-seconds 300]
        One thread and NBD connection per block, each rewriting its block
        with the next sequence number until SIGTERM (or --max-seconds).
        Every write goes to FILE as it ends, with CLOCK_MONOTONIC times
        (time.monotonic(), the clock cut-proxy.py logs too):
            ack BLOCK SEQ START END
            err BLOCK SEQ START END ERRNO MESSAGE   (ERRNO a name: EIO)
        A failed write is followed by 50 ms of rest, so that a writer
        whose every write fails at once does not fill the disk with them.

    fence-writer.py once  --uri URI --tag B [--blocks 8]
                          [--signal-pids P,P,... --signal-after S]
        Writes each block once, in order, then flushes; prints
        "first-ack T" as soon as the first write is acknowledged.  With
        --signal-pids it sends SIGUSR2 to those processes S seconds after
        that first acknowledgement (cut-proxy.py heals on it) and prints
        "signalled T", so the heal's offset does not depend on how soon
        a shell would have noticed the write.

    fence-writer.py burst --uri URI --tag L [--blocks 8] [--arm-pids P,...]
        Writes each block once, all at the same time (one connection,
        all requests in flight together), and prints an ack or err line
        for each as loop's log has them; exits 0 whatever the writes
        did.  With --arm-pids it first sends those processes SIGHUP
        (cut-proxy.py arms on it), once connected, so that the proxies
        see the writes' data and hold what follows.

    fence-writer.py check --uri URI --tag B [--blocks 8] [--want SPEC]
        Reads the blocks; prints each one's header; exits 1 unless every
        block is a whole write of TAG, or with --want, unless block i is
        what SPEC's i-th comma-separated item says: TAG (any write of
        TAG) or TAG:SEQ (that write).

Needs libnbd's Python module (Debian's python3-libnbd, for /usr/bin/python3).
"""
import argparse
import errno
import os
import signal
import sys
import threading
import time

import nbd

BS = 65536


def pattern(tag, seq, block):
    head = ("%s seq=%d block=%d\n" % (tag, seq, block)).encode()
    return head + tag[0].encode() * (BS - len(head))


def parse(data):
    """(tag, seq, block) of a block written by pattern(), or None."""
    head, sep, rest = data.partition(b"\n")
    try:
        tag, seq, block = head.decode().split(" ")
        seq = int(seq[len("seq="):])
        block = int(block[len("block="):])
    except (UnicodeDecodeError, ValueError):
        return None
    if not sep or data != pattern(tag, seq, block):
        return None
    return tag, seq, block


def errname(e):
    """An nbd.Error's errno as a name (EIO), whichever form it has."""
    code = e.errno
    if isinstance(code, int):
        code = errno.errorcode.get(code, str(code))
    return code or "-"


def connect(uri):
    h = nbd.NBD()
    h.connect_uri(uri)
    return h


def do_loop(args):
    stop = threading.Event()
    lock = threading.Lock()
    out = open(args.log, "a", buffering=1)
    deadline = time.monotonic() + args.max_seconds
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    def line(text):
        with lock:
            out.write(text + "\n")

    def worker(block):
        h = connect(args.uri)
        seq = 0
        while not stop.is_set() and time.monotonic() < deadline:
            seq += 1
            t0 = time.monotonic()
            try:
                h.pwrite(pattern(args.tag, seq, block), block * BS)
                line("ack %d %d %.6f %.6f" % (block, seq, t0,
                                              time.monotonic()))
            except nbd.Error as e:
                line("err %d %d %.6f %.6f %s %s" % (
                    block, seq, t0, time.monotonic(), errname(e),
                    (e.string or "").replace("\n", " ")))
                # A connection nbdkit closed takes no more writes.
                if h.aio_is_dead() or h.aio_is_closed():
                    return
                stop.wait(0.05)

    threads = [threading.Thread(target=worker, args=(b,), daemon=True)
               for b in range(args.blocks)]
    for t in threads:
        t.start()
    line("started %.6f" % time.monotonic())
    while any(t.is_alive() for t in threads) and not stop.is_set() and \
            time.monotonic() < deadline:
        stop.wait(0.1)
    stop.set()
    # A write held by a cut link ends within the plugin's I/O timeout.
    for t in threads:
        t.join(60)
    line("stopped %.6f" % time.monotonic())
    return 0


def do_once(args):
    h = connect(args.uri)
    first = None
    for block in range(args.blocks):
        h.pwrite(pattern(args.tag, 1, block), block * BS)
        if first is None:
            first = time.monotonic()
            print("first-ack %.6f" % first, flush=True)
            if args.signal_pids:
                pids = [int(p) for p in args.signal_pids.split(",")]
                threading.Thread(target=signal_later,
                                 args=(pids, first + args.signal_after),
                                 daemon=False).start()
    h.flush()
    print("written %.6f" % time.monotonic(), flush=True)
    h.shutdown()
    return 0


def do_burst(args):
    h = connect(args.uri)
    done = {}

    def finished(block, t0, err):
        # libnbd passes the request's errno in a one-element list.
        code = err.value if hasattr(err, "value") else err
        if isinstance(code, list):
            code = code[0]
        done[block] = (t0, time.monotonic(), code)
        return 1

    if args.arm_pids:
        for p in args.arm_pids.split(","):
            os.kill(int(p), signal.SIGHUP)
        # The proxies handle the signal in their event loops.
        time.sleep(0.05)
    # libnbd reads a buffer until its request completes: keep them.
    bufs = [pattern(args.tag, 1, b) for b in range(args.blocks)]
    for block in range(args.blocks):
        t0 = time.monotonic()
        h.aio_pwrite(bufs[block], block * BS,
                     completion=lambda err, b=block, t=t0:
                     finished(b, t, err))
    deadline = time.monotonic() + 120
    while len(done) < args.blocks and time.monotonic() < deadline:
        h.poll(1000)
    for block in range(args.blocks):
        if block not in done:
            print("err %d 1 - - TIMEDOUT no answer in 120 s" % block)
            continue
        t0, t1, code = done[block]
        if not code:
            print("ack %d 1 %.6f %.6f" % (block, t0, t1))
        else:
            print("err %d 1 %.6f %.6f %s" % (
                block, t0, t1, errno.errorcode.get(code, str(code))))
    return 0


def signal_later(pids, when):
    time.sleep(max(0.0, when - time.monotonic()))
    for p in pids:
        os.kill(p, signal.SIGUSR2)
    print("signalled %.6f" % time.monotonic(), flush=True)


def do_check(args):
    want = [args.tag] * args.blocks
    if args.want:
        want = args.want.split(",")
        if len(want) != args.blocks:
            raise SystemExit("--want names %d blocks, not %d"
                             % (len(want), args.blocks))
    h = connect(args.uri)
    bad = 0
    for block in range(args.blocks):
        got = parse(h.pread(BS, block * BS))
        if got is None:
            print("block %d: not a whole write of anyone (want %s)"
                  % (block, want[block]))
            bad += 1
            continue
        tag, _, seq = want[block].partition(":")
        ok = got[0] == tag and got[2] == block and \
            (not seq or got[1] == int(seq))
        print("block %d: %s seq=%d block=%d%s" % (
            block, *got, "" if ok else " (want %s)" % want[block]))
        bad += not ok
    h.shutdown()
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("loop", "once", "burst", "check"))
    p.add_argument("--uri", required=True)
    p.add_argument("--tag", required=True)
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--log")
    p.add_argument("--max-seconds", type=float, default=300)
    p.add_argument("--signal-pids", default="")
    p.add_argument("--signal-after", type=float, default=0.0)
    p.add_argument("--want", default="")
    p.add_argument("--arm-pids", default="")
    args = p.parse_args()
    if " " in args.tag or not args.tag:
        p.error("--tag must be one word")
    if args.mode == "loop":
        if not args.log:
            p.error("loop needs --log")
        return do_loop(args)
    if args.mode == "once":
        return do_once(args)
    if args.mode == "burst":
        return do_burst(args)
    return do_check(args)


if __name__ == "__main__":
    sys.exit(main())
