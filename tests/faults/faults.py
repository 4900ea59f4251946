#!/usr/bin/env python3
"""Fault injection: real turns with the reference worker against the fake
upstream, on several channels at once, each with a process killed at a
point of the turn; then what every operator asks is checked.

    faults.py [--turns N] [--channels C] [--seed S] [--json FILE]
              [--dockerd-fifo FIFO]

For each turn a role and a phase are drawn: the role is the file guard, the
Docker client, egress, the channel's broker, a research job of the channel
(run beside the turn), or the worker (the container's main process, killed
from the host); with --dockerd-fifo also dockerd itself, which a root
process reading that FIFO restarts for each line written to it (see
scripts/faults); the phase is a progress notification of the
turn (starting, container, ready, delivered, model_call, tool_call) and a
delay of 0-300 ms after it.  Turns ask for a streamed answer, a host tool or
a reply file in turn, so every phase comes up.  Then:

  - every turn is answered, once, within turn_ms plus the removal bound,
    ok:true or ok:false with a reason of the protocol;
  - a turn that ended for a dead egress, broker or worker, or by its
    deadline, has no container left once it is answered (once Docker is
    back, after a restart);
  - the next turn on that channel, with nothing killed, works;
  - the daemon counted exactly the turns that were asked;
  - no process of the daemon is left once it stopped;
  - files outside the state directory are untouched.

It prints a summary (turns, kills by role, answers by reason, time from a
kill to the channel's next good answer) and exits 0 only when every check
held.  scripts/faults runs it long; the test command runs it short.
"""

import argparse
import collections
import hashlib
import json
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import rtsb  # noqa: E402
from rtsb import Daemon, wait_until  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
TURN_MS = 20000
# DESIGN.md 6: the container of a dead turn is force-removed; Docker's own
# calls are bounded by 15 s each (PROTOCOL.md 7).
REMOVAL_MS = 20000
REASONS = {"busy", "invalid", "start_failed", "timeout", "cancelled",
           "worker_failed", "stale_image", "internal"}
ROLES = ("fsguard", "docker", "egress", "broker", "research", "worker")
# Roles that serve every channel: a kill of one may fail another's turn.
SHARED = ("fsguard", "docker", "egress", "dockerd")
# A dockerd restart stops every container and takes seconds: one turn in
# DOCKERD_EVERY draws it.
DOCKERD_EVERY = 25
PHASES = ("starting", "container", "ready", "delivered", "model_call",
          "tool_call")
TEXTS = ("[[stream]] tell me", 'roll [[tool:roll_dice {"sides":6}]]',
         "write [[file:note.txt fault suite]]", "just echo")


class Conn:
    """One control connection that answers the tool.call hook and hands
    each answer and notification to whoever waits for it."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.lock = threading.Lock()
        self.next_id = 0
        self.waiting = {}		# id -> [event, answers]
        self.progress = {}		# turnId -> callback(phase)
        self.buf = b""
        self.closed = False
        self.reader = threading.Thread(target=self.read_loop, daemon=True)
        self.reader.start()
        self.call("initialize", {"client": "faults",
                                 "hooks": ["tool.call"]})

    def send(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        with self.lock:
            self.sock.sendall(data)

    def request(self, method, params):
        with self.lock:
            self.next_id += 1
            rid = self.next_id
            self.waiting[rid] = [threading.Event(), []]
        self.send({"jsonrpc": "2.0", "id": rid, "method": method,
                   "params": params})
        return rid

    def wait(self, rid, timeout):
        ev, answers = self.waiting[rid]
        if not ev.wait(timeout):
            return None
        return answers

    def call(self, method, params=None, timeout=60):
        rid = self.request(method, params or {})
        answers = self.wait(rid, timeout)
        if not answers:
            raise AssertionError("%s: no answer" % method)
        if "error" in answers[0]:
            raise AssertionError("%s: %s" % (method, answers[0]["error"]))
        return answers[0]["result"]

    def read_loop(self):
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                for ev, _ in list(self.waiting.values()):
                    ev.set()
                return
            self.buf += chunk
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                self.handle(json.loads(line))

    def handle(self, m):
        if m.get("method") == "tool.call" and "id" in m:
            self.send({"jsonrpc": "2.0", "id": m["id"],
                       "result": {"ok": True, "text": "4"}})
        elif m.get("method") == "turn.progress":
            p = m["params"]
            cb = self.progress.get(p.get("turnId"))
            if cb is not None:
                cb(p["phase"])
        elif "id" in m and m["id"] in self.waiting:
            ev, answers = self.waiting[m["id"]]
            answers.append(m)
            # a second answer would be a bug: kept, and looked at later
            ev.set()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Suite:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.failures = []
        self.kills = collections.Counter()
        self.reasons = collections.Counter()
        self.recover = collections.defaultdict(list)
        self.turns_asked = 0
        self.kill_times = []		# (monotonic time, role, channel)
        self.outages = []		# [start, end or None] of dockerd
        self.lock = threading.Lock()
        # channels checking that they recovered, while no new kill starts
        self.quiet = threading.Condition()
        self.recovering = 0

    def fail(self, what):
        with self.lock:
            self.failures.append(what)
        print("FAIL: " + what, flush=True)

    # -- set-up

    def start(self):
        self.certdir = tempfile.mkdtemp(prefix="rtsb-fault-certs-",
                                        dir="/tmp")
        self.fu = FakeUpstream(self.certdir, default_delay_ms=20)
        self.fu.start()
        self.prefix = "rtsbf%d" % os.getpid()
        fu = self.fu

        def conf(c):
            c["docker"] = {"container_prefix": self.prefix}
            c["upstream"]["url"] = fu.url
            c["upstream"]["ca_file"] = fu.ca_file
            c["image"] = IMAGE
            c["tools"] = ["roll_dice"]
            c["timeouts"] = {"start_ms": TURN_MS, "turn_ms": TURN_MS}
        self.d = Daemon(config=conf)
        # files outside the state directory that nothing may touch
        self.sentinel = os.path.join(self.d.root, "sentinel")
        os.mkdir(self.sentinel)
        for i in range(4):
            with open(os.path.join(self.sentinel, "f%d" % i), "w") as f:
                f.write("sentinel %d\n" % i)
        self.sentinel_sum = self.tree_sum(self.sentinel)
        self.d.start()
        self.conn = Conn(self.d.socket)

    @staticmethod
    def tree_sum(path):
        h = hashlib.sha256()
        for root, dirs, files in sorted(os.walk(path)):
            for n in sorted(files):
                p = os.path.join(root, n)
                st = os.lstat(p)
                h.update(p.encode() + b"%o %d" % (st.st_mode, st.st_size))
                with open(p, "rb") as f:
                    h.update(f.read())
        return h.hexdigest()

    def processes(self):
        st = self.conn.call("daemon.stats")
        return {p["role"] + (("[%s]" % p["name"]) if p.get("name") else ""):
                p.get("pid") for p in st["processes"]}

    def daemon_pids(self):
        """The daemon, its children (the spawner and every helper: their
        parent is the supervisor) and anything else run from this build:
        the tree to be gone at the end.  Taken while the daemon runs, since
        its processes are not dumpable: their executable's path is the
        tracer's to read, and once the supervisor is gone their parent is
        another."""
        mine = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % p) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            try:
                exe = os.readlink("/proc/%s/exe" % p)
            except OSError:
                exe = ""
            if ppid == self.d.proc.pid or int(p) == self.d.proc.pid or \
                    exe.startswith(rtsb.BUILD):
                mine.append(int(p))
        return mine

    # -- one turn

    def docker_up(self):
        try:
            return rtsb.docker("version", "--format",
                               "{{.Server.Version}}").returncode == 0
        except OSError:
            return False

    def restarts_done(self):
        try:
            with open(self.args.dockerd_fifo + ".done") as f:
                return len(f.readlines())
        except OSError:
            return 0

    def restart_dockerd(self):
        """Asks the root process on the FIFO, which adds a line to
        FIFO.done once the new dockerd answers.  The outage lasts until
        then: a dockerd that stops still answers for a while, with errors
        of its own, as it stops its containers."""
        with self.lock:
            if self.outages and self.outages[-1][1] is None:
                return False
            span = [time.monotonic(), None]
            self.outages.append(span)
        done = self.restarts_done()
        with open(self.args.dockerd_fifo, "w") as f:
            f.write("restart\n")
        if not wait_until(lambda: self.restarts_done() > done, 180, 0.2):
            self.fail("dockerd was not back within 180 s")
        wait_until(self.docker_up, 120, 0.2)
        span[1] = time.monotonic()
        return True

    def kill(self, role, key):
        if role == "dockerd":
            return self.restart_dockerd()
        seg = "".join(c if c.isalnum() or c in "_-" else "_" for c in key)
        if role == "worker":
            info = rtsb.inspect_container("%s-%s" % (self.prefix, seg))
            pid = info and info["State"].get("Pid")
            if not pid:
                return False
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                return False
            return True
        procs = self.conn.call("daemon.stats")["processes"]
        if role == "broker":
            pids = [p["pid"] for p in procs if p["role"] == "broker" and
                    p.get("name") == seg and p.get("pid")]
        elif role == "research":
            pids = [p["pid"] for p in procs if p["role"] == "research" and
                    p.get("name") == seg and p.get("pid")]
        else:
            pids = [p["pid"] for p in procs if p["role"] == role and
                    p.get("pid")]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return bool(pids)

    def container_running(self, key):
        seg = "".join(c if c.isalnum() or c in "_-" else "_" for c in key)
        info = rtsb.inspect_container("%s-%s" % (self.prefix, seg))
        return info is not None and info["State"]["Running"]

    def turn(self, key, n, role, phase, delay):
        tid = "t%d" % n
        text = TEXTS[n % len(TEXTS)]
        killed = {"at": None}
        if role == "research":
            # a research job of the channel runs beside the turn
            self.conn.request("research.run", {
                "channel": key, "task": "look into it",
                "author": {"id": "u1", "name": "Ann"}})

        def on_phase(ph):
            if ph != phase or killed["at"] is not None or role == "none":
                return
            killed["at"] = time.monotonic()

            def later():
                time.sleep(delay)
                try:
                    if self.kill(role, key):
                        with self.lock:
                            self.kills[role] += 1
                            self.kill_times.append(
                                (time.monotonic(), role, key))
                except (OSError, AssertionError):
                    pass	# the suite is stopping
            threading.Thread(target=later, daemon=True).start()
        self.conn.progress[tid] = on_phase
        with self.lock:
            self.turns_asked += 1
        t0 = time.monotonic()
        rid = self.conn.request("turn.run", {
            "channel": key, "profile": "default", "turnId": tid,
            "author": {"id": "u1", "name": "Ann"}, "text": text,
            "images": [], "memory": "", "thinking": "low"})
        answers = self.conn.wait(rid, (TURN_MS + REMOVAL_MS) / 1000)
        took = time.monotonic() - t0
        self.conn.progress.pop(tid, None)
        if not answers:
            self.fail("%s %s: no answer within %.0f s (role %s, phase %s)"
                      % (key, tid, took, role, phase))
            return None
        time.sleep(0.05)
        if len(answers) != 1:
            self.fail("%s %s: answered %d times" % (key, tid, len(answers)))
        a = answers[0]
        if "error" in a:
            self.fail("%s %s: error %s" % (key, tid, a["error"]))
            return None
        r = a["result"]
        reason = "ok" if r.get("ok") else r.get("reason")
        if self.args.verbose or reason != "ok":
            print("%s %s: %s killed at %s -> %s in %.1f s%s" % (
                key, tid, role, phase, reason, took,
                "" if reason == "ok" else ": " + str(r.get("message"))),
                flush=True)
        with self.lock:
            self.reasons[reason] += 1
        if not r.get("ok") and (reason not in REASONS or
                                not isinstance(r.get("message"), str) or
                                not r["message"]):
            self.fail("%s %s: answer %r" % (key, tid, r))
        if reason in ("timeout", "internal") or (
                reason == "worker_failed" and ("broker" in r["message"] or
                                              "container" in r["message"])):
            # With dockerd restarting, or the Docker client or the file
            # guard killed (by this turn or another channel's), the
            # removal is pending until they are back, and the answer does
            # not wait for it; else the container is gone before the
            # answer.
            if self.removal_delayed(t0, t0 + took):
                if not wait_until(lambda: not self.container_running(key),
                                  60, 0.5):
                    self.fail("%s %s: %s, yet its container runs once "
                              "Docker is back" % (key, tid, reason))
            elif self.container_running(key):
                self.fail("%s %s: %s, yet its container runs" %
                          (key, tid, reason))
        return killed["at"], reason, r.get("message"), t0, t0 + took

    def channel(self, c, turns):
        key = "fault:%d" % c
        for n in turns:
            role = self.rng.choice(ROLES)
            if self.args.dockerd_fifo and \
                    self.rng.randrange(DOCKERD_EVERY) == 0:
                role = "dockerd"
            phase = self.rng.choice(PHASES)
            delay = self.rng.random() * 0.3
            # no new kill while a channel checks that it recovered
            with self.quiet:
                self.quiet.wait_for(lambda: self.recovering == 0, 120)
            out = self.turn(key, n, role, phase, delay)
            if out is None or out[1] == "ok":
                continue
            with self.quiet:
                self.recovering += 1
            try:
                self.recover_check(key, n, role, phase, out)
            finally:
                with self.quiet:
                    self.recovering -= 1
                    self.quiet.notify_all()

    def recover_check(self, key, n, role, phase, out):
        """The next turn on that channel, with nothing killed, works;
        unless a kill meant for another channel (egress, the file guard
        and the Docker client serve them all) fell into it."""
        killed_at = out[0]
        if role == "dockerd" or self.in_outage(out[3], out[4]):
            self.wait_outage()
        for k in range(5):
            # another channel's turn, begun before, may restart dockerd
            self.wait_outage()
            out2 = self.turn(key, n + 100000 * (k + 1), "none", phase,
                             0)
            if out2 is None or out2[1] == "ok" or \
                    not self.killed_during(key, out2[3], out2[4]):
                break
            time.sleep(0.2)	# for a helper killed meanwhile to restart
        if out2 is None or out2[1] != "ok":
            self.fail("%s: the turn after a %s kill failed: %s" %
                      (key, role, out2 and out2[2]))
        elif killed_at is not None:
            with self.lock:
                self.recover[role].append(time.monotonic() - killed_at)

    def killed_during(self, key, t0, t1):
        with self.lock:
            return self.in_outage(t0, t1) or any(
                t0 - 0.5 <= t <= t1 and (role in SHARED or ch == key)
                for t, role, ch in self.kill_times)

    def removal_delayed(self, t0, t1):
        """Whether dockerd, the Docker client or the file guard, which a
        removal needs, was down in [t0, t1]."""
        with self.lock:
            return self.in_outage(t0, t1) or any(
                t0 - 1.0 <= t <= t1 + 0.5 and role in ("docker", "fsguard")
                for t, role, _ in self.kill_times)

    def in_outage(self, t0, t1):
        """Whether [t0, t1] meets a dockerd restart, or the time its
        containers take to come back (their worker's re-announce)."""
        now = time.monotonic()
        return any(a - 0.5 <= t1 and t0 <= (b if b is not None else now) + 5
                   for a, b in list(self.outages))

    def wait_outage(self):
        wait_until(lambda: not self.outages or
                   self.outages[-1][1] is not None, 180, 0.2)

    # -- all of it

    def run(self):
        self.start()
        try:
            per = [[] for _ in range(self.args.channels)]
            for n in range(self.args.turns):
                per[n % self.args.channels].append(n)
            threads = [threading.Thread(target=self.channel, args=(c, t))
                       for c, t in enumerate(per)]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - t0
            self.check_end()
        finally:
            self.stop()
        return elapsed

    def check_end(self):
        st = self.conn.call("daemon.stats")
        if st["counters"]["turns"] != self.turns_asked:
            self.fail("daemon counted %d turns, %d were asked" %
                      (st["counters"]["turns"], self.turns_asked))
        if self.tree_sum(self.sentinel) != self.sentinel_sum:
            self.fail("files outside the state directory changed")

    def stop(self):
        mine = set(self.daemon_pids()) | {
            p for p in self.processes().values() if p}
        self.conn.close()
        if self.d.stop() not in (0, None):
            self.fail("rtsandboxd did not exit 0")
        pids = mine | set(self.daemon_pids())
        # Children die with the supervisor (PR_SET_PDEATHSIG), which the
        # kernel delivers once it has exited: a child slowed down (under
        # AddressSanitizer) may still be on its way out for a moment.
        rtsb.wait_until(lambda: not any(rtsb.pid_alive(p) for p in pids), 5)
        left = [p for p in pids if rtsb.pid_alive(p)]
        if left:
            self.fail("processes left behind: %r" % left)
        if self.args.log:
            with open(self.args.log, "w") as f:
                f.write(self.d.read_log())
        rtsb.remove_containers(self.prefix)
        self.d.cleanup()
        self.fu.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--json", help="write the summary there too")
    ap.add_argument("--log", help="write the daemon's log there")
    ap.add_argument("--dockerd-fifo",
                    help="restart dockerd now and then, by a line written "
                    "to this FIFO (read by root, who adds a line to "
                    "FIFO.done once the new one answers)")
    ap.add_argument("--verbose", action="store_true",
                    help="a line for every turn, not only the failed")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = int(time.time())
    reason = rtsb.docker_skip_reason(IMAGE)
    if reason:
        print("SKIP: " + reason)
        return 77
    s = Suite(args)
    elapsed = s.run()
    summary = {
        "seed": args.seed, "turns": s.turns_asked, "seconds": round(elapsed),
        "kills": dict(s.kills), "answers": dict(s.reasons),
        "recover_s": {r: {"n": len(v), "median": round(sorted(v)[len(v) // 2],
                                                       2),
                          "max": round(max(v), 2)}
                      for r, v in s.recover.items() if v},
        "failures": s.failures}
    print(json.dumps(summary, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 1 if s.failures else 0


if __name__ == "__main__":
    sys.exit(main())
