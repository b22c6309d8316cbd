"""An HTTP/2 client over TLS that does what browsers do not, for the packager's HTTPS tests
(Tests/IntegrationTests/MediaFastPathTests.swift), built on the `h2` library (PyPI).

    h2_client.py HOST PORT SCENARIO PATH [PATH ...]

Prints one JSON object. Scenarios:
  closed-window  opens no flow-control window (SETTINGS_INITIAL_WINDOW_SIZE 0, the connection's
                 window used up by nobody), asks for every PATH at once, waits 2 s (answers'
                 headers may come, their bodies cannot), then opens the windows and reads every
                 answer: {"answers": [{"path", "status", "length", "sha256"}...], "bodyBeforeWindow"}
  one-by-one     asks for every PATH in turn on one connection, each once the answer before it
                 has ended: {"answers": [...], "goaway"}
  unread         opens wide windows (2^31-1 on every stream and the connection) with a small
                 receive buffer and reads nothing: asks for PATHs 100 at a time, a second apart
                 (past the server's limit of streams at once, which it does not keep, as the
                 server answers each at once), then waits 14 s before reading what is left:
                 {"answers": [...], "closed"} (answers cut short and closed: the server gave up
                 on a client that reads nothing)
  reset-early    asks for the first PATH and resets the stream at once, then sends a window
                 update on it, then asks for every PATH on new streams and reads them all:
                 {"answers": [...], "goaway": null or its error code}
  idle           asks for the first PATH, reads the answer, then sends nothing and waits up to
                 30 s for the server's GOAWAY, and ignores the PING after it: {"answers": [...],
                 "goawayAfter": seconds or null, "closedAfter": seconds or null}
  malformed      asks for the first PATH with a field HTTP/2 forbids (connection), then for every
                 PATH properly: {"malformedStatus", "answers", "goaway"}
  stalled        as closed-window, but never opens a window: {"headersBeforeWindow",
                 "closedAfter": seconds from the requests to the server's close, or null (30 s)}
  silent         opens the connection and no stream: {"closedAfter"} (30 s at most)
  half-close     opens the connection, then closes its sending side (no TLS close_notify):
                 {"closedAfter"} (30 s at most)
  ping-flood     asks for the first PATH and reads it, then sends 1,000 PINGs at once:
                 {"goaway": its error code or null, "closedAfter": seconds from the flood}
"""
import hashlib
import json
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings


def connect(host, port, settings=None, validate=True, receive_buffer=None):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)  # before connect: it sets the TCP window
    raw.settimeout(10)
    raw.connect((host, port))
    sock = context.wrap_socket(raw, server_hostname=host)
    if sock.selected_alpn_protocol() != "h2":
        sys.exit(f"the server did not agree to h2: {sock.selected_alpn_protocol()}")
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8", validate_outbound_headers=validate,
                                                                       normalize_outbound_headers=validate))
    conn.initiate_connection()
    if settings:
        conn.update_settings(settings)
    sock.sendall(conn.data_to_send())
    return sock, conn


def request(conn, host, port, path, extra=()):
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, [(":method", "GET"), (":scheme", "https"), (":authority", f"{host}:{port}"), (":path", path)] + list(extra), end_stream=True)
    return stream


class Reader:
    """Reads events until a condition holds, keeping each stream's answer."""

    def __init__(self, sock, conn):
        self.sock, self.conn = sock, conn
        self.status, self.bodies, self.ended, self.goaway, self.closed = {}, {}, set(), None, False

    def pump(self, until, timeout):
        deadline = time.monotonic() + timeout
        while not until() and time.monotonic() < deadline and not self.closed:
            self.sock.settimeout(max(0.05, min(1.0, deadline - time.monotonic())))
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except (ssl.SSLError, OSError):
                self.closed = True
                break
            if not data:
                self.closed = True
                break
            if self.goaway is not None:
                # After GOAWAY the h2 library refuses the rest of the server's closing exchange
                # (its PING, its second GOAWAY); only the connection's end is waited for.
                continue
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                if self.conn.state_machine.state != h2.connection.ConnectionState.CLOSED:
                    raise
                # A GOAWAY came with the rest of its exchange in one read: h2 took the GOAWAY
                # (its state is closed) and refused what followed; its code is lost with it.
                self.goaway = -1
                continue
            for event in events:
                if isinstance(event, h2.events.ResponseReceived):
                    self.status[event.stream_id] = int(dict(event.headers)[":status"])
                elif isinstance(event, h2.events.DataReceived):
                    self.bodies.setdefault(event.stream_id, bytearray()).extend(event.data)
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    self.ended.add(event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    self.ended.add(event.stream_id)
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.goaway = int(event.error_code)
            out = self.conn.data_to_send()
            if out:
                self.sock.sendall(out)
        return until()

    def answers(self, streams):
        return [{"path": path, "status": self.status.get(s), "length": len(self.bodies.get(s, b"")),
                 "sha256": hashlib.sha256(bytes(self.bodies.get(s, b""))).hexdigest(), "ended": s in self.ended}
                for s, path in streams]


def main():
    host, port, scenario, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    result = {}
    if scenario == "closed-window":
        sock, conn = connect(host, port, {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        reader = Reader(sock, conn)
        reader.pump(lambda: False, 1.0)  # the server's SETTINGS and their ACK
        streams = [(request(conn, host, port, p), p) for p in paths]
        sock.sendall(conn.data_to_send())
        reader.pump(lambda: False, 2.0)
        result["bodyBeforeWindow"] = sum(len(b) for b in reader.bodies.values())
        result["headersBeforeWindow"] = len(reader.status)
        conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 20})
        conn.increment_flow_control_window(1 << 30)
        sock.sendall(conn.data_to_send())
        reader.pump(lambda: all(s in reader.ended for s, _ in streams), 20.0)
        result["answers"] = reader.answers(streams)
    elif scenario == "one-by-one":
        sock, conn = connect(host, port)
        reader = Reader(sock, conn)
        streams = []
        for p in paths:
            stream = request(conn, host, port, p)
            streams.append((stream, p))
            sock.sendall(conn.data_to_send())
            if not reader.pump(lambda: stream in reader.ended, 10.0):
                break
        result["answers"] = reader.answers(streams)
        result["goaway"] = reader.goaway
    elif scenario == "unread":
        wide = (1 << 31) - 1
        sock, conn = connect(host, port, {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: wide}, receive_buffer=4096)
        conn.increment_flow_control_window(wide - 65535)
        sock.sendall(conn.data_to_send())
        reader = Reader(sock, conn)
        reader.pump(lambda: False, 1.0)  # the server's SETTINGS and their ACK
        # An attacker need not keep to SETTINGS_MAX_CONCURRENT_STREAMS; the h2 library does.
        conn.remote_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = 1 << 20
        conn.remote_settings.acknowledge()
        streams = []
        for start in range(0, len(paths), 100):
            streams += [(request(conn, host, port, p), p) for p in paths[start:start + 100]]
            sock.sendall(conn.data_to_send())
            time.sleep(1)
        time.sleep(14)
        reader.pump(lambda: all(s in reader.ended for s, _ in streams), 20.0)
        result["answers"] = reader.answers(streams)
        result["closed"] = reader.closed
    elif scenario == "reset-early":
        sock, conn = connect(host, port)
        reader = Reader(sock, conn)
        first = request(conn, host, port, paths[0])
        conn.reset_stream(first)
        sock.sendall(conn.data_to_send())
        # A window update on the stream just reset, as a client may send while its reset travels:
        # written by hand, as h2 refuses to send on a closed stream.
        sock.sendall(bytes([0, 0, 4, 0x8, 0, 0, 0, 0, first]) + (1000).to_bytes(4, "big"))
        streams = [(request(conn, host, port, p), p) for p in paths]
        sock.sendall(conn.data_to_send())
        reader.pump(lambda: all(s in reader.ended for s, _ in streams), 20.0)
        result["answers"] = reader.answers(streams)
        result["goaway"] = reader.goaway
    elif scenario == "malformed":
        sock, conn = connect(host, port, validate=False)
        reader = Reader(sock, conn)
        bad = request(conn, host, port, paths[0], [("connection", "keep-alive")])
        sock.sendall(conn.data_to_send())
        reader.pump(lambda: bad in reader.ended, 5.0)
        streams = [(request(conn, host, port, p), p) for p in paths]
        sock.sendall(conn.data_to_send())
        reader.pump(lambda: all(s in reader.ended for s, _ in streams), 10.0)
        result["malformedStatus"] = reader.status.get(bad)
        result["answers"] = reader.answers(streams)
        result["goaway"] = reader.goaway
    elif scenario == "stalled":
        sock, conn = connect(host, port, {h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        reader = Reader(sock, conn)
        reader.pump(lambda: False, 1.0)
        for p in paths:
            request(conn, host, port, p)
        sock.sendall(conn.data_to_send())
        start = time.monotonic()
        reader.pump(lambda: False, 30.0)
        result["headersBeforeWindow"] = len(reader.status)
        result["closedAfter"] = round(time.monotonic() - start, 2) if reader.closed else None
    elif scenario == "silent":
        sock, conn = connect(host, port)
        reader = Reader(sock, conn)
        start = time.monotonic()
        reader.pump(lambda: False, 30.0)
        result["closedAfter"] = round(time.monotonic() - start, 2) if reader.closed else None
    elif scenario == "half-close":
        sock, conn = connect(host, port)
        Reader(sock, conn).pump(lambda: False, 1.0)
        # A TCP FIN without a TLS close_notify; from here the socket reads raw bytes (Python drops
        # the TLS layer on shutdown), so only the server's close is waited for.
        sock.shutdown(socket.SHUT_WR)
        start, closed = time.monotonic(), False
        while not closed and time.monotonic() - start < 30:
            sock.settimeout(1.0)
            try:
                closed = not sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                closed = True
        result["closedAfter"] = round(time.monotonic() - start, 2) if closed else None
    elif scenario == "ping-flood":
        sock, conn = connect(host, port)
        reader = Reader(sock, conn)
        first = request(conn, host, port, paths[0])
        sock.sendall(conn.data_to_send())
        reader.pump(lambda: first in reader.ended, 10.0)
        for i in range(1000):
            conn.ping(i.to_bytes(8, "big"))
        start = time.monotonic()
        try:
            sock.sendall(conn.data_to_send())
        except (ssl.SSLError, OSError):
            pass
        reader.pump(lambda: False, 15.0)
        result["goaway"] = reader.goaway
        result["closedAfter"] = round(time.monotonic() - start, 2) if reader.closed else None
    elif scenario == "idle":
        sock, conn = connect(host, port)
        reader = Reader(sock, conn)
        streams = [(request(conn, host, port, paths[0]), paths[0])]
        sock.sendall(conn.data_to_send())
        reader.pump(lambda: all(s in reader.ended for s, _ in streams), 10.0)
        result["answers"] = reader.answers(streams)
        start = time.monotonic()
        reader.pump(lambda: reader.goaway is not None, 30.0)
        result["goawayAfter"] = round(time.monotonic() - start, 2) if reader.goaway is not None else None
        reader.pump(lambda: False, 14.0)
        result["closedAfter"] = round(time.monotonic() - start, 2) if reader.closed else None
    else:
        sys.exit(f"unknown scenario {scenario}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
