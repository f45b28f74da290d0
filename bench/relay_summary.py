#!/usr/bin/env python3
"""bench/relay_summary.py - per task of a kope store, what an LLM run did:
the trials in order (proposer t/l/s..., status, ratio against the best
same-run peer), the best ratio and the trial that reached it, the LLM calls,
how many passed, and their tokens (the decisions' tokens in/out; through
bench/relay.py these are bytes/4 estimates, not a tokenizer's).

    python3 bench/relay_summary.py STORE.db [RUN ...]

The best same-run peer of a passing trial is its smallest ratio among the
baselines measured in the same run (the table's "vs best peer"); under qemu
a ratio is by the vector-cost model. Reads the store read-only (sqlite3).
"""
import json
import sqlite3
import sys


def main(db, runs):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    rows = [(i.lower(), json.loads(t)) for i, t in c.execute("select hex(id), canon from records order by rid")]
    byid = dict(rows)
    names = {i: r["body"].get("name") for i, r in rows if r["kind"] == "task"}
    outcome = {}
    for i, r in rows:
        if r["kind"] == "outcome":
            for p in r.get("parents", []):
                if p in byid and byid[p]["kind"] == "decision":
                    outcome[p] = r["body"]
    per = {}
    for i, r in rows:
        b = r["body"]
        if r["kind"] != "decision" or (runs and b.get("run") not in runs):
            continue
        o = outcome.get(i, {})
        ratios = o.get("ratios") or {}
        peer = min(ratios.values()) if ratios and o.get("status") == "pass" else 0.0
        tk = b.get("tokens") or {}
        per.setdefault((b.get("run"), names.get(b.get("task"), b.get("task"))), []).append(
            (b.get("trial") or 0, b.get("proposer", "?"), o.get("status", "?"), peer, tk.get("in", 0), tk.get("out", 0)))
    for (run, name), tr in sorted(per.items(), key=lambda x: (x[0][0] or 0, x[0][1] or "")):
        tr.sort()
        best = max([t[3] for t in tr] + [0.0])
        at = next((t[0] for t in tr if best > 0 and t[3] == best), None)
        llm = [t for t in tr if t[1] == "llm"]
        path = " ".join("%s:%s" % (t[1][0], "%.2f" % t[3] if t[2] == "pass" else t[2]) for t in tr)
        print("run %s %-26s best %7.3fx at trial %s  llm calls %d (pass %d) tokens in %d out %d  [%s]" % (
            run, name, best, at, len(llm), sum(t[2] == "pass" for t in llm), sum(t[4] for t in llm),
            sum(t[5] for t in llm), path))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], [int(x) for x in sys.argv[2:]])
