#!/usr/bin/env bash
# Test-only tooling from PyPI, pinned with everything it pulls (test-tools.constraints.txt), kept in
# ~/.cache/storecast/test-tools-<hash of this script and the pins> (so a new clone on the same
# machine reuses it; a changed pin makes a new one) and
# linked at .build/test-tools (rebuilt when missing):
#   venv/        Python with m3u8 (a real playlist parser for the packager's output),
#                kubernetes-validate (deploy/kubernetes against Kubernetes' schemas) and
#                schemathesis (the control API against schemas/openapi.yaml; brings PyYAML) and
#                standardwebhooks (the tests' webhook receiver verifies signatures with it) and
#                h2 (an HTTP/2 client that does what browsers do not, Tests/Tools/h2_client.py)
#   hls.js       hls.js 1.6.15 (Apache-2.0), taken from the gradio 6.31.0 wheel, where it ships
#                as an ES module; rewritten into a classic script that sets window.Hls.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=.build/test-tools
cache="${XDG_CACHE_HOME:-$HOME/.cache}/storecast/test-tools-$(cat deploy/local/test-tools.sh deploy/local/test-tools.constraints.txt | sha256sum | cut -c1-16)"
# A checkout linked to the tools of older pins is linked again, to the current ones.
if [[ -L "$tools" && "$(readlink "$tools")" != "$cache" ]]; then rm "$tools"; fi
if [[ ! -e "$tools" ]]; then
    mkdir -p "$cache" .build
    ln -s "$cache" "$tools"
fi
mkdir -p "$tools"
# The real path: the venv's scripts name their Python by it, and outlive this clone.
tools=$(readlink -f "$tools")
pins=$(readlink -f deploy/local/test-tools.constraints.txt)

if [[ ! -x "$tools/venv/bin/python" ]] || ! "$tools/venv/bin/python" -c "import m3u8" 2>/dev/null; then
    echo "test tools: creating a Python venv with m3u8"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install -q --disable-pip-version-check -c "$pins" "m3u8==6.0.0"
fi
# kubernetes-validate checks deploy/kubernetes against Kubernetes' own schemas (bundled, offline).
if [[ ! -x "$tools/venv/bin/kubernetes-validate" ]]; then
    echo "test tools: installing kubernetes-validate (22 MB download)"
    "$tools/venv/bin/pip" install -q --disable-pip-version-check -c "$pins" "kubernetes-validate==1.37.0"
fi
# schemathesis tests the running control API against its OpenAPI document.
if [[ ! -x "$tools/venv/bin/schemathesis" ]]; then
    echo "test tools: installing schemathesis"
    "$tools/venv/bin/pip" install -q --disable-pip-version-check -c "$pins" "schemathesis==4.32.5"
fi
# h2 speaks HTTP/2 as no browser does, for the packager's HTTPS tests (Tests/Tools/h2_client.py).
if ! "$tools/venv/bin/python" -c "import h2" 2>/dev/null; then
    echo "test tools: installing h2"
    "$tools/venv/bin/pip" install -q --disable-pip-version-check -c "$pins" "h2==4.4.1"
fi
# standardwebhooks verifies webhook signatures in the tests' receiver (Tests/Tools/webhook_receiver.py).
if ! "$tools/venv/bin/python" -c "import standardwebhooks" 2>/dev/null; then
    echo "test tools: installing standardwebhooks"
    "$tools/venv/bin/pip" install -q --disable-pip-version-check -c "$pins" "standardwebhooks==1.1.0"
fi

if [[ ! -s "$tools/hls.js" ]]; then
    echo "test tools: extracting hls.js 1.6.15 from the gradio==6.31.0 wheel (31 MB download)"
    wheel_dir=$(mktemp -d)
    trap 'rm -rf "$wheel_dir"' EXIT
    "$tools/venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$wheel_dir" "gradio==6.31.0"
    "$tools/venv/bin/python" - "$wheel_dir"/gradio-6.31.0-*.whl "$tools/hls.js" <<'PY'
import re, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if re.fullmatch(r"gradio/templates/frontend/assets/hls-[^/]+\.js", n)]
    if len(names) != 1:
        sys.exit(f"expected one hls-*.js in {wheel}, found {names}")
    src = z.read(names[0]).decode()
if "`1.6.15`" not in src:
    sys.exit("the wheel's hls.js is not 1.6.15")
# The module's only export statement ends the file; its factory builds `new <Hls>({...})`.
cls = re.search(r"let r=new (\w+)\(\{maxBufferLength", src)
tail = re.search(r"export\{[^}]*\};?\s*$", src)
if not cls or not tail:
    sys.exit("unexpected hls.js module layout")
src = src[:tail.start()] + f"window.Hls={cls.group(1)};\n"
open(out, "w").write("/* hls.js 1.6.15, Apache-2.0, from gradio==6.31.0 */\n" + src)
PY
fi
echo "test tools: ready in $tools"
