#!/usr/bin/env python3
"""Checks deploy/kubernetes/storecast.yaml against the executables it runs, beyond the schema
(kubernetes-validate does that): every flag a container passes is one its executable's --help
lists; every $(VAR) in its arguments is defined in its env; each pod mounts exactly its own
role's secret key, the three servers' public keys, and the allow-list iff its role binds
sockets; STORECAST_ZMQ_KEYS points at that mount; every Service selects a workload and names
ports the containers have. Prints each problem and exits 1 if there is any.
  check.py MANIFEST BIN_DIR
"""
import re, subprocess, sys, yaml

manifest, bin_dir = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
problems = []
ROLES = {"storecast-ingest": "ingest", "storecast-transcoder": "transcoder", "storecast-packager": "packager",
         "storecast-metrics": "metrics", "storecast-api": "api"}
SERVERS = {"ingest", "packager", "metrics"}
helps = {}

def help_of(command):
    key = tuple(command)
    if key not in helps:
        out = subprocess.run([f"{bin_dir}/{command[0]}", *command[1:], "--help"], capture_output=True, text=True, timeout=30)
        helps[key] = out.stdout + out.stderr
    return helps[key]

workloads = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet", "Job")]
for w in workloads:
    name, pod = w["metadata"]["name"], w["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for c in pod["containers"]:
        args = c["args"]
        command = args[:2] if args[0] == "storecast" else args[:1]
        text = help_of(command)
        for flag in [a for a in args if a.startswith("--")]:
            if not re.search(rf"(^|\s){re.escape(flag)}(\s|$|,|=|<)", text, re.M):
                problems.append(f"{name}: {' '.join(command)} has no option {flag}")
        env = {e["name"]: e for e in c.get("env", [])}
        for var in re.findall(r"\$\((\w+)\)", " ".join(args)):
            if var not in env:
                problems.append(f"{name}: $({var}) is used but not defined in env")
        role = ROLES.get(args[0])
        if role is None:
            continue
        mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
        keys = volumes.get("keys", {}).get("secret")
        if not keys or "keys" not in mounts:
            problems.append(f"{name}: no CURVE keys mounted"); continue
        if env.get("STORECAST_ZMQ_KEYS", {}).get("value") != mounts["keys"]:
            problems.append(f"{name}: STORECAST_ZMQ_KEYS is not the keys mount {mounts['keys']}")
        items = {i["key"] for i in keys.get("items", [])}
        secrets = {i for i in items if i.endswith(".key")}
        if secrets != {f"{role}.key"}:
            problems.append(f"{name}: mounts secret keys {sorted(secrets)}; its role {role} needs exactly {role}.key")
        for pub in ("ingest.pub", "packager.pub", "metrics.pub"):
            if pub not in items:
                problems.append(f"{name}: {pub} missing (clients check the servers with it)")
        if ("allowed_keys" in items) != (role in SERVERS):
            problems.append(f"{name}: allowed_keys {'missing' if role in SERVERS else 'mounted'}; role {role} {'binds' if role in SERVERS else 'binds no'} sockets")
        if (keys.get("defaultMode", 0o644) & 0o007) != 0:
            problems.append(f"{name}: keys are readable by others (defaultMode {oct(keys.get('defaultMode', 0o644))})")

for s in [d for d in docs if d["kind"] == "Service"]:
    selector = s["spec"]["selector"]
    matched = [w for w in workloads if all(w["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in selector.items())]
    if not matched:
        problems.append(f"service {s['metadata']['name']}: selects no workload"); continue
    names = {p.get("name") for w in matched for c in w["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])}
    for p in s["spec"]["ports"]:
        if isinstance(p["targetPort"], str) and p["targetPort"] not in names:
            problems.append(f"service {s['metadata']['name']}: targetPort {p['targetPort']} is no container port of {[w['metadata']['name'] for w in matched]}")

for p in problems:
    print(p)
print(f"check.py: {len(workloads)} workloads, {len(problems)} problems")
sys.exit(1 if problems else 0)
