#!/usr/bin/env python3
"""A TCP relay that delays what it forwards by a random 100 +/- 50 ms, for links whose kernel has
no netem qdisc (bench/topology.sh runs it in the publisher's network namespace).

    jitter_relay.py LISTEN_HOST:PORT TARGET_HOST:PORT [MEAN_MS SPREAD_MS]

Each chunk read from either side is written to the other at its arrival time plus a delay drawn
uniformly from MEAN - SPREAD to MEAN + SPREAD, never before the chunk read ahead of it (TCP keeps
order; netem would reorder packets and make TCP retransmit, which this does not model).
SIGUSR1 turns the delay on, SIGUSR2 off; it starts off. Each switch is printed to stderr.
"""
import asyncio
import random
import signal
import sys
import time

listen, target = sys.argv[1], sys.argv[2]
mean_ms = float(sys.argv[3]) if len(sys.argv) > 3 else 100.0
spread_ms = float(sys.argv[4]) if len(sys.argv) > 4 else 50.0
state = {"on": False, "chunks": 0, "delayed_ms": 0.0}


def switch(on):
    state["on"] = on
    print(f"jitter relay: delay {'on' if on else 'off'} ({mean_ms:.0f} +/- {spread_ms:.0f} ms); "
          f"{state['chunks']} chunks so far, mean added {state['delayed_ms'] / max(1, state['chunks']):.1f} ms", file=sys.stderr, flush=True)


async def pipe(reader, writer):
    """Reads chunks and writes each at its due time, in order."""
    queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    last_due = 0.0
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            now = time.monotonic()
            delay = random.uniform(mean_ms - spread_ms, mean_ms + spread_ms) / 1000 if state["on"] else 0.0
            due = max(now + delay, last_due)
            last_due = due
            if state["on"]:
                state["chunks"] += 1
                state["delayed_ms"] += (due - now) * 1000
            await queue.put((due, data))
    except (ConnectionError, OSError):
        pass
    await queue.put((0, None))
    try:
        await sender
    except (ConnectionError, OSError):
        pass


async def relay(client_reader, client_writer):
    host, port = target.rsplit(":", 1)
    try:
        server_reader, server_writer = await asyncio.open_connection(host, int(port))
    except OSError as error:
        print(f"jitter relay: cannot reach {target}: {error}", file=sys.stderr, flush=True)
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))


async def main():
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, switch, True)
    loop.add_signal_handler(signal.SIGUSR2, switch, False)
    host, port = listen.rsplit(":", 1)
    server = await asyncio.start_server(relay, host, int(port))
    print(f"jitter relay: {listen} -> {target}, delay off until SIGUSR1", file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
