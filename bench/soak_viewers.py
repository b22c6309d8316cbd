#!/usr/bin/env python3
"""LL-HLS viewers for bench/soak.sh: CLIENTS players spread over the media playlists given, each
on one keep-alive connection asking for the next part with a blocking reload (_HLS_msn /
_HLS_part, from the playlist's preload hint), over and over, for SECONDS. An answer other
than 200, a broken connection or a timeout counts as an error (the client reconnects).
Prints JSON: requests, errors by kind, parts seen, and requests per minute.
  bench/soak_viewers.py SECONDS CLIENTS URL [URL …]
"""
import asyncio, collections, json, re, sys, time, urllib.parse

seconds, clients, urls = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
if not urls:
    sys.exit("soak_viewers: no playlist URL given")
hint = re.compile(rb'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-(\d+)\.(\d+)\.m4s')
requests = 0
errors = collections.Counter()
per_minute = collections.Counter()
started = time.monotonic()

async def get(reader, writer, host, path):
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n\r\n".encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 15)
    status = int(head.split(b" ", 2)[1])
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    body = await asyncio.wait_for(reader.readexactly(int(m.group(1))), 15) if m else b""
    return status, body

async def client(url, deadline):
    global requests
    u = urllib.parse.urlsplit(url)
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.open_connection(u.hostname, u.port, limit=1 << 22)
        except OSError:
            errors["connect"] += 1
            await asyncio.sleep(1)
            continue
        try:
            path = u.path
            while time.monotonic() < deadline:
                status, body = await get(reader, writer, u.netloc, path)
                requests += 1
                per_minute[int((time.monotonic() - started) // 60)] += 1
                if status != 200:
                    errors[f"http {status}"] += 1
                    await asyncio.sleep(0.5)
                    path = u.path
                    continue
                h = hint.search(body)
                path = f"{u.path}?_HLS_msn={int(h.group(1))}&_HLS_part={int(h.group(2))}" if h else u.path
                if not h:
                    await asyncio.sleep(0.3)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, asyncio.LimitOverrunError, ValueError) as e:
            errors[type(e).__name__] += 1
            await asyncio.sleep(0.5)
        finally:
            writer.close()

async def main():
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(client(urls[i % len(urls)], deadline) for i in range(clients)))

asyncio.run(main())
print(json.dumps({"clients": clients, "playlists": len(urls), "seconds": seconds, "requests": requests,
                  "errors": sum(errors.values()), "error_kinds": dict(errors),
                  "requests_per_minute": [per_minute[m] for m in sorted(per_minute)]}))
