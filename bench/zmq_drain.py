#!/usr/bin/env python3
"""A minimal transcoder stand-in for benchmarks: connects a DEALER to ingest's work socket, sends
READY and a heartbeat every second (schemas/wire.md), and drains whatever it is leased.
Authenticates as the transcoder role with the keys `storecast keys DIR` wrote:
    zmq_drain.py ENDPOINT KEYS_DIR"""
import re, struct, sys, time
import zmq

endpoint, keys = sys.argv[1], sys.argv[2]
worker = b"bench-drain"
secret = re.search(r'secret-key = "([^"]+)"', open(f"{keys}/transcoder.key").read()).group(1).encode()

def status(kind):
    return bytes([1, kind]) + struct.pack(">H", len(worker)) + worker + struct.pack(">HH", 64, 0)

ctx = zmq.Context()
s = ctx.socket(zmq.DEALER)
s.setsockopt(zmq.ROUTING_ID, worker)
s.setsockopt(zmq.RCVHWM, 100000)
s.curve_secretkey = secret
s.curve_publickey = zmq.curve_public(secret)
s.curve_serverkey = open(f"{keys}/ingest.pub").read().strip().encode()
s.connect(endpoint)
s.send(status(0x10))
received = 0
next_beat = time.time() + 1
poller = zmq.Poller()
poller.register(s, zmq.POLLIN)
while True:
    for _ in poller.poll(200):
        while True:
            try:
                s.recv(zmq.NOBLOCK)
                received += 1
            except zmq.Again:
                break
    if time.time() >= next_beat:
        s.send(status(0x11))
        next_beat += 1
