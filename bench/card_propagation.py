#!/usr/bin/env python3
"""How long a product card takes from the tenant's POST to the players' playlists.

A card starts at the program date-time of the frame that was live when the API received it
(its START-DATE). A viewer LATENCY seconds behind the live edge sees that frame LATENCY seconds
after it was live, so the card is on time only when every rendition's media playlist carries
its EXT-X-DATERANGE before then. This posts COUNT cards, one every INTERVAL seconds, to a live
show through the API, and polls every rendition's media playlist (from the multivariant
playlist) every 20 ms, as a player's reload would find it. For each card it reports:
  - api:      the POST's round trip (send to answer);
  - playlist: START-DATE to the moment the DATERANGE is in every rendition's playlist, which is
              the latency a viewer needs for the card to come on time;
and the p50, p95 and max of each, as JSON.

  bench/card_propagation.py API_BASE TOKEN TENANT STREAM MULTIVARIANT_URL [COUNT] [INTERVAL]
"""
import json, re, sys, threading, time, urllib.request

def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None

def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()

def main():
    api, token, tenant, stream, master = sys.argv[1:6]
    count = int(sys.argv[6]) if len(sys.argv) > 6 else 20
    interval = float(sys.argv[7]) if len(sys.argv) > 7 else 1.3
    base = master.rsplit("/", 1)[0]
    renditions = [line.strip() for line in get(master).splitlines() if line.strip() and not line.startswith("#")]
    if not renditions:
        sys.exit("the multivariant playlist lists no rendition: " + master)
    seen = {}          # (card id, rendition) -> first time seen
    lock = threading.Lock()
    stop = threading.Event()
    errors = []

    def poll(rendition):
        url = rendition if rendition.startswith("http") else base + "/" + rendition
        while not stop.is_set():
            try:
                text = get(url)
            except Exception as e:  # a player retries; count it
                errors.append(f"{rendition}: {e}")
                time.sleep(0.02)
                continue
            now = time.time()
            with lock:
                for card in re.findall(r'#EXT-X-DATERANGE:ID="highlight-(\d+)"', text):
                    seen.setdefault((int(card), rendition), now)
            time.sleep(0.02)

    pollers = [threading.Thread(target=poll, args=(r,), daemon=True) for r in renditions]
    for t in pollers:
        t.start()
    cards = []
    for i in range(count):
        body = json.dumps({"productId": f"sku-{i}", "title": f"Card {i}", "price": "9.99", "currency": "EUR"}).encode()
        req = urllib.request.Request(f"{api}/v1/tenants/{tenant}/streams/{stream}/highlights", data=body, method="POST",
                                     headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        sent = time.time()
        with urllib.request.urlopen(req, timeout=10) as r:
            made = json.loads(r.read())
        answered = time.time()
        cards.append({"id": made["id"], "sent": sent, "answered": answered, "start": made["startSeconds"] if "startSeconds" in made else None,
                      "startDate": made.get("startDate")})
        time.sleep(interval)
    time.sleep(3)
    stop.set()
    rows = []
    for c in cards:
        start = c["start"]
        if start is None:
            from datetime import datetime
            start = datetime.fromisoformat(c["startDate"].replace("Z", "+00:00")).timestamp()
        times = [seen.get((c["id"], r)) for r in renditions]
        if any(t is None for t in times):
            sys.exit(f"card {c['id']} never reached every rendition's playlist ({sum(t is not None for t in times)} of {len(renditions)})")
        rows.append({"id": c["id"], "api_ms": round((c["answered"] - c["sent"]) * 1000),
                     "playlist_ms": round((max(times) - start) * 1000),
                     "start_after_send_ms": round((start - c["sent"]) * 1000)})
    summary = {}
    for key in ("api_ms", "playlist_ms"):
        values = [r[key] for r in rows]
        summary[key] = {"p50": pct(values, 50), "p95": pct(values, 95), "max": max(values)}
    print(json.dumps({"renditions": len(renditions), "cards": rows, "summary": summary, "poll_errors": len(errors)}, indent=1))

if __name__ == "__main__":
    main()
