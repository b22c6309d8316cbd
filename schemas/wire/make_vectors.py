#!/usr/bin/env python3
"""Builds wire/vectors.json from the layout in ../wire.md, independently of the Swift encoder."""
import json, struct, os

def s(text):
    b = text.encode(); return struct.pack(">H", len(b)) + b
def blob(b): return struct.pack(">I", len(b)) + b
def head(kind): return bytes([1, kind])

def track(tid, kind, codec, name, ts, w, h, br, sr, ch, cfg):
    return bytes([tid, kind]) + s(codec) + s(name) + struct.pack(">IHHIIB", ts, w, h, br, sr, ch) + blob(cfg)

vectors = [
    ("announce-ingest-h264-aac", head(0x01) + struct.pack(">qq", 42, 7) + s("demo") + s("demo-show") + bytes([0, 2])
        + track(1, 1, "h264", "source", 1000, 854, 480, 0, 0, 0, bytes.fromhex("0164001fffe1"))
        + track(2, 2, "aac", "audio", 1000, 0, 0, 0, 44100, 1, bytes.fromhex("1208"))),
    ("announce-worker-with-lease", head(0x01) + struct.pack(">qq", 42, 7) + s("demo") + s("demo-show") + bytes([0, 1])
        + track(1, 1, "h264", "360p", 90000, 640, 360, 400000, 0, 0, bytes.fromhex("0164001e"))
        + bytes([40]) + bytes(range(40))),
    ("access-unit-keyframe", head(0x02) + struct.pack(">qBBQqi", 42, 1, 1, 1, 0, 66) + blob(bytes.fromhex("000000026588"))),
    ("access-unit-negative-dts", head(0x02) + struct.pack(">qBBQqi", 42, 2, 0, 9, -21, 0) + blob(b"")),
    ("thumbnail", head(0x04) + struct.pack(">qqHH", 42, 450000, 640, 360) + blob(bytes.fromhex("ffd8ffd9"))),
    ("thumbnail-with-placeholder", head(0x04) + struct.pack(">qqHH", 42, 450000, 640, 360) + blob(bytes.fromhex("ffd8ffd9")) + blob(bytes.fromhex("ffd8ffdb00ffd9"))),
    ("stream-end", head(0x03) + struct.pack(">q", 42) + s("disconnected")),
    ("worker-ready", head(0x10) + s("transcoder-a") + struct.pack(">HH", 2, 0)),
    ("worker-heartbeat", head(0x11) + s("transcoder-a") + struct.pack(">HHqq", 2, 2, 42, 43)),
    ("assign", head(0x12) + struct.pack(">q", 42) + s("tcp://127.0.0.1:5602") + bytes([0])),
    ("assign-with-profile", head(0x12) + struct.pack(">q", 42) + s("tcp://127.0.0.1:5602") + bytes([1])
        + s("mobile") + s("veryfast") + bytes([1, 1, 2])
        + s("720p") + struct.pack(">HI", 720, 1800000) + s("360p") + struct.pack(">HI", 360, 500000)),
    ("assign-with-replay", head(0x12) + struct.pack(">q", 42) + s("tcp://127.0.0.1:5602") + bytes([0])
        + bytes([1]) + struct.pack(">q", 123456)),
    ("assign-with-lease", head(0x12) + struct.pack(">q", 42) + s("tcp://127.0.0.1:5602") + bytes([0])
        + bytes([0]) + bytes([40]) + bytes(range(40))),
    ("assign-with-replay-and-lease", head(0x12) + struct.pack(">q", 42) + s("tcp://127.0.0.1:5602") + bytes([0])
        + bytes([1]) + struct.pack(">q", 123456) + bytes([40]) + bytes(range(40))),
    ("assign-with-lease-and-ceiling", head(0x12) + struct.pack(">q", 42) + s("tcp://127.0.0.1:5602") + bytes([0])
        + bytes([0]) + bytes([40]) + bytes(range(40)) + struct.pack(">H", 720)),
    ("assign-with-ceiling", head(0x12) + struct.pack(">q", 42) + s("tcp://127.0.0.1:5602") + bytes([0])
        + bytes([0]) + bytes([0]) + struct.pack(">H", 480)),
    ("batch", head(0x05) + struct.pack(">I", 2)
        + blob(head(0x02) + struct.pack(">qBBQqi", 42, 1, 1, 1, 0, 66) + blob(bytes.fromhex("000000026588")))
        + blob(head(0x03) + struct.pack(">q", 42) + s("disconnected"))),
    ("release", head(0x13) + struct.pack(">q", 42)),
    ("lease-renewal", head(0x14) + struct.pack(">q", 42) + bytes([48]) + bytes(range(100, 148))),
    ("telemetry", head(0x30) + s("ingest") + s("ingest-a") + struct.pack(">II", 1234, 60) + blob(b"up 1\n")),
]
out = [{"name": n, "hex": b.hex()} for n, b in vectors]
path = os.path.join(os.path.dirname(__file__), "vectors.json")
with open(path, "w") as f:
    json.dump(out, f, indent=2); f.write("\n")
print(f"wrote {len(out)} vectors to {path}")
