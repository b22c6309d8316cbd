#!/usr/bin/env python3
"""A tenant's webhook receiver for Storecast's tests: verifies every request with the Standard
Webhooks library (PyPI `standardwebhooks`) and appends one JSON line per request to LOG:
{"id", "type", "verified", "signatures", "path", "host", "answer", "n", "at"}.

Usage: webhook_receiver.py PORT SECRET LOG [--fail-first N] [--hold-first SECONDS] [--busy-first N]
  --fail-first N      answer 500 to the first N requests of each webhook-id, then 200
  --hold-first S      wait S seconds before answering the first request of each webhook-id
  --busy-first N      answer 503 to the first N requests of each webhook-id, with a Retry-After
                      HTTP-date --retry-after-seconds (default 3) from then
A request to /gone is answered 410 Gone."""
import argparse, email.utils, json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

p = argparse.ArgumentParser()
p.add_argument("port", type=int)
p.add_argument("secret")
p.add_argument("log")
p.add_argument("--fail-first", type=int, default=0)
p.add_argument("--hold-first", type=float, default=0)
p.add_argument("--busy-first", type=int, default=0)
p.add_argument("--retry-after-seconds", type=int, default=3)
args = p.parse_args()
hook = Webhook(args.secret)
seen = {}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            payload = hook.verify(body, headers)
            verified = True
        except WebhookVerificationError:
            payload, verified = json.loads(body or b"{}"), False
        mid = headers.get("webhook-id", "")
        with lock:
            seen[mid] = seen.get(mid, 0) + 1
            n = seen[mid]
        if self.path == "/gone":
            answer = 410
        elif not verified:
            answer = 400
        elif n <= args.fail_first:
            answer = 500
        elif n <= args.busy_first:
            answer = 503
        else:
            answer = 200
        entry = {"id": mid, "type": payload.get("type"), "data": payload.get("data"), "verified": verified,
                 "signatures": len(headers.get("webhook-signature", "").split()), "path": self.path, "host": headers.get("host"), "answer": answer, "n": n, "at": time.time()}
        if n == 1 and args.hold_first > 0:
            with open(args.log, "a") as f:
                f.write(json.dumps(dict(entry, answer="holding")) + "\n")
            time.sleep(args.hold_first)
        with open(args.log, "a") as f:
            f.write(json.dumps(entry) + "\n")
        self.send_response(answer)
        if answer == 503:
            self.send_header("Retry-After", email.utils.formatdate(time.time() + args.retry_after_seconds, usegmt=True))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
