#!/usr/bin/env python3
"""spec-fuzz.py - random writes to every spec attribute of a function.

  spec-fuzz.py run SECONDS STATE FN_DIR:SEED...
      For SECONDS per function (and at most 20000 writes), with a random
      generator seeded with SEED, writes random byte strings,
      biased toward trouble (bytes that are not UTF-8, NUL, newlines,
      control characters, huge numbers, JSON fragments), to the attribute
      files of the function in FN_DIR. Each value is written on its own
      open file, in one write(2) or split across several (cut anywhere,
      often after a newline, as bash's printf writes); an error from a
      write or the close is a refusal. After each value it checks that
      every file is UTF-8, that `config` parses as a JSON object with
      every key and agrees with the other files, that an acknowledged
      value reads back as what was written (all of its pieces), and that
      a refused one changed nothing. A value in pieces is judged whole: it
      is refused only when the whole is, or when a piece ends a finished
      value (see `unfinished`) that is bad; one refused in pieces for no
      such reason is written again whole, which must be refused too. The
      last state of each is saved in STATE.

  spec-fuzz.py verify STATE
      Checks that each function shows exactly the state saved in STATE (run
      after a remount).

Exits 0 when every check passed; failures are printed as "# " lines.
"""
import errno
import json
import os
import random
import re
import sys
import time

ATTRS = ["config", "command", "mode", "format", "parallelism",
         "max_instances", "memory", "timeout", "idle_timeout", "env", "cwd",
         "tags", "tags_policy", "restart_policy", "pids", "cpu", "network",
         "isolation", "mounts", "ready", "ready_timeout", "concurrency"]
FILES = ATTRS + ["revision"]
TEXT = ["command", "cwd"]
INTS = {"parallelism": (0, 1000), "max_instances": (1, 1000),
        "memory": (1, 1048576), "timeout": (1, 3600000),
        "idle_timeout": (0, 86400), "pids": (0, 4194304),
        "cpu": (0, 1024000), "ready_timeout": (1, 3600),
        "concurrency": (1, 1000)}
ENUMS = {"mode": ["daemon", "hot", "cold"],
         "format": ["line", "json", "http", "lambda"],
         "ready": ["started", "tcp", "notify", "lambda", "http:/",
                   "http:/healthz"],
         "tags_policy": ["strict", "loose"],
         "restart_policy": ["always", "on-failure", "never"],
         "network": ["host", "none"], "isolation": ["sandbox", "none"]}
DEFAULTS = {"command": "", "mode": "daemon", "format": "line",
            "parallelism": 1, "memory": 128, "timeout": 30000,
            "idle_timeout": 30, "env": {}, "cwd": "", "tags": [],
            "tags_policy": "strict", "restart_policy": "always",
            "pids": 256, "cpu": 0, "network": "host", "isolation": "sandbox",
            "mounts": [], "ready_timeout": 30, "concurrency": 1}
# Lines of `mounts`, good and bad.
MOUNTS = [b"/srv/data", b"/srv/data rw", b"/srv/data ro", b"/var/cache/x/",
          b"/opt/caf\xc3\xa9 rw", b"/a b", b"/", b"relative", b"/a/../b",
          b"/a/./b", b"/a//b", b"/srv/data rw", b"", b" rw", b"/x\x01",
          b"/e\xff"]
NAME = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
ENV_KEY = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{0,254}")
MAX_WRITES = 20000
MAX_FAILURES = 5

# Pieces the values are made of.
BAD = [b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc0\xaf", b"\xc1\xbf", b"\xc3",
       b"\xe2\x82", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80",
       b"\xf8\x88\x80\x80\x80", b"\x00", b"\n", b"\r", b"\r\n", b"\x1b[31m",
       b"\x1b]0;x\x07", b"\x7f", b"\xc2\x9b", b"\x01", b"\x08"]
GOOD = [b"sleep 1000", b"echo hi", b" ", b"  ", b"caf\xc3\xa9", b"\xe2\x82\xac",
        b"\xf0\x9f\x98\x80", b"\xe6\x97\xa5\xe6\x9c\xac", b"$HOME", b"'q'",
        b'"dq"', b"\\", b"a=b", b"--x", b"/srv/app", b"\t", b"#", b";", b"{}",
        b"\xef\xbb\xbf", b"\xe2\x80\xae", b"\xc2\xa0"]
JSONBITS = [b"{", b"}", b"[", b"]", b'"', b",", b":", b"\\u0000", b"\\u001b",
            b"\\ud800", b"\\udc00", b"\\ud83d\\ude00", b"\\n", b'\\"', b"null",
            b"true", b"1e400", b"-1", b"99999999999999999999999", b"1.5",
            b'"command"', b'"env"', b'"tags"', b'"memory"', b'"bogus"']
NUMS = [b"0", b"1", b"2", b"7", b"999", b"1000", b"1001", b"1048576",
        b"1048577", b"3600000", b"86400", b"86401", b"99999999999999999999",
        b"9223372036854775808", b"-1", b"+1", b" 1", b"1 ", b"1.0", b"0x10",
        b"007", b"1e3", b"\xd9\xa3", b"\xef\xbc\x91"]
WORDS = [b"gpu", b"ssd", b"a.b", b"x_1", b"Z-9", b"-bad", b".x", b"caf\xc3\xa9",
         b"a" * 63, b"a" * 64, b"g\xffu", b"a,b", b"\t", b"\x00"]
KEYS = [b"A", b"B", b"PATH", b"_X", b"K1", b"GREETING", b"FN_TENANT", b"1A",
        b"A-B", b"", b"A B", b"\xc3\xa9", b"A\xff"]


class Fuzz:
    def __init__(self, fn, seed):
        self.fn = fn
        self.rng = random.Random(seed)
        self.failures = 0
        self.writes = 0
        self.acked = {a: 0 for a in ATTRS}
        self.refused = {a: 0 for a in ATTRS}
        self.split = 0

    # ------------------------------------------------------------- values

    def pick(self, pieces):
        return self.rng.choice(pieces)

    def text(self, good_only=False):
        """A command-like value: good pieces, some trouble among them."""
        r = self.rng
        parts = [self.pick(GOOD) for _ in range(r.randint(1, 5))]
        if not good_only and r.random() < 0.45:
            parts.insert(r.randint(0, len(parts)),
                         self.pick(BAD if r.random() < 0.8 else JSONBITS))
        v = b"".join(parts)
        if r.random() < 0.04:
            v = (v or b"x") * (4200 // len(v or b"x") + 1)
            v = v[:r.choice([4095, 4096, 4097, 5000])]
            if good_only:   # not cut inside a character
                v = v.decode("utf-8", "ignore").encode()
        return v

    def env(self):
        r = self.rng
        lines = []
        for _ in range(r.randint(0, 4)):
            k = self.pick(KEYS[:6]) if r.random() < 0.85 else self.pick(KEYS)
            lines.append(k + b"=" + self.text(good_only=r.random() < 0.5))
        if r.random() < 0.1:
            lines.append(b"NOEQUALS")
        return b"\n".join(lines)

    def mounts(self):
        r = self.rng
        return b"\n".join(self.pick(MOUNTS[:6]) if r.random() < 0.8
                          else self.pick(MOUNTS)
                          for _ in range(r.randint(0, 4)))

    def tags(self):
        r = self.rng
        words = [self.pick(WORDS[:6]) if r.random() < 0.8 else self.pick(WORDS)
                 for _ in range(r.randint(0, 4))]
        return self.pick([b" ", b"  ", b" "]).join(words)

    def json_text(self, s):
        """`s` as a JSON string, sometimes with raw bytes JSON cannot
        carry or escapes it refuses spliced in."""
        r = self.rng
        body = json.dumps(s, ensure_ascii=r.random() < 0.5)[1:-1].encode()
        if r.random() < 0.3:
            at = r.randint(0, len(body))
            while at > 0 and body[at - 1:at] == b"\\":
                at -= 1
            body = body[:at] + self.pick(BAD + JSONBITS[7:13]) + body[at:]
        return b'"' + body + b'"'

    def config_value(self, key, valid):
        """A JSON value for `key`: one fnfs must take when `valid`,
        anything near that otherwise."""
        r = self.rng
        if key in TEXT:
            v = self.text(good_only=valid)
            if key == "cwd" and (valid or r.random() < 0.8):
                v = b"/" + v
            t = v.decode("utf-8", "replace")
            if valid:
                t = t[:4000]
                return json.dumps(t, ensure_ascii=r.random() < 0.5).encode()
            return self.json_text(t)
        if key in INTS:
            lo, hi = INTS[key]
            if key == "parallelism":
                lo, hi = 0, 4        # below any max_instances below
            elif key == "max_instances":
                lo = 4
            if valid:
                if key == "cpu":
                    lo = 10
                return str(r.choice([lo, hi, r.randint(lo, hi)])).encode()
            return self.pick([str(hi + 1).encode(), b"-1", b"1e400", b"1.0",
                              b'"4"', b"null", b"99999999999999999999999",
                              b"9223372036854775807", b"true"])
        if key in ENUMS:
            # An empty ready is valid: it follows the format again.
            words = ENUMS[key] + ([""] if key == "ready" else []) \
                if valid else ["HOT", "x", "daemon\n"] + \
                ([] if key == "ready" else [""])
            return self.json_text(self.pick(words)) if not valid else \
                json.dumps(self.pick(words)).encode()
        if key == "mounts":
            lines = [self.pick(MOUNTS[:6]) for _ in range(r.randint(0, 3))]
            if not valid:
                lines.append(self.pick(MOUNTS[6:]))
            return b"[" + b", ".join(
                json.dumps(l.decode("utf-8", "replace")).encode()
                for l in lines) + b"]"
        if key == "env":
            items = []
            for k in r.sample(KEYS[:6], r.randint(0, 3)):
                v = self.text(good_only=True).decode()[:1000]
                items.append(json.dumps(k.decode()).encode() + b": " +
                             json.dumps(v, ensure_ascii=False).encode())
            if not valid:
                k = self.pick(KEYS)
                v = self.text().decode("utf-8", "replace")
                items.insert(r.randint(0, len(items)),
                             self.json_text(k.decode("utf-8", "replace")) +
                             b": " + (self.json_text(v) if r.random() < 0.9
                                      else b"1"))
            return b"{" + b", ".join(items) + b"}"
        words = [self.pick(WORDS[:6]) for _ in range(r.randint(0, 3))]
        if not valid:
            words.append(self.pick(WORDS[5:]))
        return b"[" + b", ".join(self.json_text(w.decode("utf-8", "replace"))
                                 if not valid else json.dumps(w.decode()).encode()
                                 for w in words) + b"]"

    def config(self):
        """A config document: mostly one fnfs takes, else with one bad
        value, an unknown key, a cut or a stray fragment."""
        r = self.rng
        keys = [k for k in ATTRS[1:] if r.random() < 0.4]
        bad = self.pick(keys) if keys and r.random() < 0.4 else None
        if r.random() < 0.05:
            keys.append(self.pick(["bogus", "revision", "error", "command"]))
        body = b", ".join(json.dumps(k).encode() + b": " +
                          self.config_value(k, k != bad) for k in keys)
        doc = b"{" + body + b"}"
        roll = r.random()
        if roll < 0.06:
            doc = doc[:r.randint(0, len(doc))]        # cut short
        elif roll < 0.12:
            at = r.randint(0, len(doc))              # a stray fragment
            doc = doc[:at] + self.pick(JSONBITS + BAD) + doc[at:]
        elif roll < 0.15:
            doc = b"[" + doc + b"]"
        return doc

    def value(self, attr):
        r = self.rng
        roll = r.random()
        if roll < 0.08:
            v = r.randbytes(r.randint(1, 64))
        elif roll < 0.14:
            v = b"".join(self.pick(JSONBITS) for _ in range(r.randint(1, 6)))
        elif attr == "config":
            v = self.config()
        elif attr in TEXT:
            v = self.text()
            if attr == "cwd" and r.random() < 0.8:
                v = b"/" + v
        elif attr == "env":
            v = self.env()
        elif attr == "tags":
            v = self.tags()
        elif attr == "mounts":
            v = self.mounts()
        elif attr in INTS:
            v = self.pick(NUMS) if r.random() < 0.6 else \
                str(r.randint(*INTS[attr])).encode()
        else:
            words = [w.encode() for w in ENUMS[attr]]
            v = self.pick(words) if r.random() < 0.6 else \
                self.pick(words) + self.pick(BAD + [b"", b" "])
            if attr == "ready" and r.random() < 0.1:
                v = b""     # follow the format again
        if r.random() < 0.5:
            v += b"\n"
        return v or b"\n"   # a write of nothing is no write at all

    # ------------------------------------------------------------ the files

    def read(self, name):
        with open(os.path.join(self.fn, name), "rb") as f:
            return f.read()

    def snapshot(self):
        return {a: self.read(a) for a in FILES}

    def cuts(self, data):
        """Where to cut `data` into the pieces of several write(2) calls:
        none (one write) half of the time, else one to three places,
        often just after a newline."""
        r = self.rng
        if len(data) < 2 or r.random() < 0.5:
            return []
        nl = [i + 1 for i, c in enumerate(data[:-1]) if c == 0x0a]
        at = set()
        for _ in range(r.randint(1, 3)):
            if nl and r.random() < 0.5:
                at.add(self.pick(nl))
            else:
                at.add(r.randint(1, len(data) - 1))
        return sorted(at)

    def write(self, attr, data, cuts=()):
        """One open, a write(2) per piece of `data` cut at `cuts`, one
        close; returns 0 or the first errno."""
        err = 0
        fd = os.open(os.path.join(self.fn, attr), os.O_WRONLY | os.O_TRUNC)
        try:
            for a, b in zip([0] + list(cuts), list(cuts) + [len(data)]):
                n = os.write(fd, data[a:b])
                if n != b - a:
                    self.fail(f"{attr}: short write {n} of {b - a}", data)
        except OSError as e:
            err = e.errno
        finally:
            try:
                os.close(fd)
            except OSError as e:
                err = err or e.errno
        return err

    # --------------------------------------------------------------- checks

    def fail(self, what, data=None, before=None, after=None):
        self.failures += 1
        print(f"# FAIL: {what}")
        if data is not None:
            print(f"#   written: {data[:300]!r}")
        for k in FILES:
            if before is not None and after is not None and \
                    before[k] != after[k]:
                print(f"#   {k}: {before[k][:300]!r} -> {after[k][:300]!r}")
        if self.failures >= MAX_FAILURES:
            raise SystemExit(1)

    def consistent(self, snap, data=None):
        """Every file UTF-8; config a full JSON object agreeing with them."""
        for k, v in snap.items():
            try:
                v.decode("utf-8")
            except UnicodeDecodeError:
                self.fail(f"{k} is not UTF-8: {v[:200]!r}", data)
                return False
        try:
            cfg = json.loads(snap["config"].decode("utf-8"))
        except ValueError as e:
            self.fail(f"config does not parse: {e}: {snap['config'][:300]!r}",
                      data)
            return False
        if not isinstance(cfg, dict) or set(cfg) != set(ATTRS[1:]):
            self.fail(f"config does not have every key: {cfg!r}", data)
            return False
        shown = render(cfg)
        for k in ATTRS[1:]:
            if shown[k] != snap[k]:
                self.fail(f"config says {k} is {shown[k]!r}, the file "
                          f"{snap[k]!r}", data)
                return False
        return True

    def expected(self, attr, data, before=None):
        """What the attribute files read after `data` is acknowledged,
        for those it decides (None: the write cannot be acknowledged).
        `before` is the snapshot the write was made on; an empty `ready`
        needs it, for it makes ready follow mode and format again."""
        v = data[:-1] if data.endswith(b"\n") else data
        if attr == "config":
            try:
                obj = json.loads(data.decode("utf-8"),
                                 object_pairs_hook=no_duplicates)
                if not isinstance(obj, dict) or set(obj) - set(DEFAULTS) - \
                        {"max_instances", "ready"}:
                    return None
                cfg = dict(DEFAULTS)
                cfg.update(obj)
                if "ready" in obj and not isinstance(cfg["ready"], str):
                    return None
                if cfg.get("ready", "") == "":     # follows the format
                    cfg["ready"] = ready_default(cfg)
                if cfg["ready"] == "lambda" and \
                        ready_default(cfg) != "lambda":
                    return None
                # A lambda runtime's API is on the worker's loopback.
                if ready_default(cfg) == "lambda" and \
                        cfg["isolation"] == "sandbox" and \
                        cfg["network"] == "none":
                    return None
                if "max_instances" not in obj:
                    cfg["max_instances"] = max(1, cfg["parallelism"])
                cfg["tags"] = list(dict.fromkeys(cfg["tags"]))
                ms = [m.encode() for m in cfg["mounts"]]
                if any(m == b"" or b"\n" in m for m in ms):
                    return None
                norm = self.expected("mounts", b"\n".join(ms))
                if norm is None:
                    return None
                out = render(cfg)
                out["mounts"] = norm["mounts"]
            except (ValueError, TypeError, AttributeError, KeyError,
                    UnicodeError):
                return None
            ok = [self.expected(k, out[k]) == {k: out[k]}
                  for k in ATTRS[1:]]
            return out if all(ok) else None
        if attr in TEXT:
            if attr == "cwd" and v and not v.startswith(b"/"):
                return None
            return {attr: v + b"\n"} if text_ok(v) else None
        if attr == "env":
            lines = v.split(b"\n")
            if lines[-1] == b"":
                lines.pop()
            keys = [l.split(b"=", 1)[0] for l in lines]
            if not all(b"=" in l and text_ok(l) and ENV_KEY.fullmatch(k) and
                       not k.startswith(b"FN_") for l, k in zip(lines, keys)) \
                    or len(set(keys)) != len(keys):
                return None
            return {attr: b"".join(l + b"\n" for l in lines)}
        if attr == "tags":
            words = [w for w in v.split(b" ") if w]
            if not all(NAME.fullmatch(w) for w in words):
                return None
            return {attr: b" ".join(dict.fromkeys(words)) + b"\n"}
        if attr == "mounts":
            got, seen = [], set()
            for line in v.split(b"\n"):
                if line == b"":
                    continue
                rw = len(line) > 3 and line[-3:] in (b" rw", b" ro")
                path = line[:-3] if rw else line
                rw = rw and line[-1:] == b"w"
                while len(path) > 1 and path.endswith(b"/"):
                    path = path[:-1]
                parts = path.split(b"/")[1:]
                if not text_ok(path) or not path.startswith(b"/") or \
                        path == b"/" or len(path) > 4096 or \
                        any(c in (b"", b".", b"..") for c in parts) or \
                        path in seen:
                    return None
                seen.add(path)
                got.append(path + (b" rw" if rw else b"") + b"\n")
            if len(got) > 32:
                return None
            return {attr: b"".join(got)}
        if attr in INTS:
            lo, hi = INTS[attr]
            if not v.isdigit() or not v.isascii() or \
                    not lo <= int(v) <= hi or \
                    (attr == "cpu" and 0 < int(v) < 10):
                return None
            return {attr: str(int(v)).encode() + b"\n"}
        if attr == "ready" and v == b"" and before is not None:
            follow = {k: before[k].decode().strip() for k in
                      ("mode", "format")}
            return {attr: ready_default(follow).encode() + b"\n"}
        if attr == "ready" and v.startswith(b"http:/"):
            ok = len(v) - 5 <= 256 and all(0x21 <= c <= 0x7e for c in v)
            return {attr: v + b"\n"} if ok else None
        return {attr: v + b"\n"} if v.decode("latin-1") in ENUMS[attr] \
            else None

    def step(self, attr, data, before):
        cuts = self.cuts(data)
        err = self.write(attr, data, cuts)
        after = self.snapshot()
        self.writes += 1
        self.split += 1 if cuts else 0
        if not self.consistent(after, data):
            return after
        rev0, rev1 = int(before["revision"]), int(after["revision"])
        # A piece that ends a finished value fnfs cannot take is refused,
        # whatever comes after it.
        bad_piece = any(not unfinished(attr, data[:c]) and
                        self.expected(attr, data[:c], before) is None
                        for c in cuts)
        if bad_piece and not err:
            self.fail(f"{attr}: accepted a value a finished piece of which "
                      f"is bad (cut at {cuts})", data, before, after)
            return after
        if err and cuts and not bad_piece and after == before:
            # Refused in pieces: the same value whole must be refused too.
            if self.write(attr, data) == 0:
                self.fail(f"{attr}: refused in pieces (cut at {cuts}) what "
                          f"it takes whole", data, before, self.snapshot())
                return self.snapshot()
        if err:
            self.refused[attr] += 1
            if err != errno.EINVAL:
                self.fail(f"{attr}: refused with {errno.errorcode.get(err)}",
                          data, before, after)
            if after != before:
                self.fail(f"{attr}: a refused write changed something",
                          data, before, after)
            reason = self.read("error")
            if not clean_line(reason):
                self.fail(f"the error line is not one clean line: "
                          f"{reason!r}", data)
            return after
        self.acked[attr] += 1
        want = self.expected(attr, data, before)
        if want is None:
            self.fail(f"{attr}: accepted what it must refuse", data, before,
                      after)
            return after
        for k, v in want.items():
            if after[k] != v:
                self.fail(f"{attr}: acknowledged, but {k} reads "
                          f"{after[k]!r}, not {v!r}", data, before, after)
        for k in ATTRS[1:]:
            if attr == "config" or k == attr or k in want:
                continue
            # ready follows mode and format until it is set.
            if attr in ("mode", "format") and k == "ready":
                continue
            if attr == "parallelism" and k == "max_instances" and \
                    after[k] in (before[k],
                                 b"%d\n" % max(1, int(after["parallelism"]))):
                continue
            if after[k] != before[k]:
                self.fail(f"{attr}: writing it changed {k}", data, before,
                          after)
        changed = any(after[k] != before[k] for k in ATTRS)
        # Whether max_instances follows parallelism is in no file: fixing
        # it at the number it followed to is a change that shows nowhere.
        # The same for ready, which follows mode and format until set.
        hidden = attr in ("max_instances", "ready", "config") and \
            not changed and \
            rev1 == rev0 + 1
        if rev1 != rev0 + (1 if changed else 0) and not hidden:
            self.fail(f"{attr}: revision {rev0} -> {rev1} for "
                      f"{'a change' if changed else 'no change'}", data,
                      before, after)
        return after

    def run(self, seconds):
        end = time.monotonic() + seconds
        last = self.snapshot()
        self.consistent(last)
        while time.monotonic() < end and self.writes < MAX_WRITES:
            attr = self.rng.choice(ATTRS)
            last = self.step(attr, self.value(attr), last)
        return last


def unfinished(attr, v):
    """Whether `v`, what an open of `attr` has written so far, may be the
    start of a longer value (sched/model/partial.c): it does not end in a
    newline, or, for config, its JSON is not closed (blanks only, or a
    string, object or array still open)."""
    if attr != "config":
        return not v.endswith(b"\n")
    depth, seen, in_str, esc = 0, False, False, False
    for c in v:
        if in_str:
            if esc:
                esc = False
            elif c == 0x5c:
                esc = True
            elif c == 0x22:
                in_str = False
            continue
        if c in b" \t\r\n":
            continue
        seen = True
        if c == 0x22:
            in_str = True
        elif c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
    return not seen or in_str or depth > 0


def text_ok(v):
    """Whether `v` is a text value fnfs must take: UTF-8, one line, no
    control character but tab."""
    try:
        s = v.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c == "\t" or not (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f)
               for c in s)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key given twice")
    return dict(pairs)


def clean_line(b):
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return s.endswith("\n") and text_ok(s[:-1].encode())


def ready_default(cfg):
    """What `ready` reads while it is not set: the format's default."""
    if cfg["mode"] == "hot" and cfg["format"] == "http":
        return "http:/"
    if cfg["mode"] == "hot" and cfg["format"] == "lambda":
        return "lambda"
    return "started"


def render(cfg):
    """The attribute files of the spec `cfg` (a config object)."""
    out = {}
    for k in ATTRS[1:]:
        v = cfg[k]
        if k == "env":
            out[k] = "".join(f"{a}={b}\n" for a, b in v.items()).encode()
        elif k == "tags":
            out[k] = (" ".join(v) + "\n").encode()
        elif k == "mounts":
            out[k] = "".join(f"{m}\n" for m in v).encode()
        else:
            out[k] = (f"{v}\n").encode()
    return out


def main():
    """run SECONDS STATE DIR:SEED... | verify STATE"""
    if len(sys.argv) >= 5 and sys.argv[1] == "run":
        secs, state, failed, saved = float(sys.argv[2]), sys.argv[3], 0, {}
        for arg in sys.argv[4:]:
            fn, seed = arg.rsplit(":", 1)
            fz = Fuzz(fn, int(seed))
            try:
                last = fz.run(secs)
                saved[fn] = {k: v.decode("latin-1") for k, v in last.items()}
            except SystemExit:
                pass
            print(f"# seed {seed}: {fz.writes} writes, "
                  f"{sum(fz.acked.values())} acknowledged, "
                  f"{sum(fz.refused.values())} refused, {fz.split} in "
                  f"pieces, {fz.failures} "
                  f"failures; acknowledged by file: " +
                  " ".join(f"{a}={fz.acked[a]}" for a in ATTRS))
            failed += fz.failures
        with open(state, "w") as f:
            json.dump(saved, f)
        return 1 if failed else 0
    if len(sys.argv) == 3 and sys.argv[1] == "verify":
        with open(sys.argv[2]) as f:
            saved = json.load(f)
        failed = 0
        for fn, files in saved.items():
            fz = Fuzz(fn, 0)
            want = {k: v.encode("latin-1") for k, v in files.items()}
            try:
                got = fz.snapshot()
                fz.consistent(got)
                for k in FILES:
                    if got[k] != want[k]:
                        fz.fail(f"after the remount {fn}/{k} reads "
                                f"{got[k][:300]!r}, acknowledged: "
                                f"{want[k][:300]!r}")
            except SystemExit:
                pass
            failed += fz.failures
        return 1 if failed or not saved else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
