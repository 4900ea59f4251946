#!/usr/bin/python3
"""bench/scale.py -- what a thousand idle channels cost one host.

What it measures (DESIGN.md section 12), at each of --counts idle channels (default 1, 100,
500, 1000), adding channels from one count to the next in one daemon:
  (a) the time to start the channels added (channel.start, --parallel at a time, each broker
      announced ready by this process, which plays every channel's worker);
  (b) the whole daemon's PSS and USS (supervisor, spawner, file guard, Docker client, egress
      and every broker, as daemon.stats gives them: each process's smaps_rollup, read
      through the descriptor it handed the spawner before it stopped being dumpable, since
      its /proc is root's from then on), each role's share, and the PSS added per channel
      between two counts, from 1 to 100 and from 100 to 1000 among them (the target: at
      most 64 KiB);
  (c) idle CPU and wake-ups per second of the whole daemon over --idle-seconds with nothing
      asked of it (schedstat run time and context switches of every thread);
  (d) daemon.stats answered on a keep-alive control connection, p50/p99 of --stats-calls
      (the target with 1000 channels: p99 within 10 ms);
  (e) a small model call's p50/p99 on one channel (the first one, with a turn bound) while
      every other channel idles: --calls calls through the broker and egress, interleaved
      with the same call sent directly on a keep-alive HTTPS connection to the same stand-in
      upstream, and the floor bench/hops measures on the same host at the start of the run;
  (f) with --smaps, where an idle broker's memory goes: every broker's /proc/PID/smaps
      summed per class of mapping (each object's code, read-only data, RELRO (relocated,
      then made read-only), writable data and .bss; heap, stack, other anonymous memory),
      per broker.
  The TypeScript runtime's figure (pi-roundtable-sandbox 0.7.3: every broker inside one
  Bun process) is run beside it when --ts-peer CMD (or RTSB_TS_PEER) names a command that,
  given N, starts that runtime with N idle brokers and prints one JSON object with its
  "pss_kib"; without one, the benchmark says it is absent and prints DESIGN.md 12's figure.

How it works: the in-process fake upstream (tests/fixtures/fake_upstream.py) and the real
rtsandboxd (tests/integration/rtsb.py, without -d, as in service) start as the current user.
By default the Docker socket the daemon is given is a stand-in (benchlib.FakeEngine): it
answers create, start, inspect, list and remove of this run's containers itself, with no
container behind them, and passes every other request to the real Docker.  The daemon does
for each channel everything it does with a real container, broker included: its processes
are what is measured, and Docker's (a containerd-shim and the container per channel) are no
part of them, but would not fit a thousand times on a small host.  --containers uses real
sleeper containers (tests/fixtures/sleeper) instead, as bench/load.py does, for counts that
fit.  Nothing is asserted: the figures are printed next to their targets.

Run (as the service user, which is in group docker; about 4 minutes with 1000 channels):
    cd /tmp && setpriv --reuid=rtsandbox --regid=rtsandbox --init-groups \\
        env RTSANDBOX_BUILD=/work/main/build /usr/bin/python3 /work/main/bench/scale.py
Options: --counts 1,100,500,1000 --parallel 4 --idle-seconds 10 --stats-calls 200
--calls 300 --containers --smaps --ts-peer CMD --quick (counts 1,20; short windows)
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402

rtsb = B.rtsb
TARGET_PER_CHANNEL_KIB = 64.0
TARGET_STATS_P99_MS = 10.0
TARGET_ADDED_US = 100.0
# DESIGN.md 12: the TypeScript runtime measured beside rtsandbox (Bun 1.4.5), 100 idle brokers.
TS_DESIGN = {"pss_100_mib": 40.3, "per_channel_kib": 59.0}
SMALL = json.dumps({"model": "claude-test", "max_tokens": 16,
                    "messages": [{"role": "user", "content": "hi"}]}).encode()
ROLES = ("supervisor", "spawner", "fsguard", "docker", "egress", "broker")


# ---------------------------------------------------------------- set-up

class ScaleSetup:
    def __init__(self, opt):
        self.tmp = tempfile.mkdtemp(prefix="rtsb-scale-", dir="/tmp")
        self.prefix = "rtsbscale%d" % os.getpid()
        self.engine = None
        if opt.containers:
            why = rtsb.ensure_sleeper()
            if why is not None:
                raise SystemExit(why)
        else:
            self.engine = B.FakeEngine(os.path.join(self.tmp, "docker.sock"), self.prefix)
        self.fu = B.FakeUpstream(os.path.join(self.tmp, "certs"), default_delay_ms=0,
                                 one_write=True, max_records=2000)
        self.fu.start()
        fu, prefix, engine = self.fu, self.prefix, self.engine

        def conf(c):
            c["image"] = B.SLEEPER_IMAGE
            c["upstream"]["url"] = fu.url
            c["upstream"]["ca_file"] = fu.ca_file
            c["docker"] = {"container_prefix": prefix, "limits": {"memory_mib": 64}}
            if engine is not None:
                c["docker"]["socket"] = engine.path
            c["timeouts"] = {"start_ms": 60000, "turn_ms": 600000}
            c["budgets"] = {"max_calls": 1000}
        self.daemon = rtsb.Daemon(config=conf, debug=False)
        self.daemon.start()
        self.state = self.daemon.config["state_dir"]
        self.docker = B.DockerAPI()

    def client(self):
        c = rtsb.Client(self.daemon.socket)
        c.sock.settimeout(300)
        return c

    def socket_path(self, channel):
        return os.path.join(self.state, B.segment_of(channel), "run", "broker.sock")

    def close(self):
        try:
            self.daemon.stop(timeout=120)
        except Exception:       # noqa: BLE001 - best effort at the end
            pass
        if self.engine is None:
            try:
                self.docker.remove_prefix(self.prefix)
            except Exception:   # noqa: BLE001
                pass
        else:
            self.engine.close()
        self.docker.close()
        self.daemon.cleanup()
        self.fu.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def start_channels(setup, names, parallel):
    """channel.start of every name, parallel at a time, each worker announced; seconds."""
    todo = list(names)
    lock = threading.Lock()
    errs = []

    def worker():
        c = setup.client()
        try:
            while True:
                with lock:
                    if not todo or errs:
                        return
                    ch = todo.pop(0)
                try:
                    rid = c.request("channel.start", {"channel": ch, "profile": "default"})
                    B.announce_ready(setup.socket_path(ch), timeout=120)
                    c.wait(rid)
                    c.pending.clear()
                except Exception as e:      # noqa: BLE001 - reported below
                    errs.append("%s: %s" % (ch, e))
        finally:
            c.close()
    t0 = time.monotonic()
    ths = [threading.Thread(target=worker) for _ in range(parallel)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if errs:
        raise RuntimeError("channels did not start: %s\n%s" % (
            "; ".join(errs[:5]), setup.daemon.read_log()[-3000:]))
    return time.monotonic() - t0


# ---------------------------------------------------------------- /proc

def read_stat(pid):
    """(ppid, comm) or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    return int(s.rsplit(")", 1)[1].split()[1]), s[s.index("(") + 1:s.rindex(")")]


def daemon_procs(setup):
    """{pid: role} of the supervisor and every process under it."""
    with setup.client() as c:
        st = c.call("daemon.stats")["processes"]
    out = {p["pid"]: p["role"] for p in st if p.get("pid")}
    sup = [p["pid"] for p in st if p["role"] == "supervisor"][0]
    kids = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit():
            r = read_stat(int(d))
            if r:
                kids[r[0]].append(int(d))
    todo = [sup]
    while todo:
        parent = todo.pop()
        for pid in kids.get(parent, []):
            if pid not in out:
                out[pid] = "spawner" if parent == sup else "other"
            todo.append(pid)
    return out


# supervisor/methods.c: a broker's figures are kept STATS_MEM_TTL_MS, and for a second
# after each daemon.stats the stalest are renewed, STATS_MEM_TICK_READS every
# STATS_MEM_TICK_MS.
STATS_TTL_S = 10.0
STATS_RENEWED_PER_S = 40.0


def memory(setup, wait_s=180):
    """{role: [Pss, Uss, n]} and the totals, in KiB, from daemon.stats.  A call reads a few
    brokers never read and has the next second renew the stalest of the rest, and a figure
    is kept STATS_TTL_S: a broker read before the last channels started counts its share of
    the pages they now share with it as it was then.  So daemon.stats is asked every half
    second until every process has its figures and every figure kept from before this call
    has expired and been read again, or wait_s has passed (then the ones missing are
    said)."""
    t0 = time.monotonic()
    t_end = t0 + wait_s
    with setup.client() as c:
        while True:
            st = [p for p in c.call("daemon.stats")["processes"] if p.get("pid")]
            missing = [p for p in st if "pss_kib" not in p or "uss_kib" not in p]
            renewed = t0 + STATS_TTL_S + len(st) / STATS_RENEWED_PER_S + 1.0
            now = time.monotonic()
            if (not missing and now >= renewed) or now > t_end:
                break
            time.sleep(0.5)
    if missing:
        B.say("      (%d processes not measured within %d s: %s)" % (
            len(missing), wait_s, ", ".join(sorted({p["role"] for p in missing}))))
    roles = {}
    tot_pss = tot_uss = 0
    for p in st:
        if p in missing:
            continue
        role, pss, uss = p["role"], p["pss_kib"], p["uss_kib"]
        x = roles.setdefault(role, [0, 0, 0])
        x[0] += pss
        x[1] += uss
        x[2] += 1
        tot_pss += pss
        tot_uss += uss
    return roles, tot_pss, tot_uss


def thread_counters(pid):
    """(run ns, context switches) summed over every thread of pid."""
    ns = sw = 0
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0, 0
    for t in tasks:
        base = "/proc/%d/task/%s/" % (pid, t)
        try:
            with open(base + "schedstat") as f:
                ns += int(f.read().split()[0])
            with open(base + "status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches:",
                                        "nonvoluntary_ctxt_switches:")):
                        sw += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
    return ns, sw


def idle_activity(procs, seconds):
    """CPU ms per second and wake-ups per second of all procs, and the busiest roles."""
    a = {p: thread_counters(p) for p in procs}
    time.sleep(seconds)
    b = {p: thread_counters(p) for p in procs}
    by_role = collections.defaultdict(lambda: [0, 0])
    for p, role in procs.items():
        if p in a and p in b:
            by_role[role][0] += b[p][0] - a[p][0]
            by_role[role][1] += b[p][1] - a[p][1]
    ns = sum(v[0] for v in by_role.values())
    sw = sum(v[1] for v in by_role.values())
    return ns / 1e6 / seconds, sw / seconds, dict(by_role)


def stats_latency(setup, n):
    lat = []
    with setup.client() as c:
        c.call("daemon.stats")
        for _ in range(n):
            t0 = time.perf_counter_ns()
            c.call("daemon.stats")
            lat.append((time.perf_counter_ns() - t0) / 1e6)
    return B.pct(lat, 50), B.pct(lat, 99)


# ---------------------------------------------------------------- the small call

class ProbeWorker:
    """Plays the worker of one channel for a turn, as bench/passthrough.py does."""

    def __init__(self, setup, channel):
        self.setup, self.channel = setup, channel
        self.sock = setup.socket_path(channel)
        self.client = setup.client()
        self.n = 0

    def begin(self):
        self.n += 1
        self.turn_id = "scale-%d" % self.n
        self.rid = self.client.request("turn.run", {
            "channel": self.channel, "profile": "default", "turnId": self.turn_id,
            "author": {"id": "bench", "name": "Bench"}, "text": "benchmark", "images": [],
            "memory": "", "thinking": "low"})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = B.unix_request(self.sock, "GET", "/worker/next", b"", timeout=60)
            if r.status == 200:
                got = json.loads(r.body)
                if got["turnId"] != self.turn_id:
                    raise RuntimeError("got turn %r" % got)
                return
            B.unix_request(self.sock, "POST", "/worker/ready", b"", timeout=5)
        raise RuntimeError("the turn never reached the worker")

    def end(self):
        r = B.unix_request(self.sock, "POST", "/worker/result", {
            "turnId": self.turn_id, "result": {"ok": True, "text": "done", "files": []}})
        res = self.client.wait(self.rid)
        self.client.pending.clear()
        if r.status != 200 or not res.get("ok"):
            raise RuntimeError("turn ended badly: %d %r %r" % (r.status, r.body, res))

    def close(self):
        self.client.close()


def small_calls(setup, pw, n):
    """p50/p99 through the broker and direct, interleaved, in us."""
    direct = B.DirectTLS(setup.fu)
    # Timed calls find the credential's token kept, as in service (benchlib).
    B.settle_credential(setup.daemon.config["upstream"]["credential_file"])
    for _ in range(20):
        B.unix_request(pw.sock, "POST", "/anthropic/v1/messages", SMALL)
        direct.request("POST", "/v1/messages", SMALL)
    bl, dl = [], []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        r = B.unix_request(pw.sock, "POST", "/anthropic/v1/messages", SMALL)
        t1 = time.perf_counter_ns()
        r2 = direct.request("POST", "/v1/messages", SMALL)
        t2 = time.perf_counter_ns()
        if r.status != 200 or r2.status != 200:
            raise RuntimeError("small call: %d %r / %d" % (r.status, r.body[:200], r2.status))
        bl.append((t1 - t0) / 1e3)
        dl.append((t2 - t1) / 1e3)
    direct.close()
    return {"p50": B.pct(bl, 50), "p99": B.pct(bl, 99), "d50": B.pct(dl, 50),
            "d99": B.pct(dl, 99)}


# ---------------------------------------------------------------- smaps

def broker_link():
    """-Dbroker_link as the build resolved it (static, static-pie, dynamic)."""
    try:
        with open(os.path.join(rtsb.BUILD, "buildconf.h")) as f:
            for line in f:
                if line.startswith("#define RTSANDBOX_BROKER_LINK "):
                    return line.split()[2].strip('"')
    except OSError:
        pass
    return "unknown"


def mapping_class(path, perms, prev_path, next_path, next_perms):
    """A mapping's class: (object, kind)."""
    if path in ("[heap]", "[stack]", "[vdso]", "[vvar]", "[vvar_vclock]", "[vsyscall]"):
        return (path, "")
    if path == "":
        # The .bss of the object mapped just before, or anonymous memory.
        if prev_path and not prev_path.startswith("["):
            return (os.path.basename(prev_path), "bss")
        return ("[anon]", "")
    name = os.path.basename(path)
    if "x" in perms:
        kind = "text"
    elif "w" in perms:
        kind = "data"
    elif next_path == path and "w" in next_perms:
        # Read-only once relocated: made so just before its data.
        kind = "relro"
    else:
        kind = "ro"
    return (name, kind)


def smaps_classes(pid):
    """{class: {Rss, Pss, Private}} of one process, KiB."""
    maps = []       # [path, perms, {field: KiB}]
    try:
        with open("/proc/%d/smaps" % pid) as f:
            for line in f:
                first = line.split(None, 1)[0]
                if not first.endswith(":"):
                    parts = line.split(None, 5)
                    maps.append([parts[5].strip() if len(parts) > 5 else "",
                                 parts[1], collections.Counter()])
                    continue
                key = first[:-1]
                if maps and key in ("Rss", "Pss", "Private_Clean", "Private_Dirty",
                                    "Anonymous"):
                    v = int(line.split()[1])
                    maps[-1][2]["Private" if key.startswith("Private") else key] += v
    except OSError:
        pass
    out = collections.defaultdict(lambda: collections.Counter())
    prev_path = None
    for i, (path, perms, v) in enumerate(maps):
        nxt = maps[i + 1] if i + 1 < len(maps) else ("", "")
        cls = mapping_class(path, perms, prev_path, nxt[0], nxt[1])
        prev_path = path if path else prev_path if cls[1] == "bss" else None
        out[cls].update(v)
    return out


def print_smaps(procs, role="broker"):
    brokers = [p for p, r in procs.items() if r == role]
    tot = collections.defaultdict(collections.Counter)
    for p in brokers:
        for k, v in smaps_classes(p).items():
            tot[k].update(v)
    n = len(brokers)
    if not tot:
        B.say("  (f) where an idle %s's memory goes: not read; a %s is not dumpable, so "
              "its /proc/PID/smaps is root's: read it as root, e.g. "
              "sudo cat /proc/%s/smaps" % (role, role, brokers[0] if brokers else "PID"))
        return
    B.say("  (f) where an idle %s's memory goes: /proc/PID/smaps of all %d, per process "
          "(KiB)" % (role, n))
    rows = sorted(tot.items(), key=lambda kv: -kv[1]["Pss"])
    B.say("      %-34s %8s %8s %8s %9s" % ("mapping class", "Rss", "Pss", "private",
                                          "anonymous"))
    sums = collections.Counter()
    for (obj, kind), v in rows:
        B.say("      %-34s %8.1f %8.1f %8.1f %9.1f" % (
            (obj + " " + kind).strip()[:34], v["Rss"] / n, v["Pss"] / n, v["Private"] / n,
            v["Anonymous"] / n))
        sums.update(v)
    B.say("      %-34s %8.1f %8.1f %8.1f %9.1f" % ("total", sums["Rss"] / n, sums["Pss"] / n,
                                                   sums["Private"] / n,
                                                   sums["Anonymous"] / n))


# ---------------------------------------------------------------- the TypeScript peer

def ts_peer(opt, n):
    """The peer's PSS with n idle brokers (KiB), or None and why not."""
    cmd = opt.ts_peer or os.environ.get("RTSB_TS_PEER")
    if not cmd:
        return None, "absent: no --ts-peer or RTSB_TS_PEER names pi-roundtable-sandbox " \
            "0.7.3's runner on this host"
    try:
        out = subprocess.run(cmd.split() + [str(n)], capture_output=True, text=True,
                             timeout=600)
        return float(json.loads(out.stdout.strip().splitlines()[-1])["pss_kib"]), None
    except (OSError, ValueError, KeyError, IndexError, subprocess.SubprocessError) as e:
        return None, "failed: %s" % e


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--counts", default="1,100,500,1000",
                    help="idle channel counts, ascending, comma separated")
    ap.add_argument("--parallel", type=int, default=4, help="channel starts at a time")
    ap.add_argument("--idle-seconds", type=float, default=10.0)
    ap.add_argument("--stats-calls", type=int, default=200)
    ap.add_argument("--calls", type=int, default=300, help="small calls each way per count")
    ap.add_argument("--hops-calls", type=int, default=2000)
    ap.add_argument("--containers", action="store_true",
                    help="real sleeper containers instead of the Docker stand-in")
    ap.add_argument("--smaps", nargs="?", const="broker", default=None,
                    help="per-mapping table of these roles (comma separated; default broker) "
                    "at the last count")
    ap.add_argument("--ts-peer", help="command giving the TypeScript runtime's PSS for N")
    ap.add_argument("--quick", action="store_true",
                    help="counts 1,20 with short windows (the test command's smoke run)")
    opt = ap.parse_args()
    if opt.quick:
        opt.counts = "1,20"
        opt.idle_seconds, opt.stats_calls, opt.calls, opt.hops_calls = 2.0, 20, 30, 200
    counts = [int(x) for x in opt.counts.split(",")]
    if counts != sorted(set(counts)) or counts[0] < 1:
        ap.error("--counts: ascending, distinct, at least 1")
    with open("/proc/loadavg") as f:
        load0 = " ".join(f.read().split()[:3])
    B.say("rtsandbox scale benchmark: %d CPUs, load average %s, build %s (broker linked "
          "%s), uid %d" % (os.cpu_count(), load0, rtsb.BUILD, broker_link(), os.getuid()))
    t_start = time.monotonic()
    floor = B.hops(calls=opt.hops_calls)
    if floor:
        B.say("  floor (bench/hops -e, %d calls): two bare relaying processes add %.0f us p50 "
              "to a keep-alive call of %.0f us" % (floor["calls"], floor["added_p50"],
                                                 floor.get("direct_p50", float("nan"))))
    setup = ScaleSetup(opt)
    if setup.engine is not None:
        B.say("  containers: none; the daemon's Docker socket is a stand-in that answers "
              "create, start, inspect, list and remove itself (benchlib.FakeEngine), so "
              "every channel gets its broker, directories and Docker calls as with a "
              "container, and Docker's own processes, which are not the daemon's, are "
              "left out")
    else:
        B.say("  containers: real, %s" % B.SLEEPER_IMAGE)
    rows = []
    try:
        started = 0
        pw = None
        for n in counts:
            names = ["scale:%d" % i for i in range(started, n)]
            secs = start_channels(setup, names, opt.parallel)
            started = n
            if pw is None:
                # What egress and the first channel's broker keep after as many calls
                # as each count makes (the upstream's TLS session and connection, the
                # broker's buffers and heap) is in every count's figure, not in the
                # slope between counts, which is then the idle channels' alone.
                pw = ProbeWorker(setup, "scale:0")
                pw.begin()
                small_calls(setup, pw, opt.calls)
                pw.end()
            # A broker gives back what start-up left one second after it went idle
            # (BROKER_IDLE_MS, broker/call.c): the channels started last are read idle, as
            # the first (memory() waits out figures read before).
            time.sleep(2.5)
            roles, pss, uss = memory(setup)
            procs = daemon_procs(setup)
            # A daemon.stats has the next second renew a few brokers' figures
            # (supervisor/methods.c): idle is measured after it.
            time.sleep(1.5)
            cpu_ms, wake, act = idle_activity(procs, opt.idle_seconds)
            s50, s99 = stats_latency(setup, opt.stats_calls)
            pw.begin()
            sc = small_calls(setup, pw, opt.calls)
            pw.end()
            nb = roles.get("broker", [0, 0, 0])[2]
            row = {"n": n, "start_s": secs, "added": len(names), "pss": pss, "uss": uss,
                   "roles": roles, "cpu_ms": cpu_ms, "wake": wake, "act": act,
                   "s50": s50, "s99": s99, "sc": sc, "brokers": nb}
            rows.append(row)
            B.say("  %d idle channels (%d started in %.1f s, %.1f ms each): daemon PSS %.2f "
                  "MiB, USS %.2f MiB; %s" % (
                      n, len(names), secs, secs * 1000 / max(1, len(names)), pss / 1024,
                      uss / 1024, ", ".join("%s %d KiB PSS (%d)" % (r, v[0], v[2])
                                            for r, v in sorted(roles.items()))))
            if nb:
                B.say("      per broker: PSS %.1f KiB, USS %.1f KiB" % (
                    roles["broker"][0] / nb, roles["broker"][1] / nb))
            B.say("      idle: %.2f ms CPU per s, %.1f wake-ups per s (%s)" % (
                cpu_ms, wake, ", ".join("%s %.1f/s" % (r, v[1] / opt.idle_seconds)
                                        for r, v in sorted(act.items()) if v[1])))
            B.say("      daemon.stats: p50 %.2f ms, p99 %.2f ms (%d calls)" % (
                s50, s99, opt.stats_calls))
            B.say("      small call on one channel: p50 %.0f us, p99 %.0f us; direct p50 %.0f "
                  "us, p99 %.0f us; added p50 %.0f us%s" % (
                      sc["p50"], sc["p99"], sc["d50"], sc["d99"], sc["p50"] - sc["d50"],
                      "; floor + %.0f us" % (sc["p50"] - sc["d50"] - floor["added_p50"])
                      if floor else ""))
        if opt.smaps:
            procs = daemon_procs(setup)
            for role in opt.smaps.split(","):
                print_smaps(procs, role)
        if pw is not None:
            pw.close()
    finally:
        setup.close()
    with open("/proc/loadavg") as f:
        load1 = " ".join(f.read().split()[:3])
    B.say("")
    B.say("Summary (%.0f s; load average at the start %s, at the end %s)" % (
        time.monotonic() - t_start, load0, load1))
    hdr = ("channels", "start s", "PSS MiB", "USS MiB", "broker PSS KiB", "idle CPU ms/s",
           "wake-ups/s", "stats p50/p99 ms", "small call p50/p99 us (added)")
    tab = []
    for r in rows:
        nb = max(1, r["brokers"])
        tab.append((r["n"], "%.1f" % r["start_s"], "%.2f" % (r["pss"] / 1024),
                    "%.2f" % (r["uss"] / 1024),
                    "%.1f" % (r["roles"].get("broker", [0])[0] / nb),
                    "%.2f" % r["cpu_ms"], "%.1f" % r["wake"],
                    "%.2f / %.2f" % (r["s50"], r["s99"]),
                    "%.0f / %.0f (+%.0f)" % (r["sc"]["p50"], r["sc"]["p99"],
                                             r["sc"]["p50"] - r["sc"]["d50"])))
    B.table(tab, hdr)
    B.say("")
    slopes = []
    for a, b in zip(rows, rows[1:]):
        slopes.append((a, b))
    if len(rows) > 3:
        slopes.append((rows[1], rows[-1]))
    for a, b in slopes:
        d = b["n"] - a["n"]
        B.say("  PSS added per channel from %d to %d: %.1f KiB (USS %.1f KiB; brokers %.1f, "
              "the rest %.1f)   target <= %.0f KiB" % (
                  a["n"], b["n"], (b["pss"] - a["pss"]) / d, (b["uss"] - a["uss"]) / d,
                  (b["roles"].get("broker", [0])[0] - a["roles"].get("broker", [0])[0]) / d,
                  ((b["pss"] - b["roles"].get("broker", [0])[0]) -
                   (a["pss"] - a["roles"].get("broker", [0])[0])) / d,
                  TARGET_PER_CHANNEL_KIB))
    last = rows[-1]
    B.say("  daemon.stats with %d channels: p99 %.2f ms   target <= %.0f ms" % (
        last["n"], last["s99"], TARGET_STATS_P99_MS))
    if floor:
        B.say("  small call with %d channels idle: added p50 %.0f us, floor %.0f us   target "
              "<= floor + %.0f us" % (last["n"], last["sc"]["p50"] - last["sc"]["d50"],
                                      floor["added_p50"], TARGET_ADDED_US))
    ts_n = 100 if 100 in counts else last["n"]
    ts, why = ts_peer(opt, ts_n)
    if ts is None:
        B.say("  TypeScript runtime: %s; DESIGN.md 12 measured it at %.1f MiB with 100 idle "
              "brokers, %.0f KiB per channel (not measured in this run)" % (
                  why, TS_DESIGN["pss_100_mib"], TS_DESIGN["per_channel_kib"]))
    else:
        ours = [r for r in rows if r["n"] == ts_n][0]["pss"]
        B.say("  TypeScript runtime with %d idle brokers: PSS %.2f MiB; rtsandbox %.2f MiB" % (
            ts_n, ts / 1024, ours / 1024))


if __name__ == "__main__":
    main()
