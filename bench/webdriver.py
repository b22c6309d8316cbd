"""Headless Chromium through chromedriver's W3C WebDriver HTTP API, for the bench scripts (no
Selenium). Needs chromium and chromium-driver (apt)."""
import json, socket, subprocess, time, urllib.request

ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--autoplay-policy=no-user-gesture-required", "--mute-audio"]

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def call(base, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"{}")

def start_driver():
    """chromedriver on a free port, once it answers: (process, base URL)."""
    port = free_port()
    driver = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            if call(base, "GET", "/status")["value"]["ready"]: break
        except Exception: pass
        time.sleep(0.1)
    return driver, base

def new_session(base, performance_log=False):
    """A fresh browser (nothing cached); with `performance_log`, its network events are kept."""
    caps = {"browserName": "chrome", "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": ARGS}}
    if performance_log: caps["goog:loggingPrefs"] = {"performance": "ALL"}
    return call(base, "POST", "/session", {"capabilities": {"alwaysMatch": caps}})["value"]["sessionId"]

def evaluate(base, session, script):
    return call(base, "POST", f"/session/{session}/execute/sync", {"script": script, "args": []})["value"]
