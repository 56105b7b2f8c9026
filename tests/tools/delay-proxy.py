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


async def pipe(reader, writer, delay):
    """Copies reader to writer, each chunk delay seconds after it came."""
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
            writer.write(data)
            await writer.drain()

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

    async def on_client(c_reader, c_writer):
        try:
            s_reader, s_writer = await asyncio.open_connection(*args.target)
        except OSError as e:
            print("cannot reach %s:%d: %s" % (*args.target, e), flush=True)
            c_writer.close()
            return
        nodelay(c_writer)
        nodelay(s_writer)
        task = asyncio.gather(pipe(c_reader, s_writer, delay),
                              pipe(s_reader, c_writer, delay),
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
    args = p.parse_args()
    if args.delay_ms < 0:
        p.error("--delay-ms must not be negative")
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
