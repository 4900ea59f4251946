#!/usr/bin/python3
"""bench/load.py -- many channels under load while one channel's worker attacks its broker.

What it measures (issue 11 point 4; DESIGN.md sections 1 (invariant 7) and 12; PROTOCOL.md 3.4
and 3.5):
  (a) --channels channels (default 100) started against the real rtsandboxd, each a sleeper
      container (rtsandbox-test-sleeper:latest: it only sleeps) whose worker this benchmark
      plays, as bench/passthrough.py does; one of them, "load:attacker", is the attacker's;
  (b) a quiet phase: --concurrency drivers (threads in --procs processes, so that the Python
      client is not one interpreter lock) run turns round-robin on every other channel: turn.run
      on the control socket, GET /worker/next, --calls-per-turn small model calls (a tiny JSON
      body, JSON answer, through broker, egress and the fake upstream), --think-ms between
      calls, POST /worker/result, the turn's answer.  Each small call is timed from connect to
      the last byte of the answer, per channel;
  (c) an attacked phase: the same load, while a separate process plays the attacker channel's
      worker, which took a turn (so a scope with budgets.max_calls is bound) and then, until
      the phase ends:
        - opens 17 connections at once, 8 of them sending their request head one byte every
          0.5 s (slowloris) and 9 sending nothing, holds them until the broker answers or
          closes (PROTOCOL.md 3.5: the 17th is closed at once, the rest get 400 at 10 s), rests
          --attack-rest seconds, and again;
        - sends bodies over their limits: a model call declaring 96 MiB + 1, a chunked model
          call of 97 MiB, a result declaring 72 MiB + 1 and a chunked result of 73 MiB;
        - floods model calls, --flood-threads at a time, as fast as it can: the bound turn's
          budget goes at 4 in flight, then every call is past it (429);
      and counts every outcome it saw;
  (d) the daemon's whole PSS (supervisor, spawner, file guard, Docker client, egress and every
      broker, from /proc/PID/smaps_rollup) with all channels idle, after the quiet phase, at
      the end of the attack and 3 s after it (the attacker's broker apart: while the attack
      runs it holds the body it is being sent, its own memory under its own RLIMIT_DATA;
      3 s later it should have given it back), the CPU seconds of each process in each
      phase (utime + stime), next to the harness's own and the machine's, and how long each
      waited for a CPU while runnable (schedstat): where a call's time goes on a machine
      short of CPU;
  (e) with --strace, after the timed phases: a short quiet and a short attacked window with
      `strace -c -f -p PID` on egress, the supervisor, one other channel's broker and the
      attacker's broker (the traced processes slow down, so these windows time nothing).

It prints per-channel p50/p99 of the small call, quiet and attacked, their ratio, the same
aggregated over every channel, and the goals: other channels' p99 within 2x of the quiet run,
and the whole daemon's PSS with 100 brokers at most 30 MiB.  Nothing is asserted.

How it works: the in-process fake upstream (tests/fixtures/fake_upstream.py, TLS with a test
CA made at run time) and the real rtsandboxd (tests/integration/rtsb.py) start as the current
user; docker.limits.memory_mib is 64 so that --channels containers fit whatever they did.
Everything stays on loopback and Unix sockets; every loop is bounded by its phase's deadline.
The drivers and the attacker are processes of their own (multiprocessing, spawn), the attacker
a single one (one interpreter lock: about one core at most, as a container of docker.limits.cpus
1 would have).  On two cores the figures move from run to run; run it twice before believing a
ratio.

Run (as the service user, which is in group docker):
    cd /tmp && setpriv --reuid=rtsandbox --regid=rtsandbox --init-groups \\
        env RTSANDBOX_BUILD=/work/main/build /usr/bin/python3 /work/main/bench/load.py
Options: --channels 100, --duration 30 (seconds per kind, quiet or attacked, split over
--rounds 3 alternating rounds) or --calls N (small calls per kind), --no-attacker, --quick
(10 channels, 6 s per kind in 2 rounds), --cost-seconds 6, --strace, --strace-seconds 10,
--concurrency 6, --procs 2, --calls-per-turn 8, --think-ms 10, --max-calls 128,
--flood-threads 2, --attack-rest 4, --start-parallel 4, --debug-log, --no-per-channel.
A full run of 100 channels takes under three minutes here, 40 s of it starting containers.
"""

import argparse
import collections
import json
import multiprocessing
import os
import resource
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

rtsb = B.rtsb
MIB = B.MIB
GOAL_RATIO = 2.0
GOAL_PSS_MIB = 30.0
ATTACKER = "load:attacker"
SMALL = json.dumps({"model": "claude-test", "max_tokens": 16,
                    "messages": [{"role": "user", "content": "hi"}]}).encode()
HEAD_OF = ("POST %s HTTP/1.1\r\nHost: broker\r\nAuthorization: Bearer dummy\r\n"
           "Anthropic-Version: 2023-06-01\r\nContent-Type: application/json\r\n")


def mono():
    return time.monotonic()


# ---------------------------------------------------------------- the drivers (other channels)

def turn_params(channel, turn_id):
    return {"channel": channel, "profile": "default", "turnId": turn_id,
            "author": {"id": "load", "name": "Load"}, "text": "load", "images": [],
            "memory": "", "thinking": "low"}


def take_turn(sock, turn_id, deadline):
    """As the worker: GET /worker/next until the turn comes (POST /worker/ready between polls
    that did not bring it, as the worker's loop does)."""
    while True:
        r = B.unix_request(sock, "GET", "/worker/next", b"", timeout=60)
        if r.status == 200:
            turn = json.loads(r.body)
            if turn.get("turnId") != turn_id:
                raise RuntimeError("got turn %r, wanted %s" % (turn.get("turnId"), turn_id))
            return
        if mono() > deadline:
            raise RuntimeError("turn %s never delivered (last poll %d)" % (turn_id, r.status))
        time.sleep(0.25)
        B.unix_request(sock, "POST", "/worker/ready", b"", timeout=5)


def drive_thread(tid, chans, ctl, phase, deadline, quota, opt, out, lock):
    lat = collections.defaultdict(list)
    deliver = []
    errors = collections.Counter()
    turns = 0
    think = opt["think_ms"] / 1000.0
    client = rtsb.Client(ctl)
    client.sock.settimeout(120)
    n = 0
    done = 0
    try:
        while mono() < deadline and done < quota:
            for name, sock in chans:
                if mono() >= deadline or done >= quota:
                    break
                n += 1
                turn_id = "%s-%d-%d" % (phase, tid, n)
                t0 = mono()
                try:
                    rid = client.request("turn.run", turn_params(name, turn_id))
                    take_turn(sock, turn_id, t0 + 60)
                    deliver.append((mono() - t0) * 1e3)
                    for k in range(opt["calls_per_turn"]):
                        if k:
                            time.sleep(think)
                        ta = time.monotonic_ns()
                        r = B.unix_request(sock, "POST", "/anthropic/v1/messages", SMALL,
                                           timeout=60)
                        tb = time.monotonic_ns()
                        if r.status == 200 and b"echo: hi" in r.body:
                            lat[name].append((tb - ta) / 1e3)
                            done += 1
                        else:
                            errors["small call: %d" % r.status] += 1
                    r = B.unix_request(sock, "POST", "/worker/result", {
                        "turnId": turn_id, "result": {"ok": True, "text": "done",
                                                      "files": []}}, timeout=60)
                    res = client.wait(rid)
                    client.pending.clear()
                    if r.status != 200 or not res.get("ok"):
                        errors["turn ended badly: %d %s" % (
                            r.status, res.get("reason", "ok"))] += 1
                    else:
                        turns += 1
                except (OSError, B.HttpError, RuntimeError, ValueError,
                        rtsb.RpcError) as e:
                    errors["%s: %s" % (type(e).__name__, str(e)[:80])] += 1
                    # Start afresh: a new control connection, so a late answer of this
                    # turn is not taken for the next one's.
                    client.close()
                    client = rtsb.Client(ctl)
                    client.sock.settimeout(120)
                time.sleep(think)
    finally:
        client.close()
    with lock:
        for k, v in lat.items():
            out["lat"].setdefault(k, []).extend(v)
        out["deliver"].extend(deliver)
        out["errors"].update(errors)
        out["turns"] += turns


def drive_proc(chan_groups, ctl, phase, deadline, quota, opt, pipe):
    """One driver process: a thread per channel group."""
    out = {"lat": {}, "deliver": [], "errors": collections.Counter(), "turns": 0}
    lock = threading.Lock()
    ths = [threading.Thread(target=drive_thread,
                            args=(tid, g, ctl, phase, deadline, quota, opt, out, lock))
           for tid, g in chan_groups]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu"] = ru.ru_utime + ru.ru_stime
    out["errors"] = dict(out["errors"])
    pipe.send(out)
    pipe.close()


# ---------------------------------------------------------------- the attacker

class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = collections.Counter()

    def add(self, attack, outcome, n=1):
        with self.lock:
            self.c[(attack, outcome)] += n


def status_of(data):
    """'400' from 'HTTP/1.1 400 ...', or None."""
    if not data.startswith(b"HTTP/1."):
        return None
    parts = data.split(b" ", 2)
    return parts[1].decode("latin-1") if len(parts) > 1 else None


def read_answer(s, t_open, timeout):
    """The outcome of a connection whose request went out (or did not): the answer's status,
    or how the connection ended."""
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            d = s.recv(4096)
            if not d:
                break
            data += d
    except socket.timeout:
        return "no answer in %.0f s" % timeout
    except (ConnectionResetError, BrokenPipeError):
        pass
    st = status_of(data)
    if st is not None:
        return st
    return "closed at once" if mono() - t_open < 1.0 else "closed"


def connect(path, timeout=5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def one_call(path, head, body_chunks=(), timeout=30):
    """Send a head (and body pieces, watching for an early answer); the outcome."""
    t_open = mono()
    try:
        s = connect(path)
    except OSError as e:
        return "connect failed (%s)" % (errno_name(e))
    try:
        try:
            s.sendall(head)
            for piece in body_chunks:
                r, _, _ = select.select([s], [], [], 0)
                if r:
                    break          # answered (or closed) before the end of the body
                s.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except socket.timeout:
            return "send stalled"
        return read_answer(s, t_open, timeout)
    finally:
        s.close()


def errno_name(e):
    import errno as E
    return E.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__


class Gate:
    """One kind of attack runs while its event is set, until stop."""

    def __init__(self, active, stop):
        self.active, self.stop = active, stop

    def go(self):
        """Wait until the attack is on; False once it is to stop."""
        while not self.stop.is_set():
            if self.active.wait(0.2):
                return not self.stop.is_set()
        return False

    def off(self):
        return self.stop.is_set() or not self.active.is_set()


def flood(path, gate, tally):
    head = (HEAD_OF % "/anthropic/v1/messages" +
            "Content-Length: %d\r\n\r\n" % len(SMALL)).encode() + SMALL
    while gate.go():
        tally.add("budget flood", one_call(path, head, timeout=30))


def conns_and_slowloris(path, gate, tally, rest):
    slow_head = (HEAD_OF % "/anthropic/v1/messages" + "X-Slow: ").encode()
    while gate.go():
        socks = []          # [sock, kind, opened, pos]
        for i in range(17):
            kind = "slowloris headers" if i < 8 else "17 connections"
            try:
                socks.append([connect(path), kind, mono(), 0])
            except OSError as e:
                tally.add(kind, "connect failed (%s)" % errno_name(e))
        t_start = mono()
        last_byte = 0.0
        live = list(socks)
        while live and mono() - t_start < 15 and not gate.off():
            now = mono()
            if now - last_byte >= 0.5:
                last_byte = now
                for ent in live:
                    if ent[1] != "slowloris headers":
                        continue
                    try:
                        ent[0].send(slow_head[ent[3]:ent[3] + 1] if ent[3] < len(slow_head)
                                    else b"a")
                        ent[3] += 1
                    except OSError:
                        pass        # closed: the read below says how
            r, _, _ = select.select([e[0] for e in live], [], [], 0.1)
            for s in r:
                ent = next(e for e in live if e[0] is s)
                live.remove(ent)
                out = read_answer(s, ent[2], 1)
                if out[0].isdigit():
                    out = "%s after %.0f s" % (out, mono() - ent[2])
                tally.add(ent[1], out)
        for ent in live:
            tally.add(ent[1], "still open when the attack paused" if gate.off() else
                      "still open after 15 s")
        for ent in socks:
            ent[0].close()
        gate.stop.wait(rest)


def chunked_pieces(total, piece=1 << 20):
    block = b"a" * piece
    line = b"%x\r\n" % piece
    sent = 0
    while sent < total:
        yield line + block + b"\r\n"
        sent += piece
    yield b"0\r\n\r\n"


def oversize(path, gate, tally):
    model = HEAD_OF % "/anthropic/v1/messages"
    result = HEAD_OF % "/worker/result"
    steps = [
        ("model body 96 MiB + 1 declared",
         (model + "Content-Length: %d\r\n\r\n" % (96 * MIB + 1)).encode(), None),
        ("model body 97 MiB chunked",
         (model + "Transfer-Encoding: chunked\r\n\r\n").encode(), 97 * MIB),
        ("result 72 MiB + 1 declared",
         (result + "Content-Length: %d\r\n\r\n" % (72 * MIB + 1)).encode(), None),
        ("result 73 MiB chunked",
         (result + "Transfer-Encoding: chunked\r\n\r\n").encode(), 73 * MIB),
    ]
    while gate.go():
        for name, head, chunked in steps:
            if gate.off():
                break
            tally.add(name, one_call(path, head, chunked_pieces(chunked) if chunked else ()))
        gate.stop.wait(0.1)


ATTACKS = ("flood", "conns", "oversize")


def attack_proc(path, turn_id, pipe, opt):
    """The attacker channel's worker: takes its turn, then attacks as the parent says over
    pipe: ("on", kinds), ("off",), ("report",) -> outcomes since the last report, ("stop",)."""
    tally = Tally()
    try:
        take_turn(path, turn_id, mono() + 60)
    except Exception as e:      # noqa: BLE001 - reported by the parent
        pipe.send({"error": "the attacker never got its turn: %s" % e})
        return
    pipe.send({"ready": True})
    stop = threading.Event()
    active = {k: threading.Event() for k in ATTACKS}
    ths = [threading.Thread(target=flood, args=(path, Gate(active["flood"], stop), tally))
           for _ in range(opt["flood_threads"])]
    ths.append(threading.Thread(target=conns_and_slowloris, args=(
        path, Gate(active["conns"], stop), tally, opt["attack_rest"])))
    ths.append(threading.Thread(target=oversize, args=(
        path, Gate(active["oversize"], stop), tally)))
    for t in ths:
        t.daemon = True
        t.start()
    while True:
        cmd = pipe.recv()
        if cmd[0] == "on":
            for k in cmd[1]:
                active[k].set()
        elif cmd[0] == "off":
            for e in active.values():
                e.clear()
        elif cmd[0] in ("report", "stop"):
            if cmd[0] == "stop":
                stop.set()
                for t in ths:
                    t.join(60)
            with tally.lock:
                out = [[a, o, n] for (a, o), n in sorted(tally.c.items())]
                tally.c.clear()
            ru = resource.getrusage(resource.RUSAGE_SELF)
            pipe.send({"outcomes": out, "cpu": ru.ru_utime + ru.ru_stime})
            if cmd[0] == "stop":
                break
    pipe.close()


class Attacker:
    """The attacker channel's worker, in a process of its own, with its turn taken."""

    def __init__(self, setup, ctx, turn_id, opt):
        self.client = setup.client()
        self.rid = self.client.request("turn.run", turn_params(ATTACKER, turn_id))
        sock = setup.socket_path(ATTACKER)
        self.pipe, b = ctx.Pipe()
        aopt = {"flood_threads": opt.flood_threads, "attack_rest": opt.attack_rest}
        self.proc = ctx.Process(target=attack_proc, args=(sock, turn_id, b, aopt),
                                daemon=True)
        self.proc.start()
        b.close()
        first = self.pipe.recv()
        if "error" in first:
            raise RuntimeError(first["error"])
        self.on_seconds = 0.0
        self.t_on = None

    def on(self, kinds=ATTACKS):
        self.pipe.send(("on", tuple(kinds)))
        self.t_on = mono()

    def off(self):
        self.pipe.send(("off",))
        self.on_seconds += mono() - self.t_on

    def report(self):
        self.pipe.send(("report",))
        return self.pipe.recv()

    def end(self):
        """Stop, end the attacker's turn (its container goes with it: DESIGN.md 6); what
        the attacker saw since the last report."""
        self.pipe.send(("stop",))
        out = self.pipe.recv()
        self.proc.join(30)
        self.client.call("turn.cancel", {"channel": ATTACKER})
        try:
            self.client.wait(self.rid)
        except rtsb.RpcError:
            pass
        self.client.close()
        out["on_seconds"] = self.on_seconds
        return out


# ---------------------------------------------------------------- the daemon's processes

def read_stat(pid):
    """(ppid, utime + stime ticks, comm) or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    fields = s.rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[11]) + int(fields[12]), comm


def daemon_procs(setup):
    """{pid: (role, name)} of the supervisor and every process under it."""
    st = setup.stats()["processes"]
    out = {}
    sup = None
    for p in st:
        if p.get("pid"):
            out[p["pid"]] = (p["role"], p.get("name") or p["role"])
            if p["role"] == "supervisor":
                sup = p["pid"]
    kids = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit():
            r = read_stat(int(d))
            if r:
                kids[r[0]].append((int(d), r[2]))
    todo = [sup]
    while todo:
        for pid, comm in kids.get(todo.pop(), []):
            if pid not in out:
                out[pid] = ("spawner" if pid in [k for k, _ in kids.get(sup, [])] else comm,
                            comm)
            todo.append(pid)
    return out


def cpu_snapshot(procs):
    snap = {}
    for pid in procs:
        r = read_stat(pid)
        if r:
            snap[pid] = r[1]
    return snap


def wait_ns(pid):
    """Time all threads of pid spent runnable but waiting for a CPU, in ns."""
    return B.proc_sched_ns(pid, 1)


def wait_snapshot(pids):
    return {pid: wait_ns(pid) for pid in pids}


def machine_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]      # all, idle + iowait


def pss_snapshot(procs):
    """{pid: (Pss, Rss, private) in KiB}."""
    out = {}
    for pid in procs:
        r = B.proc_rollup_kib(pid)
        if r:
            out[pid] = (r.get("Pss", 0), r.get("Rss", 0),
                        r.get("Private_Clean", 0) + r.get("Private_Dirty", 0))
    return out


class PeakSampler(threading.Thread):
    """Peak PSS of a few processes while the attack runs (every period seconds)."""

    def __init__(self, pids, period=1.0):
        super().__init__(daemon=True)
        self.pids, self.period = list(pids), period
        self.peak = {p: 0 for p in self.pids}
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            for p in self.pids:
                self.peak[p] = max(self.peak[p], B.proc_rollup_kib(p).get("Pss", 0))
            self.stop_ev.wait(self.period)

    def stop(self):
        self.stop_ev.set()
        self.join()


# ---------------------------------------------------------------- set-up

class ServiceDaemon(rtsb.Daemon):
    """rtsandboxd as a service manager runs it: no -d (so no debug lines, which cost every
    request a write), in front because NOTIFY_SOCKET names a socket of this benchmark."""

    def start(self, wait=True):
        self.notify_path = os.path.join(self.root, "notify.sock")
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([rtsb.RTSANDBOXD, "-f", self.config_path],
                                     stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log,
                                     env={"PATH": "/usr/bin:/bin",
                                          "NOTIFY_SOCKET": self.notify_path})
        if wait:
            self.wait_ready()
        return self

    def cleanup(self):
        super().cleanup()
        if getattr(self, "notify", None) is not None:
            self.notify.close()


class LoadSetup:
    def __init__(self, opt):
        self.tmp = tempfile.mkdtemp(prefix="rtsb-load-", dir="/tmp")
        self.prefix = "rtsbload%d" % os.getpid()
        self.fu = B.FakeUpstream(os.path.join(self.tmp, "certs"), default_delay_ms=0,
                                 one_write=True, max_records=2000)
        self.fu.start()
        fu, prefix = self.fu, self.prefix

        def conf(c):
            c["image"] = B.SLEEPER_IMAGE
            c["upstream"]["url"] = fu.url
            c["upstream"]["ca_file"] = fu.ca_file
            c["docker"] = {"container_prefix": prefix, "limits": {"memory_mib": 64}}
            c["timeouts"] = {"start_ms": 60000, "turn_ms": 600000}
            c["budgets"] = {"max_calls": opt.max_calls}
        self.daemon = (rtsb.Daemon if opt.debug_log else ServiceDaemon)(config=conf)
        self.daemon.start()
        self.state = self.daemon.config["state_dir"]
        self.docker = B.DockerAPI()

    def client(self):
        c = rtsb.Client(self.daemon.socket)
        c.sock.settimeout(120)
        return c

    def socket_path(self, channel):
        p = os.path.join(self.state, B.segment_of(channel), "run", "broker.sock")
        if len(p) > 100:
            raise SystemExit("broker socket path over 100 chars: %s" % p)
        return p

    def stats(self):
        with self.client() as c:
            return c.call("daemon.stats")

    def close(self):
        try:
            self.daemon.stop(timeout=60)
        except Exception:       # noqa: BLE001 - best effort at the end
            pass
        try:
            self.docker.remove_prefix(self.prefix)
        except Exception:       # noqa: BLE001
            pass
        self.docker.close()
        self.daemon.cleanup()
        self.fu.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def start_channels(setup, names, parallel=4):
    """channel.start for every channel, announcing each worker; seconds taken."""
    todo = list(names)
    lock = threading.Lock()
    errs = []

    def worker():
        c = setup.client()
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    ch = todo.pop(0)
                try:
                    rid = c.request("channel.start", {"channel": ch, "profile": "default"})
                    B.announce_ready(setup.socket_path(ch), timeout=90)
                    c.wait(rid)
                    c.pending.clear()
                except Exception as e:      # noqa: BLE001 - reported below
                    errs.append("%s: %s" % (ch, e))
        finally:
            c.close()
    t0 = mono()
    ths = [threading.Thread(target=worker) for _ in range(parallel)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if errs:
        raise RuntimeError("channels did not start: %s\n%s" % (
            "; ".join(errs[:5]), setup.daemon.read_log()[-3000:]))
    return mono() - t0


# ---------------------------------------------------------------- phases

def run_load(setup, ctx, others, phase, opt, seconds, calls):
    """The drivers over every channel in others for seconds (or until calls small calls);
    their merged results."""
    nthreads = max(1, min(opt.concurrency, len(others)))
    nprocs = max(1, min(opt.procs, nthreads))
    groups = [[] for _ in range(nthreads)]
    for i, ch in enumerate(others):
        groups[i % nthreads].append((ch, setup.socket_path(ch)))
    per_proc = [[] for _ in range(nprocs)]
    for tid, g in enumerate(groups):
        per_proc[tid % nprocs].append((tid, g))
    quota = (calls + nthreads - 1) // nthreads if calls else 1 << 62
    deadline = mono() + (seconds if not calls else 3600)
    dopt = {"think_ms": opt.think_ms, "calls_per_turn": opt.calls_per_turn}
    procs = []
    for gs in per_proc:
        a, b = ctx.Pipe(duplex=False)
        p = ctx.Process(target=drive_proc, args=(gs, setup.daemon.socket, phase, deadline,
                                                 quota, dopt, b), daemon=True)
        p.start()
        b.close()
        procs.append((p, a))
    res = {"lat": collections.defaultdict(list), "deliver": [],
           "errors": collections.Counter(), "turns": 0, "cpu": 0.0}
    for p, a in procs:
        out = a.recv()
        p.join()
        for k, v in out["lat"].items():
            res["lat"][k].extend(v)
        res["deliver"].extend(out["deliver"])
        res["errors"].update(out["errors"])
        res["turns"] += out["turns"]
        res["cpu"] += out["cpu"]
    return res


class Phase:
    """CPU and wall time of the daemon, the harness and the machine over the rounds of one
    kind (quiet or attacked), and what the drivers measured in them."""

    def __init__(self, procs):
        self.procs = procs
        self.seconds = self.busy = self.machine = self.main_cpu = 0.0
        self.cpu = collections.Counter()
        self.wait = collections.Counter()       # run-queue seconds, by pid
        self.res = {"lat": collections.defaultdict(list), "deliver": [],
                    "errors": collections.Counter(), "turns": 0, "cpu": 0.0}
        self.rounds = []        # (calls, p50, p99) of each round

    def begin(self):
        self.t0 = mono()
        self.cpu0 = cpu_snapshot(self.procs)
        self.wait0 = wait_snapshot(list(self.procs) + [os.getpid()])
        self.m0 = machine_ticks()
        self.self0 = os.times()

    def end(self, out):
        self.seconds += mono() - self.t0
        cpu1 = cpu_snapshot(self.procs)
        wait1 = wait_snapshot(list(self.procs) + [os.getpid()])
        for pid, v in wait1.items():
            if v and self.wait0.get(pid):
                self.wait[pid] += (v - self.wait0[pid]) / 1e9
        m1 = machine_ticks()
        s1 = os.times()
        for pid in cpu1:
            self.cpu[pid] += (cpu1[pid] - self.cpu0.get(pid, cpu1[pid])) / B.CLK_TCK
        tot, idle = m1[0] - self.m0[0], m1[1] - self.m0[1]
        self.busy += (tot - idle) / B.CLK_TCK
        self.machine += tot / B.CLK_TCK
        self.main_cpu += (s1.user - self.self0.user) + (s1.system - self.self0.system)
        allv = [v for vs in out["lat"].values() for v in vs]
        self.rounds.append((len(allv), B.pct(allv, 50), B.pct(allv, 99)))
        r = self.res
        for k, v in out["lat"].items():
            r["lat"][k].extend(v)
        r["deliver"].extend(out["deliver"])
        r["errors"].update(out["errors"])
        r["turns"] += out["turns"]
        r["cpu"] += out["cpu"]

    def calls(self):
        return sum(len(v) for v in self.res["lat"].values())


def by_role(values, procs, attacker_pid):
    """Sum a {pid: number} by role; brokers split into others and the attacker's."""
    out = collections.OrderedDict((k, 0.0) for k in (
        "supervisor", "spawner", "fsguard", "docker", "egress", "brokers", "attacker broker"))
    for pid, v in values.items():
        role = procs.get(pid, ("?", "?"))[0]
        if role == "broker":
            role = "attacker broker" if pid == attacker_pid else "brokers"
        out[role] = out.get(role, 0.0) + v
    return out


def summary(lat_by_channel):
    allv = [v for vs in lat_by_channel.values() for v in vs]
    per = {ch: (B.pct(vs, 50), B.pct(vs, 99), len(vs)) for ch, vs in lat_by_channel.items()
           if vs}
    return allv, per


def fmt_us(v):
    return "%.0f" % v if v == v else "-"


def spread(values):
    """'median (min - max)' of a list."""
    if not values:
        return "-"
    s = sorted(values)
    return "%s (%s - %s)" % (fmt_us(B.median(s)), fmt_us(s[0]), fmt_us(s[-1]))


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--channels", type=int, default=100,
                    help="channels in all, the attacker's included")
    ap.add_argument("--duration", type=float, default=30.0,
                    help="seconds per kind (quiet, attacked), over --rounds")
    ap.add_argument("--calls", type=int, default=0,
                    help="small calls per phase instead of --duration")
    ap.add_argument("--no-attacker", dest="attacker", action="store_false")
    ap.add_argument("--quick", action="store_true",
                    help="10 channels, 6 s per kind in 2 rounds (a smoke run)")
    ap.add_argument("--strace", action="store_true",
                    help="count system calls in extra quiet and attacked windows")
    ap.add_argument("--strace-seconds", type=float, default=10.0)
    ap.add_argument("--cost-seconds", type=float, default=6.0,
                    help="each attack alone for this long, no other load (0: not)")
    ap.add_argument("--debug-log", action="store_true",
                    help="rtsandboxd -d (debug log lines cost time); default: as a service")
    ap.add_argument("--rounds", type=int, default=3,
                    help="quiet and attacked rounds, alternating (the machine drifts)")
    ap.add_argument("--concurrency", type=int, default=6, help="driver threads in all")
    ap.add_argument("--procs", type=int, default=2, help="driver processes")
    ap.add_argument("--calls-per-turn", type=int, default=8)
    ap.add_argument("--think-ms", type=float, default=10.0)
    ap.add_argument("--max-calls", type=int, default=128, help="budgets.max_calls")
    ap.add_argument("--flood-threads", type=int, default=2)
    ap.add_argument("--attack-rest", type=float, default=4.0,
                    help="seconds between two rounds of 17 connections")
    ap.add_argument("--start-parallel", type=int, default=4)
    ap.add_argument("--per-channel", dest="per_channel", action="store_true", default=None)
    ap.add_argument("--no-per-channel", dest="per_channel", action="store_false")
    opt = ap.parse_args()
    if opt.quick:
        opt.channels = min(opt.channels, 10)
        opt.duration = min(opt.duration, 6.0)
        opt.rounds = min(opt.rounds, 2)
        opt.strace_seconds = min(opt.strace_seconds, 3.0)
        opt.cost_seconds = min(opt.cost_seconds, 2.0)
    if opt.channels < 2:
        ap.error("--channels: at least 2 (the attacker's and one other)")
    if opt.per_channel is None:
        opt.per_channel = True
    if opt.strace and shutil.which("strace") is None:
        ap.error("--strace: no strace here")
    ctx = multiprocessing.get_context("spawn")
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    B.say("rtsandbox load benchmark: %d CPUs, load average %s, build %s, uid %d" % (
        os.cpu_count(), " ".join(load), rtsb.BUILD, os.getuid()))
    t_all = mono()
    setup = LoadSetup(opt)
    others = ["load:%03d" % i for i in range(opt.channels - 1)]
    names = others + [ATTACKER]
    res = {}
    atk = None
    try:
        secs = start_channels(setup, names, opt.start_parallel)
        B.say("(a) %d channels started in %.1f s (%d at a time), sleeper containers "
              "(docker.limits.memory_mib 64); attacker channel %s" % (
                  len(names), secs, opt.start_parallel, ATTACKER))
        time.sleep(1.0)
        procs = daemon_procs(setup)
        atk_pid = [p for p, (r, n) in procs.items()
                   if r == "broker" and n == B.segment_of(ATTACKER)][0]
        other_pid = [p for p, (r, n) in procs.items()
                     if r == "broker" and n == B.segment_of(others[0])][0]
        res["pss_idle"] = pss_snapshot(procs)
        B.say("    daemon: %d processes (%s); whole PSS idle %.2f MiB" % (
            len(procs), ", ".join("%s %d" % kv for kv in collections.Counter(
                r for r, _ in procs.values()).items()),
            sum(v[0] for v in res["pss_idle"].values()) / 1024))
        # Warm up: connections to the upstream, page cache, the drivers' imports.
        run_load(setup, ctx, others, "warm", opt, min(3.0, opt.duration), 0)
        rounds = opt.rounds if opt.attacker else 1
        B.say("(b) load: %d driver threads in %d processes over %d channels, %d calls per "
              "turn, %.0f ms think time; %s per kind, in %d round(s) of quiet then %s" % (
                  min(opt.concurrency, len(others)), opt.procs, len(others),
                  opt.calls_per_turn, opt.think_ms,
                  "%d calls" % opt.calls if opt.calls else "%.0f s" % opt.duration, rounds,
                  "attacked" if opt.attacker else "nothing else"))
        quiet, attacked = Phase(procs), Phase(procs)
        res["quiet_phase"], res["attacked_phase"] = quiet, attacked
        atk = Attacker(setup, ctx, "attack-1", opt) if opt.attacker else None
        sampler = None
        for i in range(rounds):
            quiet.begin()
            out = run_load(setup, ctx, others, "q%d" % i, opt, opt.duration / rounds,
                           opt.calls // rounds)
            quiet.end(out)
            if i == 0:
                res["pss_quiet"] = pss_snapshot(procs)
            B.say("    quiet round %d: %d turns, %d small calls, p50 %s us, p99 %s us, "
                  "errors: %s" % (i + 1, out["turns"], quiet.rounds[-1][0],
                                  fmt_us(quiet.rounds[-1][1]), fmt_us(quiet.rounds[-1][2]),
                                  dict(out["errors"]) or "none"))
            if atk is None:
                continue
            atk.on()
            # Let the attack get going (the budget spent, 17 connections held).
            time.sleep(1.0)
            if sampler is None:
                sampler = PeakSampler([atk_pid] + [pid for pid, (r, _) in procs.items()
                                                   if r in ("egress", "supervisor")])
                sampler.start()
            attacked.begin()
            out = run_load(setup, ctx, others, "a%d" % i, opt, opt.duration / rounds,
                           opt.calls // rounds)
            attacked.end(out)
            if i == rounds - 1:
                res["pss_attacked"] = pss_snapshot(procs)
            atk.off()
            B.say("    attacked round %d: %d turns, %d small calls, p50 %s us, p99 %s us, "
                  "errors: %s" % (i + 1, out["turns"], attacked.rounds[-1][0],
                                  fmt_us(attacked.rounds[-1][1]),
                                  fmt_us(attacked.rounds[-1][2]),
                                  dict(out["errors"]) or "none"))
            # The attack's last requests end (a body being sent) before the next round.
            time.sleep(0.5)
        if sampler is not None:
            sampler.stop()
            res["peak"] = sampler.peak
        if atk is not None:
            res["attack"] = atk.report()
            res["attack"]["on_seconds"] = atk.on_seconds
            if opt.cost_seconds > 0:
                run_costs(atk, procs, atk_pid, opt, res)
        if opt.strace:
            run_strace(setup, ctx, others, procs, atk, atk_pid, other_pid, opt, res)
        if atk is not None:
            # What the attacker's broker keeps once its last oversize body is over.
            time.sleep(3.0)
            res["pss_rest"] = pss_snapshot(procs)
            atk.end()
        res["pss_end"] = pss_snapshot(procs)
        stats = setup.stats()
        res["counters"] = stats["counters"]
        res["final_procs"] = {p["pid"]: p for p in stats["processes"] if p.get("pid")}
    finally:
        setup.close()
    report(opt, res, procs, atk_pid, res.get("attack"), others, mono() - t_all)


def run_costs(atk, procs, atk_pid, opt, res):
    """Each kind of attack alone, with no other load: what it costs the daemon."""
    B.say("(d) each attack alone for %.0f s, no other load" % opt.cost_seconds)
    watch = dict((pid, r) for pid, (r, _) in procs.items()
                 if r in ("supervisor", "egress", "fsguard", "docker"))
    watch[atk_pid] = "attacker broker"
    others = [pid for pid, (r, _) in procs.items() if r == "broker" and pid != atk_pid]
    res["costs"] = []
    for kind in ATTACKS:
        atk.report()
        c0 = {pid: B.proc_sched_ns(pid) for pid in list(watch) + others}
        t0 = mono()
        atk.on((kind,))
        time.sleep(opt.cost_seconds)
        atk.off()
        time.sleep(0.5)
        secs = mono() - t0
        c1 = {pid: B.proc_sched_ns(pid) for pid in list(watch) + others}
        out = atk.report()
        cpu = {watch[pid]: (c1[pid] - c0[pid]) / 1e9 for pid in watch}
        cpu["other brokers"] = sum(c1[p] - c0[p] for p in others) / 1e9
        res["costs"].append((kind, secs, cpu, out))
        n = sum(x[2] for x in out["outcomes"])
        B.say("    %s: %d requests or connections, attacker's broker %.2f s CPU" % (
            kind, n, cpu["attacker broker"]))


def run_strace(setup, ctx, others, procs, atk, atk_pid, other_pid, opt, res):
    labels = {"supervisor": None, "egress": None}
    for pid, (r, _) in procs.items():
        if r in labels:
            labels[r] = pid
    labels["broker"] = other_pid
    if atk is not None:
        labels["attacker broker"] = atk_pid
    B.say("(e) system calls: strace -c -f -p on %s, %.0f s windows" % (
        ", ".join("%s %d" % kv for kv in labels.items()), opt.strace_seconds))
    with B.SyscallCounter(labels, "strace") as st:
        q = run_load(setup, ctx, others, "stq", opt, opt.strace_seconds, 0)
    res["strace_quiet"] = (st.counts, sum(len(v) for v in q["lat"].values()))
    if atk is None:
        return
    atk.report()
    atk.on()
    with B.SyscallCounter(labels, "strace") as st:
        q = run_load(setup, ctx, others, "sta", opt, opt.strace_seconds, 0)
    atk.off()
    time.sleep(0.5)
    res["strace_attack"] = atk.report()
    res["strace_attacked"] = (st.counts, sum(len(v) for v in q["lat"].values()))
    # Each kind alone, the attacker's broker traced: system calls per request.
    res["strace_kinds"] = []
    for kind in ATTACKS:
        with B.SyscallCounter({"attacker broker": atk_pid}, "strace") as st:
            atk.on((kind,))
            time.sleep(opt.strace_seconds)
            atk.off()
            time.sleep(0.5)
        res["strace_kinds"].append((kind, st.counts["attacker broker"], atk.report()))


# ---------------------------------------------------------------- report

def report(opt, res, procs, atk_pid, atk, others, total_s):
    say = B.say
    quiet, attacked = res["quiet_phase"], res["attacked_phase"]
    kinds = [("quiet", quiet)] + ([("attacked", attacked)] if atk else [])
    say("")
    say("Results (%.0f s in all; %d channels, %d of them loaded; attacker: %s; load average "
        "now %s)" % (total_s, len(others) + 1, len(others), "yes" if atk else "no",
                     " ".join(open("/proc/loadavg").read().split()[:3])))
    q_all, q_per = summary(quiet.res["lat"])
    a_all, a_per = summary(attacked.res["lat"]) if atk else ([], {})

    if opt.per_channel:
        say("")
        say("Small model call per channel (us): quiet p50 / p99 (n), attacked p50 / p99 (n), "
            "ratio attacked / quiet of p50 and p99")
        rows = []
        for ch in others:
            qp = q_per.get(ch, (float("nan"),) * 2 + (0,))
            row = [ch, "%s / %s (%d)" % (fmt_us(qp[0]), fmt_us(qp[1]), qp[2])]
            if atk:
                ap = a_per.get(ch, (float("nan"),) * 2 + (0,))
                row += ["%s / %s (%d)" % (fmt_us(ap[0]), fmt_us(ap[1]), ap[2]),
                        "%.2f / %.2f" % (ap[0] / qp[0], ap[1] / qp[1]) if qp[2] and ap[2]
                        else "-"]
            rows.append(row)
        hdr = ("channel", "quiet p50 / p99 (n)") + (
            ("attacked p50 / p99 (n)", "ratio p50 / p99") if atk else ())
        B.table(rows, hdr)

    say("")
    say("Small model call, all loaded channels (us)")
    sums = [summary(ph.res["lat"]) for _, ph in kinds]
    rows = [
        ["calls"] + ["%d" % len(a) for a, _ in sums],
        ["turns"] + ["%d" % ph.res["turns"] for _, ph in kinds],
        ["aggregate p50"] + [fmt_us(B.pct(a, 50)) for a, _ in sums],
        ["aggregate p99"] + [fmt_us(B.pct(a, 99)) for a, _ in sums],
        ["aggregate max"] + [fmt_us(max(a)) if a else "-" for a, _ in sums],
        ["per-channel p50: median (min - max)"] + [spread([v[0] for v in p.values()])
                                                   for _, p in sums],
        ["per-channel p99: median (min - max)"] + [spread([v[1] for v in p.values()])
                                                   for _, p in sums],
        ["rounds: p50 / p99 each"] + [", ".join("%s / %s" % (fmt_us(r[1]), fmt_us(r[2]))
                                                for r in ph.rounds) for _, ph in kinds],
        ["turn delivered, p50 / p99 (ms)"] + ["%.1f / %.1f" % (
            B.pct(ph.res["deliver"], 50), B.pct(ph.res["deliver"], 99)) for _, ph in kinds],
        ["errors"] + [str(sum(ph.res["errors"].values())) for _, ph in kinds],
    ]
    B.table(rows, ("figure",) + tuple(n for n, _ in kinds))
    if atk:
        ratios50 = [a_per[c][0] / q_per[c][0] for c in others if c in a_per and c in q_per]
        ratios99 = [a_per[c][1] / q_per[c][1] for c in others if c in a_per and c in q_per]
        within = sum(1 for r in ratios99 if r <= GOAL_RATIO)
        say("attacker's effect (attacked / quiet): aggregate p50 x%.2f, p99 x%.2f; per channel "
            "p50 x%s, p99 x%s (median, min - max); %d of %d channels' p99 within %.0fx of "
            "quiet" % (B.pct(a_all, 50) / B.pct(q_all, 50), B.pct(a_all, 99) /
                       B.pct(q_all, 99), spread_r(ratios50), spread_r(ratios99), within,
                       len(ratios99), GOAL_RATIO))

    # Memory
    say("")
    say("PSS of the daemon (KiB; from /proc/PID/smaps_rollup; private = Private_Clean + "
        "Private_Dirty)")
    n_brokers = sum(1 for r, _ in procs.values() if r == "broker")
    cols = [("idle, %d brokers" % n_brokers, res["pss_idle"]),
            ("after quiet round 1", res["pss_quiet"])]
    if atk:
        cols.append(("end of last attack", res["pss_attacked"]))
        if "pss_rest" in res:
            cols.append(("attack over 3 s", res["pss_rest"]))
    cols.append(("end", res["pss_end"]))
    rows = []
    for role in ("supervisor", "spawner", "fsguard", "docker", "egress", "brokers",
                 "attacker broker"):
        r = [role]
        for _, snap in cols:
            pss = by_role({p: v[0] for p, v in snap.items()}, procs, atk_pid)[role]
            r.append("%d" % pss)
        rows.append(r)
    for name, f in (("whole daemon PSS", 0), ("whole daemon private", 2),
                    ("whole daemon RSS", 1)):
        rows.append([name] + ["%d = %.2f MiB" % (sum(v[f] for v in snap.values()),
                                                 sum(v[f] for v in snap.values()) / 1024)
                              for _, snap in cols])
    rows.append(["whole daemon PSS but the attacker's broker"] + ["%.2f MiB" % (
        sum(v[0] for p, v in snap.items() if p != atk_pid) / 1024) for _, snap in cols])
    br_rows = []
    for _, snap in cols:
        b = [snap[p][0] for p in snap if procs.get(p, ("",))[0] == "broker" and p != atk_pid]
        bp = [snap[p][2] for p in snap if procs.get(p, ("",))[0] == "broker" and p != atk_pid]
        br_rows.append(("%.0f (%d - %d), private %.0f" % (
            sum(b) / len(b), min(b), max(b), sum(bp) / len(bp))) if b else "-")
    rows.append(["per broker PSS: mean (min - max)"] + br_rows)
    B.table(rows, ("process", ) + tuple(n for n, _ in cols))
    if "peak" in res:
        say("peak PSS sampled every 1 s during the attack: %s" % ", ".join(
            "%s %d KiB" % (procs.get(p, ("?",))[0] if p != atk_pid else "attacker broker", v)
            for p, v in res["peak"].items()))

    # CPU
    say("")
    say("CPU seconds (utime + stime), each kind's rounds added up")
    rows = []
    for role in ("supervisor", "spawner", "fsguard", "docker", "egress", "brokers",
                 "attacker broker"):
        rows.append([role] + ["%.2f" % by_role(ph.cpu, procs, atk_pid)[role]
                              for _, ph in kinds])
    rows.append(["whole daemon"] + ["%.2f (%.0f%% of one core)" % (
        sum(ph.cpu.values()), 100 * sum(ph.cpu.values()) / ph.seconds) for _, ph in kinds])
    rows.append(["whole daemon, but the attacker's broker"] + ["%.2f" % (
        sum(v for p, v in ph.cpu.items() if p != atk_pid)) for _, ph in kinds])
    rows.append(["per 1000 small calls, daemon"] + ["%.3f" % (
        1000 * sum(ph.cpu.values()) / max(1, ph.calls())) for _, ph in kinds])
    rows.append(["drivers (this harness)"] + ["%.2f" % ph.res["cpu"] for _, ph in kinds])
    rows.append(["fake upstream + main (this process)"] + ["%.2f" % ph.main_cpu
                                                          for _, ph in kinds])
    atk_cpu = 0.0
    if atk:
        # The attacker's CPU while on, spread over its time on (it is idle while off).
        atk_cpu = atk["cpu"] * attacked.seconds / max(1e-9, atk["on_seconds"])
        rows.append(["attacker process", "-", "%.2f (%.2f over %.0f s on)" % (
            atk_cpu, atk["cpu"], atk["on_seconds"])])
    rows.append(["machine busy / available"] + ["%.1f / %.1f" % (ph.busy, ph.machine)
                                                 for _, ph in kinds])
    # What the machine did besides the daemon and this harness (other users' work).
    rest = []
    for name, ph in kinds:
        mine = sum(ph.cpu.values()) + ph.res["cpu"] + ph.main_cpu
        if name == "attacked":
            mine += atk_cpu
        rest.append("%.1f" % max(0.0, ph.busy - mine))
    rows.append(["rest of the machine (estimated)"] + rest)
    rows.append(["time measured (s)"] + ["%.1f" % ph.seconds for _, ph in kinds])
    B.table(rows, ("process",) + tuple(n for n, _ in kinds))

    # Where a call's time goes when the machine is short of CPU: runnable, not running.
    say("")
    say("Waiting for a CPU (s, runnable but not running; schedstat), each kind's rounds added up")
    me = os.getpid()
    rows = []
    for role in ("supervisor", "fsguard", "egress", "brokers", "attacker broker"):
        rows.append([role] + ["%.2f" % by_role({p: v for p, v in ph.wait.items() if p != me},
                                               procs, atk_pid)[role] for _, ph in kinds])
    rows.append(["fake upstream + main (this process)"] + ["%.2f" % ph.wait.get(me, 0.0)
                                                          for _, ph in kinds])
    path = []
    for _, ph in kinds:
        w = sum(v for p, v in ph.wait.items() if p not in (me, atk_pid) and
                procs.get(p, ("",))[0] in ("supervisor", "egress", "broker"))
        path.append("%.0f" % (1e6 * w / max(1, ph.calls())))
    rows.append(["supervisor, egress, others' brokers: per small call (us)"] + path)
    B.table(rows, ("process",) + tuple(n for n, _ in kinds))

    if atk:
        say("")
        say("What the attacker saw (%.0f s on; outcome = the broker's status, 'N after S s', "
            "or how the connection ended)" % atk["on_seconds"])
        B.table([(a, o, "%d" % n) for a, o, n in atk["outcomes"]],
                ("attack", "outcome", "count"))
    if "costs" in res:
        say("")
        say("What each attack costs the daemon, alone with no other load (CPU from schedstat; "
            "'per request' divides by every request or connection the attacker made)")
        rows = []
        for kind, secs, cpu, out in res["costs"]:
            n = sum(x[2] for x in out["outcomes"])
            ab = cpu["attacker broker"]
            rest = sum(v for k, v in cpu.items() if k != "attacker broker")
            top = sorted(out["outcomes"], key=lambda x: -x[2])[:3]
            rows.append((kind, "%.1f" % secs, "%d (%.0f/s)" % (n, n / secs),
                         "%.2f (%.0f%% of a core)" % (ab, 100 * ab / secs),
                         "%.1f" % (1e6 * ab / max(1, n)),
                         "%.2f" % rest, "; ".join("%s %s %d" % tuple(x) for x in top)))
        B.table(rows, ("attack", "s", "requests", "attacker's broker CPU s", "us per request",
                       "rest of daemon CPU s", "most frequent outcomes"))
    if "counters" in res:
        k = res["counters"]
        say("daemon counters: turns %s, upstream_calls %s, failures %s, violations %s, "
            "child_exits %s, child_restarts %s" % (
                k.get("turns"), k.get("upstream_calls"), k.get("failures"),
                k.get("violations"), k.get("child_exits"), k.get("child_restarts")))

    for key, title in (("strace_quiet", "quiet"), ("strace_attacked", "attacked")):
        if key not in res:
            continue
        counts, calls = res[key]
        say("")
        say("System calls in the %s strace window (%d small calls; per 1000 calls; top 8)" % (
            title, calls))
        for label, c in counts.items():
            tot = sum(c.values())
            big = sorted(c.items(), key=lambda kv: -kv[1])[:8]
            say("  %-16s %9d in all, %8.0f per 1000 calls: %s" % (
                label, tot, 1000.0 * tot / max(1, calls),
                ", ".join("%s %d" % kv for kv in big)))
    if "strace_attack" in res:
        say("  (the attacker in that window: %s)" % ", ".join(
            "%s %s %d" % (a, o, n) for a, o, n in res["strace_attack"]["outcomes"]))
    if "strace_kinds" in res:
        say("")
        say("System calls of the attacker's broker, each attack alone (%.0f s each; per "
            "request or connection the attacker made)" % opt.strace_seconds)
        for kind, c, out in res["strace_kinds"]:
            n = sum(x[2] for x in out["outcomes"])
            tot = sum(c.values())
            big = sorted(c.items(), key=lambda kv: -kv[1])[:9]
            say("  %-9s %6d requests, %7d calls, %5.1f per request: %s" % (
                kind, n, tot, tot / max(1, n), ", ".join(
                    "%s %.2f" % (k, v / max(1, n)) for k, v in big)))

    # Goals
    say("")
    say("Goals (issue 11 point 4)")
    rows = []
    for name, snap in cols:
        # While the attack runs, the attacker's broker holds the body it is being sent (its
        # own memory, under its own RLIMIT_DATA): shown apart then, in the goal otherwise.
        apart = snap is res.get("pss_attacked")
        tot = sum(v[0] for p, v in snap.items() if not (apart and p == atk_pid)) / 1024
        mine = snap.get(atk_pid, (0,))[0] / 1024
        rows.append(("whole daemon PSS, %s (MiB)" % name, "%.2f%s" % (
            tot, " + attacker's broker %.2f" % mine if apart else ""),
            "<= %.0f" % GOAL_PSS_MIB, "met" if tot <= GOAL_PSS_MIB else "NOT met"))
    if atk:
        r99 = B.pct(a_all, 99) / B.pct(q_all, 99)
        rows.append(("others' p99 attacked / quiet", "%.2f (%s / %s us)" % (
            r99, fmt_us(B.pct(a_all, 99)), fmt_us(B.pct(q_all, 99))),
            "<= %.0f" % GOAL_RATIO, "met" if r99 <= GOAL_RATIO else "NOT met"))
        rows.append(("channels whose own p99 is within 2x (one p99 of ~100 calls is noisy)",
                     "%d of %d" % (within, len(ratios99)), "-", ""))
    B.table(rows, ("goal", "measured", "target", ""))


def spread_r(values):
    if not values:
        return "-"
    s = sorted(values)
    return "%.2f (%.2f - %.2f)" % (B.median(s), s[0], s[-1])


if __name__ == "__main__":
    main()
