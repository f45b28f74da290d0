#!/usr/bin/env python3
"""bench/relay.py - a loopback OpenAI-compatible endpoint whose replies a
person (or a model session) writes by hand, for trying kope's LLM path with a
real model without giving kope a network key.

    python3 bench/relay.py --dir /tmp/relay [--port 8765] [--timeout 1800]
    KOPE_LLM_BASE_URL=http://127.0.0.1:8765/v1 KOPE_LLM_MODEL=relay kope run ...

Each POST to /v1/chat/completions is written as DIR/req-N.json (the request
body as received) and DIR/prompt-N.md (its messages, role by role, as text).
The relay then waits until DIR/reply-N.md exists (write it to a temporary
name and rename it, so a half-written file is never read) and returns its
text as the assistant's message, finish_reason "stop". Token counts in
`usage` are estimates (bytes / 4): the relay has no tokenizer, so kope's
token figures for a relay run are not a provider's. No reply within
--timeout seconds: HTTP 504 (kope treats it as a failed call).

Binds 127.0.0.1 only. Python standard library only; one request at a time.
"""
import argparse
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

MAX_BODY = 8 << 20  # a prompt is far smaller; refuse anything larger


class Relay(BaseHTTPRequestHandler):
    server_version = "kope-relay/1"

    def _send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # /v1/models, for clients that probe it
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "relay", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self):
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        n = int(self.headers.get("Content-Length") or 0)
        if n <= 0 or n > MAX_BODY:
            self._send(413, {"error": {"message": "bad length"}})
            return
        raw = self.rfile.read(n)
        try:
            req = json.loads(raw)
        except ValueError:
            self._send(400, {"error": {"message": "not JSON"}})
            return
        srv = self.server
        srv.count += 1
        k = srv.count
        d = srv.dir
        with open(os.path.join(d, "req-%d.json" % k), "wb") as f:
            f.write(raw)
        text = []
        for m in req.get("messages", []):
            text.append("## %s\n\n%s\n" % (m.get("role", "?"), m.get("content", "")))
        prompt = "\n".join(text)
        with open(os.path.join(d, "prompt-%d.md" % k), "w") as f:
            f.write(prompt)
        reply_path = os.path.join(d, "reply-%d.md" % k)
        print("relay: request %d -> %s; waiting for %s" % (k, os.path.join(d, "prompt-%d.md" % k), reply_path),
              file=sys.stderr, flush=True)
        t0 = time.monotonic()
        while not os.path.exists(reply_path):
            if time.monotonic() - t0 > srv.timeout:
                self._send(504, {"error": {"message": "no reply written within %d s" % srv.timeout}})
                return
            time.sleep(0.5)
        with open(reply_path) as f:
            reply = f.read()
        self._send(200, {
            "id": "relay-%d" % k,
            "object": "chat.completion",
            "model": req.get("model", "relay"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(reply) // 4,
                      "total_tokens": len(prompt) // 4 + len(reply) // 4},
        })

    def log_message(self, fmt, *args):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="where requests and replies are files")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds to wait for a reply file")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    srv = HTTPServer(("127.0.0.1", a.port), Relay)
    srv.dir, srv.timeout, srv.count = a.dir, a.timeout, 0
    # a restarted relay continues the numbering instead of overwriting
    while os.path.exists(os.path.join(a.dir, "req-%d.json" % (srv.count + 1))):
        srv.count += 1
    print("relay: http://127.0.0.1:%d/v1, files in %s" % (a.port, a.dir), file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
