#!/usr/bin/env python3
"""1,000 (or N) players blocked on the same LL-HLS playlist, as at a popular show's live edge.

Each client holds one keep-alive connection and asks for the next part with a blocking reload
(_HLS_msn/_HLS_part), over and over. Prints JSON: parts delivered, requests per second, and the
spread between the first and the last client getting each new part (p50/p95 over the parts).
  bench/blocking_fanout.py URL_OF_MEDIA_PLAYLIST [CLIENTS] [SECONDS]
"""
import asyncio, json, re, sys, time, urllib.parse, urllib.request

url = sys.argv[1]
clients = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 20
u = urllib.parse.urlsplit(url)
arrivals = {}  # (msn, part) -> [times]
done = 0
errors = 0

async def request(reader, writer, path):
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\nConnection: keep-alive\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    return status, await reader.readexactly(length)

async def client(deadline):
    global done, errors
    reader, writer = await asyncio.open_connection(u.hostname, u.port, limit=1 << 22)
    status, body = await request(reader, writer, u.path)
    while time.time() < deadline:
        hint = re.search(rb'PRELOAD-HINT:TYPE=PART,URI="part-(\d+)\.(\d+)\.m4s', body)
        if not hint: break
        msn, part = int(hint.group(1)), int(hint.group(2))
        try:
            status, body = await request(reader, writer, f"{u.path}?_HLS_msn={msn}&_HLS_part={part}")
        except Exception:
            errors += 1
            break
        if status != 200:
            errors += 1
            status, body = await request(reader, writer, u.path)
            continue
        arrivals.setdefault((msn, part), []).append(time.time())
        done += 1
    writer.close()

async def main():
    deadline = time.time() + seconds
    started = time.time()
    await asyncio.gather(*(client(deadline) for _ in range(clients)), return_exceptions=True)
    elapsed = time.time() - started
    spreads = sorted(max(t) - min(t) for t in arrivals.values() if len(t) >= clients * 0.9)
    pick = lambda p: spreads[min(len(spreads) - 1, int(p / 100 * (len(spreads) - 1)))] if spreads else None
    print(json.dumps({"clients": clients, "responses": done, "errors": errors, "requests_per_second": done / elapsed,
                      "parts_seen_by_90pct": len(spreads), "fanout_spread_p50": pick(50), "fanout_spread_p95": pick(95)}))

asyncio.run(main())
