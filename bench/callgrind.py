#!/usr/bin/python3
"""bench/callgrind.py -- instructions per small call in the broker and egress, by function.

Wall-clock figures on a shared two-core host move with whatever else runs; the number of
instructions a call executes does not.  This runs the broker's and egress's code (bench/cgrole:
the same libraries as rtsandbox-broker and rtsandbox-egress, without the sandbox valgrind cannot
run under) each under `valgrind --tool=callgrind`, wired as the supervisor wires them (a frame
pipe to each, the broker's pipe to egress handed over with egress_attach, a bound turn on both),
in front of the in-process stand-in upstream (tests/fixtures/fake_upstream.py, HTTPS with its
test CA).  This process plays the supervisor and the worker: it makes --warm calls, then --calls
more, each the small model call of bench/passthrough.py on a fresh Unix connection.  It runs
twice, with --warm calls and with --warm + --calls, and prints the difference divided by --calls:
what one call costs each process once connections, TLS session and buffers are warm, with
start-up and exit subtracted out.

Printed: instructions per call of the broker and of egress (callgrind's Ir, user space only,
libraries included), and the functions that take the most of them, exclusive (self) and
inclusive, with --top rows each.  --keep DIR keeps the four callgrind.out files for
callgrind_annotate.

--lines also counts the code each call runs: the 64-byte lines of code holding an
instruction that ran at least once per call (callgrind --dump-instr=yes), by library and by
function.  On a host where the processes of a call take turns on two cores, each call finds
much of that code gone from the caches; fewer lines is less to bring back, whatever the
instruction count.

--stream MIB adds a third run, the --warm calls and then one stream of MIB MiB of
server-sent events (bench/passthrough.py's body), and prints the instructions per MiB
streamed, the difference from the first run divided by MIB.

--plain runs the pair without valgrind and prints instead the CPU time each process spent per
call (user and system time from /proc/<pid>/stat, run time from schedstat) over --calls calls:
what those instructions cost on this host now, next to `build/bench/hops -e` (the two bare
relays) run right after, for --rounds rounds, and the ratio of the two (DESIGN.md 12 asks at
most 2); and next to `hops -e -t`, the same relays with egress's leg to the upstream in TLS
1.3, as egress's is: what sealing and opening the two messages adds to the floor.  The
stand-in upstream writes each answer's head with its body (one TLS record), as hops' upstream
writes its answer.  Turns are bound 900 calls at a time, as budgets.max_calls
allows at most 1 000.

Run (as any user; valgrind and the build's bench/cgrole are needed; a minute or two):
    python3 bench/callgrind.py [--calls 200] [--warm 20] [--top 25] [--keep DIR]
    python3 bench/callgrind.py --plain --calls 3000 [--rounds 3]
with RTSANDBOX_BUILD pointing at the build directory (default ./build).
"""

import argparse
import collections
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

SMALL = {"model": "claude-test", "max_tokens": 16,
         "messages": [{"role": "user", "content": "hi"}]}
FD_PARENT, FD_EGRESS = 3, 4
PEER = 1


class Pipe:
    """The supervisor's end of a child's frame pipe (DESIGN.md 3): u32 json_len, u32
    data_len, JSON, data; descriptors ride alone in their sendmsg()."""

    def __init__(self, sock, name):
        self.sock, self.name = sock, name
        self.buf = b""
        self.frames = collections.deque()
        self.cond = threading.Condition()
        self.closed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def send(self, obj, data=b"", fds=()):
        js = json.dumps(obj, separators=(",", ":")).encode()
        frame = struct.pack(">II", len(js), len(data)) + js + data
        if fds:
            socket.send_fds(self.sock, [frame], list(fds))
        else:
            self.sock.sendall(frame)

    def _read(self):
        while True:
            try:
                b = self.sock.recv(1 << 16)
            except OSError:
                b = b""
            if not b:
                with self.cond:
                    self.closed = True
                    self.cond.notify_all()
                return
            self.buf += b
            while len(self.buf) >= 8:
                jl, dl = struct.unpack(">II", self.buf[:8])
                if len(self.buf) < 8 + jl + dl:
                    break
                obj = json.loads(self.buf[8:8 + jl])
                self.buf = self.buf[8 + jl + dl:]
                with self.cond:
                    self.frames.append(obj)
                    self.cond.notify_all()

    def wait(self, t, timeout=120):
        """The first frame of type t; frames of other types before it are dropped (events,
        counters)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                while self.frames:
                    f = self.frames.popleft()
                    if f.get("t") == t:
                        return f
                    if f.get("t") in ("refused", "error"):
                        raise RuntimeError("%s: %r" % (self.name, f))
                if self.closed:
                    raise RuntimeError("%s closed its pipe waiting for %s" % (self.name, t))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError("%s: no %s within %d s" % (self.name, t, timeout))
                self.cond.wait(left)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def spawn(argv, fds, log):
    """argv with fds as FD_PARENT, FD_EGRESS, ..., log as stdout and stderr, and nothing else
    open (Python's descriptors are close-on-exec; dup2 clears that on the targets)."""
    high = [os.dup(f) for f in [log.fileno()] + [x.fileno() for x in fds]]
    null = os.open(os.devnull, os.O_RDONLY)
    acts = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, high[0], 1),
            (os.POSIX_SPAWN_DUP2, high[0], 2)]
    acts += [(os.POSIX_SPAWN_DUP2, f, FD_PARENT + i) for i, f in enumerate(high[1:])]
    # What this process inherited without close-on-exec stays here.
    for d in os.listdir("/proc/self/fd"):
        f = int(d)
        if f > 2 and f not in high and f != null and f >= FD_PARENT + len(fds):
            try:
                if os.get_inheritable(f):
                    acts.append((os.POSIX_SPAWN_CLOSE, f))
            except OSError:
                pass
    try:
        return os.posix_spawnp(argv[0], argv, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                               file_actions=acts)
    finally:
        for f in high + [null]:
            os.close(f)


def credential(tmp):
    """A credential file egress accepts: owned by the uid it is told, mode 0600."""
    path = os.path.join(tmp, "credential")
    with open(path, "w") as f:
        f.write("sk-test-callgrind-0123456789\n")
    os.chmod(path, 0o600)
    uid = os.getuid()
    if uid == 0:
        uid = 65534
        os.chown(path, uid, -1)
    return path, uid


def run(args, fu, tmp, calls, tag, stream=0):
    """One run of the pair under callgrind with calls small calls, then a stream of stream
    MiB when stream > 0; the two profiles' paths."""
    cgrole = os.path.join(B.rtsb.BUILD, "bench", "cgrole")
    cred, uid = credential(tmp)
    sock_path = os.path.join(tmp, "broker-%s.sock" % tag)
    lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lst.bind(sock_path)
    lst.listen(16)
    sup_e, egr_sup = socket.socketpair()
    sup_b, brk_sup = socket.socketpair()
    brk_egr, egr_brk = socket.socketpair()
    out = {r: os.path.join(tmp, "callgrind.out.%s.%s" % (r, tag)) for r in ("egress", "broker")}
    vg = ["valgrind", "--tool=callgrind", "--quiet"]
    if args.lines:
        vg.append("--dump-instr=yes")
    if args.plain:
        vg = []
    log = open(os.path.join(tmp, "roles-%s.log" % tag), "wb")
    procs = {}
    pipes = {}
    try:
        procs["egress"] = spawn(vg + (["--callgrind-out-file=" + out["egress"]] if vg else []) + [cgrole,
                                     "egress", "-n", "cg", "-p", cred, "-p", fu.ca_file],
                                [egr_sup], log)
        egr_sup.close()
        pipes["egress"] = e = Pipe(sup_e, "egress")
        e.send({"t": "config_egress", "upstream_url": fu.url, "credential_file": cred,
                "ca_file": fu.ca_file, "allow_http": False, "uid": uid,
                "max_output_tokens": 128000})
        e.send({"t": "config_egress_profile", "name": "default", "model": "claude-test",
                "mcp": []})
        e.send({"t": "config_done"})
        e.wait("ready")
        time.sleep(0.05)
        e.send({"t": "egress_attach", "peer": PEER, "channel": "cg", "role": "broker",
                "profile": "default"}, fds=[egr_brk.fileno()])
        time.sleep(0.05)
        egr_brk.close()
        procs["broker"] = spawn(vg + (["--callgrind-out-file=" + out["broker"]] if vg else []) + [cgrole,
                                     "broker", "-n", "cg"], [brk_sup, brk_egr], log)
        brk_sup.close()
        brk_egr.close()
        pipes["broker"] = b = Pipe(sup_b, "broker")
        b.send({"t": "config_broker", "channel": "cg", "profile": "default",
                "model": "claude-test", "max_calls": 1000, "max_output_tokens": 128000,
                "tools": []}, fds=[lst.fileno()])
        time.sleep(0.05)
        lst.close()
        b.send({"t": "config_done"})
        b.wait("ready")
        body = json.dumps(SMALL).encode()
        c0 = None
        done, turn = 0, 0
        while done < calls:
            # A turn's budget is at most 1 000 calls (budgets.max_calls): a new turn each 900.
            turn += 1
            tid = "cg-%d" % turn
            if turn > 1:
                e.send({"t": "egr_unbind", "peer": PEER, "turn_id": "cg-%d" % (turn - 1)})
                b.send({"t": "brk_unbind", "turn_id": "cg-%d" % (turn - 1)})
            e.send({"t": "egr_bind", "id": turn, "peer": PEER, "turn_id": tid,
                    "thinking": "low", "max_calls": 1000, "deadline_ms": 600000})
            e.wait("egr_bound")
            b.send({"t": "brk_bind", "turn_id": tid, "thinking": "low",
                    "deadline_ms": 600000, "max_calls": 1000})
            # The bind reaches the broker through its pipe: the first call may wait for it.
            deadline = time.monotonic() + 60
            while True:
                r = B.unix_request(sock_path, "POST", "/anthropic/v1/messages", body)
                if r.status == 200:
                    break
                if r.status != 410 or time.monotonic() > deadline:
                    raise RuntimeError("small call: %d %r" % (r.status, r.body[:300]))
                time.sleep(0.05)
            done += 1
            if c0 is None:
                # One more call once the credential settled: every call counted finds
                # the token kept, as in service.
                B.settle_credential(cred)
                small_call(sock_path, body)
                done += 1
                c0 = {r: cpu(pid) for r, pid in procs.items()}
                n0 = done
            for _ in range(min(899, calls - done)):
                small_call(sock_path, body)
                done += 1
        if stream > 0:
            # The streaming body of bench/passthrough.py, on one more call.
            fu.script({"kind": "big", "bytes": stream * B.MIB, "chunk": 65536,
                       "content_type": "text/event-stream"})
            r = B.unix_request(sock_path, "POST", "/anthropic/v1/messages", body, keep=False,
                               timeout=600)
            if r.status != 200 or r.nbytes != stream * B.MIB:
                raise RuntimeError("stream: %d, %d bytes" % (r.status, r.nbytes))
        if args.plain:
            c1 = {r: cpu(pid) for r, pid in procs.items()}
            return {r: [(c1[r][i] - c0[r][i]) / (done - n0) for i in range(3)] for r in c1}
    finally:
        # Both end on the end of their pipe to the supervisor; callgrind writes at exit.
        for p in pipes.values():
            p.close()
        for name, pid in procs.items():
            deadline = time.monotonic() + 120
            while os.waitpid(pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.05)
        log.close()
    for r, path in out.items():
        if not os.path.exists(path):
            with open(os.path.join(tmp, "roles-%s.log" % tag), "rb") as f:
                raise RuntimeError("no profile of %s:\n%s" % (r, f.read().decode()[-3000:]))
    return out


def small_call(sock_path, body):
    """One small model call through the broker, answered by the stand-in."""
    r = B.unix_request(sock_path, "POST", "/anthropic/v1/messages", body)
    if r.status != 200 or b"echo: hi" not in r.body:
        raise RuntimeError("small call: %d %r" % (r.status, r.body[:300]))


def cpu(pid):
    """(utime s, stime s, schedstat run time s) of a process."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) / B.CLK_TCK, int(st[12]) / B.CLK_TCK, B.proc_sched_ns(pid) / 1e9)


def annotate(path, inclusive):
    """{function: Ir} from callgrind_annotate, and the total."""
    cmd = ["callgrind_annotate", "--threshold=100", "--auto=no", "--inclusive=%s" %
           ("yes" if inclusive else "no"), path]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    fns, total = {}, None
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?\(?PROGRAM TOTALS", line)
        if m:
            total = int(m.group(1).replace(",", ""))
            continue
        m = re.match(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)(?:\s+\[.*\])?$", line)
        if m and ":" in m.group(2):
            name = m.group(2)
            # Libraries without symbols (cJSON's): one row per library.
            lib = re.search(r"\[(\S+)\]$", line)
            if name.startswith("???:0x") and lib:
                name = "???:(%s)" % os.path.basename(lib.group(1))
            n = int(m.group(1).replace(",", ""))
            fns[name] = fns.get(name, 0) + n
    return fns, total


def instr_costs(path):
    """{(object, function, address): Ir} of every instruction in a callgrind profile made
    with --dump-instr=yes.  Positions are written relative to the one before ("+3", "-8",
    "*"); a calls= line names its target, and the line after it holds the call's inclusive
    cost at the call instruction, which is not that instruction's own."""
    names, costs = {}, {}
    ob = fn = None
    last, skip = 0, False
    kinds = {"ob": "ob", "cob": "ob", "fn": "fn", "cfn": "fn", "fl": "fl", "fi": "fl",
             "fe": "fl", "cfi": "fl", "cfl": "fl"}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            m = re.match(r"^(ob|cob|fl|fi|fe|fn|cfn|cfi|cfl)=\((\d+)\)(?: (.*))?$", line)
            if m:
                key = (kinds[m.group(1)], m.group(2))
                if m.group(3) is not None:
                    names[key] = m.group(3)
                if m.group(1) == "ob":
                    ob = names.get(key)
                elif m.group(1) == "fn":
                    fn = names.get(key)
                continue
            if line.startswith(("calls=", "jump=", "jcnd=")):
                skip = True
                continue
            if line[0] not in "0123456789+-*":
                continue
            parts = line.split()
            t = parts[0]
            if t == "*":
                a = last
            elif t[0] in "+-":
                a = last + int(t)
            else:
                a = int(t, 16) if t.startswith("0x") else int(t)
            last = a
            if skip:
                skip = False
                continue
            k = (os.path.basename(ob or "?"), fn, a)
            costs[k] = costs.get(k, 0) + (int(parts[2]) if len(parts) > 2 else 0)
    return costs


def code_lines(path_a, path_b, calls):
    """The lines of code run on every call: those holding an instruction whose count grew
    by at least calls from profile a to profile b.  ({object: lines}, {function: lines})."""
    a, b = instr_costs(path_a), instr_costs(path_b)
    by_ob, by_fn = {}, {}
    for (ob, fn, addr), n in b.items():
        if n - a.get((ob, fn, addr), 0) >= calls:
            by_ob.setdefault(ob, set()).add(addr // 64)
            by_fn.setdefault("%s (%s)" % (fn, ob), set()).add(addr // 64)
    return ({k: len(v) for k, v in by_ob.items()}, {k: len(v) for k, v in by_fn.items()})


def short(name):
    """file:function -> function (file's base name)."""
    f, _, fn = name.rpartition(":")
    return "%s (%s)" % (fn, os.path.basename(f)) if f and f != "???" else fn


def plain(args, fu, tmp):
    """--plain: --rounds rounds of --calls calls, each followed by bench/hops -e (the two
    bare relays) and bench/hops -e -t (the same with TLS to the upstream) at the same
    moment; each round's figures and the ratio of their run times, then the medians."""
    pair, relays, relays_tls = [], [], []
    for i in range(args.rounds):
        c = run(args, fu, tmp, args.calls, "p%d" % i)
        for role in ("broker", "egress"):
            B.say("%s: per call over %d calls: user %.0f us, system %.0f us, run time "
                  "%.0f us" % (role, args.calls - 1, c[role][0] * 1e6, c[role][1] * 1e6,
                               c[role][2] * 1e6))
        pair.append((c["broker"][2] + c["egress"][2]) * 1e6)
        fl = B.hops()
        if fl is None:
            continue
        relays.append(fl["broker_cpu"] + fl["egress_cpu"])
        ft = B.hops("-t")
        relays_tls.append(ft["broker_cpu"] + ft["egress_cpu"])
        B.say("  round %d: broker + egress %.0f us; the bare relays (hops -e) %.0f us "
              "(broker %.0f, egress %.0f), ratio %.2f; with TLS to the upstream (hops -e -t) "
              "%.0f us (egress %.0f), ratio %.2f" % (
                  i + 1, pair[-1], relays[-1], fl["broker_cpu"], fl["egress_cpu"],
                  pair[-1] / relays[-1], relays_tls[-1], ft["egress_cpu"],
                  pair[-1] / relays_tls[-1]))
    if relays:
        ratios = [p / r for p, r in zip(pair, relays)]
        ratios_tls = [p / r for p, r in zip(pair, relays_tls)]
        B.say("median of %d rounds: broker + egress %.0f us, relays %.0f us, ratio %.2f "
              "(DESIGN.md 12: at most 2); relays with TLS to the upstream %.0f us, ratio "
              "%.2f" % (len(pair), B.pct(pair, 50), B.pct(relays, 50), B.pct(ratios, 50),
                        B.pct(relays_tls, 50), B.pct(ratios_tls, 50)))
    else:
        B.say("no bench/hops in %s: build the tree for the relays' figure" % B.rtsb.BUILD)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=200, help="calls measured")
    ap.add_argument("--warm", type=int, default=20, help="calls before them, in both runs")
    ap.add_argument("--top", type=int, default=25, help="functions listed per process")
    ap.add_argument("--keep", metavar="DIR", help="keep the callgrind.out files here")
    ap.add_argument("--lines", action="store_true", help="also count the lines of code each "
                    "call runs, by library and by function")
    ap.add_argument("--json", action="store_true", help="print one JSON object at the end")
    ap.add_argument("--stream", type=int, default=0, metavar="MIB",
                    help="also a third run with a stream of MIB MiB after the --warm calls: "
                    "instructions per MiB streamed")
    ap.add_argument("--plain", action="store_true", help="no valgrind: CPU time per call "
                    "(user, system, run time) of each process over --calls calls")
    ap.add_argument("--rounds", type=int, default=3,
                    help="with --plain: rounds, each followed by bench/hops -e and -e -t")
    args = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        sys.exit("callgrind.py: valgrind is needed (apt-get install valgrind)")
    if not os.path.exists(os.path.join(B.rtsb.BUILD, "bench", "cgrole")):
        sys.exit("callgrind.py: no %s/bench/cgrole: build the tree first" % B.rtsb.BUILD)
    tmp = tempfile.mkdtemp(prefix="rtsb-cg-", dir="/tmp")
    os.chmod(tmp, 0o755)
    fu = B.FakeUpstream(os.path.join(tmp, "certs"), default_delay_ms=0, one_write=True,
                        max_records=100)
    fu.start()
    res = {}
    try:
        t0 = time.monotonic()
        if args.plain:
            plain(args, fu, tmp)
            return
        a = run(args, fu, tmp, args.warm, "a")
        b = run(args, fu, tmp, args.warm + args.calls, "b")
        B.say("callgrind: %d and %d small calls through broker and egress (%.0f s; build %s)" % (
            args.warm, args.warm + args.calls, time.monotonic() - t0, B.rtsb.BUILD))
        for role in ("broker", "egress"):
            ex_a, tot_a = annotate(a[role], False)
            ex_b, tot_b = annotate(b[role], False)
            in_a, _ = annotate(a[role], True)
            in_b, _ = annotate(b[role], True)
            per = (tot_b - tot_a) / args.calls
            res[role] = {"ir_call": per, "self": {}, "inclusive": {}}
            B.say("")
            B.say("%s: %.0f instructions per call (Ir, user space, libraries included)" % (
                role, per))
            for kind, da, db in (("self", ex_a, ex_b), ("inclusive", in_a, in_b)):
                d = {k: (db.get(k, 0) - da.get(k, 0)) / args.calls for k in set(da) | set(db)}
                if kind == "inclusive":
                    # main(), the loop and the like hold everything: left out.
                    d = {k: v for k, v in d.items() if v < 0.98 * per}
                top = sorted(d.items(), key=lambda kv: -kv[1])[:args.top]
                res[role][kind] = dict(top)
                B.say("  %s, per call:" % kind)
                for k, v in top:
                    if v < per / 1000:
                        break
                    B.say("    %9.0f  %5.1f%%  %s" % (v, 100 * v / per, short(k)))
            if args.lines:
                obs, fns = code_lines(a[role], b[role], args.calls)
                total = sum(obs.values())
                res[role]["code_lines"] = total
                B.say("  code run on every call: %d lines of 64 bytes (%.1f KiB): %s" % (
                    total, total * 64 / 1024, ", ".join(
                        "%s %d" % kv for kv in sorted(obs.items(), key=lambda kv: -kv[1]))))
                for k, v in sorted(fns.items(), key=lambda kv: -kv[1])[:args.top]:
                    B.say("    %5d  %s" % (v, k))
        if args.stream > 0:
            st = run(args, fu, tmp, args.warm, "s", args.stream)
            res["stream"] = {}
            B.say("")
            for role in ("broker", "egress"):
                _, tot_s = annotate(st[role], False)
                _, tot_a = annotate(a[role], False)
                res["stream"][role] = (tot_s - tot_a) / args.stream
            B.say("stream of %d MiB (64 KiB chunks): %.0f instructions per MiB (broker %.0f, "
                  "egress %.0f)" % (args.stream, sum(res["stream"].values()),
                                    res["stream"]["broker"], res["stream"]["egress"]))
        B.say("")
        B.say("sum: %.0f instructions per call (broker %.0f, egress %.0f)" % (
            res["broker"]["ir_call"] + res["egress"]["ir_call"], res["broker"]["ir_call"],
            res["egress"]["ir_call"]))
        if args.lines:
            B.say("code run on every call: %d lines (broker %d, egress %d)" % (
                res["broker"]["code_lines"] + res["egress"]["code_lines"],
                res["broker"]["code_lines"], res["egress"]["code_lines"]))
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for r in ("broker", "egress"):
                shutil.copy(a[r], os.path.join(args.keep, "callgrind.out.%s.warm" % r))
                shutil.copy(b[r], os.path.join(args.keep, "callgrind.out.%s.calls" % r))
        if args.json:
            print(json.dumps(res))
    finally:
        fu.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
