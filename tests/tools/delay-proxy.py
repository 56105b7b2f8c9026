#!/usr/bin/env python3
"""A TCP proxy that adds a fixed delay to every byte, both ways.

For fio-jobs/bench-latency and tests/faults/slow-server.sh: put in front
of one bftblk server (the client's bftblk.conf names the proxy's port as
that server's address), it makes the link to that server D ms longer
one way, 2D ms per round trip, like a distant or busy host.

    delay-proxy.py --listen 127.0.0.1:PORT --target 127.0.0.1:PORT \\
        --delay-ms D

Each chunk read from one side is written to the other D ms after it
arrived, in order: a pipe with latency D, not a per-chunk sleep, so the
proxy adds latency without limiting throughput.  With D = 0 it only
forwards, and what it adds then is its own cost (tens of us per hop).
Every accepted connection gets its own connection to the target; either
side closing closes both.  It prints "listening on HOST:PORT" once ready
and runs until SIGTERM or SIGINT.

    SIGHUP   arm: once --arm-bytes (default 16 KiB) of requests (client
             to target, over every connection) have been delivered
             since, the replies are held, requests still passing, and
             it prints "holding replies".  A client that needs answers
             to go on stops there: after a write's data (a STORE is one
             fragment, tens of KiB, where reads ask in a few hundred
             bytes), before what it would send on the answers (the
             COMPLETE).  A signal could not aim between the two.
    SIGUSR2  release: the replies held are delivered, and later ones
             pass as before; "released" is printed.

No third-party module is needed.
"""
import argparse
import asyncio
import signal
import socket
import sys

CHUNK = 256 * 1024


def hostport(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("not HOST:PORT: %r" % text)
    return host, int(port)


def nodelay(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Arm:
    """SIGHUP's and SIGUSR2's state, shared by every connection."""

    def __init__(self, arm_bytes):
        self.arm_bytes = arm_bytes
        self.armed = False
        self.passed = 0
        self.open = asyncio.Event()
        self.open.set()

    def arm(self):
        self.armed = True
        self.passed = 0

    def count(self, n):
        if not self.armed:
            return
        self.passed += n
        if self.passed >= self.arm_bytes:
            self.armed = False
            self.open.clear()
            print("holding replies (%d bytes of requests since armed)"
                  % self.passed, flush=True)

    def release(self):
        self.armed = False
        if not self.open.is_set():
            self.open.set()
            print("released", flush=True)


async def pipe(reader, writer, delay, arm=None, requests=False):
    """Copies reader to writer, each chunk delay seconds after it came.
    With arm: requests are counted as delivered, replies wait while it
    holds them."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def pump_in():
        try:
            while True:
                data = await reader.read(CHUNK)
                queue.put_nowait((loop.time() + delay, data))
                if not data:
                    return
        except (ConnectionError, OSError):
            queue.put_nowait((loop.time(), b""))

    async def pump_out():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            if arm is not None and not requests:
                await arm.open.wait()
            writer.write(data)
            await writer.drain()
            if arm is not None and requests:
                arm.count(len(data))

    inbound = asyncio.ensure_future(pump_in())
    try:
        await pump_out()
    except (ConnectionError, OSError):
        pass
    finally:
        inbound.cancel()
        writer.close()


async def serve(args):
    delay = args.delay_ms / 1000.0
    conns = set()
    arm = Arm(args.arm_bytes)

    async def on_client(c_reader, c_writer):
        try:
            s_reader, s_writer = await asyncio.open_connection(*args.target)
        except OSError as e:
            print("cannot reach %s:%d: %s" % (*args.target, e), flush=True)
            c_writer.close()
            return
        nodelay(c_writer)
        nodelay(s_writer)
        task = asyncio.gather(pipe(c_reader, s_writer, delay, arm, True),
                              pipe(s_reader, c_writer, delay, arm, False),
                              return_exceptions=True)
        conns.add(task)
        try:
            await task
        finally:
            conns.discard(task)

    server = await asyncio.start_server(on_client, *args.listen,
                                        reuse_address=True)
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(
            sig, lambda: stop.done() or stop.set_result(None))
    asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, arm.arm)
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR2,
                                                  arm.release)
    print("listening on %s:%d, to %s:%d, delay %g ms each way"
          % (*args.listen, *args.target, args.delay_ms), flush=True)
    await stop
    server.close()
    for task in list(conns):
        task.cancel()
    await server.wait_closed()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", type=hostport, required=True)
    p.add_argument("--target", type=hostport, required=True)
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--arm-bytes", type=int, default=16 * 1024)
    args = p.parse_args()
    if args.delay_ms < 0:
        p.error("--delay-ms must not be negative")
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
