#!/usr/bin/env python3
"""A minimal transcoder stand-in for benchmarks: connects a DEALER to ingest's work socket, sends
READY and a heartbeat every second (schemas/wire.md), and drains whatever it is leased."""
import struct, sys, time
import zmq

endpoint = sys.argv[1]
worker = b"bench-drain"

def status(kind):
    return bytes([1, kind]) + struct.pack(">H", len(worker)) + worker + struct.pack(">HH", 64, 0)

ctx = zmq.Context()
s = ctx.socket(zmq.DEALER)
s.setsockopt(zmq.ROUTING_ID, worker)
s.setsockopt(zmq.RCVHWM, 100000)
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
