#!/usr/bin/env python3
"""A TCP proxy whose link can be cut and healed at run time, by signal.

For the lease-fencing tests: put one in front of each bftblk server for
one client (its bftblk.conf names the proxies' ports as the servers'
addresses), and that client can be partitioned from the cluster and
joined again while the servers and other clients go on.

    cut-proxy.py --listen 127.0.0.1:PORT --target 127.0.0.1:PORT

    SIGUSR1  cut: nothing is forwarded either way from now on.  The proxy
             keeps accepting connections and reading both sides, and
             holds every byte it reads, answering nothing: to both ends
             the link looks like one that went silent, not one that
             closed.  A connection accepted while cut is connected to
             the target only at the heal.
    SIGUSR2  heal: everything held is delivered, in order, per
             connection and direction, then forwarding goes on as
             normal.
    SIGHUP   arm: from now on the replies (target to client) are held
             while requests pass; once --arm-bytes (default 256 KiB) of
             requests have passed since, it turns round: requests are
             held from then on (a cut, as far as the target can tell)
             and the replies held so far, and later ones, are delivered.
             For writes sent just after arming: their data (STOREs)
             reaches the target, and whatever the client sends on the
             target's answers (COMPLETEs) is held until the heal.  A cut
             by signal could not aim at that: a request takes
             microseconds to pass.  With --arm-barrier DIR and
             --arm-peers N, a proxy that turned round keeps the replies
             too until N proxies of DIR did: a client that heard from
             the quicker ones would otherwise send its COMPLETEs through
             a slower one still passing requests.

Bytes a client sent before its connection closed are still delivered to
the target at the heal, on the connection to the target they were meant
for, which is kept open until they are (and then half-closed, so the
target reads them all before it sees the end).  That is how requests
delayed in the network arrive after the client gave up on them.

What is held is bounded (--max-held, default 256 MiB); past it a
connection's further bytes are dropped, logged, and the connection is
closed after what was held of it is delivered, since a stream with a gap
is no stream.  It prints "listening on HOST:PORT" once ready, "cut" and
"healed" lines with the wall clock and CLOCK_MONOTONIC time (the same
clock as Python's time.monotonic() in the tests), and runs until SIGTERM
or SIGINT.

No third-party module is needed.
"""
import argparse
import asyncio
import collections
import os
import signal
import socket
import sys
import time

CHUNK = 256 * 1024
# While forwarding, reading a side stops once this much waits to be
# written to the other: backpressure as an ordinary proxy has.
HIGH_WATER = 4 * 1024 * 1024
# A target that never closes after its client's end was delivered is
# closed after this long, so no connection outlives its use for ever.
LINGER_S = 30.0
EOF = None


def hostport(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("not HOST:PORT: %r" % text)
    return host, int(port)


def nodelay(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def say(fmt, *args):
    print("%s (monotonic %.3f) %s" % (time.strftime("%H:%M:%S"),
                                      time.monotonic(), fmt % args),
          flush=True)


UP = "client->server"
DOWN = "server->client"


class Proxy:
    def __init__(self, args):
        self.args = args
        # Which directions hold what they read instead of passing it on;
        # "flowing" is set while a direction passes.
        self.hold = {UP: False, DOWN: False}
        self.flowing = {UP: asyncio.Event(), DOWN: asyncio.Event()}
        for e in self.flowing.values():
            e.set()
        self.armed = False
        self.armed_passed = 0
        self.held = 0           # bytes queued in every direction
        self.dirs = set()
        self.conns = set()
        self.nconn = 0

    @property
    def cut(self):
        return self.hold[UP] and self.hold[DOWN]

    def set_hold(self, up, down):
        for name, on in ((UP, up), (DOWN, down)):
            self.hold[name] = on
            if on:
                self.flowing[name].clear()
            else:
                self.flowing[name].set()
        # A reader waiting for room must go on reading: what is held is
        # read and kept.
        for d in self.dirs:
            d.room.set()

    def queued(self, name):
        return sum(d.queued for d in self.dirs if d.name == name)

    def do_arm(self):
        if self.hold[UP]:
            say("armed (requests are held already)")
            return
        self.armed = True
        self.armed_passed = 0
        self.set_hold(False, True)
        say("armed: holding replies until %d bytes of requests have "
            "passed", self.args.arm_bytes)

    def passed_armed(self, n):
        self.armed_passed += n
        if self.armed and self.armed_passed >= self.args.arm_bytes:
            self.armed = False
            if self.args.arm_barrier:
                self.set_hold(True, True)
                say("cut: holding every request from now on, %d bytes of "
                    "them passed since armed; replies held until %d "
                    "proxies turned round", self.armed_passed,
                    self.args.arm_peers)
                asyncio.get_running_loop().create_task(self.barrier())
                return
            self.set_hold(True, False)
            say("cut: holding every request from now on, %d bytes of "
                "them passed since armed; delivering the %d bytes of "
                "replies held", self.armed_passed, self.queued(DOWN))

    async def barrier(self):
        d = self.args.arm_barrier
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, str(os.getpid())), "w").close()
        deadline = time.monotonic() + 30
        while (len(os.listdir(d)) < self.args.arm_peers and
               time.monotonic() < deadline):
            await asyncio.sleep(0.01)
        if not self.hold[UP] or not self.hold[DOWN]:
            return
        self.set_hold(True, False)
        say("released: %d of %d proxies turned round; delivering the %d "
            "bytes of replies held", len(os.listdir(d)),
            self.args.arm_peers, self.queued(DOWN))

    def do_cut(self):
        if self.cut:
            say("cut (already cut)")
            return
        self.armed = False
        self.set_hold(True, True)
        say("cut: holding everything, %d connections", len(self.conns))

    def do_heal(self):
        if not (self.hold[UP] or self.hold[DOWN]):
            say("healed (was not cut)")
            return
        self.armed = False
        up = self.queued(UP)
        self.set_hold(False, False)
        say("healed: delivering %d bytes held over %d connections "
            "(%d to the target, %d to clients)", self.held, len(self.conns),
            up, self.held - up)


class Direction:
    """One way of one connection: reads a side, queues, writes the other."""

    def __init__(self, proxy, conn, name):
        self.proxy = proxy
        self.conn = conn
        self.name = name
        self.queue = collections.deque()
        self.queued = 0
        self.ready = asyncio.Event()     # the queue is not empty
        self.room = asyncio.Event()      # below HIGH_WATER, or cut
        self.room.set()
        self.overflowed = False
        self.dropped = 0
        self.delivered = 0
        self.done = asyncio.Event()      # the end was delivered
        proxy.dirs.add(self)

    def put(self, data):
        p = self.proxy
        if self.overflowed:
            self.dropped += len(data)
            return
        if p.hold[self.name] and p.held + len(data) > p.args.max_held:
            self.overflowed = True
            self.dropped += len(data)
            say("conn %d %s: %d bytes held in all, over --max-held %d: "
                "dropping this connection's further bytes; it closes "
                "once what it holds is delivered", self.conn.id, self.name,
                p.held, p.args.max_held)
            self.queue.append(EOF)
            self.ready.set()
            return
        self.queue.append(data)
        self.queued += len(data)
        p.held += len(data)
        self.ready.set()

    def put_eof(self):
        if not self.overflowed:
            self.queue.append(EOF)
            self.ready.set()

    async def pump_in(self, get_reader):
        reader = await get_reader()
        try:
            while reader is not None:
                data = await reader.read(CHUNK)
                if not data:
                    break
                self.put(data)
                while not self.proxy.hold[self.name] and \
                        self.queued >= HIGH_WATER:
                    self.room.clear()
                    await self.room.wait()
        except (ConnectionError, OSError):
            pass
        self.put_eof()
        if self.dropped:
            say("conn %d %s: %d bytes dropped", self.conn.id, self.name,
                self.dropped)

    async def pump_out(self, get_writer):
        p = self.proxy
        writer = None
        dead = False
        while True:
            if p.hold[self.name]:
                await p.flowing[self.name].wait()
                continue
            if not self.queue:
                self.ready.clear()
                await self.ready.wait()
                continue
            if writer is None and not dead:
                writer = await get_writer()
                dead = writer is None
                # Connecting took a while: look again at the cut.
                continue
            data = self.queue.popleft()
            if data is EOF:
                if not dead:
                    try:
                        if writer.can_write_eof():
                            writer.write_eof()
                        else:
                            writer.close()
                    except (ConnectionError, OSError, RuntimeError):
                        pass
                break
            self.queued -= len(data)
            p.held -= len(data)
            if self.queued < HIGH_WATER:
                self.room.set()
            if dead:
                continue
            try:
                writer.write(data)
                self.delivered += len(data)
                if self.name == UP:
                    p.passed_armed(len(data))
                await writer.drain()
            except (ConnectionError, OSError, RuntimeError):
                # The other side is gone: what it would have got is
                # thrown away, but still taken off the queue.
                dead = True
        self.done.set()


class Conn:
    def __init__(self, proxy, c_reader, c_writer):
        proxy.nconn += 1
        self.id = proxy.nconn
        self.proxy = proxy
        self.c_reader = c_reader
        self.c_writer = c_writer
        self.upstream = None     # future: (reader, writer) or None

    async def _connect(self):
        p = self.proxy
        # A connection accepted while requests are held reaches the
        # target only once they pass again.
        await p.flowing[UP].wait()
        try:
            r, w = await asyncio.open_connection(*p.args.target)
        except OSError as e:
            say("conn %d: cannot reach %s:%d: %s", self.id, *p.args.target,
                e)
            return None
        nodelay(w)
        return r, w

    async def server_side(self):
        if self.upstream is None:
            self.upstream = asyncio.ensure_future(self._connect())
        return await asyncio.shield(self.upstream)

    async def run(self):
        p = self.proxy
        nodelay(self.c_writer)
        up = Direction(p, self, UP)
        down = Direction(p, self, DOWN)

        async def s_reader():
            s = await self.server_side()
            return s and s[0]

        async def s_writer():
            s = await self.server_side()
            return s and s[1]

        async def c_reader():
            return self.c_reader

        async def c_writer():
            return self.c_writer

        if not p.hold[UP]:
            # A connection made while requests pass reaches the target
            # at once, as through any proxy.
            await self.server_side()
        tasks = [asyncio.ensure_future(x) for x in (
            up.pump_in(c_reader), up.pump_out(s_writer),
            down.pump_in(s_reader), down.pump_out(c_writer))]
        try:
            # Done once the client's bytes, and its end, reached the
            # target, and the target's end reached the client; a target
            # that does not close is given LINGER_S after the former.
            await up.done.wait()
            try:
                await asyncio.wait_for(down.done.wait(), LINGER_S)
            except asyncio.TimeoutError:
                say("conn %d: target still open %gs after the client's "
                    "end: closing", self.id, LINGER_S)
        finally:
            for t in tasks:
                t.cancel()
            p.dirs.discard(up)
            p.dirs.discard(down)
            for d in (up, down):
                p.held -= d.queued
                d.queued = 0
            self.c_writer.close()
            u = self.upstream
            if u is not None and u.done() and not u.cancelled() and \
                    u.exception() is None and u.result() is not None:
                u.result()[1].close()
            elif u is not None:
                u.cancel()


async def serve(args):
    p = Proxy(args)
    loop = asyncio.get_running_loop()

    async def on_client(c_reader, c_writer):
        conn = Conn(p, c_reader, c_writer)
        conn.task = asyncio.ensure_future(conn.run())
        p.conns.add(conn)
        try:
            await conn.task
        except asyncio.CancelledError:
            pass
        finally:
            p.conns.discard(conn)

    server = await asyncio.start_server(on_client, *args.listen,
                                        reuse_address=True)
    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(
            sig, lambda: stop.done() or stop.set_result(None))
    loop.add_signal_handler(signal.SIGUSR1, p.do_cut)
    loop.add_signal_handler(signal.SIGUSR2, p.do_heal)
    loop.add_signal_handler(signal.SIGHUP, p.do_arm)
    print("listening on %s:%d, to %s:%d (SIGUSR1 cuts, SIGUSR2 heals, SIGHUP arms)"
          % (*args.listen, *args.target), flush=True)
    await stop
    server.close()
    say("stopping: %d connections, %d bytes held", len(p.conns), p.held)
    for conn in list(p.conns):
        conn.task.cancel()
    await asyncio.sleep(0)
    try:
        await asyncio.wait_for(server.wait_closed(), 5)
    except asyncio.TimeoutError:
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", type=hostport, required=True)
    p.add_argument("--target", type=hostport, required=True)
    p.add_argument("--max-held", type=int, default=256 * 1024 * 1024,
                   help="bytes held while cut, in all (default 256 MiB)")
    p.add_argument("--arm-bytes", type=int, default=256 * 1024,
                   help="requests an armed proxy passes before it holds "
                   "them (default 256 KiB)")
    p.add_argument("--arm-barrier", default="",
                   help="a directory the proxies of one client share")
    p.add_argument("--arm-peers", type=int, default=1,
                   help="how many proxies turn round before any lets "
                   "replies through (with --arm-barrier)")
    args = p.parse_args()
    if args.max_held < 0:
        p.error("--max-held must not be negative")
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
