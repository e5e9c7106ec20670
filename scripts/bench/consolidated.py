#!/usr/bin/env python3
"""consolidated.py - for scripts/bench/failover-etcd: the instances of a
mount, and how long until they are back as they were.

    consolidated.py snapshot MNT FUNCS...
        prints one line per instance of each function directory FUNCS
        (relative to MNT/tenants), from the instance's own status file:
        "FUNC/N WORKER PID RESTARTS STARTED_MS STATE", sorted ("-" for
        what is absent). A hollow worker's instances have pid 0; their
        started_ms changes if they are started again.

    consolidated.py wait MNT[,MNT...] BEFORE TIMEOUT_S FUNCS...
        finds the MNT whose stats say `cluster_role leader` (polling them
        until one does), then polls the functions' status files on it
        (one read per function:
        a line "instance_N STATE WORKER PID" per instance) until every
        instance of the file BEFORE is there with BEFORE's state, worker
        and pid and no other instance is, or TIMEOUT_S passed; then takes
        a snapshot once. Prints "key value" lines: leader (the MNT),
        running_us (epoch µs
        at the end of the first poll that saw every instance of BEFORE
        running, whatever its worker and pid, or -1), consolidated_us
        (the same, all as in BEFORE, or -1), polls, poll_ms_max (the
        longest poll: the resolution), and from the snapshot: same (as
        in BEFORE, restarts and started_ms included), running, moved
        (another worker or pid), restarted (restarts or started_ms
        changed), missing, extra. Exit 0 when consolidated, 1 if not.
"""
import os
import sys
import time


def fields(path):
    """The "key value" lines of a file, as a dict ({} if unreadable)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return {}
    d = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        d[k] = v.strip()
    return d


def snapshot(mnt, funcs):
    """Each instance's status file: (worker, pid, restarts, started_ms,
    state)."""
    lines = {}
    for fn in funcs:
        d = os.path.join(mnt, "tenants", fn, "instances")
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            st = fields(os.path.join(d, n, "status"))
            lines[f"{fn}/{n}"] = tuple(st.get(k) or "-" for k in (
                "worker", "pid", "restarts", "started_ms", "state"))
    return lines


def quick(mnt, funcs):
    """The functions' status files: {FUNC/N: (worker, pid, state)}."""
    lines = {}
    for fn in funcs:
        for k, v in fields(os.path.join(mnt, "tenants", fn, "status")).items():
            if not k.startswith("instance_"):
                continue
            f = v.split()
            if len(f) >= 3:
                lines[f"{fn}/{k[9:]}"] = (f[1], f[2], f[0])
    return lines


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "snapshot":
        for k, v in sorted(snapshot(sys.argv[2], sys.argv[3:]).items()):
            print(k, *v)
        return 0
    if len(sys.argv) < 5 or sys.argv[1] != "wait":
        print(__doc__, file=sys.stderr)
        return 2
    mnts, before_path, limit = sys.argv[2].split(","), sys.argv[3], float(sys.argv[4])
    funcs = sys.argv[5:]
    before = {}
    with open(before_path) as f:
        for line in f:
            k, w, pid, restarts, started, state = line.split()
            before[k] = (w, pid, restarts, started, state)
    want = {k: (b[0], b[1], b[4]) for k, b in before.items()}
    end = time.time() + limit
    running_us = consolidated_us = -1
    polls = 0
    longest = 0
    mnt = None
    while True:
        t0 = time.time()
        for m in mnts:
            if fields(os.path.join(m, "stats")).get("cluster_role") == "leader":
                mnt = m
                break
        if mnt is None:
            if t0 > end:
                print("leader -")
                return 1
            time.sleep(0.01)
            continue
        now = quick(mnt, funcs)
        t = time.time()
        polls += 1
        longest = max(longest, t - t0)
        running = sum(1 for k in want if now.get(k, ("", "", ""))[2] == "running")
        if running_us < 0 and running == len(want):
            running_us = int(t * 1e6)
        if now == want:
            consolidated_us = int(t * 1e6)
            break
        if t > end:
            break
        time.sleep(0.01)
    print("leader", mnt)
    print("running_us", running_us)
    print("consolidated_us", consolidated_us)
    print("polls", polls)
    print("poll_ms_max", round(longest * 1000))
    # Once: every instance's own status (its restarts and started_ms).
    after = snapshot(mnt, funcs)
    same = moved = restarted = missing = 0
    for k, b in before.items():
        v = after.get(k)
        if v is None:
            missing += 1
        elif v == b:
            same += 1
        else:
            if v[0] != b[0] or v[1] != b[1]:
                moved += 1
            if v[2] != b[2] or v[3] != b[3]:
                restarted += 1
    print("same", same)
    print("running", sum(1 for v in after.values() if v[4] == "running"))
    print("moved", moved)
    print("restarted", restarted)
    print("missing", missing)
    print("extra", len(set(after) - set(before)))
    return 0 if consolidated_us >= 0 else 1


if __name__ == "__main__":
    sys.exit(main())
