"""Shared helpers of the rtsandbox benchmarks (bench/passthrough.py, bench/turns.py,
bench/load.py).

Not a benchmark itself.  Everything here stays on loopback and Unix sockets: the in-process
fake upstream (tests/fixtures/fake_upstream.py), the real rtsandboxd started as the current user
(tests/integration/rtsb.py), raw HTTP/1.1 over a broker's Unix socket, the Docker Engine API over
/var/run/docker.sock, and /proc readings of the daemon's processes.
"""

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))

import rtsb  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30
CLK_TCK = os.sysconf("SC_CLK_TCK")
DOCKER_SOCKET = "/var/run/docker.sock"
SLEEPER_IMAGE = rtsb.SLEEPER
WORKER_IMAGE = "rtsandbox-worker:latest"


def now_ns():
    return time.perf_counter_ns()


def hops(*flags, calls=2000):
    """The floor: build/bench/hops -e -j with flags (-t: TLS to the upstream), its JSON
    object; None when the build has no bench/hops."""
    path = os.path.join(rtsb.BUILD, "bench", "hops")
    if not os.path.exists(path):
        return None
    return json.loads(subprocess.run([path, "-e", "-j", "-n", str(calls)] + list(flags),
                                     check=True, capture_output=True, text=True,
                                     timeout=300).stdout)


class HopsInPlace:
    """The floor in place: build/bench/hops -l PATH -u PORT, its two bare relays (the broker's
    Unix listener, a socket pair, egress's keep-alive TLS connection) in front of this
    process's client and the fake upstream on PORT, so that they serve the very calls the
    pair serves.  .sock is the relays' socket, .broker and .egress their pids; None from
    start() when the build has no bench/hops."""

    @classmethod
    def start(cls, port):
        path = os.path.join(rtsb.BUILD, "bench", "hops")
        if not os.path.exists(path):
            return None
        return cls(path, port)

    def __init__(self, path, port):
        self.tmp = tempfile.mkdtemp(prefix="rtsb-hops-", dir="/tmp")
        self.sock = os.path.join(self.tmp, "s")
        self.proc = subprocess.Popen([path, "-l", self.sock, "-u", str(port)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            raise RuntimeError("bench/hops -l did not start (exit %s)" % self.proc.wait())
        pids = json.loads(line)
        self.broker, self.egress = pids["broker"], pids["egress"]

    def close(self):
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def pct(values, p):
    """The p-th percentile (0-100), nearest rank on the sorted values."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def median(values):
    return statistics.median(values) if values else float("nan")


def say(*a):
    print(*a, flush=True)


# ---------------------------------------------------------------- HTTP/1.1 on any socket

class HttpError(Exception):
    pass


class Response:
    def __init__(self, status, reason, headers, body=None, nbytes=0):
        self.status, self.reason, self.headers = status, reason, headers
        self.body, self.nbytes = body, nbytes

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)


class Wire:
    """Sends one request and reads one response on a connected socket (plain or TLS), with
    the same code for both, so that a broker figure and a direct figure measure the same
    client.  keep=False counts body bytes without keeping them (throughput runs)."""

    RECV = 1 << 20
    # One receive buffer per thread, kept from call to call: a new 1 MiB bytearray for
    # each call on a fresh connection was an mmap(2), 256 page faults and an munmap(2)
    # charged to the broker's side of every small call, and never to the direct side.
    _local = threading.local()

    def __init__(self, sock):
        self.sock = sock
        self.tail = b""
        big = getattr(self._local, "big", None)
        if big is None:
            big = self._local.big = bytearray(self.RECV)
        self.big = big
        self.view = memoryview(big)

    def send(self, method, target, body=b"", headers=()):
        head = ["%s %s HTTP/1.1" % (method, target), "Host: broker"]
        head += ["%s: %s" % h for h in headers]
        if body or method == "POST":
            head.append("Content-Length: %d" % len(body))
        data = ("\r\n".join(head) + "\r\n\r\n").encode() + body
        self.sock.sendall(data)

    def _recv(self):
        n = self.sock.recv_into(self.big)
        return n

    def read_head(self):
        buf = self.tail
        while b"\r\n\r\n" not in buf:
            n = self._recv()
            if n == 0:
                raise HttpError("connection closed before the response head")
            buf += self.view[:n]
        head, _, self.tail = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        status = int(parts[1])
        headers = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            headers[k.strip().lower()] = v.strip()
        return status, (parts[2] if len(parts) > 2 else ""), headers

    def read_body(self, headers, keep=True, method="POST", status=200):
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return b"", 0
        te = headers.get("transfer-encoding", "").lower()
        if "chunked" in te:
            return self._chunked(keep)
        if "content-length" in headers:
            return self._length(int(headers["content-length"]), keep)
        return self._length(None, keep)

    def _length(self, n, keep):
        tail, self.tail = self.tail, b""
        if n is not None and len(tail) >= n:
            self.tail = tail[n:]
            return (tail[:n] if keep else None), n
        parts = [tail] if keep else []
        got = len(tail)
        while n is None or got < n:
            want = self.RECV if n is None else min(self.RECV, n - got)
            k = self.sock.recv_into(self.big, want)
            if k == 0:
                if n is None:
                    break
                raise HttpError("short body: %d of %d" % (got, n))
            got += k
            if keep:
                parts.append(bytes(self.view[:k]))
        return (b"".join(parts) if keep else None), got

    def _chunked(self, keep):
        parts = []
        total = 0
        data = memoryview(self.tail)
        self.tail = b""
        pos = 0
        line = b""          # a partial size line
        rem = 0             # payload bytes left in the current chunk
        crlf = 0            # CRLF bytes left after the payload
        trailer = False
        while True:
            while pos < len(data):
                if rem:
                    take = min(rem, len(data) - pos)
                    if keep:
                        parts.append(bytes(data[pos:pos + take]))
                    total += take
                    rem -= take
                    pos += take
                    continue
                if crlf:
                    take = min(crlf, len(data) - pos)
                    crlf -= take
                    pos += take
                    continue
                end = bytes(data[pos:pos + 1024]).find(b"\n")
                if end < 0:
                    line += bytes(data[pos:])
                    pos = len(data)
                    if len(line) > 4096:
                        raise HttpError("chunk size line too long")
                    continue
                line += bytes(data[pos:pos + end + 1])
                pos += end + 1
                if trailer:
                    if line in (b"\r\n", b"\n"):
                        self.tail = bytes(data[pos:])
                        return (b"".join(parts) if keep else None), total
                    line = b""
                    continue
                size = int(line.split(b";", 1)[0].strip(), 16)
                line = b""
                if size == 0:
                    trailer = True
                else:
                    rem, crlf = size, 2
            # Need more bytes.  A large payload goes straight from the big buffer.
            k = self._recv()
            if k == 0:
                raise HttpError("connection closed inside a chunked body")
            data = self.view[:k]
            pos = 0

    def exchange(self, method, target, body=b"", headers=(), keep=True):
        self.send(method, target, body, headers)
        status, reason, hdrs = self.read_head()
        b, n = self.read_body(hdrs, keep, method, status)
        return Response(status, reason, hdrs, b, n)


WORKER_HEADERS = (("authorization", "Bearer dummy"), ("anthropic-version", "2023-06-01"),
                  ("content-type", "application/json"))


def unix_request(path, method, target, body=None, headers=WORKER_HEADERS, keep=True,
                 timeout=60):
    """One request on a fresh Unix connection (the broker answers connection: close)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else (body or b"")
        return Wire(s).exchange(method, target, data, headers, keep)
    finally:
        s.close()


class DirectTLS:
    """A keep-alive HTTPS connection from this process straight to the fake upstream, with the
    same CA as egress (fresh TLS connection when the server closed it)."""

    def __init__(self, fu):
        self.fu = fu
        self.ctx = ssl.create_default_context(cafile=fu.ca_file)
        self.ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        self.sock = None

    def connect(self):
        raw = socket.create_connection(("127.0.0.1", self.fu.port), timeout=60)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self.ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.wire = Wire(self.sock)

    def request(self, method, target, body=None, keep=True):
        if self.sock is None:
            self.connect()
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else (body or b"")
        r = self.wire.exchange(method, target, data, WORKER_HEADERS, keep)
        if r.header("connection", "").lower() == "close":
            self.close()
        return r

    def tls_version(self):
        if self.sock is None:
            self.connect()
        return self.sock.version(), self.sock.cipher()[0]

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None


# ---------------------------------------------------------------- /proc

def proc_cpu_ticks(pid):
    """utime + stime of the whole process, in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def proc_minflt(pid):
    """Minor page faults of the whole process so far."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def proc_sched_ns(pid, field=0):
    """A schedstat field summed over all threads, in ns: 0 the time on a CPU (finer than
    the ticks of stat), 1 the time runnable but waiting for one; 0 once gone."""
    total = 0
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return 0
    for t in tasks:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[field])
        except (OSError, ValueError, IndexError):
            pass
    return total


def proc_status_kib(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def proc_rollup_kib(pid):
    """smaps_rollup fields in KiB: Rss, Pss, Private_Clean, Private_Dirty, ... ({} if gone)."""
    out = {}
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[0].endswith(":") and parts[2] == "kB":
                    out[parts[0][:-1]] = int(parts[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return out


def proc_uss_kib(pid):
    """Private (unshared) memory: what the process alone costs."""
    r = proc_rollup_kib(pid)
    return r.get("Private_Clean", 0) + r.get("Private_Dirty", 0)


class RssSampler(threading.Thread):
    """Samples VmRSS of some pids every period seconds; peak of the sum and of each."""

    def __init__(self, pids, period=0.05):
        super().__init__(daemon=True)
        self.pids, self.period = list(pids), period
        self.peak_sum = 0
        self.peak_anon_sum = 0
        self.peak = {p: 0 for p in self.pids}
        self.peak_anon = {p: 0 for p in self.pids}
        self.samples = 0
        self.stop_ev = threading.Event()

    def sample(self):
        tot = anon = 0
        for p in self.pids:
            v = proc_status_kib(p, "VmRSS") or 0
            a = proc_status_kib(p, "RssAnon") or 0
            self.peak[p] = max(self.peak[p], v)
            self.peak_anon[p] = max(self.peak_anon[p], a)
            tot += v
            anon += a
        self.peak_sum = max(self.peak_sum, tot)
        self.peak_anon_sum = max(self.peak_anon_sum, anon)
        self.samples += 1

    def run(self):
        while not self.stop_ev.is_set():
            self.sample()
            self.stop_ev.wait(self.period)

    def stop(self):
        self.stop_ev.set()
        self.join()
        self.sample()


# ---------------------------------------------------------------- system calls

class SyscallCounter:
    """Counts the system calls of some processes (and all their threads) while a block of
    work runs, per process and per call.  method "strace" attaches `strace -c -f -p PID`
    (works as the service user on processes of the same user; it slows the traced process,
    which can only make it read more per call, so counts are if anything low); "perf" runs
    `perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_* -p PID` (needs the tracing
    file system and perf_event_paranoid <= -1 or CAP_PERFMON; barely slows anything).
    Use as a context manager; .counts is {label: {call: n}} afterwards."""

    def __init__(self, procs, method="strace"):
        self.procs = dict(procs)        # label -> pid
        self.method = method
        self.counts = {}
        self.runs = []
        self.tmp = tempfile.mkdtemp(prefix="rtsb-sc-", dir="/tmp")

    @staticmethod
    def available(method):
        if method == "strace":
            return shutil.which("strace") is not None
        if method == "perf":
            if shutil.which("perf") is None:
                return False
            try:
                out = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter",
                                      "true"], capture_output=True, text=True, timeout=20)
            except (OSError, subprocess.SubprocessError):
                return False
            return out.returncode == 0 and "raw_syscalls" in out.stderr and \
                "not supported" not in out.stderr
        return False

    def __enter__(self):
        for label, pid in self.procs.items():
            out = os.path.join(self.tmp, "%s.txt" % label)
            if self.method == "strace":
                cmd = ["strace", "-c", "-f", "-U", "calls,errors,name", "-o", out,
                       "-p", str(pid)]
            else:
                cmd = ["perf", "stat", "-x,", "-o", out, "-e", "raw_syscalls:sys_enter",
                       "-e", "syscalls:sys_enter_*", "-p", str(pid)]
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            self.runs.append((label, p, out))
        # strace says "Process N attached" once it is; perf has nothing to say, so give it
        # a moment to open its counters.
        for label, p, _ in self.runs:
            if self.method == "strace":
                line = p.stderr.readline()
                if "attached" not in line:
                    raise RuntimeError("strace could not attach to %s: %s" % (label, line))
        if self.method == "perf":
            time.sleep(1.0)
        return self

    def __exit__(self, *exc):
        for label, p, out in self.runs:
            p.send_signal(signal.SIGINT)
        for label, p, out in self.runs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stderr.close()
            self.counts[label] = self._parse(out)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def _parse(self, path):
        counts = {}
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            return counts
        for ln in lines:
            if self.method == "strace":
                parts = ln.split()
                if len(parts) >= 2 and parts[0].isdigit() and parts[-1] != "total":
                    counts[parts[-1]] = int(parts[0])
            else:
                parts = ln.split(",")
                if len(parts) >= 3 and parts[0].strip().isdigit():
                    ev = parts[2]
                    if ev.startswith("syscalls:sys_enter_") and int(parts[0]):
                        counts[ev[len("syscalls:sys_enter_"):]] = int(parts[0])
                    elif ev == "raw_syscalls:sys_enter":
                        counts["(all)"] = int(parts[0])
        if self.method == "perf" and "(all)" in counts:
            # Calls without a tracepoint of their own are only in the total.
            rest = counts.pop("(all)") - sum(counts.values())
            if rest > 0:
                counts["(other)"] = rest
        return counts

    def total(self, label=None):
        labels = [label] if label else list(self.counts)
        return sum(sum(self.counts.get(x, {}).values()) for x in labels)

    def report(self, unit, per, top=8):
        """Lines: each process's calls per unit (per = how many units the work was), the
        largest calls by name, and the sum."""
        lines = []
        for label in self.counts:
            c = self.counts[label]
            tot = sum(c.values())
            big = sorted(c.items(), key=lambda kv: -kv[1])[:top]
            lines.append("%-8s %7.1f per %s: %s" % (
                label, tot / per, unit, ", ".join("%s %.1f" % (k, v / per) for k, v in big)))
        lines.append("%-8s %7.1f per %s (%s)" % ("sum", self.total() / per, unit, self.method))
        return lines


def syscall_method(choice):
    """The --syscalls option: auto picks perf when it works, else strace."""
    if choice == "off":
        return None
    if choice == "auto":
        for m in ("perf", "strace"):
            if SyscallCounter.available(m):
                return m
        return None
    if not SyscallCounter.available(choice):
        raise SystemExit("--syscalls %s: not usable here" % choice)
    return choice


# ---------------------------------------------------------------- Docker Engine API

class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=60):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


class DockerAPI:
    """The Docker Engine API over its Unix socket (keep-alive, one connection)."""

    def __init__(self, path=DOCKER_SOCKET, version="v1.41"):
        self.path, self.version = path, version
        self.conn = None

    def call(self, method, path, body=None, ok=(200, 201, 204, 304)):
        data = json.dumps(body).encode() if body is not None else None
        hdrs = {"Content-Type": "application/json"} if data is not None else {}
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = _UnixHTTPConnection(self.path)
            try:
                self.conn.request(method, "/%s%s" % (self.version, path), body=data,
                                  headers=hdrs)
                r = self.conn.getresponse()
                raw = r.read()
                break
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        if r.status not in ok:
            raise RuntimeError("docker %s %s -> %d %s" % (method, path, r.status, raw[:300]))
        return r.status, (json.loads(raw) if raw and raw[:1] in b"{[" else raw)

    def containers(self, prefix):
        flt = json.dumps({"name": [prefix]})
        _, lst = self.call("GET", "/containers/json?all=1&filters=" +
                           __import__("urllib.parse").parse.quote(flt))
        out = []
        for c in lst:
            for n in c.get("Names", []):
                if n.lstrip("/").startswith(prefix):
                    out.append(c["Id"])
                    break
        return out

    def remove_prefix(self, prefix):
        for cid in self.containers(prefix):
            try:
                self.call("DELETE", "/containers/%s?force=1" % cid, ok=(204, 404, 409))
            except (RuntimeError, OSError):
                pass

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class _BufSock:
    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def _more(self):
        d = self.sock.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def until(self, sep):
        while sep not in self.buf:
            self._more()
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exact(self, n):
        while len(self.buf) < n:
            self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def rest(self):
        try:
            while True:
                self._more()
        except EOFError:
            pass
        out, self.buf = self.buf, b""
        return out


def _http_message(bs, is_response, method=None):
    """One raw HTTP/1.1 message (head + body, framing kept) from a _BufSock."""
    head = bs.until(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    first = lines[0].split(" ")
    if is_response:
        status = int(first[1])
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return head, first, b""
    if "chunked" in hdrs.get("transfer-encoding", "").lower():
        parts = []
        while True:
            line = bs.until(b"\r\n")
            parts.append(line)
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                while True:
                    t = bs.until(b"\r\n")
                    parts.append(t)
                    if t == b"\r\n":
                        break
                break
            parts.append(bs.exact(size + 2))
        return head, first, b"".join(parts)
    if "content-length" in hdrs:
        return head, first, bs.exact(int(hdrs["content-length"]))
    if is_response:
        return head, first, bs.rest()
    return head, first, b""


class DockerProxy:
    """A Unix socket that forwards HTTP/1.1 to the Docker socket and records every call:
    (method, path, status, start ns, end ns) on time.monotonic_ns().  Lets a benchmark see
    which Docker calls the daemon makes and how long Docker took for each."""

    def __init__(self, path, upstream=DOCKER_SOCKET):
        self.path, self.upstream = path, upstream
        self.calls = []
        self.streams = []   # event streams followed through the proxy
        self.lock = threading.Lock()
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        os.chmod(path, 0o600)
        self.srv.listen(16)
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            u.connect(self.upstream)
            cb, ub = _BufSock(c), _BufSock(u)
            while True:
                head, first, body = _http_message(cb, False)
                t0 = time.monotonic_ns()
                u.sendall(head + body)
                if first[1].split("?")[0].endswith("/events"):
                    # The daemon follows the event stream: forwarded as it
                    # comes, for as long as either side keeps it open.
                    with self.lock:
                        self.streams.append(first[1])
                    self._pipe(ub, c)
                    return
                rhead, rfirst, rbody = _http_message(ub, True, first[0])
                t1 = time.monotonic_ns()
                with self.lock:
                    self.calls.append((first[0], first[1], int(rfirst[1]), t0, t1))
                c.sendall(rhead + rbody)
                if b"connection: close" in rhead.lower():
                    return
        except (EOFError, OSError, ValueError, IndexError):
            pass
        finally:
            c.close()
            u.close()

    @staticmethod
    def _pipe(ub, c):
        if ub.buf:
            c.sendall(ub.buf)
        while True:
            d = ub.sock.recv(65536)
            if not d:
                return
            c.sendall(d)

    def between(self, t0, t1):
        with self.lock:
            return [x for x in self.calls if t0 <= x[3] <= t1]

    def close(self):
        self.stopping = True
        self.srv.close()


# ---------------------------------------------------------------- the daemon under test

class Setup:
    """Fake upstream + rtsandboxd (as the current user) with a private container prefix."""

    def __init__(self, image, max_calls=1000, turn_ms=600000, start_ms=30000,
                 default_delay_ms=5, tag="bench", docker_proxy=False, runtime=None,
                 debug=True, configure=None):
        # The sleeper is the tests' image: a fresh machine has it only once they ran.
        if image == SLEEPER_IMAGE:
            why = rtsb.ensure_sleeper()
            if why is not None:
                raise RuntimeError(why)
        self.tmp = tempfile.mkdtemp(prefix="rtsb-bench-", dir="/tmp")
        self.proxy = DockerProxy(os.path.join(self.tmp, "docker.sock")) if docker_proxy \
            else None
        proxy = self.proxy
        self.prefix = "rtsb%s%d" % (tag, os.getpid())
        # The head goes out with the first body bytes, in one TLS record,
        # as production servers send a small answer and hops' upstream
        # its RESP: egress and the direct client each read it once.
        self.fu = FakeUpstream(os.path.join(self.tmp, "certs"),
                               default_delay_ms=default_delay_ms, one_write=True,
                               max_records=2000)
        self.fu.start()
        fu, prefix = self.fu, self.prefix

        def conf(c):
            c["image"] = image
            c["upstream"]["url"] = fu.url
            c["upstream"]["ca_file"] = fu.ca_file
            c["docker"] = {"container_prefix": prefix}
            if proxy is not None:
                c["docker"]["socket"] = proxy.path
            if runtime is not None:
                c["docker"]["runtime"] = runtime
            c["timeouts"] = {"start_ms": start_ms, "turn_ms": turn_ms}
            c["budgets"] = {"max_calls": max_calls}
            if configure is not None:
                configure(c)
        # debug=False: the daemon logs as an operator's would (no -d), so that system
        # calls are counted as they are made in service.
        self.daemon = rtsb.Daemon(config=conf, debug=debug)
        self.daemon.start()
        self.state = self.daemon.config["state_dir"]
        self.docker = DockerAPI()

    def client(self, hooks=()):
        return rtsb.Client(self.daemon.socket, hooks=hooks)

    def socket_path(self, channel):
        return os.path.join(self.state, segment_of(channel), "run", "broker.sock")

    def stats(self):
        with self.client() as c:
            return c.call("daemon.stats")

    def pids(self, role, name=None):
        return [p["pid"] for p in self.stats()["processes"]
                if p["role"] == role and p.get("pid") and
                (name is None or p.get("name") == name)]

    def close(self):
        try:
            self.daemon.stop()
        except Exception:       # noqa: BLE001 - best effort at the end
            pass
        try:
            self.docker.remove_prefix(self.prefix)
        except Exception:       # noqa: BLE001
            pass
        self.docker.close()
        self.daemon.cleanup()
        rtsb.docker_cleanup()
        self.fu.stop()
        if self.proxy is not None:
            self.proxy.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def settle_credential(path):
    """Wait until the credential file at path is a second older than now.  Egress reads
    the file again at each call until it was a second old when read (egress/cred.h,
    CRED_SETTLE_NS); after this, the next call reads it once more and every later call
    finds the token kept, as in service, where the file does not change between calls."""
    wait = os.stat(path).st_ctime + 1.1 - time.time()
    if wait > 0:
        time.sleep(wait)


def segment_of(key):
    """PROTOCOL.md 6: each UTF-16 code unit outside [A-Za-z0-9_-] becomes '_'."""
    out = []
    for ch in key:
        if ch.isascii() and (ch.isalnum() or ch in "_-"):
            out.append(ch)
        else:
            out.append("_" * (2 if ord(ch) > 0xFFFF else 1))
    return "".join(out)


def announce_ready(sock_path, timeout=30.0):
    """As a worker: POST /worker/ready until the broker answers 200."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(sock_path):
            try:
                r = unix_request(sock_path, "POST", "/worker/ready", b"", timeout=5)
                if r.status == 200:
                    return True
            except (OSError, HttpError):
                pass
        time.sleep(0.02)
    raise RuntimeError("broker socket %s never answered /worker/ready" % sock_path)


# ---------------------------------------------------------------- summary table

def table(rows, headers=("figure", "measured", "baseline", "ratio / difference", "target")):
    rows = [tuple(str(x) for x in r) for r in rows]
    w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
         for i, h in enumerate(headers)]
    line = "  ".join("%-*s" % (w[i], headers[i]) for i in range(len(headers)))
    say(line)
    say("  ".join("-" * x for x in w))
    for r in rows:
        say("  ".join("%-*s" % (w[i], r[i]) for i in range(len(headers))))


class FakeEngine(DockerProxy):
    """A Docker Engine API socket whose containers are only records: create, start, inspect,
    list and remove of names under prefix are answered here as Docker answers them, with no
    container behind them; everything else (/version, /info, /images, /events) goes on to
    the real Docker.  The daemon then does for each channel all it does with a container,
    its broker included, and only Docker's own processes (containerd-shim, the container)
    are missing, which are no part of the daemon.  bench/scale.py starts a thousand
    channels this way on a host where a thousand containers would not fit."""

    def __init__(self, path, prefix, upstream=DOCKER_SOCKET):
        self.prefix = prefix
        self.cont = {}          # name -> {"Id", "Image", "Labels", "Runtime", "Running"}
        self.by_id = {}
        self.seq = 0
        super().__init__(path, upstream)

    def _ours(self, ref):
        with self.lock:
            if ref in self.cont:
                return ref
            for name, c in self.cont.items():
                if c["Id"] == ref or (len(ref) >= 12 and c["Id"].startswith(ref)):
                    return name
        return None

    @staticmethod
    def _answer(c, status, obj=None):
        body = b"" if obj is None else json.dumps(obj).encode()
        head = "HTTP/1.1 %d X\r\nContent-Length: %d\r\n" % (status, len(body))
        if obj is not None:
            head += "Content-Type: application/json\r\n"
        c.sendall(head.encode() + b"\r\n" + body)

    def _local(self, c, method, target, body):
        """True when answered here."""
        import urllib.parse
        u = urllib.parse.urlsplit(target)
        parts = u.path.split("/")      # "", "v1.41", "containers", ...
        if len(parts) < 4 or parts[2] != "containers":
            return False
        q = urllib.parse.parse_qs(u.query)
        ref = urllib.parse.unquote(parts[3])
        if method == "POST" and ref == "create":
            name = q.get("name", [""])[0]
            if not name.startswith(self.prefix):
                return False
            spec = json.loads(body or b"{}")
            with self.lock:
                if name in self.cont:
                    self._answer(c, 409, {"message": "Conflict"})
                    return True
                self.seq += 1
                cid = "%064x" % (0xfeed << 200 | self.seq)
                self.cont[name] = {
                    "Id": cid, "Image": spec.get("Image"), "Labels": spec.get("Labels") or {},
                    "Runtime": (spec.get("HostConfig") or {}).get("Runtime") or "runc",
                    "Running": False}
                self.by_id[cid] = name
            self._answer(c, 201, {"Id": cid, "Warnings": []})
            return True
        if method == "GET" and ref == "json":
            flt = json.loads(q.get("filters", ["{}"])[0] or "{}")
            want = flt.get("label", [])
            with self.lock:
                lst = [{"Id": v["Id"], "Names": ["/" + k], "Image": v["Image"],
                        "Labels": v["Labels"],
                        "State": "running" if v["Running"] else "created"}
                       for k, v in self.cont.items()
                       if all(lb.split("=", 1)[0] in v["Labels"] for lb in want)]
            self._answer(c, 200, lst)
            return True
        name = self._ours(ref)
        if name is None:
            if ref.startswith(self.prefix):
                self._answer(c, 404, {"message": "No such container: " + ref})
                return True
            return False
        with self.lock:
            v = self.cont.get(name)
            if method == "POST" and parts[4:5] == ["start"]:
                was, v["Running"] = v["Running"], True
                status, obj = (304 if was else 204), None
            elif method == "GET" and parts[4:5] == ["json"]:
                status, obj = 200, {
                    "Id": v["Id"], "Name": "/" + name,
                    "Config": {"Image": v["Image"], "Labels": v["Labels"]},
                    "State": {"Running": v["Running"], "Paused": False,
                              "Status": "running" if v["Running"] else "created"},
                    "HostConfig": {"Runtime": v["Runtime"]}}
            elif method == "DELETE" and len(parts) == 4:
                del self.cont[name]
                self.by_id.pop(v["Id"], None)
                status, obj = 204, None
            else:
                status, obj = 404, {"message": "not in this stand-in"}
        self._answer(c, status, obj)
        return True

    def _serve(self, c):
        u = None
        try:
            cb = _BufSock(c)
            while True:
                head, first, body = _http_message(cb, False)
                t0 = time.monotonic_ns()
                if self._local(c, first[0], first[1], body):
                    with self.lock:
                        self.calls.append((first[0], first[1], 0, t0, time.monotonic_ns()))
                    continue
                if u is None:
                    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    u.connect(self.upstream)
                    ub = _BufSock(u)
                u.sendall(head + body)
                if first[1].split("?")[0].endswith("/events"):
                    with self.lock:
                        self.streams.append(first[1])
                    self._pipe(ub, c)
                    return
                rhead, rfirst, rbody = _http_message(ub, True, first[0])
                with self.lock:
                    self.calls.append((first[0], first[1], int(rfirst[1]), t0,
                                       time.monotonic_ns()))
                c.sendall(rhead + rbody)
                if b"connection: close" in rhead.lower():
                    return
        except (EOFError, OSError, ValueError, IndexError):
            pass
        finally:
            c.close()
            if u is not None:
                u.close()
