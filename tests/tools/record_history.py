#!/usr/bin/python3
"""Records a history of whole-block reads and writes on NBD exports of
one bftblk disk, for tests/linearizability (lincheck).

Every client is a thread with its own libnbd handle; clients are spread
over the URIs given (two nbdkit instances on one cluster are two
writers).  Each client does a random mix of whole-block (64 KiB) writes
and reads on a few hot blocks.  Every write writes a value nobody else
writes: a header with the writer's client id and sequence number and a
checksum, then bytes derived from that header, so a read is decoded back
to the id of the write it returned and verified byte for byte.  A block
that is neither all zeros nor exactly some write's bytes is garbage: it
is recorded as "garbage:<sha256 prefix>", a value no write produced, so
the history can never be linearizable, and it is reported on stderr and
saved next to the history.

The history is JSON lines, one operation each, as lincheck reads them:
    {"client": 3, "op": "w", "block": 2, "value": "c3s17",
     "call": NS, "ret": NS, "ok": true}
with CLOCK_MONOTONIC times taken right before the call and right after
the return, so histories of several processes can be merged.  A failed
or timed-out write is recorded with ok false (it may or may not have
taken effect); a failed read with ok false (lincheck drops it).

--final-read instead reads every block once through each URI and
appends those reads; it fails (status 1) when one of them fails.

--slot N makes every write N bytes, an aligned slot of a hot block
(4096: sixteen slots per block), so one nbdkit's small writes meet on a
block and are coalesced (lib/coalesce_int.h).  Each slot is then a
register of its own: the history's "block" is block * slots + slot, and
a read, still of the whole block, is recorded as one read per slot with
the same call and return times (a read that linearizes at one point
does so for each slot).  That holds with a single writer process only:
two nbdkits' read-modify-writes of one block may lose each other's
slots, as the README says.

Needs Debian's python3-libnbd: run with /usr/bin/python3.
"""

import argparse
import hashlib
import json
import os
import random
import struct
import sys
import threading
import time

import nbd

BS = 65536
MAGIC = b"BFTLINv1"
HDR = struct.Struct("<8sIIQ")		# magic, client, seq, block
HDR_LEN = HDR.size + 8			# and 8 bytes of BLAKE2b of those
MAX_GARBAGE_FILES = 10


def value_id(client, seq):
    return "c%ds%d" % (client, seq)


def encode(client, seq, block, size=BS):
    """The size bytes a write of (client, seq) to block (a block or a
    slot's key) puts there."""
    head = HDR.pack(MAGIC, client, seq, block)
    head += hashlib.blake2b(head, digest_size=8).digest()
    return head + hashlib.shake_128(head).digest(size - HDR_LEN)


def decode(data, block):
    """The value id of a block's (or slot's) bytes, and a complaint if
    they are not what some write wrote to it (None when they are)."""
    size = len(data)
    if data == bytes(size):
        return "0", None
    head = bytes(data[:HDR_LEN])
    magic, client, seq, wblock = HDR.unpack(head[:HDR.size])
    ok = (magic == MAGIC and
          hashlib.blake2b(head[:HDR.size], digest_size=8).digest() ==
          head[HDR.size:])
    if ok and data == encode(client, seq, wblock, size):
        if wblock != block:
            return (value_id(client, seq),
                    "holds %s, written to block %d" %
                    (value_id(client, seq), wblock))
        return value_id(client, seq), None
    digest = hashlib.sha256(data).hexdigest()[:16]
    if ok:
        why = "header of %s but other bytes" % value_id(client, seq)
    else:
        why = "neither zeros nor a well-formed value"
    return "garbage:" + digest, why


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = dict(ops=0, writes=0, reads=0, write_errors=0,
                      read_errors=0, timeouts=0, garbage=0, misplaced=0,
                      reconnects=0, connect_errors=0)

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                self.c[k] += v


class Client:
    """One thread's connection.  After a timeout the handle is dropped
    (libnbd then closes the socket) and a new one made, since the
    command may still be in flight."""

    def __init__(self, cid, uri, args, stats, deadline):
        self.cid = cid
        self.uri = uri
        self.args = args
        self.stats = stats
        self.deadline = deadline
        self.h = None

    def connect(self):
        delay = 0.05
        while self.h is None:
            h = nbd.NBD()
            try:
                h.connect_uri(self.uri)
                self.h = h
                return True
            except nbd.Error as e:
                del h
                self.stats.add(connect_errors=1)
                if time.monotonic() + delay >= self.deadline:
                    log("client %d: cannot connect to %s: %s" %
                        (self.cid, self.uri, e))
                    return False
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        return True

    def drop(self):
        self.h = None
        self.stats.add(reconnects=1)

    def run_op(self, start):
        """Issues an aio command and waits for it; returns (ok, err)."""
        try:
            cookie = start(self.h)
        except nbd.Error as e:
            return False, str(e)
        limit = time.monotonic() + self.args.op_timeout
        while True:
            try:
                if self.h.aio_command_completed(cookie):
                    return True, None
            except nbd.Error as e:
                return False, str(e)
            left = limit - time.monotonic()
            if left <= 0:
                self.stats.add(timeouts=1)
                self.drop()
                return False, "timeout after %gs" % self.args.op_timeout
            try:
                self.h.poll(max(1, int(left * 1000)))
            except nbd.Error as e:
                return False, str(e)

    def after_error(self):
        if self.h is not None and self.h.aio_is_dead():
            self.drop()
        # Failed writes each widen the checker's search: do not spin.
        time.sleep(self.args.error_backoff)

    def write(self, block, seq, slot=0):
        """Writes a whole block, or with --slot the given slot of it."""
        size = self.args.slot or BS
        key = block * (BS // size) + slot if self.args.slot else block
        value = encode(self.cid, seq, key, size)
        buf = nbd.Buffer.from_bytearray(value)
        call = time.monotonic_ns()
        ok, err = self.run_op(
            lambda h: h.aio_pwrite(buf, block * BS + slot * size))
        ret = time.monotonic_ns()
        rec = dict(client=self.cid, op="w", block=key,
                   value=value_id(self.cid, seq), call=call, ret=ret, ok=ok)
        if not ok:
            rec["err"] = err
        return rec

    def read(self, block):
        """Reads a whole block: a list of records (one per slot with
        --slot) and of (record, bytes) for what no write wrote."""
        buf = nbd.Buffer(BS)
        call = time.monotonic_ns()
        ok, err = self.run_op(lambda h: h.aio_pread(buf, block * BS))
        ret = time.monotonic_ns()
        size = self.args.slot or BS
        nslots = BS // size
        keys = ([block * nslots + i for i in range(nslots)]
                if self.args.slot else [block])
        recs = [dict(client=self.cid, op="r", block=k, call=call, ret=ret,
                     ok=ok) for k in keys]
        if not ok:
            for rec in recs:
                rec["err"] = err
            return recs, []
        data = buf.to_bytearray()
        bad = []
        for i, rec in enumerate(recs):
            part = bytes(data[i * size:(i + 1) * size])
            rec["value"], why = decode(part, rec["block"])
            if why is not None:
                bad.append((rec, part))
        return recs, bad


_log_lock = threading.Lock()


def log(msg):
    # One write per line: print() writes the newline separately, and
    # threads would interleave.
    with _log_lock:
        sys.stderr.write("record_history: " + msg + "\n")
        sys.stderr.flush()


class Recorder:
    def __init__(self, args):
        self.args = args
        self.stats = Stats()
        self.records = []
        self.lock = threading.Lock()
        self.garbage_files = 0
        self.failed_final = 0

    def keep(self, recs):
        with self.lock:
            self.records.extend(recs)

    def bad_read(self, rec, data):
        why = decode(data, rec["block"])[1]
        if rec["value"].startswith("garbage:"):
            self.stats.add(garbage=1)
        else:
            self.stats.add(misplaced=1)
        path = None
        with self.lock:
            if self.garbage_files < MAX_GARBAGE_FILES:
                self.garbage_files += 1
                path = "%s.bad-read-%d.bin" % (self.args.out,
                                               self.garbage_files)
        if path:
            with open(path, "wb") as f:
                f.write(data)
        log("!!!!! BAD READ by client %d of block %d [call %d, ret %d]: "
            "%s; value %s%s" % (rec["client"], rec["block"], rec["call"],
                                rec["ret"], why, rec["value"],
                                ", bytes in " + path if path else ""))

    def worker(self, cid, uri, seed, deadline):
        args = self.args
        rng = random.Random(seed)
        c = Client(cid, uri, args, self.stats, deadline)
        recs = []
        seq = 0
        while time.monotonic() < deadline and (
                args.max_ops == 0 or len(recs) < args.max_ops):
            if c.h is None and not c.connect():
                break
            block = args.first_block + rng.randrange(args.blocks)
            if rng.random() < args.write_fraction:
                seq += 1
                slot = rng.randrange(BS // args.slot) if args.slot else 0
                rec = c.write(block, seq, slot)
                self.stats.add(ops=1, writes=1,
                               write_errors=0 if rec["ok"] else 1)
                recs.append(rec)
            else:
                out, bad = c.read(block)
                rec = out[0]
                self.stats.add(ops=1, reads=1,
                               read_errors=0 if rec["ok"] else 1)
                for r, data in bad:
                    self.bad_read(r, data)
                recs.extend(out)
            if not rec["ok"]:
                c.after_error()
        self.keep(recs)

    def final_reader(self, cid, uri, deadline):
        args = self.args
        c = Client(cid, uri, args, self.stats, deadline)
        recs = []
        for block in range(args.first_block, args.first_block + args.blocks):
            if c.h is None and not c.connect():
                with self.lock:
                    self.failed_final += 1
                log("final read of block %d through %s failed: cannot "
                    "connect" % (block, uri))
                continue
            out, bad = c.read(block)
            rec = out[0]
            self.stats.add(ops=1, reads=1, read_errors=0 if rec["ok"] else 1)
            for r, data in bad:
                self.bad_read(r, data)
            if not rec["ok"]:
                with self.lock:
                    self.failed_final += 1
                log("final read of block %d through %s failed: %s" %
                    (block, uri, rec["err"]))
                c.after_error()
            else:
                log("final read of block %d through %s: %s" %
                    (block, uri, " ".join(r["value"] for r in out)))
            recs.extend(out)
        self.keep(recs)

    def run(self):
        args = self.args
        start = time.monotonic()
        threads = []
        if args.final_read:
            # Connecting gives up at the deadline; a read once
            # connected has its own --op-timeout.
            deadline = start + args.op_timeout
            for i, uri in enumerate(args.uri):
                threads.append(threading.Thread(
                    target=self.final_reader,
                    args=(args.client_base + i, uri, deadline)))
        else:
            deadline = start + args.duration
            for i, uri in enumerate(args.uri):
                for k in range(args.clients_per_uri):
                    cid = args.client_base + i * args.clients_per_uri + k
                    threads.append(threading.Thread(
                        target=self.worker,
                        args=(cid, uri, "%s-%d" % (args.seed, cid),
                              deadline)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.records.sort(key=lambda r: r["call"])
        with open(args.out, "a" if args.append else "w") as f:
            for r in self.records:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
        s = self.stats.c
        print("record_history: ops=%d writes=%d reads=%d write_errors=%d "
              "read_errors=%d timeouts=%d garbage=%d misplaced=%d "
              "reconnects=%d connect_errors=%d seconds=%.1f out=%s" %
              (s["ops"], s["writes"], s["reads"], s["write_errors"],
               s["read_errors"], s["timeouts"], s["garbage"],
               s["misplaced"], s["reconnects"], s["connect_errors"],
               time.monotonic() - start, args.out), flush=True)
        if args.final_read and self.failed_final:
            log("%d final reads failed" % self.failed_final)
            return 1
        return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("uri", nargs="+", help="NBD URI of an export")
    p.add_argument("--out", required=True, help="history file (JSON lines)")
    p.add_argument("--append", action="store_true",
                   help="append to --out instead of replacing it")
    p.add_argument("--duration", type=float, default=15,
                   help="seconds to run (default 15)")
    p.add_argument("--max-ops", type=int, default=0,
                   help="stop a client after this many ops (0: no limit)")
    p.add_argument("--blocks", type=int, default=4,
                   help="number of hot blocks (default 4)")
    p.add_argument("--first-block", type=int, default=0,
                   help="first hot block (default 0)")
    p.add_argument("--clients-per-uri", type=int, default=2)
    p.add_argument("--client-base", type=int, default=0,
                   help="first client id (ids must differ between the "
                   "recorders of one history)")
    p.add_argument("--write-fraction", type=float, default=0.5)
    p.add_argument("--op-timeout", type=float, default=30,
                   help="seconds before an op counts as failed")
    p.add_argument("--error-backoff", type=float, default=0.1,
                   help="seconds a client waits after a failed op")
    p.add_argument("--seed", default=str(os.getpid()))
    p.add_argument("--final-read", action="store_true",
                   help="read every block once through each URI")
    p.add_argument("--slot", type=int, default=0,
                   help="write N-byte slots of the blocks instead of "
                   "whole blocks (0: whole blocks)")
    args = p.parse_args()
    if (args.duration <= 0 or args.blocks < 1 or args.first_block < 0 or
            args.clients_per_uri < 1 or args.client_base < 0 or
            args.max_ops < 0 or args.op_timeout <= 0 or
            not 0 <= args.write_fraction <= 1 or args.error_backoff < 0 or
            args.slot < 0 or (args.slot and (args.slot < HDR_LEN or
                                             BS % args.slot))):
        p.error("bad numeric argument")
    sys.exit(Recorder(args).run())


if __name__ == "__main__":
    main()
