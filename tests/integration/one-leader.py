#!/usr/bin/env python3
"""one-leader.py - reads from etcd itself the history of a cluster's
election and of its instances' assignments, and checks that exactly one
leader acts at any time (issue 14's partitioned-leader acceptance).

    one-leader.py ENDPOINT CLUSTER OLD NEW CUT_REV OLD_TERM NEW_TERM
    one-leader.py --self-test   (the checks on made-up histories)

ENDPOINT is an etcd member's client URL (its v3 JSON gateway); CLUSTER
the fnfs cluster; OLD the controller that led until it was cut off and
NEW the one elected then; CUT_REV etcd's revision read just after OLD's
link went down; OLD_TERM and NEW_TERM the `cluster_term` their stats
said while they led.

The history is one watch from revision 1 over the cluster's keys (with
the previous values), up to a key this script puts past them
("/fnfs/CLUSTER~end", outside what fnfs reads), so that it is whole:

  - the election keys P/leader/LEASE: each one's creation revision (the
    term of the controller that campaigned with it: its value names it)
    and the revision it went at (lease expired or revoked, resigned);
  - every put and delete of P/in/T/NS/FN/N, at its revision, a put with
    the term the leader wrote in its value.

A controller leads from the revision at which its key is the oldest of
the election (every older one gone) to the revision its key goes: these
tenures are disjoint by construction, and the checks are that each
assignment write falls inside the tenure of the very leader its term
names (so no two controllers wrote in the same tenure, and nobody wrote
outside one). Prints one line per check: "ok DESCRIPTION" or
"not ok DESCRIPTION: WHY".
"""
import base64
import http.client
import json
import sys
import time
import urllib.parse

INF = float("inf")


def b64(s):
    return base64.b64encode(s.encode()).decode()


def unb64(s):
    return base64.b64decode(s or "").decode(errors="replace")


def post(ep, path, body, timeout=5):
    u = urllib.parse.urlparse(ep)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    c.request("POST", path, json.dumps(body))
    r = c.getresponse()
    out = json.loads(r.read() or b"{}")
    c.close()
    return out


def history(ep, start_key, end_key, until_rev, bound_s=30):
    """Every event of [start_key, end_key) from revision 1 until one at
    until_rev or later is seen (the sentinel put), within bound_s."""
    u = urllib.parse.urlparse(ep)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=bound_s)
    c.request("POST", "/v3/watch", json.dumps({"create_request": {
        "key": b64(start_key), "range_end": b64(end_key),
        "start_revision": "1", "prev_kv": True}}))
    r = c.getresponse()
    dec = json.JSONDecoder()
    buf = ""
    events = []
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk.decode()
        while True:
            buf = buf.lstrip()
            if not buf:
                break
            try:
                msg, n = dec.raw_decode(buf)
            except ValueError:
                break
            buf = buf[n:]
            res = msg.get("result") or {}
            if "error" in msg:
                raise RuntimeError("watch: %s" % msg["error"])
            if res.get("compact_revision") not in (None, "0"):
                raise RuntimeError("the history was compacted")
            for e in res.get("events") or []:
                kv = e["kv"]
                events.append({
                    "type": e.get("type", "PUT"),
                    "key": unb64(kv["key"]),
                    "rev": int(kv["mod_revision"]),
                    "create": int(kv.get("create_revision", 0)),
                    "lease": kv.get("lease", "0"),
                    "value": unb64(kv.get("value")),
                    "prev": unb64((e.get("prev_kv") or {}).get("value")),
                })
                if int(kv["mod_revision"]) >= until_rev:
                    c.close()
                    return events
    c.close()
    raise RuntimeError("the watch did not reach revision %d within %d s"
                       % (until_rev, bound_s))


def analyse(events, cluster, old, new, cut_rev, old_term, new_term):
    """The checks over `events` (history()'s): a list of (description,
    passed, why)."""
    prefix = "/fnfs/%s/" % cluster
    results = []

    def check(desc, ok, why=""):
        results.append((desc, bool(ok), why))

    # ---- the election: keys, their creation and their end
    keys = {}  # key -> {"create", "end", "name"}
    for e in events:
        if not e["key"].startswith(prefix + "leader/"):
            continue
        if e["type"] == "PUT" and e["key"] not in keys:
            try:
                name = json.loads(e["value"]).get("name")
            except ValueError:
                name = None
            keys[e["key"]] = {"create": e["create"], "end": INF,
                              "name": name}
        elif e["type"] == "DELETE" and e["key"] in keys:
            keys[e["key"]]["end"] = e["rev"]
    cands = sorted(keys.values(), key=lambda k: k["create"])
    # Tenure: from when every older key is gone (and this one exists)
    # until this one goes.
    gone = 0
    for k in cands:
        k["start"] = max(k["create"], gone)
        if k["end"] <= k["start"]:
            k["start"] = k["end"]  # withdrawn before it could lead
        gone = max(gone, k["end"])
    tenures = [k for k in cands if k["start"] < k["end"]]
    by_term = {k["create"]: k for k in cands}
    overlap = [(a, b) for a, b in zip(tenures, tenures[1:])
               if b["start"] < a["end"]]
    check("%d tenures of leaders, none overlapping" % len(tenures),
          len(tenures) >= 2 and not overlap, "overlaps: %s" % overlap)

    def leader_at(rev):
        ls = [k for k in tenures if k["start"] <= rev < k["end"]]
        return ls

    # ---- the terms of the two controllers, as etcd has them
    ot, nt = by_term.get(old_term), by_term.get(new_term)
    check("the old leader's term %d is its election key, which names %s"
          % (old_term, old), ot is not None and ot["name"] == old,
          "key: %s" % ot)
    check("the new leader's term %d is its election key, which names %s"
          % (new_term, new), nt is not None and nt["name"] == new,
          "key: %s" % nt)
    if ot is None or nt is None:
        return results

    # ---- the assignment writes
    writes = [e for e in events if e["key"].startswith(prefix + "in/")]
    puts = [e for e in writes if e["type"] == "PUT"]
    bad_term, outside, wrong, several = [], [], [], []
    for e in puts:
        try:
            term = int(json.loads(e["value"]).get("term", 0))
        except (ValueError, TypeError):
            term = 0
        e["term"] = term
        ls = leader_at(e["rev"])
        if term not in by_term:
            bad_term.append(e)
        elif len(ls) > 1:
            several.append(e)
        elif not ls:
            outside.append(e)
        elif ls[0]["create"] != term:
            wrong.append(e)
    dels = [e for e in writes if e["type"] == "DELETE"]
    dels_outside = [e for e in dels if len(leader_at(e["rev"])) != 1]

    def show(v):
        return "; ".join("%s@%d term %s" % (e["key"], e["rev"],
                                             e.get("term")) for e in v[:5])

    check("%d assignment writes, each says the term of an election key"
          % len(puts), puts and not bad_term, show(bad_term))
    check("each one lands inside a leader's tenure", not outside,
          show(outside))
    check("inside exactly one", not several, show(several))
    check("and that leader is the one its term names", not wrong,
          show(wrong))
    check("%d deletes, each inside exactly one tenure" % len(dels),
          dels and not dels_outside, show(dels_outside))

    # ---- the partition
    old_puts = [e for e in puts if e["term"] == old_term]
    new_puts = [e for e in puts if e["term"] == new_term]
    last_old = max((e["rev"] for e in old_puts), default=0)
    check("%s wrote %d before the cut (revision %d)"
          % (old, len(old_puts), cut_rev),
          old_puts and last_old < cut_rev, "last at %d" % last_old)
    check("nothing of %s's after the cut" % old,
          not [e for e in old_puts if e["rev"] >= cut_rev],
          show([e for e in old_puts if e["rev"] >= cut_rev]))
    check("its key went (revision %s) after the cut, before %s led "
          "(revision %s)" % (ot["end"], new, nt["start"]),
          cut_rev <= ot["end"] <= nt["start"])
    check("none of its writes lands after %s's election" % new,
          last_old < nt["start"], "last at %d" % last_old)
    check("%s wrote %d, all in its tenure (from revision %s)"
          % (new, len(new_puts), nt["start"]),
          new_puts and min(e["rev"] for e in new_puts) >= nt["start"])
    return results


def main():
    ep, cluster, old, new = sys.argv[1:5]
    cut_rev, old_term, new_term = (int(x) for x in sys.argv[5:8])
    sentinel = "/fnfs/%s~end" % cluster
    put = post(ep, "/v3/kv/put", {"key": b64(sentinel), "value": b64("x")})
    end_rev = int(put["header"]["revision"])
    events = history(ep, "/fnfs/%s/" % cluster, sentinel + "\0", end_rev)
    return [("etcd's history read whole, revisions 1 to %d (%d events)"
             % (end_rev, len(events)),
             bool(events) and events[-1]["key"] == sentinel, "")] + \
        analyse(events, cluster, old, new, cut_rev, old_term, new_term)


def self_test():
    """The checks pass on a good history and fail on each way of
    breaking it: a checker that cannot fail proves nothing."""
    P = "/fnfs/x/"

    def ev(rev, key, typ="PUT", create=0, value=""):
        return {"type": typ, "key": P + key, "rev": rev,
                "create": create or rev, "lease": "1", "value": value,
                "prev": ""}

    def put(rev, n, term):
        return ev(rev, "in/t/n/f/%d" % n, value=json.dumps(
            {"desired": 1, "worker": "w", "epoch": rev, "term": term}))

    good = [ev(2, "leader/a1", value='{"name":"a"}'),
            ev(3, "leader/b1", value='{"name":"b"}'),
            put(4, 0, 2), put(5, 1, 2),
            # the cut at 6; a's key goes at 7: b leads
            ev(7, "leader/a1", "DELETE", create=2),
            put(8, 0, 3), ev(9, "in/t/n/f/1", "DELETE")]
    bad = {
        "a write of a after its key went":
            good + [put(10, 1, 2)],
        "a write of b before it led":
            good[:3] + [put(4, 1, 3)] + good[4:],
        "a write without a term":
            good + [ev(10, "in/t/n/f/0", value='{"desired":1,'
                       '"worker":"w","epoch":1}')],
        "a write of a candidate that never led":
            good + [ev(10, "leader/c1", value='{"name":"c"}'),
                    put(11, 0, 10)],
        "a write of a after the cut, in its tenure":
            good[:4] + [put(6, 1, 2)] + good[4:],
        "a delete when nobody led":
            good + [ev(10, "leader/b1", "DELETE", create=3),
                    ev(11, "in/t/n/f/0", "DELETE")],
    }
    out = []
    res = analyse(good, "x", "a", "b", 6, 2, 3)
    fails = [r for r in res if not r[1]]
    out.append(("the checker passes a good history", not fails,
                "; ".join("%s: %s" % (d, w) for d, _, w in fails)))
    for what, events in bad.items():
        res = analyse(events, "x", "a", "b", 6, 2, 3)
        out.append(("the checker fails %s" % what,
                    any(not r[1] for r in res), "all passed"))
    return out


if __name__ == "__main__":
    try:
        res = self_test() if sys.argv[1:] == ["--self-test"] else main()
    except Exception as ex:  # the history could not be read: one failure
        res = [("etcd's history read", False, repr(ex))]
    for desc, ok, why in res:
        print(("ok %s" % desc) if ok else ("not ok %s: %s" % (desc, why)))
