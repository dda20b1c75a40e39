#!/usr/bin/env python3
"""Serve a GGUF model over llama.cpp's OpenAI-compatible HTTP API on loopback, with the `xllamacpp` wheel
(PyPI; llama.cpp's own server engine, no compiling). Used by the tests as a real peer server for
`quarry ask --llm-url`, and handy for trying Quarry against a server without installing one.

    python3 scripts/llm-server.py --model assets/models/smollm2-135m-instruct/model.gguf [--port 0]

Prints `listening http://127.0.0.1:PORT/v1` on stdout once the server answers, then serves until stdin
closes or the process is terminated. scripts/setup.sh installs xllamacpp into ~/.cache/quarry/venv.
"""
import argparse
import socket
import sys
import threading
import time
import urllib.request

import xllamacpp as xlc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--alias", default="local")
    args = parser.parse_args()

    params = xlc.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port or free_port()
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    # A set of names in xllamacpp ≥ 2026 (a plain string would be taken letter by letter).
    params.model_alias = {args.alias}
    params.ui = False
    server = xlc.Server(params)  # starts serving on a background thread

    base = f"http://127.0.0.1:{params.port}/v1"
    deadline = time.time() + 120
    while True:
        try:
            urllib.request.urlopen(f"{base}/models", timeout=2).read()
            break
        except Exception:
            if time.time() > deadline:
                print("server did not come up", file=sys.stderr)
                return 1
            time.sleep(0.2)
    print(f"listening {base}", flush=True)
    # Serve until our parent closes stdin (or kills us).
    stopper = threading.Thread(target=sys.stdin.read, daemon=True)
    stopper.start()
    stopper.join()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
