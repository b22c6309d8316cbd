#!/usr/bin/env python3
"""Holds idle connections open against Storecast, as a slowloris would, reopening each one the
server closes: HTTP connections that send half a request and then a header byte every 5 s, and
RTMP connections that send one byte. Sources are spread over 127.0.x.y so a per-IP cap does not
refuse them (200 HTTP and 25 RTMP per address). Prints, every 5 s and at the end, how many are
open. Stops after SECONDS.
  bench/idle_attack.py HTTP_PORT HTTP_COUNT RTMP_PORT RTMP_COUNT SECONDS
"""
import asyncio, json, sys, time

http_port, http_n, rtmp_port, rtmp_n, seconds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
open_now = {"http": 0, "rtmp": 0}
opened = {"http": 0, "rtmp": 0}
failed = {"http": 0, "rtmp": 0}
end = time.time() + seconds

async def hold(kind, port, source, first, trickle, start):
    await asyncio.sleep(start)   # ramp up: the connects spread over the first seconds
    while time.time() < end:
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)), timeout=15)
        except (OSError, asyncio.TimeoutError):
            failed[kind] += 1
            await asyncio.sleep(1)
            continue
        open_now[kind] += 1; opened[kind] += 1
        try:
            w.write(first); await w.drain()
            while time.time() < end:
                try:
                    data = await asyncio.wait_for(r.read(4096), timeout=5)
                    if not data: break          # the server closed it: open another
                except asyncio.TimeoutError:
                    if trickle:
                        w.write(trickle); await w.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            open_now[kind] -= 1
            w.close()

async def report():
    samples = []
    while time.time() < end:
        await asyncio.sleep(5)
        samples.append(dict(open_now))
        print(json.dumps({"t": round(time.time(), 1), "open": open_now, "opened": opened, "failed": failed}), flush=True)
    return samples

async def main():
    tasks = []
    for i in range(http_n):
        source = f"127.0.{1 + i // 200 // 250}.{1 + (i // 200) % 250}"
        tasks.append(hold("http", http_port, source, b"GET /live/shop/x/master.m3u8 HTTP/1.1\r\nHost: a\r\n", b"X", i * 10 / max(1, http_n)))
    for i in range(rtmp_n):
        source = f"127.1.{1 + i // 25 // 250}.{1 + (i // 25) % 250}"
        tasks.append(hold("rtmp", rtmp_port, source, b"\x03", None, i * 10 / max(1, rtmp_n)))
    reporter = asyncio.create_task(report())
    await asyncio.gather(*tasks, return_exceptions=True)
    samples = await reporter
    held = [s["http"] for s in samples[1:]] or [0]
    print(json.dumps({"summary": True, "http_open_mean": sum(held) / len(held), "http_open_min": min(held),
                      "rtmp_open_mean": sum(s["rtmp"] for s in samples[1:]) / max(1, len(samples) - 1), "opened": opened, "failed": failed}), flush=True)

asyncio.run(main())
