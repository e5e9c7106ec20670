#!/usr/bin/env python3
"""write_phases.py - where a write through fnfs on etcd spends its time,
from the daemon's side, for scripts/bench/etcd-write --trace.

    write_phases.py TRACE FUSE_FD

TRACE is the output of `perf trace -e read,writev,sendto,recvfrom -p PID`
on the fnfs daemon of an etcd mount while a client writes an attribute
file over and over; FUSE_FD is the daemon's /dev/fuse descriptor. For each
write it finds:

  flush   the last FUSE request read before the txn (the FLUSH that
          applies the value)
  send    the txn's sendto (the first sendto of more than 500 bytes after
          it: a write's txn; the quorum probe and lease renewals are
          smaller)
  first   the first recvfrom after it (the txn's answer or the watch's
          event, whichever the loop reads first)
  second  the last recvfrom before the FUSE reply (the other of the two)
  reply   the next writev to the FUSE fd (the FLUSH's answer)

and prints the median, 10th and 90th percentile of each interval in µs,
and how often the txn's answer was read before the watch's event.
"""
import re
import statistics
import sys

LINE = re.compile(r"\s*([\d.]+) \(\s*([\d.]+) ms\): (\w+)\((.*)\)\s+= (-?\d+)")


def parse(path):
    """The syscalls of TRACE: (ms, name, fd, result, len) tuples."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            t, _, name, args, ret = m.groups()
            fd = re.search(r"fd: (\d+)", args)
            ln = re.search(r"len: (\d+)", args)
            out.append((float(t), name, fd.group(1) if fd else None,
                        int(ret), int(ln.group(1)) if ln else 0))
    return out


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: write_phases.py TRACE FUSE_FD\n")
        return 2
    ev = parse(sys.argv[1])
    fuse = sys.argv[2]
    names = ["flush -> send", "send -> first", "first -> second",
             "second -> reply", "flush -> reply"]
    spans = {k: [] for k in names}
    answer_first = n = 0
    for i, (t, name, fd, ret, ln) in enumerate(ev):
        if name != "sendto" or ln <= 500:
            continue
        j = i - 1
        while j >= 0 and not (ev[j][1] == "read" and ev[j][2] == fuse
                              and ev[j][3] > 0):
            j -= 1
        k, got = i + 1, []
        while k < len(ev) and not (ev[k][1] == "writev" and ev[k][2] == fuse):
            if ev[k][1] == "recvfrom" and ev[k][3] > 0:
                got.append((ev[k][0], ev[k][2]))
            k += 1
        if j < 0 or k >= len(ev) or len(got) < 2:
            continue
        flush, reply = ev[j][0], ev[k][0]
        n += 1
        answer_first += got[0][1] == fd
        for key, span in zip(names, [t - flush, got[0][0] - t,
                                     got[-1][0] - got[0][0],
                                     reply - got[-1][0], reply - flush]):
            spans[key].append(span * 1000)
    if n == 0:
        print("  no write found in the trace")
        return 1
    print("  the daemon's side of %d writes (perf trace), µs:" % n)
    print("  %-16s %7s %7s %7s" % ("", "median", "p10", "p90"))
    for key in names:
        v = sorted(spans[key])
        print("  %-16s %7.0f %7.0f %7.0f" % (key, statistics.median(v),
                                             v[len(v) // 10],
                                             v[len(v) * 9 // 10]))
    print("  the txn's answer read before the watch's event in %d of %d"
          % (answer_first, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
