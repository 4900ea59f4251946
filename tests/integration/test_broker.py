"""The broker's HTTP surface (PROTOCOL.md 3, 4 and 5) against the real
rtsandboxd, run as an unprivileged user with the real Docker daemon.

The containers run a test image whose entry point does nothing (the sleeper
of tests/fixtures/sleeper), so the test itself plays the hostile worker:
raw HTTP/1.1 on <state>/<segment>/run/broker.sock, including the
POST /worker/ready that channel.start waits for.  The model service and the
MCP servers are the in-process fake upstream of tests/fixtures, which
records what reached it.  Host tool calls are answered by a control client
that declared the tool.call hook.

Every test class has its own daemon, fake upstream and container prefix
(rtsbk<pid>x<n>); its containers are removed when the class ends."""

import base64
import contextlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import rtsb  # noqa: E402
from rtsb import Client, Daemon, wait_until  # noqa: E402
import fake_upstream  # noqa: E402
from fake_upstream import (FakeUpstream, encode_token, header,  # noqa: E402
                           header_values)

SLEEPER = rtsb.SLEEPER
PREFIX_BASE = "rtsbk%dx" % os.getpid()
DOCKER_SOCKET = "/var/run/docker.sock"
MIB = 1048576
REAL_TOKEN = "sk-test-real-token"
MCP_TOKEN = "sk-test-mcp-token"
MODEL = "claude-test"
ENCODINGS = fake_upstream.ENCODINGS
# What PROTOCOL.md 3.2 lets reach the model service.
UPSTREAM_HEADERS = {"host", "content-type", "accept", "accept-encoding",
                    "anthropic-version", "anthropic-beta", "user-agent",
                    "x-app", "authorization", "content-length"}
UPSTREAM_MCP_HEADERS = {"host", "content-type", "accept", "accept-encoding",
                        "mcp-session-id", "mcp-protocol-version",
                        "authorization", "content-length"}

# Made by setUpModule: the test CA's directory.  The docker CLI runs with
# rtsb's private configuration directory (HOME may be another user's).
_certdir = None


def docker(*args, timeout=60):
    return rtsb.docker(*args, timeout=timeout)


def docker_skip_reason():
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(DOCKER_SOCKET)
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            answer = s.recv(4096)
        finally:
            s.close()
    except OSError as e:
        return "Docker socket %s not reachable by uid %d: %s" % (
            DOCKER_SOCKET, os.getuid(), e)
    if b" 200 " not in answer.split(b"\r\n", 1)[0]:
        return "Docker socket answers /_ping with %r" % answer[:60]
    if shutil.which("docker", path="/usr/local/bin:/usr/bin:/bin") is None:
        return "the docker command line client is not installed"
    try:
        return rtsb.ensure_sleeper()
    except (OSError, subprocess.TimeoutExpired) as e:
        return "cannot prepare %s: %s" % (SLEEPER, e)


DOCKER_SKIP = "not checked yet"


def setUpModule():
    """Docker reachable and the sleeper image there (built when missing)."""
    global DOCKER_SKIP, _certdir
    _certdir = tempfile.mkdtemp(prefix="rtsb-certs-", dir="/tmp")
    if os.getuid() == 0:
        DOCKER_SKIP = "run as the service user, not root"
    else:
        DOCKER_SKIP = docker_skip_reason()


def prefixed_containers(prefix):
    r = docker("ps", "-a", "--format", "{{.Names}}")
    if r.returncode != 0:
        raise AssertionError("docker ps: " + r.stderr)
    return sorted(n for n in r.stdout.split() if n.startswith(prefix))


def remove_containers(prefix):
    names = prefixed_containers(prefix)
    if names:
        docker("rm", "-f", *names)


def tearDownModule():
    if DOCKER_SKIP is None:
        remove_containers(PREFIX_BASE)
    rtsb.docker_cleanup()
    if _certdir is not None:
        shutil.rmtree(_certdir, ignore_errors=True)


def write_secret(path, text):
    """Replace a credential file atomically (as a refresher would)."""
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def all_encodings(token):
    return [encode_token(token, e) for e in ENCODINGS] + [
        encode_token(token, "base64", pad=False),
        encode_token(token, "base64url", pad=True)]


# ---------------------------------------------------------------- raw HTTP

class Resp:
    """One answer as the worker read it off the socket."""

    def __init__(self, raw, eof, arrivals):
        self.raw = raw
        self.eof = eof
        self.arrivals = arrivals      # [(monotonic time, total bytes)]
        self.status = None
        self.reason = None
        self.headers = []
        self.body = b""
        self.head_complete = False
        self.complete = False
        self.chunked = False
        self.head_len = 0
        head, sep, rest = raw.partition(b"\r\n\r\n")
        if not sep:
            return
        self.head_complete = True
        self.head_len = len(head) + 4
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        self.version = parts[0]
        self.status = int(parts[1])
        self.reason = parts[2] if len(parts) > 2 else ""
        for line in lines[1:]:
            n, _, v = line.partition(":")
            self.headers.append((n.strip().lower(), v.strip()))
        te = (self.header("transfer-encoding") or "").lower()
        cl = self.header("content-length")
        if self.status in (204, 304) or self.status < 200:
            self.complete = True
        elif "chunked" in te:
            self.chunked = True
            self.body, self.complete = self._dechunk(rest)
        elif cl is not None:
            self.body = rest[:int(cl)]
            self.complete = len(rest) >= int(cl)
        else:
            self.body = rest
            self.complete = eof

    @staticmethod
    def _dechunk(data):
        out, pos = [], 0
        while True:
            eol = data.find(b"\r\n", pos)
            if eol == -1:
                return b"".join(out), False
            try:
                size = int(data[pos:eol].split(b";")[0], 16)
            except ValueError:
                return b"".join(out), False
            start = eol + 2
            if size == 0:
                return b"".join(out), data[start:start + 2] == b"\r\n"
            chunk = data[start:start + size]
            out.append(chunk)
            if len(chunk) < size or data[start + size:start + size + 2] != \
                    b"\r\n":
                return b"".join(out), False
            pos = start + size + 2

    def header(self, name):
        for n, v in self.headers:
            if n == name.lower():
                return v
        return None

    def header_names(self):
        return {n for n, _ in self.headers}

    @property
    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.body)

    def time_at(self, offset):
        """When the byte at offset of raw arrived."""
        for t, total in self.arrivals:
            if total > offset:
                return t
        return None

    def __repr__(self):
        return "<Resp %s %r %d bytes%s>" % (
            self.status, self.body[:200], len(self.raw),
            "" if self.complete else " (incomplete)")


def connect(path, timeout=30):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(path)
    except BaseException:
        s.close()
        raise
    return s


def build_request(method, target, body=None, headers=()):
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
    lines = ["%s %s HTTP/1.1" % (method, target), "Host: broker"]
    names = {n.lower() for n, _ in headers}
    for n, v in headers:
        lines.append("%s: %s" % (n, v))
    if body is not None and "content-length" not in names and \
            "transfer-encoding" not in names:
        lines.append("Content-Length: %d" % len(body))
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + (body or b"")


def read_response(s, timeout=30, limit=None):
    """Read until the broker closes (or timeout); every answer the broker
    gives must say connection: close (PROTOCOL.md 3.5)."""
    chunks, arrivals, total, eof = [], [], 0, False
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
            try:
                data = s.recv(1 << 20)
            except socket.timeout:
                break
            except ConnectionResetError:
                eof = True
                break
            if not data:
                eof = True
                break
            total += len(data)
            if limit is None or sum(map(len, chunks)) < limit:
                chunks.append(data)
            arrivals.append((time.monotonic(), total))
    finally:
        s.close()
    r = Resp(b"".join(chunks), eof, arrivals)
    r.total = total
    if r.head_complete and (r.header("connection") or "").lower() != "close":
        raise AssertionError("answer without connection: close: %r" %
                             r.raw[:r.head_len])
    return r


class Worker:
    """The hostile worker of one channel, over raw HTTP/1.1."""

    def __init__(self, path):
        self.path = path

    def send(self, method, target, body=None, headers=(), raw=None,
             timeout=60):
        s = connect(self.path, timeout)
        try:
            s.sendall(raw if raw is not None else
                      build_request(method, target, body, headers))
        except BaseException:
            s.close()
            raise
        return s

    def req(self, method, target, body=None, headers=(), raw=None,
            timeout=60, limit=None):
        return read_response(self.send(method, target, body, headers, raw),
                             timeout, limit)

    # What today's workers declare (rtsandbox-protocol(7), contract 0.9);
    # ready(None) posts nothing, as a 0.7.3 worker does.
    CAPABILITIES = {"capabilities": {"privateTo": True,
                                     "readerRecords": True}}

    def ready(self, body=CAPABILITIES):
        return self.req("POST", "/worker/ready", body, timeout=10)

    def next(self, timeout=50):
        return self.req("GET", "/worker/next", timeout=timeout)

    def result(self, turn_id, result):
        return self.req("POST", "/worker/result",
                        {"turnId": turn_id, "result": result})

    def model(self, body=None, target="/anthropic/v1/messages", headers=(),
              timeout=60, limit=None):
        if body is None:
            body = {"model": "anything", "max_tokens": 100,
                    "messages": [{"role": "user", "content": "hello"}]}
        return self.req("POST", target, body, headers, timeout=timeout,
                        limit=limit)

    MCP_HEADERS = [("content-type", "application/json"),
                   ("accept", "application/json, text/event-stream"),
                   ("authorization", "Bearer sandbox-dummy-token")]

    def mcp(self, body, server="files", headers=()):
        return self.req("POST", "/mcp/" + server, body,
                        self.MCP_HEADERS + list(headers))

    def tool(self, name, body):
        return self.req("POST", "/tools/" + name, body)


def rpc(method, mid=1, params=None, **extra):
    m = {"jsonrpc": "2.0", "method": method}
    if mid is not None:
        m["id"] = mid
    if params is not None:
        m["params"] = params
    m.update(extra)
    return m


INIT_PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "hostile", "version": "1"}}


# ---------------------------------------------------------------- turns

class TurnRun(threading.Thread):
    """turn.run on a control client of its own, in a thread: answers the
    tool.call hook with hook(params) and keeps the progress phases."""

    def __init__(self, socket_path, params, hook=None, compact=None):
        super().__init__(daemon=True)
        self.client = Client(socket_path, hooks=["tool.call"] + (
            ["compaction.compact"] if compact is not None else []))
        self.compact = compact
        self.compact_calls = []
        self.client.sock.settimeout(None)
        self.params = params
        self.hook = hook
        self.hook_calls = []
        self.progress = []
        self.result = None
        self.error = None
        self.answered_at = None
        self.sent_at = None

    def read_message(self):
        """Client.read_message without its quadratic buffer (a turn.run
        answer carries up to 50 MiB of files)."""
        c = self.client
        i = c.buf.find(b"\n")
        if i >= 0:
            line, c.buf = c.buf[:i], c.buf[i + 1:]
            return json.loads(line)
        parts = [c.buf]
        while True:
            chunk = c.sock.recv(1 << 22)
            if not chunk:
                raise ConnectionError("connection closed")
            i = chunk.find(b"\n")
            if i >= 0:
                parts.append(chunk[:i])
                c.buf = chunk[i + 1:]
                return json.loads(b"".join(parts))
            parts.append(chunk)

    def run(self):
        try:
            self.sent_at = time.monotonic()
            rid = self.client.request("turn.run", self.params)
            while True:
                m = self.read_message()
                if m.get("method") == "tool.call":
                    self.hook_calls.append(m["params"])
                    ans = self.hook(m["params"]) if self.hook else \
                        {"ok": True, "text": "tool ok"}
                    self.client.send_raw(json.dumps(
                        {"jsonrpc": "2.0", "id": m["id"], "result": ans}
                    ).encode() + b"\n")
                elif m.get("method") == "compaction.compact":
                    # compact(params): a result, or an Exception to
                    # answer as the hook's error
                    self.compact_calls.append(m["params"])
                    ans = self.compact(m["params"])
                    reply = {"jsonrpc": "2.0", "id": m["id"]}
                    if isinstance(ans, Exception):
                        reply["error"] = {"code": -32000,
                                          "message": str(ans)}
                    else:
                        reply["result"] = ans
                    self.client.send_raw(json.dumps(reply).encode() +
                                         b"\n")
                elif m.get("method") == "turn.progress":
                    self.progress.append(m["params"]["phase"])
                elif m.get("id") == rid:
                    self.answered_at = time.monotonic()
                    self.result = m
                    return
        except Exception as e:  # noqa: BLE001 (reported by wait())
            self.error = e

    def wait(self, timeout=40):
        self.join(timeout)
        if self.is_alive():
            raise AssertionError("turn.run not answered in %ss" % timeout)
        if self.error is not None:
            raise self.error
        if "error" in self.result:
            raise AssertionError("turn.run error: %r" % self.result)
        return self.result["result"]

    def disconnect(self):
        try:
            self.client.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.client.close()

    def close(self):
        self.disconnect()
        self.join(5)


def compact_request(first_kept="entry-7", tokens=120000, **extra):
    """What a 0.7.12 worker posts to /compaction/compact."""
    r = {"reason": "threshold", "tokensBefore": tokens,
         "firstKeptEntryId": first_kept, "isSplitTurn": False,
         "messagesToSummarize": [{"role": "user", "content": "old"},
                                 {"role": "assistant", "content": "older"}],
         "turnPrefixMessages": [],
         "keptMessages": [{"role": "user", "content": "new"}],
         "previousSummary": "before", "readFiles": ["a.md"],
         "modifiedFiles": []}
    r.update(extra)
    return r


# ---------------------------------------------------------------- base

class BrokerCase(unittest.TestCase):
    """One daemon and one fake upstream for the class."""

    TURN_MS = 30000
    MAX_CALLS = None
    CHANNEL = "brk-main"
    counter = 0

    @classmethod
    def setUpClass(cls):
        if DOCKER_SKIP is not None:
            raise unittest.SkipTest(DOCKER_SKIP)
        BrokerCase.counter += 1
        cls.prefix = "%s%d" % (PREFIX_BASE, BrokerCase.counter)
        cls.fu = FakeUpstream(_certdir, default_delay_ms=5)
        cls.fu.start()
        fu = cls.fu

        def conf(c):
            root = os.path.dirname(c["state_dir"])
            mcpcred = os.path.join(root, "mcp-credential")
            with open(mcpcred, "w") as f:
                f.write(MCP_TOKEN + "\n")
            os.chmod(mcpcred, 0o600)
            c["image"] = SLEEPER
            c["docker"] = {"container_prefix": cls.prefix}
            c["upstream"]["url"] = fu.url
            c["upstream"]["ca_file"] = fu.ca_file
            c["mcp"] = {"servers": [
                {"name": "files", "url": fu.mcp_url("files"),
                 "tools": ["echo", "add"]},
                {"name": "other", "url": fu.mcp_url("other"),
                 "tools": ["echo"]}],
                "credential_file": mcpcred, "allow_http": False}
            c["profiles"] = {"default": {"model": MODEL, "mcp": ["files"]}}
            c["tools"] = ["roll_dice", "lookup"]
            c["timeouts"] = {"start_ms": 20000, "turn_ms": cls.TURN_MS}
            if cls.MAX_CALLS is not None:
                c["budgets"] = {"max_calls": cls.MAX_CALLS}
            cls.configure(c)
        try:
            cls.d = Daemon(config=conf)
            cls.d.start()
            cls.ctl = Client(cls.d.socket)
            cls.ctl.sock.settimeout(60)
        except Exception:
            cls._teardown()
            raise
        cls.turn_counter = 0

    @classmethod
    def configure(cls, c):
        """A subclass's own changes to the configuration c."""

    @classmethod
    def _teardown(cls):
        for what in ("ctl",):
            c = getattr(cls, what, None)
            if c is not None:
                c.close()
        d = getattr(cls, "d", None)
        if d is not None:
            # RTSB_LOG_TAIL=N: the last N bytes of the daemon's log
            if os.environ.get("RTSB_LOG_TAIL"):
                sys.stderr.write(d.read_log()[
                    -int(os.environ["RTSB_LOG_TAIL"]):])
            try:
                d.stop()
            finally:
                remove_containers(cls.prefix + "-")
                d.cleanup()
        cls.fu.stop()

    @classmethod
    def tearDownClass(cls):
        cls._teardown()

    def setUp(self):
        self.fu.reset()

    @classmethod
    def configure(cls, c):
        """A subclass's own changes to the configuration."""

    # -- helpers

    @classmethod
    def sock_path(cls, key):
        seg = "".join(ch if (ch.isascii() and (ch.isalnum() or ch in "_-"))
                      else "_" for ch in key)
        return os.path.join(cls.d.config["state_dir"], seg, "run",
                            "broker.sock")

    def worker(self, key=None):
        return Worker(self.sock_path(key or self.CHANNEL))

    def container(self, key):
        return "%s-%s" % (self.prefix, key)

    def container_exists(self, key):
        return self.container(key) in prefixed_containers(self.prefix + "-")

    def start_channel(self, key=None, client=None):
        """channel.start, posting /worker/ready for the worker until the
        start is answered; returns the time the start was asked."""
        key = key or self.CHANNEL
        c = client or self.ctl
        w = self.worker(key)
        stop = threading.Event()

        self.first_ready = None

        def poster():
            while not stop.is_set():
                if os.path.exists(w.path):
                    try:
                        if w.ready().status == 200 and \
                                self.first_ready is None:
                            self.first_ready = time.monotonic()
                    except OSError:
                        pass
                stop.wait(0.25)
        t0 = time.monotonic()
        rid = c.request("channel.start", {"channel": key,
                                          "profile": "default"})
        th = threading.Thread(target=poster, daemon=True)
        th.start()
        try:
            self.assertEqual(c.wait(rid), {})
        finally:
            stop.set()
            th.join(10)
        return t0

    def turn_params(self, key=None, text="hello there", **extra):
        type(self).turn_counter += 1
        p = {"channel": key or self.CHANNEL, "profile": "default",
             "turnId": "turn-%d" % self.turn_counter,
             "author": {"id": "u-1", "name": "Ann"}, "text": text,
             "images": []}
        p.update(extra)
        return p

    def begin_turn(self, key=None, hook=None, compact=None, **extra):
        tr = TurnRun(self.d.socket, self.turn_params(key, **extra), hook,
                     compact)
        self.addCleanup(tr.close)
        tr.start()
        return tr

    def next_turn(self, w, tr):
        r = w.next()
        self.assertEqual(r.status, 200, r)
        turn = r.json()
        self.assertEqual(turn["turnId"], tr.params["turnId"])
        return turn

    @contextlib.contextmanager
    def in_turn(self, key=None, hook=None, compact=None, **extra):
        """A bound turn: yields (worker, turn run, turn); the worker posts
        a result at the end."""
        w = self.worker(key)
        tr = self.begin_turn(key, hook, compact, **extra)
        turn = self.next_turn(w, tr)
        ok = False
        try:
            yield w, tr, turn
            ok = True
        finally:
            try:
                r = w.result(turn["turnId"], {"ok": True, "text": "done",
                                              "files": []})
                res = tr.wait()
            except Exception:
                if ok:
                    raise
            else:
                if ok:
                    self.assertEqual(r.status, 200, r)
                    self.assertEqual(res, {"ok": True, "text": "done",
                                           "files": []})

    def role_pid(self, role, name=None):
        """The pid of the daemon's one process of this role (and name)."""
        pids = [p["pid"] for p in self.ctl.call("daemon.stats")["processes"]
                if p["role"] == role and "pid" in p and
                (name is None or p.get("name") == name)]
        self.assertEqual(len(pids), 1, pids)
        return pids[0]

    def broker_pid(self, key=None):
        return self.role_pid("broker", os.path.basename(os.path.dirname(
            os.path.dirname(self.sock_path(key or self.CHANNEL)))))

    def wait_poll_free(self, w):
        """After a held poll's client left, until a new poll may wait."""
        for _ in range(50):
            s = w.send("GET", "/worker/next")
            ready, _, _ = select.select([s], [], [], 0.3)
            if not ready:
                s.close()
                time.sleep(0.2)     # the broker sees that poll leave
                return
            read_response(s, 5)
            time.sleep(0.05)
        self.fail("a poll still waits")

    def assertAnswer(self, r, status, text=None):
        self.assertTrue(r.head_complete, r)
        self.assertEqual(r.status, status, r)
        if text is not None:
            self.assertEqual(r.text, text, r)
            self.assertTrue(r.complete, r)

    def assertNothingUpstream(self, wait=0.3):
        time.sleep(wait)
        self.assertEqual(self.fu.requests(), [])


# ---------------------------------------------------------------- 3, 3.4

class Routes(BrokerCase):
    """The order of precedence of PROTOCOL.md 3."""

    CHANNEL = "brk-routes"

    def setUp(self):
        super().setUp()
        self.start_channel()

    def test_fragment_404(self):
        w = self.worker()
        for m, t in (("POST", "/worker/ready#x"), ("GET", "/worker/next#"),
                     ("GET", "/mcp-tools#top")):
            self.assertAnswer(w.req(m, t), 404, "Not found")
        with self.in_turn() as (w, tr, turn):
            self.assertAnswer(w.model(target="/anthropic/v1/messages#f"),
                              404, "Not found")
            self.assertAnswer(
                w.model(target="/anthropic/v1/messages?beta=true#f"),
                404, "Not found")
            self.assertNothingUpstream()

    def test_query_other_than_beta_true_404(self):
        w = self.worker()
        # rule 1 comes before the worker routes and discovery
        for m, t in (("POST", "/worker/ready?x=1"), ("GET", "/mcp-tools?a"),
                     ("POST", "/worker/ready?")):
            self.assertAnswer(w.req(m, t), 404, "Not found")
        with self.in_turn() as (w, tr, turn):
            for q in ("?beta=false", "?beta=true&x=1", "?", "?BETA=TRUE",
                      "?beta=true=", "?x=1&beta=true"):
                self.assertAnswer(
                    w.model(target="/anthropic/v1/messages" + q), 404,
                    "Not found")
            self.assertNothingUpstream()

    def test_beta_true_reaches_upstream(self):
        with self.in_turn() as (w, tr, turn):
            r = w.model(target="/anthropic/v1/messages?beta=true")
            self.assertAnswer(r, 200)
            self.assertEqual(r.json()["model"], MODEL)
            r = w.model({"messages": [{"role": "user", "content": "x"}]},
                        target="/anthropic/v1/messages/count_tokens"
                        "?beta=true")
            self.assertAnswer(r, 200)
            recs = self.fu.requests()
            self.assertEqual([(x["path"], x["query"], x["target"])
                              for x in recs],
                             [("/v1/messages", "beta=true",
                               "/v1/messages?beta=true"),
                              ("/v1/messages/count_tokens", "beta=true",
                               "/v1/messages/count_tokens?beta=true")])

    def test_worker_path_with_query_is_no_worker_route(self):
        w = self.worker()
        # with a query it falls through: here no turn is bound and the
        # startup window is gone with the first bind, or is not an MCP path
        with self.in_turn() as (w, tr, turn):
            pass
        time.sleep(0.2)     # the unbind reaches the broker
        for m, t in (("POST", "/worker/ready?beta=true"),
                     ("GET", "/worker/next?beta=true"),
                     ("POST", "/worker/result?beta=true")):
            self.assertAnswer(w.req(m, t), 410, "Turn ended")
        with self.in_turn() as (w, tr, turn):
            for m, t in (("POST", "/worker/ready?beta=true"),
                         ("GET", "/worker/next?beta=true"),
                         ("POST", "/worker/result?beta=true")):
                self.assertAnswer(w.req(m, t, b"{}"), 404, "Not found")
            self.assertNothingUpstream(0)

    def test_mcp_tools(self):
        w = self.worker()
        r = w.req("GET", "/mcp-tools")
        self.assertAnswer(r, 200)
        self.assertEqual(r.json(), {"servers": [{"name": "files",
                                                 "tools": ["echo", "add"]}]})
        self.assertTrue((r.header("content-type") or "").startswith(
            "application/json"), r.headers)
        for secret in (b"127.0.0.1", b"https", b"/mcp/", REAL_TOKEN.encode(),
                       MCP_TOKEN.encode(), b"other", b"credential"):
            self.assertNotIn(secret, r.raw)
        # the same during a turn; a POST is no discovery
        with self.in_turn() as (w, tr, turn):
            self.assertEqual(w.req("GET", "/mcp-tools").json(), r.json())
            self.assertAnswer(w.req("POST", "/mcp-tools", b"{}"), 404,
                              "Not found")
        self.assertNothingUpstream(0)

    def test_no_turn_no_window_410(self):
        with self.in_turn() as (w, tr, turn):
            pass
        time.sleep(0.2)     # the unbind reaches the broker
        # the first bind removed the startup window; the unbind left no
        # scope at all: even MCP metadata is refused
        w = self.worker()
        for target, body in (("/mcp/files", rpc("tools/list")),
                             ("/anthropic/v1/messages", {}),
                             ("/tools/roll_dice", {"input": {}}),
                             ("/nope", {})):
            self.assertAnswer(w.req("POST", target, body), 410, "Turn ended")
        self.assertNothingUpstream()

    def test_not_found_404(self):
        with self.in_turn() as (w, tr, turn):
            cases = [
                ("GET", "/anthropic/v1/messages"),
                ("PUT", "/anthropic/v1/messages"),
                ("GET", "/tools/roll_dice"),
                ("GET", "/mcp/files"),
                ("POST", "/anthropic/v1/complete"),
                ("POST", "/anthropic/v1/messages/"),
                ("POST", "/v1/messages"),
                ("POST", "/nope"),
                ("POST", "/tools/unlisted"),
                ("POST", "/tools/Roll_dice"),
                ("POST", "/tools/"),
                ("POST", "/mcp/other"),       # configured, not the profile's
                ("POST", "/mcp/unknown"),
                ("POST", "/mcp/files/x"),
                ("POST", "/tools/roll_dice?beta=true"),
                ("POST", "/mcp/files?beta=true"),
                ("POST", "/worker/other"),
            ]
            for m, t in cases:
                with self.subTest(method=m, target=t):
                    self.assertAnswer(w.req(m, t, {"input": {}}), 404,
                                      "Not found")
            for m, t in (("GET", "/worker/ready"), ("POST", "/worker/next"),
                         ("GET", "/worker/result"), ("GET", "/worker/")):
                with self.subTest(method=m, target=t):
                    self.assertAnswer(w.req(m, t), 404, "Not found")
            self.assertEqual(tr.hook_calls, [])
        self.assertNothingUpstream()

    def test_default_budget_128(self):
        """budgets.max_calls left at its default: 128 calls in a turn, and
        the 129th is refused (PROTOCOL.md 3.4)."""
        body = {"messages": [{"role": "user", "content": "x"}]}
        with self.in_turn() as (w, tr, turn):
            n0 = len(self.fu.requests())
            for i in range(128):
                r = w.model(body, target="/anthropic/v1/messages/count_tokens")
                self.assertEqual(r.status, 200, "call %d: %r" % (i + 1, r))
            self.assertAnswer(w.model(body), 429, "Broker budget exhausted")
            self.assertEqual(len(self.fu.requests()) - n0, 128)

    def test_four_in_flight(self):
        self.fu.script({"kind": "stall", "seconds": 5, "repeat": 4,
                        "match": "/v1/messages"})
        with self.in_turn() as (w, tr, turn):
            body = {"max_tokens": 10,
                    "messages": [{"role": "user", "content": "stall"}]}
            held = [w.send("POST", "/anthropic/v1/messages", body)
                    for _ in range(4)]
            try:
                self.fu.wait_for(4, timeout=10)
                r = w.model(body)
                self.assertAnswer(r, 429, "Broker budget exhausted")
                # an MCP call and a host tool call count as well
                self.assertAnswer(w.mcp(rpc("ping")), 429,
                                  "Broker budget exhausted")
                self.assertAnswer(w.tool("roll_dice", {"input": {}}), 429,
                                  "Broker budget exhausted")
                self.assertEqual(len(self.fu.requests()), 4)
            finally:
                for s in held:
                    s.close()
            # the worker left: the slots are free again
            r = None
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                r = w.model(body)
                if r.status != 429:
                    break
                time.sleep(0.1)
            self.assertAnswer(r, 200)


class Budget(BrokerCase):
    """budgets.max_calls per bound turn (PROTOCOL.md 3.4, rule 7)."""

    MAX_CALLS = 2
    CHANNEL = "brk-budget"

    def setUp(self):
        super().setUp()
        self.start_channel()

    def count(self, w):
        return w.model({"messages": [{"role": "user", "content": "x"}]},
                       target="/anthropic/v1/messages/count_tokens")

    def test_third_call_429(self):
        with self.in_turn() as (w, tr, turn):
            # what is not a call uses no budget
            self.assertAnswer(w.req("GET", "/anthropic/v1/messages"), 404)
            self.assertAnswer(w.req("POST", "/tools/unlisted", {}), 404)
            self.assertAnswer(w.req("GET", "/mcp-tools"), 200)
            # (POST /worker/ready now would be a restarted worker, which
            # ends the turn: TurnSemantics)
            self.assertAnswer(self.count(w), 200)
            self.assertAnswer(w.tool("roll_dice", {"input": {}}), 200)
            for call in (lambda: self.count(w),
                         lambda: w.model(),
                         lambda: w.mcp(rpc("ping")),
                         lambda: w.tool("roll_dice", {"input": {}})):
                self.assertAnswer(call(), 429, "Broker budget exhausted")
            self.assertEqual(len(self.fu.requests()), 1)
            self.assertEqual(len(tr.hook_calls), 1)
        # the next turn has a budget of its own
        with self.in_turn() as (w, tr, turn):
            self.assertAnswer(self.count(w), 200)
            self.assertAnswer(self.count(w), 200)
            self.assertAnswer(self.count(w), 429, "Broker budget exhausted")


# ---------------------------------------------------------------- 3.1

class WorkerRoutes(BrokerCase):
    CHANNEL = "brk-worker"
    # The largest results are read, parsed and checked in a turn, under a
    # sanitizer with another suite beside it: more than 30 s.
    TURN_MS = 120000

    def setUp(self):
        super().setUp()
        self.start_channel()

    def test_ready(self):
        r = self.worker().ready()
        self.assertAnswer(r, 200, "Ready")
        self.assertTrue(r.header("content-type").startswith("text/plain"))

    def test_second_waiting_poll_429(self):
        w = self.worker()
        self.wait_poll_free(w)
        first = w.send("GET", "/worker/next")
        try:
            time.sleep(0.3)
            self.assertAnswer(w.next(), 429, "Already waiting")
            self.assertAnswer(w.next(), 429, "Already waiting")
            # the first still waits, unanswered
            self.assertEqual(select.select([first], [], [], 0.2)[0], [])
        finally:
            first.close()
        self.wait_poll_free(w)

    def test_turn_answers_waiting_poll_once(self):
        w = self.worker()
        self.wait_poll_free(w)
        poll = w.send("GET", "/worker/next")
        time.sleep(0.2)
        images = [{"data": base64.b64encode(b"\x89PNG" + bytes(300)).decode(),
                   "mimeType": "image/png"},
                  {"data": "R0lGODlh", "mimeType": "image/gif"}]
        tr = self.begin_turn(text="what is up", memory="mem", images=images)
        r = read_response(poll, 20)
        self.assertAnswer(r, 200)
        self.assertTrue(r.header("content-type").startswith(
            "application/json"))
        turn = r.json()
        self.assertEqual(turn, {"turnId": tr.params["turnId"],
                                "author": {"id": "u-1", "name": "Ann"},
                                "text": "what is up", "memory": "mem",
                                "images": images, "thinking": "low"})
        self.assertLess(r.arrivals[0][0] - tr.sent_at, 10)
        # delivered at most once: the next poll waits and never gets it
        again = w.send("GET", "/worker/next")
        try:
            self.assertEqual(select.select([again], [], [], 1.5)[0], [],
                             "the turn was delivered twice")
            r = w.result(turn["turnId"], {"ok": True, "text": "fine",
                                          "files": []})
            self.assertAnswer(r, 200, "Accepted")
            self.assertEqual(tr.wait(), {"ok": True, "text": "fine",
                                         "files": []})
            self.assertEqual(select.select([again], [], [], 0.5)[0], [])
        finally:
            again.close()
        self.assertIn("delivered", tr.progress)

    def test_result_without_turn_409(self):
        w = self.worker()
        r = w.result("turn-none", {"ok": True, "text": "x", "files": []})
        self.assertAnswer(r, 409, "No matching turn")
        # decided before the body: an invalid one changes nothing
        self.assertAnswer(w.req("POST", "/worker/result", b"{nope"), 409,
                          "No matching turn")

    def test_result_before_delivery_409(self):
        w = self.worker()
        self.wait_poll_free(w)
        tr = self.begin_turn()
        self.assertTrue(wait_until(lambda: "ready" in tr.progress, 20))
        time.sleep(0.3)
        r = w.result(tr.params["turnId"], {"ok": True, "text": "early",
                                           "files": []})
        self.assertAnswer(r, 409, "No matching turn")
        turn = self.next_turn(w, tr)
        self.assertAnswer(w.result(turn["turnId"], {"ok": True, "text": "ok",
                                                    "files": []}),
                          200, "Accepted")
        self.assertEqual(tr.wait()["text"], "ok")

    def test_result_rules(self):
        w = self.worker()
        tr = self.begin_turn()
        turn = self.next_turn(w, tr)
        tid = turn["turnId"]
        ok = {"ok": True, "text": "x", "files": []}
        # 409: not an object, wrong turnId, result not an object, ok not a
        # boolean
        for body in ([tid], {"turnId": "other", "result": ok},
                     {"result": ok}, {"turnId": tid, "result": "ok"},
                     {"turnId": tid, "result": {"ok": "yes", "text": "x",
                                                "files": []}},
                     {"turnId": tid, "result": {"text": "x", "files": []}}):
            with self.subTest(body=json.dumps(body)[:80]):
                self.assertAnswer(w.req("POST", "/worker/result", body), 409,
                                  "No matching turn")
        # 400 Invalid result: not JSON
        for raw in (b"{nope", b"", b'{"turnId":"%s",' % tid.encode(),
                    b"\xff\xfe"):
            with self.subTest(raw=raw):
                self.assertAnswer(w.req("POST", "/worker/result", raw), 400,
                                  "Invalid result")
        # 400: the bounds of 3.1
        a_file = {"name": "f.txt", "data": "eA=="}
        for result in (
                {"ok": True, "text": "a" * 100001, "files": []},
                # 99 999 + a character outside the BMP = 100 001 chars
                {"ok": True, "text": "a" * 99999 + "\U0001F600",
                 "files": []},
                {"ok": True, "text": 5, "files": []},
                {"ok": True, "text": "x", "files": {}},
                {"ok": True, "text": "x", "files": [dict(a_file,
                                                         name="f%d" % i)
                                                    for i in range(11)]},
                {"ok": True, "text": "x",
                 "files": [{"name": "../x", "data": "eA=="}]},
                {"ok": True, "text": "x",
                 "files": [{"name": "x", "data": "eA="}]},
                {"ok": True, "text": "x",
                 "files": [{"name": "x", "data": ""}]},
                {"ok": False, "error": 7},
                {"ok": False, "error": "e" * 10001}):
            with self.subTest(result=json.dumps(result)[:80]):
                self.assertAnswer(w.result(tid, result), 400,
                                  "Invalid result")
        # the limits themselves pass: 100 000 chars, 10 files, byte-exact
        text = "a" * 99998 + "\U0001F600"
        files = [{"name": "f%d.bin" % i,
                  "data": base64.b64encode(os.urandom(1 + 97 * i)).decode()}
                 for i in range(9)]
        files.append({"name": "b\u00e9 \u65e5.txt",
                      "data": base64.b64encode(bytes(range(256))).decode()})
        r = w.result(tid, {"ok": True, "text": text, "files": files})
        self.assertAnswer(r, 200, "Accepted")
        res = tr.wait()
        self.assertEqual(res["ok"], True)
        self.assertEqual(res["text"], text)
        self.assertEqual(res["files"], files)
        for got, sent in zip(res["files"], files):
            self.assertEqual(base64.b64decode(got["data"]),
                             base64.b64decode(sent["data"]))
        # the same post again: the turn is settled
        self.assertAnswer(w.result(tid, {"ok": True, "text": text,
                                         "files": files}),
                          409, "No matching turn")

    def test_result_body_limits(self):
        """72 MiB of body at most; files of 1 byte to 10 MiB, 50 MiB in
        all; a chunked body (what the in-container forwarder sends)."""
        w = self.worker()
        tr = self.begin_turn()
        tid = self.next_turn(w, tr)["turnId"]
        # declared over the limit: refused before reading
        r = w.req("POST", "/worker/result", raw=(
            b"POST /worker/result HTTP/1.1\r\nHost: broker\r\n"
            b"Content-Length: %d\r\n\r\n{" % (72 * MIB + 1)), timeout=20)
        self.assertAnswer(r, 400, "Invalid result")
        ten = base64.b64encode(b"\xa5" * (10 * MIB)).decode()
        for files in ([{"name": "big", "data": base64.b64encode(
                b"x" * (10 * MIB + 1)).decode()}],
                [{"name": "f%d" % i, "data": ten} for i in range(5)] +
                [{"name": "one", "data": "eA=="}]):
            body = json.dumps({"turnId": tid, "result": {
                "ok": True, "text": "t", "files": files}}).encode()
            with self.subTest(size=len(body)):
                self.assertLessEqual(len(body), 72 * MIB)
                r = w.req("POST", "/worker/result", body, timeout=60)
                self.assertAnswer(r, 400, "Invalid result")
        # exactly 72 MiB (white space is JSON), chunked, 50 MiB of files
        files = [{"name": "f%d" % i, "data": ten} for i in range(5)]
        obj = json.dumps({"turnId": tid, "result": {
            "ok": True, "text": "big", "files": files}}).encode()
        body = b" " * (72 * MIB - len(obj)) + obj
        s = w.send("POST", "/worker/result", raw=(
            b"POST /worker/result HTTP/1.1\r\nHost: broker\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"))
        for i in range(0, len(body), 4 * MIB):
            part = body[i:i + 4 * MIB]
            s.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
        s.sendall(b"0\r\n\r\n")
        self.assertAnswer(read_response(s, 60), 200, "Accepted")
        res = tr.wait(60)
        self.assertEqual(res["text"], "big")
        self.assertEqual(len(res["files"]), 5)
        for f in res["files"]:
            self.assertEqual(f["data"], ten)

    def test_already_receiving_429(self):
        w = self.worker()
        tr = self.begin_turn()
        turn = self.next_turn(w, tr)
        slow = w.send("POST", "/worker/result", raw=(
            b"POST /worker/result HTTP/1.1\r\nHost: broker\r\n"
            b"Content-Length: 1000\r\n\r\n{\"turnId\""))
        try:
            time.sleep(0.3)
            r = w.result(turn["turnId"], {"ok": True, "text": "x",
                                          "files": []})
            self.assertAnswer(r, 429, "Already receiving")
        finally:
            slow.close()
        # the aborted read frees the slot; the turn is still pending
        r = None
        for _ in range(20):
            r = w.result(turn["turnId"], {"ok": True, "text": "second",
                                          "files": []})
            if r.status != 429:
                break
            time.sleep(0.1)
        self.assertAnswer(r, 200, "Accepted")
        self.assertEqual(tr.wait()["text"], "second")

    def test_worker_failed(self):
        w = self.worker()
        tr = self.begin_turn()
        turn = self.next_turn(w, tr)
        r = w.result(turn["turnId"], {"ok": False, "error": "boom \u00e9"})
        self.assertAnswer(r, 200, "Accepted")
        res = tr.wait()
        self.assertEqual(res["ok"], False)
        self.assertEqual(res["reason"], "worker_failed")
        self.assertEqual(res["workerError"], "boom \u00e9")
        self.assertAnswer(w.result(turn["turnId"], {"ok": False,
                                                    "error": "again"}),
                          409, "No matching turn")


# ------------------------------------------------- contract 0.9: privacy

class Capabilities(BrokerCase):
    """rtsandbox-protocol(7), contract 0.9: principals, memoryVisibility,
    privateTo, and what a worker declares at /worker/ready.  A private
    turn, a private tool answer or a private history never reaches a
    worker that did not declare privateTo and readerRecords: the turn
    fails as stale_image, naming the image; a 0.7.3 worker still runs
    every public turn, byte for byte."""
    CHANNEL = "brk-caps"

    def setUp(self):
        super().setUp()
        self.start_channel()

    def stale(self, tr, need):
        res = tr.wait()
        self.assertEqual((res["ok"], res["reason"]), (False, "stale_image"),
                         res)
        self.assertEqual(res["message"], "The worker image %s is stale: it "
                         "does not declare the capabilities privateTo and "
                         "readerRecords, which %s needs; rebuild it" %
                         (SLEEPER, need))
        self.assertEqual(self.fu.requests(), [])

    def test_legacy_worker_runs_public_turns_unchanged(self):
        w = self.worker()
        self.assertAnswer(w.ready(None), 200, "Ready")
        tr = self.begin_turn(memory="")
        turn = self.next_turn(w, tr)
        # the 0.7.3 turn, no key more
        self.assertEqual(turn, {"turnId": tr.params["turnId"],
                                "author": {"id": "u-1", "name": "Ann"},
                                "text": "hello there", "memory": "",
                                "images": [], "thinking": "low"})
        self.assertAnswer(w.result(turn["turnId"], {
            "ok": True, "text": "x", "files": []}), 200, "Accepted")
        self.assertTrue(tr.wait()["ok"])
        # shared memory is no one's secret
        self.assertAnswer(w.ready(None), 200, "Ready")
        tr = self.begin_turn(memory="party-wide facts",
                             memoryVisibility="shared",
                             author={"id": "u-1", "name": "Ann",
                                     "principalId": "p" * 256})
        turn = self.next_turn(w, tr)
        self.assertEqual(turn["memoryVisibility"], "shared")
        self.assertEqual(turn["author"]["principalId"], "p" * 256)
        r = w.req("POST", "/tools/lookup", {"input": {}})
        self.assertAnswer(r, 200)
        self.assertAnswer(w.result(turn["turnId"], {
            "ok": True, "text": "x", "files": []}), 200, "Accepted")
        self.assertTrue(tr.wait()["ok"])

    def test_private_turn_never_reaches_a_stale_worker(self):
        w = self.worker()
        for body in (None, {}, {"capabilities": {"privateTo": True}},
                     {"capabilities": {"readerRecords": True}}):
            with self.subTest(ready=body):
                self.assertAnswer(w.ready(body), 200, "Ready")
                poll = w.send("GET", "/worker/next")
                try:
                    tr = self.begin_turn(memory="PRIVATE PROMPT")
                    self.stale(tr, "private memory")
                    # the poll waits on: nothing was handed over
                    self.assertEqual(select.select([poll], [], [], 0.5)[0],
                                     [])
                finally:
                    poll.close()
                self.wait_poll_free(w)

    def test_private_history_needs_the_capabilities(self):
        w = self.worker()
        self.assertAnswer(w.ready({"privateHistory": True}), 200, "Ready")
        tr = self.begin_turn(memory="")
        self.stale(tr, "a private history")
        self.wait_poll_free(w)
        self.assertAnswer(w.ready(dict(Worker.CAPABILITIES,
                                       privateHistory=True)), 200, "Ready")
        tr = self.begin_turn(memory="PRIVATE PROMPT")
        turn = self.next_turn(w, tr)
        self.assertNotIn("memoryVisibility", turn)
        self.assertAnswer(w.result(turn["turnId"], {
            "ok": True, "text": "x", "files": []}), 200, "Accepted")
        self.assertTrue(tr.wait()["ok"])

    def test_private_tool_answer(self):
        def hook(params):
            return {"ok": True, "text": "SECRET", "privateTo": "ann"}
        w = self.worker()
        for caps in ({}, {"privateTo": True}, {"readerRecords": True}):
            with self.subTest(capabilities=caps):
                self.assertAnswer(w.ready({"capabilities": caps}), 200)
                tr = self.begin_turn(hook=hook, memory="")
                self.next_turn(w, tr)
                r = w.req("POST", "/tools/lookup", {"input": {}})
                self.assertAnswer(r, 409, "Worker image is stale")
                self.assertNotIn(b"SECRET", r.body)
                self.stale(tr, "a private tool answer")
                self.wait_poll_free(w)
        self.assertAnswer(w.ready(), 200)
        tr = self.begin_turn(hook=hook, memory="")
        turn = self.next_turn(w, tr)
        r = w.req("POST", "/tools/lookup", {"input": {}})
        self.assertAnswer(r, 200)
        self.assertEqual(r.json(), {"ok": True, "text": "SECRET",
                                    "privateTo": "ann"})
        self.assertAnswer(w.result(turn["turnId"], {
            "ok": True, "text": "x", "files": []}), 200, "Accepted")
        self.assertTrue(tr.wait()["ok"])

    def test_ready_body_bounds(self):
        w = self.worker()
        for body in ({"capabilities": {"privateTo": "true"}},
                     {"capabilities": []}, {"privateHistory": 1}, [],
                     "ready"):
            with self.subTest(body=body):
                self.assertAnswer(w.ready(body), 400, "Invalid ready")
        self.assertAnswer(w.req("POST", "/worker/ready", raw=(
            b"POST /worker/ready HTTP/1.1\r\nHost: broker\r\n"
            b"Content-Length: 5\r\n\r\n{oops")), 400, "Invalid ready")
        # 16 384 bytes, and one past; keys of a newer worker are its own
        caps = json.dumps({"capabilities": {"privateTo": True,
                                            "readerRecords": True,
                                            "later": 1}, "more": {}})
        for size, status in ((16384, 200), (16385, 400)):
            body = caps.encode() + b" " * (size - len(caps))
            with self.subTest(size=size):
                r = w.req("POST", "/worker/ready", raw=(
                    b"POST /worker/ready HTTP/1.1\r\nHost: broker\r\n"
                    b"Content-Length: %d\r\n\r\n" % size) + body)
                self.assertEqual(r.status, status, r)
        # the last good ready stands: a private turn is delivered
        tr = self.begin_turn(memory="PRIVATE PROMPT")
        turn = self.next_turn(w, tr)
        self.assertAnswer(w.result(turn["turnId"], {
            "ok": True, "text": "x", "files": []}), 200, "Accepted")
        self.assertTrue(tr.wait()["ok"])

    def test_turn_run_bounds(self):
        for extra, what in (
                ({"author": {"id": "u", "name": "A", "principalId": ""}},
                 "author.principalId is empty"),
                ({"author": {"id": "u", "name": "A",
                             "principalId": "p" * 257}},
                 "author.principalId is over 256 chars (257)"),
                ({"author": {"id": "u", "name": "A", "principalId": 7}},
                 "memoryVisibility and author.principalId strings"),
                ({"memoryVisibility": "public"},
                 "memoryVisibility is not shared or private"),
                ({"memoryVisibility": None},
                 "memoryVisibility and author.principalId strings")):
            with self.subTest(extra=extra):
                tr = self.begin_turn(**extra)
                res = tr.wait()
                self.assertEqual((res["ok"], res["reason"]),
                                 (False, "invalid"), res)
                self.assertIn(what, res["message"])

    def test_no_host_compactor(self):
        """A 0.7.10 worker asks GET /worker/config at start; 404 is its
        "no host compactor", and it compacts on its own.  Asked anyway,
        the broker answers the fallback."""
        w = self.worker()
        self.assertAnswer(w.req("GET", "/worker/config"), 404)
        self.assertAnswer(w.ready(), 200)
        with self.in_turn(memory="", compact=lambda p: None) as (w, tr, _):
            r = w.req("POST", "/compaction/compact", compact_request())
            self.assertAnswer(r, 200)
            self.assertEqual(r.json(), {"ok": False, "fallback":
                                        "the host has no compactor"})
            self.assertEqual(tr.compact_calls, [])

    def test_tool_answer_private_to_bounds(self):
        answers = iter([{"ok": True, "text": "t", "privateTo": ""},
                        {"ok": True, "text": "t", "privateTo": "p" * 257},
                        {"ok": True, "text": "t", "privateTo": 1}])
        w = self.worker()
        self.assertAnswer(w.ready(), 200)
        tr = self.begin_turn(hook=lambda p: next(answers), memory="")
        turn = self.next_turn(w, tr)
        for _ in range(3):
            r = w.req("POST", "/tools/lookup", {"input": {}})
            self.assertAnswer(r, 502, "Broker call failed")
        self.assertAnswer(w.result(turn["turnId"], {
            "ok": True, "text": "x", "files": []}), 200, "Accepted")
        self.assertTrue(tr.wait()["ok"])


class Compaction(BrokerCase):
    """rtsandbox-protocol(7), contracts 0.7.10 and 0.7.12: the worker
    learns of the host compactor at GET /worker/config; its compact request
    goes through the broker to the client's compaction.compact hook and
    back, each checked against the contract's bounds; the hook gets at most
    half the turn's time left (and compaction.timeout_ms); every compaction
    and fallback is logged for the channel."""
    CHANNEL = "brk-compact"
    ENGINE = "test/compactor-1"
    TIMEOUT_MS = 2000
    MAX_BYTES = 4096

    @classmethod
    def configure(cls, c):
        c["compaction"] = {"engine": cls.ENGINE,
                           "timeout_ms": cls.TIMEOUT_MS,
                           "max_request_bytes": cls.MAX_BYTES}

    def setUp(self):
        super().setUp()
        self.start_channel()
        self.assertAnswer(self.worker().ready(), 200)

    def compaction(self, request, **extra):
        c = {"summary": "They talked.", "firstKeptEntryId":
             request["firstKeptEntryId"], "tokensBefore":
             request["tokensBefore"], "estimatedTokensAfter": 900}
        c.update(extra)
        return c

    def compact(self, w, body=None, **kw):
        r = w.req("POST", "/compaction/compact",
                  compact_request() if body is None else body, **kw)
        self.assertAnswer(r, 200)
        return r.json()

    def fallback(self, w, why, body=None):
        self.assertEqual(self.compact(w, body), {"ok": False,
                                                 "fallback": why})

    def test_config(self):
        r = self.worker().req("GET", "/worker/config")
        self.assertAnswer(r, 200)
        self.assertEqual(r.json(), {"compaction": {"engine": self.ENGINE}})
        self.assertAnswer(self.worker().req("POST", "/worker/config", {}),
                          404)

    def test_outside_a_turn(self):
        w = self.worker()
        for path in ("/compaction/compact", "/compaction/report"):
            with self.subTest(path=path):
                self.assertAnswer(w.req("POST", path, compact_request()),
                                  410, "Turn ended")
                self.assertAnswer(w.req("GET", path), 404)
        with self.in_turn(memory="") as (w, tr, _):
            self.assertAnswer(w.req("POST", "/compaction/compact?beta=true",
                                    compact_request()), 404)
            self.assertAnswer(w.req("POST", "/compaction/other", {}), 404)

    def test_compactor_answers(self):
        def hook(params):
            return self.compaction(params["request"],
                                   details={"engine": "spoofed", "n": 2})
        with self.in_turn(memory="", compact=hook) as (w, tr, turn):
            ans = self.compact(w, compact_request(extra_key={"x": 1}))
            self.assertEqual(ans, {"ok": True, "compaction": {
                "summary": "They talked.", "firstKeptEntryId": "entry-7",
                "tokensBefore": 120000, "estimatedTokensAfter": 900,
                "details": {"n": 2, "engine": self.ENGINE}}})
            self.assertEqual(len(tr.compact_calls), 1)
            p = tr.compact_calls[0]
            # the bound identity, never the worker's; what the contract
            # does not name stays behind
            want = compact_request()
            self.assertEqual(p["request"], want)
            self.assertEqual(p["context"], {
                "channel": self.CHANNEL, "profile": "default",
                "speaker": {"id": "u-1", "name": "Ann"},
                "turnId": turn["turnId"], "engine": self.ENGINE})
            self.assertEqual(p["timeoutMs"], self.TIMEOUT_MS)
        self.assertIn("channel %s: turn %s: host compactor answered "
                      "(engine %s, reason threshold, tokensBefore 120000, "
                      "tokensAfter 900" % (self.CHANNEL, turn["turnId"],
                                           self.ENGINE), self.d.read_log())

    def test_compactor_declines_fails_or_answers_wrong(self):
        answers = iter([None, RuntimeError("no model"),
                        {"summary": "s", "firstKeptEntryId": "entry-8",
                         "tokensBefore": 1},
                        {"summary": "", "firstKeptEntryId": "entry-7",
                         "tokensBefore": 1},
                        {"summary": "s", "firstKeptEntryId": "entry-7",
                         "tokensBefore": 2 ** 53},
                        {"summary": "s", "firstKeptEntryId": "entry-7",
                         "tokensBefore": 1, "details": "d"}])
        whys = ["the compactor declined", "the compactor failed"] + \
            ["the compactor's result is invalid"] * 4
        for i in range(2):
            with self.in_turn(memory="", compact=lambda p: next(answers)) \
                    as (w, tr, turn):
                for why in whys[i * 3:i * 3 + 3]:
                    self.fallback(w, why)
        log = self.d.read_log()
        self.assertIn("compaction falls back to Pi's summary: the compactor "
                      "declined (reason threshold, tokensBefore 120000)", log)
        self.assertNotIn("no model", log)

    def test_slow_compactor(self):
        """Past timeout_ms the worker has its fallback; a second request
        while one runs falls back at once."""
        def hook(params):
            time.sleep(self.TIMEOUT_MS / 1000 + 1)
            return self.compaction(params["request"])
        with self.in_turn(memory="", compact=hook) as (w, tr, _):
            s = w.send("POST", "/compaction/compact", compact_request())
            time.sleep(0.5)
            t0 = time.monotonic()
            self.fallback(w, "a compaction is already running")
            self.assertLess(time.monotonic() - t0, 1)
            r = read_response(s, 10)
            self.assertAnswer(r, 200)
            self.assertEqual(r.json(), {"ok": False, "fallback":
                                        "the compactor took over 2000 ms"})
            time.sleep(1)   # the late answer is dropped
        self.assertIn("the compactor took over 2000 ms", self.d.read_log())

    def test_second_while_the_first_body_comes(self):
        """One request's head, then another whole: the second goes to the
        compactor, the first's body then finds it running, and the broker
        never sends the supervisor two at once (which it would refuse)."""
        def hook(params):
            time.sleep(1)
            return self.compaction(params["request"])
        with self.in_turn(memory="", compact=hook) as (w, tr, _):
            body = json.dumps(compact_request()).encode()
            raw = build_request("POST", "/compaction/compact", body)
            first = w.send("POST", "/compaction/compact",
                           raw=raw[:len(raw) - 10])
            time.sleep(0.3)
            second = w.send("POST", "/compaction/compact", compact_request())
            time.sleep(0.3)
            first.sendall(raw[len(raw) - 10:])
            r = read_response(first, 10)
            self.assertEqual(r.json(), {"ok": False, "fallback":
                                        "a compaction is already running"})
            r = read_response(second, 10)
            self.assertTrue(r.json()["ok"], r)
            self.assertEqual(len(tr.compact_calls), 1)
        self.assertNotIn("must answer itself", self.d.read_log())

    def test_request_bounds(self):
        seen = []
        hook = (lambda p: seen.append(p) or self.compaction(p["request"]))
        with self.in_turn(memory="", compact=hook) as (w, tr, _):
            # firstKeptEntryId of 256 chars, and one past
            self.assertTrue(self.compact(w, compact_request("e" * 256))
                            ["ok"])
            self.fallback(w, "the request is invalid",
                          compact_request("e" * 257))
            self.fallback(w, "the request is invalid",
                          compact_request(tokens=2 ** 53))
        with self.in_turn(memory="", compact=hook) as (w, tr, _):
            self.fallback(w, "the request is invalid",
                          compact_request(reason="auto"))
            self.fallback(w, "the request is invalid",
                          compact_request(keptMessages=[{"content": "x"}]))
            self.fallback(w, "the request is invalid", b"{oops")
        self.assertEqual(len(seen), 1)
        # max_request_bytes, and one past (by its length, and chunked)
        with self.in_turn(memory="", compact=hook) as (w, tr, _):
            base = json.dumps(compact_request(previousSummary=""))
            pad = self.MAX_BYTES - len(base)
            body = json.dumps(compact_request(previousSummary="p" * pad))
            self.assertEqual(len(body), self.MAX_BYTES)
            self.assertTrue(self.compact(w, body.encode())["ok"])
            body = json.dumps(compact_request(previousSummary="p" *
                                              (pad + 1)))
            self.fallback(w, "the request is over 4096 bytes", body.encode())
            chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body.encode())
            r = w.req("POST", "/compaction/compact", chunked, headers=[
                ("Transfer-Encoding", "chunked")])
            self.assertAnswer(r, 200)
            self.assertEqual(r.json(), {"ok": False, "fallback":
                                        "the request is over 4096 bytes"})
        self.assertEqual(len(seen), 2)

    def test_three_per_turn(self):
        with self.in_turn(memory="", compact=lambda p: self.compaction(
                p["request"])) as (w, tr, _):
            for _ in range(3):
                self.assertTrue(self.compact(w)["ok"])
            self.fallback(w, "the turn already asked for 3 compactions")
            self.assertEqual(len(tr.compact_calls), 3)
        # the next turn has its own three
        with self.in_turn(memory="", compact=lambda p: self.compaction(
                p["request"])) as (w, tr, _):
            self.assertTrue(self.compact(w)["ok"])

    def test_client_without_the_hook(self):
        with self.in_turn(memory="") as (w, tr, _):
            self.fallback(w, "the client has no compaction.compact hook")

    def test_reports(self):
        end = {"type": "end", "reason": "threshold", "aborted": False,
               "willRetry": False, "engine": "extension",
               "tokensBefore": 120000, "tokensAfter": 900,
               "nextCompactionAt": 150000, "contextAfter": 1200}
        with self.in_turn(memory="") as (w, tr, turn):
            self.assertAnswer(w.req("POST", "/compaction/report", end), 200,
                              "Accepted")
            self.assertAnswer(w.req("POST", "/compaction/report", {
                "type": "bypass", "reason": "r" * 1000,
                "tokensBefore": 3}), 200, "Accepted")
            self.assertAnswer(w.req("POST", "/compaction/report", {
                "type": "end", "reason": "overflow", "aborted": True,
                "willRetry": True, "error": "E" * 10000}), 200, "Accepted")
            for bad in ({"type": "bypass", "reason": "r" * 1001,
                         "tokensBefore": 3},
                        {"type": "end", "reason": "overflow",
                         "aborted": True, "willRetry": True,
                         "error": "E" * 10001},
                        {"type": "end", "reason": "auto", "aborted": True,
                         "willRetry": True},
                        dict(end, tokensAfter=-1), dict(end, engine="x"),
                        {"type": "start"}, []):
                with self.subTest(report=str(bad)[:60]):
                    self.assertAnswer(w.req("POST", "/compaction/report",
                                            bad), 400, "Invalid report")
            big = json.dumps(end).encode()
            for size, status in ((65536, 200), (65537, 400)):
                body = big + b" " * (size - len(big))
                with self.subTest(size=size):
                    r = w.req("POST", "/compaction/report", body)
                    self.assertEqual(r.status, status, r)
            # 16 in all, counting the refused, then 429
            for _ in range(16 - 12):
                self.assertAnswer(w.req("POST", "/compaction/report", end),
                                  200, "Accepted")
            self.assertAnswer(w.req("POST", "/compaction/report", end), 429,
                              "Report budget exhausted")
        log = self.d.read_log()
        self.assertIn("channel %s: turn %s: conversation compacted (engine "
                      "extension, trigger threshold, tokensBefore 120000, "
                      "tokensAfter 900, nextCompactionAt 150000)" %
                      (self.CHANNEL, turn["turnId"]), log)
        self.assertIn("compaction failed (trigger overflow, aborted true, "
                      "willRetry true): EEEE", log)
        self.assertIn("compaction skips the host compactor for Pi's summary "
                      "(tokensBefore 3): rrrr", log)


class CompactionLate(BrokerCase):
    """The host compactor gets at most half the turn's time left; under
    1 000 ms of it the broker answers the fallback at once."""
    CHANNEL = "brk-compact-late"
    TURN_MS = 6000

    @classmethod
    def configure(cls, c):
        c["compaction"] = {"engine": "late"}

    def test_half_the_time_left(self):
        self.start_channel()
        w = self.worker()
        self.assertAnswer(w.ready(), 200)
        hook = (lambda p: {"summary": "s", "firstKeptEntryId":
                           p["request"]["firstKeptEntryId"],
                           "tokensBefore": 1})
        tr = self.begin_turn(memory="", compact=hook)
        turn = self.next_turn(w, tr)
        r = w.req("POST", "/compaction/compact", compact_request())
        self.assertTrue(r.json()["ok"], r)
        self.assertLessEqual(tr.compact_calls[0]["timeoutMs"], 3000)
        self.assertGreaterEqual(tr.compact_calls[0]["timeoutMs"], 2000)
        time.sleep(4.3)     # under 2 s left
        t0 = time.monotonic()
        r = w.req("POST", "/compaction/compact", compact_request())
        self.assertEqual(r.json(), {"ok": False, "fallback": "the turn has "
                                    "too little time left for the host "
                                    "compactor"})
        self.assertLess(time.monotonic() - t0, 0.5)
        self.assertEqual(len(tr.compact_calls), 1)
        self.assertAnswer(w.result(turn["turnId"], {
            "ok": True, "text": "x", "files": []}), 200, "Accepted")
        self.assertTrue(tr.wait()["ok"])


# ---------------------------------------------------------------- 3.2, 5

class ModelCalls(BrokerCase):
    CHANNEL = "brk-model"

    def setUp(self):
        super().setUp()
        self.start_channel()
        self.cred = self.d.config["upstream"]["credential_file"]

    def restore_token(self):
        write_secret(self.cred, REAL_TOKEN + "\n")

    def test_calls_told_in_order(self):
        """The broker tells the supervisor of its calls a batch at a time,
        each batch before what it says next: the client hears of every
        call, the ones before the tool call first, and all before the
        result, whether they came a few to a batch or alone."""
        with self.in_turn() as (w, tr, turn):
            for _ in range(3):
                self.assertAnswer(w.model(), 200)
            self.assertAnswer(w.model(
                {"messages": [{"role": "user", "content": "x"}]},
                target="/anthropic/v1/messages/count_tokens"), 200)
            self.assertAnswer(w.tool("roll_dice", {"input": {}}), 200)
            self.assertAnswer(w.model(), 200)
            time.sleep(0.1)      # past the batch's 10 ms: told alone
            self.assertAnswer(w.model(), 200)
        ph = [p for p in tr.progress if p in ("model_call", "tool_call",
                                              "result")]
        self.assertEqual(ph, ["model_call"] * 4 + ["tool_call"] +
                         ["model_call"] * 2 + ["result"], tr.progress)
        self.assertEqual(len(self.fu.requests()), 6)

    def test_headers_to_upstream(self):
        hdrs = [("authorization", "Bearer sandbox-dummy-token"),
                ("cookie", "session=stolen"), ("x-evil", "1"),
                ("x-api-key", "worker-key"),
                ("anthropic-version", "2023-06-01"),
                ("anthropic-beta", "tools-2024-04-04,other"),
                ("user-agent", "hostile-worker/1.0"), ("x-app", "cli"),
                ("content-type", "application/json; charset=utf-8"),
                ("accept", "text/event-stream"),
                ("accept-encoding", "gzip, br"), ("proxy-authorization", "x"),
                ("x-forwarded-for", "10.0.0.1")]
        with self.in_turn() as (w, tr, turn):
            r = w.model(headers=hdrs)
            self.assertAnswer(r, 200)
        rec = self.fu.last()
        names = {n.lower() for n, _ in rec["headers"]}
        self.assertLessEqual(names, UPSTREAM_HEADERS, rec["headers"])
        auth = [v for n, v in rec["headers"] if n.lower() == "authorization"]
        self.assertEqual(auth, ["Bearer " + REAL_TOKEN])
        self.assertEqual(rec["token"], REAL_TOKEN)
        self.assertEqual(header(rec, "anthropic-version"), "2023-06-01")
        self.assertEqual(header(rec, "anthropic-beta"),
                         "tools-2024-04-04,other")
        self.assertEqual(header(rec, "user-agent"), "hostile-worker/1.0")
        self.assertEqual(header(rec, "x-app"), "cli")
        self.assertEqual(header(rec, "accept-encoding"), "identity")
        # the worker's content-type and accept take the defaults' places
        self.assertEqual(header_values(rec, "content-type"),
                         ["application/json; charset=utf-8"])
        self.assertEqual(header_values(rec, "accept"), ["text/event-stream"])
        raw = rec["raw_headers"]
        for bad in ("sandbox-dummy-token", "stolen", "x-evil", "worker-key",
                    "10.0.0.1", "gzip"):
            self.assertNotIn(bad, raw)

    def test_header_value_over_4096_dropped(self):
        """At most 4 096 chars (UTF-16 code units), not bytes."""
        def up_header(rec, name):
            v = header(rec, name)
            return v.encode("latin-1").decode() if v is not None else None
        with self.in_turn() as (w, tr, turn):
            r = w.model(headers=[("user-agent", "u" * 4097),
                                 ("x-app", "a" * 4096),
                                 ("anthropic-beta", "b" * 4097)])
            self.assertAnswer(r, 200)
            rec = self.fu.last()
            self.assertIsNone(header(rec, "user-agent"))
            self.assertIsNone(header(rec, "anthropic-beta"))
            self.assertEqual(header(rec, "x-app"), "a" * 4096)
            r = w.model(headers=[("user-agent", "\u00e9" * 4096),
                                 ("x-app", "\U0001F600" * 2048)])
            self.assertAnswer(r, 200)
            rec = self.fu.last()
            self.assertEqual(up_header(rec, "user-agent"), "\u00e9" * 4096)
            self.assertEqual(up_header(rec, "x-app"), "\U0001F600" * 2048)
            r = w.model(headers=[("user-agent", "\u00e9" * 4097),
                                 ("x-app", "\U0001F600" * 2049)])
            self.assertAnswer(r, 200)
            rec = self.fu.last()
            self.assertIsNone(header(rec, "user-agent"))
            self.assertIsNone(header(rec, "x-app"))

    def test_default_headers(self):
        with self.in_turn() as (w, tr, turn):
            self.assertAnswer(w.req("POST", "/anthropic/v1/messages", {
                "messages": [{"role": "user", "content": "x"}]}), 200)
        rec = self.fu.last()
        self.assertEqual(sorted(n.lower() for n, _ in rec["headers"]),
                         ["accept", "accept-encoding", "authorization",
                          "content-length", "content-type", "host"])
        self.assertEqual(header(rec, "content-type"), "application/json")
        self.assertEqual(header(rec, "accept"),
                         "application/json, text/event-stream")
        self.assertEqual(header(rec, "accept-encoding"), "identity")

    def test_body_rebuilt(self):
        body = {"model": "claude-worker-pick", "max_tokens": 100,
                "messages": [{"role": "user", "content": "hi",
                              "extra": 1}],
                "evil": True, "metadata": {"user_id": "x"},
                "service_tier": "priority", "container": "c",
                "mcp_servers": [{"url": "https://evil"}],
                "temperature": 0.5, "top_k": 3,
                "stop_sequences": ["END"], "stream": False}
        with self.in_turn() as (w, tr, turn):
            r = w.model(body)
            self.assertAnswer(r, 200)
            self.assertEqual(r.json()["model"], MODEL)
        up = self.fu.last()["json"]
        self.assertEqual(up["model"], MODEL)
        self.assertEqual(up["messages"], [{"role": "user", "content": "hi"}])
        self.assertEqual(up["max_tokens"], 100)
        self.assertEqual(up["temperature"], 0.5)
        self.assertEqual(up["top_k"], 3)
        self.assertEqual(up["stop_sequences"], ["END"])
        self.assertNotEqual(up.get("stream"), True)
        for k in ("evil", "metadata", "service_tier", "container",
                  "mcp_servers"):
            self.assertNotIn(k, up)
        self.assertLessEqual(set(up), {
            "model", "messages", "max_tokens", "system", "tools",
            "tool_choice", "thinking", "output_config", "stream",
            "temperature", "top_p", "top_k", "stop_sequences"})

    def test_rebuild_refused_400(self):
        with self.in_turn() as (w, tr, turn):
            r = w.model({"max_tokens": 10, "messages": [
                {"role": "user", "content": "a"},
                {"role": "developer", "content": "b"}]})
            self.assertAnswer(r, 400)
            self.assertEqual(r.json(), {"type": "error", "error": {
                "type": "invalid_request_error",
                "message": 'messages.1: Unexpected role "developer": the '
                           'input message role must be "user" or '
                           '"assistant"'}})
            for body in ([1], "text", {"messages": "x"},
                         {"messages": [{"role": "user", "content": [
                             {"type": "document", "source": {}}]}]},
                         {"messages": [{"role": "user", "content": [
                             {"type": "image", "source": {
                                 "type": "url",
                                 "url": "https://x/y.png"}}]}]}):
                r = w.model(body)
                self.assertAnswer(r, 400)
                e = r.json()
                self.assertEqual(e["type"], "error")
                self.assertEqual(e["error"]["type"], "invalid_request_error")
            r = w.req("POST", "/anthropic/v1/messages", b"{not json")
            self.assertAnswer(r, 400)
            self.assertEqual(r.json()["error"]["type"],
                             "invalid_request_error")
        self.assertNothingUpstream()

    def test_claude_code_system_messages(self):
        """Claude Code 2.1.284's requests (tests/fixtures/claude-code): a
        mid-conversation system message with the turn's environment is
        rebuilt and reaches the upstream, clear_at kept, its effort capped
        at the turn's level like the top-level one, nothing else of it
        kept; late MCP tools in one are refused with the API's 400 and
        nothing upstream, and the resend with the tools whole passes."""
        fx = os.path.join(HERE, "..", "fixtures", "claude-code")
        with open(os.path.join(fx, "environment.json")) as f:
            env = json.load(f)
        with open(os.path.join(fx, "late-mcp-tools.json")) as f:
            late = json.load(f)
        env["messages"][1]["smuggled"] = "dropped"
        with self.in_turn(thinking="low") as (w, tr, turn):
            r = w.model(env)
            self.assertAnswer(r, 200)
            up = self.fu.last()["json"]
            sent = env["messages"]
            self.assertEqual(up["messages"][0], sent[0])
            self.assertEqual(up["messages"][1], {
                "role": "system", "content": sent[1]["content"],
                "clear_at": "next_user_message",
                "output_config": {"effort": "low"}})
            self.assertEqual(up["messages"][2:], sent[2:])
            self.assertEqual(up["output_config"], {"effort": "low"})
            self.assertEqual(up["system"], env["system"])
            self.assertEqual(up["tools"], env["tools"])
            self.assertNotIn("metadata", up)
            n = len(self.fu.requests())

            r = w.model(late["request"])
            self.assertAnswer(r, 400)
            e = r.json()
            self.assertEqual(e["error"]["type"], "invalid_request_error")
            self.assertEqual(
                e["error"]["message"], late["refused_at"] +
                ": Input tag 'tool_addition' found using 'type' does not "
                "match any of the expected tags: 'text'")
            self.assertEqual(len(self.fu.requests()), n)
            r = w.model(late["resend"])
            self.assertAnswer(r, 200)
            self.assertEqual(self.fu.last()["json"]["tools"],
                             late["resend"]["tools"])

    def test_chunked_request_body(self):
        """The in-container forwarder drops content-length: bodies come
        chunked."""
        body = json.dumps({"max_tokens": 7, "messages": [
            {"role": "user", "content": "chunked " * 1000}]}).encode()
        with self.in_turn() as (w, tr, turn):
            s = w.send("POST", "/anthropic/v1/messages", raw=(
                b"POST /anthropic/v1/messages HTTP/1.1\r\nHost: broker\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"))
            for i in range(0, len(body), 1000):
                part = body[i:i + 1000]
                s.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
            s.sendall(b"0\r\n\r\n")
            r = read_response(s, 30)
            self.assertAnswer(r, 200)
        up = self.fu.last()["json"]
        self.assertEqual(up["messages"][0]["content"], "chunked " * 1000)
        self.assertEqual(up["max_tokens"], 7)

    def test_model_body_over_96_mib_400(self):
        with self.in_turn() as (w, tr, turn):
            r = w.req("POST", "/anthropic/v1/messages", raw=(
                b"POST /anthropic/v1/messages HTTP/1.1\r\nHost: broker\r\n"
                b"Content-Length: %d\r\n\r\n{" % (96 * MIB + 1)),
                timeout=20)
            self.assertAnswer(r, 400)
            r = w.req("POST", "/tools/roll_dice", raw=(
                b"POST /tools/roll_dice HTTP/1.1\r\nHost: broker\r\n"
                b"Content-Length: %d\r\n\r\n{" % (96 * MIB + 1)),
                timeout=20)
            self.assertAnswer(r, 400, "Invalid input")
            r = w.req("POST", "/mcp/files", raw=(
                b"POST /mcp/files HTTP/1.1\r\nHost: broker\r\n" +
                b"".join(b"%s: %s\r\n" % (n.encode(), v.encode())
                         for n, v in w.MCP_HEADERS) +
                b"Content-Length: %d\r\n\r\n{" % (96 * MIB + 1)),
                timeout=20)
            self.assertAnswer(r, 400, "Invalid input")
        self.assertNothingUpstream(0)
        self.assertEqual(tr.hook_calls, [])

    def test_count_tokens(self):
        with self.in_turn() as (w, tr, turn):
            r = w.model({"model": "x", "max_tokens": 5, "stream": True,
                         "messages": [{"role": "user", "content": "count"}]},
                        target="/anthropic/v1/messages/count_tokens")
            self.assertAnswer(r, 200)
            self.assertIsInstance(r.json()["input_tokens"], int)
        rec = self.fu.last()
        self.assertEqual(rec["path"], "/v1/messages/count_tokens")
        self.assertEqual(rec["token"], REAL_TOKEN)
        self.assertEqual(rec["json"]["model"], MODEL)
        self.assertNotIn("max_tokens", rec["json"])
        self.assertNotIn("stream", rec["json"])

    def test_token_read_per_call(self):
        self.addCleanup(self.restore_token)
        with self.in_turn() as (w, tr, turn):
            self.assertAnswer(w.model(), 200)
            write_secret(self.cred, "sk-test-rotated-token\n")
            self.assertAnswer(w.model(), 200)
        self.assertEqual([r["token"] for r in self.fu.requests()],
                         [REAL_TOKEN, "sk-test-rotated-token"])

    def test_missing_or_empty_credential_502(self):
        self.addCleanup(self.restore_token)
        with self.in_turn() as (w, tr, turn):
            os.rename(self.cred, self.cred + ".away")
            try:
                self.assertAnswer(w.model(), 502, "Broker call failed")
            finally:
                os.rename(self.cred + ".away", self.cred)
            for content in ("", "\n"):
                write_secret(self.cred, content)
                self.assertAnswer(w.model(), 502, "Broker call failed")
            # DESIGN.md 7: readable by the service user alone, no link
            self.restore_token()
            os.chmod(self.cred, 0o640)
            self.assertAnswer(w.model(), 502, "Broker call failed")
            os.chmod(self.cred, 0o600)
            os.rename(self.cred, self.cred + ".real")
            os.symlink(self.cred + ".real", self.cred)
            try:
                self.assertAnswer(w.model(), 502, "Broker call failed")
            finally:
                os.unlink(self.cred)
                os.rename(self.cred + ".real", self.cred)
            self.assertNothingUpstream()
            self.assertAnswer(w.model(), 200)

    def test_upstream_429_passes_through(self):
        self.fu.script({"kind": "status", "status": 429})
        with self.in_turn() as (w, tr, turn):
            r = w.model()
        self.assertAnswer(r, 429)
        self.assertTrue(r.complete, r)
        self.assertEqual(r.header("retry-after"), "3")
        self.assertEqual(r.header("anthropic-ratelimit-requests-remaining"),
                         "0")
        self.assertEqual(r.header("x-should-retry"), "true")
        self.assertEqual(r.json(), fake_upstream.anthropic_error(429))

    def test_response_headers_filtered(self):
        self.fu.script({"kind": "json", "body": {"ok": 1},
                        "header_set": "filtering"})
        with self.in_turn() as (w, tr, turn):
            r = w.model()
            self.assertAnswer(r, 200)
            self.assertEqual(r.json(), {"ok": 1})
            names = r.header_names()
            for n in fake_upstream.FILTERING_KEPT:
                self.assertIn(n, names, r.headers)
            for n in fake_upstream.FILTERING_DROPPED:
                self.assertNotIn(n, names, r.headers)
            self.assertNotIn(REAL_TOKEN.encode(), r.raw)
            # the secret in any of its encodings, and the 256-char bound
            hdrs = [["anthropic-ratelimit-enc-" + e.replace("_", "-"),
                     "v={token:%s}" % e] for e in ENCODINGS]
            hdrs += [["request-id", "req_{token:hex_lower}"],
                     ["anthropic-ratelimit-max", "y" * 256],
                     ["x-should-retry", "true"]]
            self.fu.script({"kind": "json", "body": {}, "headers": hdrs})
            r = w.model()
            self.assertAnswer(r, 200)
            names = r.header_names()
            for e in ENCODINGS:
                self.assertNotIn("anthropic-ratelimit-enc-" +
                                 e.replace("_", "-"), names, r.headers)
            self.assertNotIn("request-id", names)
            self.assertEqual(r.header("anthropic-ratelimit-max"), "y" * 256)
            self.assertEqual(r.header("x-should-retry"), "true")
            for enc in all_encodings(REAL_TOKEN):
                self.assertNotIn(enc, r.raw)
            # the default answer's set-cookie and x-fake-upstream too
            r = w.model()
            self.assertAnswer(r, 200)
            self.assertIn("request-id", r.header_names())
            self.assertNotIn("set-cookie", r.header_names())
            self.assertNotIn("x-fake-upstream", r.header_names())

    def test_upstream_statuses_pass_through(self):
        with self.in_turn() as (w, tr, turn):
            self.fu.script({"kind": "json", "status": 204, "raw": ""})
            r = w.model()
            self.assertAnswer(r, 204)
            self.assertTrue(r.complete)
            self.assertEqual(len(r.raw), r.head_len)
            self.fu.script({"kind": "json", "status": 205, "raw": ""})
            r = w.model()
            self.assertAnswer(r, 205)
            self.assertEqual(r.body, b"")
            for status in (200, 201, 400, 401, 404, 500, 529, 599):
                with self.subTest(status=status):
                    err = fake_upstream.anthropic_error(status)
                    self.fu.script({"kind": "json", "status": status,
                                    "body": err})
                    r = w.model()
                    self.assertAnswer(r, status)
                    self.assertTrue(r.complete, r)
                    self.assertEqual(r.json(), err)

    def test_upstream_status_out_of_range_502(self):
        with self.in_turn() as (w, tr, turn):
            for status in (600, 999):
                with self.subTest(status=status):
                    self.fu.script({"kind": "raw", "data":
                                    "HTTP/1.1 %d X\r\ncontent-length: 2"
                                    "\r\n\r\nab" % status})
                    r = w.model()
                    self.assertAnswer(r, 502)
                    self.assertNotIn(b"ab", r.body)

    def test_upstream_status_below_200(self):
        """A 1xx head is interim (RFC 9110 15.2): one followed by a final
        head is passed over, and a 199 that nothing follows is a 502."""
        with self.in_turn() as (w, tr, turn):
            self.fu.script({"kind": "raw", "data":
                            "HTTP/1.1 199 X\r\ncontent-length: 2"
                            "\r\n\r\nab"})
            r = w.model()
            self.assertAnswer(r, 502)
            self.assertNotIn(b"ab", r.body)
            self.fu.script({"kind": "raw", "data":
                            "HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n"
                            "\r\nHTTP/1.1 200 OK\r\ncontent-length: 2"
                            "\r\n\r\nab"})
            r = w.model()
            self.assertAnswer(r, 200)
            self.assertEqual(r.body, b"ab")

    def test_upstream_status_out_of_range_text(self):
        with self.in_turn() as (w, tr, turn):
            self.fu.script({"kind": "raw", "data":
                            "HTTP/1.1 600 X\r\ncontent-length: 2\r\n\r\nab"})
            self.assertAnswer(w.model(), 502, "Upstream refused")

    def test_upstream_body_cut_short(self):
        """The upstream closes before its declared length: the worker
        never gets a complete answer."""
        with self.in_turn() as (w, tr, turn):
            for data in ("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc",
                         "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked"
                         "\r\n\r\n3\r\nabc\r\n"):
                with self.subTest(data=data):
                    self.fu.script({"kind": "raw", "data": data})
                    r = w.model()
                    self.assertTrue(r.eof)
                    self.assertFalse(r.complete and r.status == 200, r)
                    if r.head_complete and r.status != 200:
                        self.assertAnswer(r, 502, "Broker call failed")

    # libcurl re-sends a POST whose reused connection died; egress gives
    # every call a connection of its own so that a call is never paid twice.
    def test_dropped_call_not_resent(self):
        with self.in_turn() as (w, tr, turn):
            self.assertAnswer(w.model(), 200)       # a pooled connection
            self.fu.script({"kind": "drop"})
            r = w.model()
            recs = self.fu.requests()
            self.assertEqual([x["response"]["kind"] for x in recs],
                             ["default", "drop"])
            self.assertAnswer(r, 502, "Broker call failed")

    def test_thinking_ceilings(self):
        ceilings = {"low": (2048, "low"), "medium": (8192, "medium"),
                    "high": (16384, "high"), "xhigh": (32768, "max")}
        for level, (budget, effort) in ceilings.items():
            with self.subTest(level=level), \
                    self.in_turn(thinking=level) as (w, tr, turn):
                self.assertEqual(turn["thinking"], level)
                self.fu.reset()
                r = w.model({"max_tokens": 1000, "messages": [
                    {"role": "user", "content": "t"}],
                    "thinking": {"type": "enabled", "budget_tokens": 40000},
                    "output_config": {"effort": "max"}})
                self.assertAnswer(r, 200)
                up = self.fu.last()["json"]
                self.assertEqual(up["thinking"], {"type": "enabled",
                                                  "budget_tokens": budget})
                self.assertEqual(up["output_config"], {"effort": effort})
                self.assertEqual(up["max_tokens"], budget + 1)
                # below the ceiling: kept
                r = w.model({"max_tokens": 50000, "messages": [
                    {"role": "user", "content": "t"}],
                    "thinking": {"type": "enabled", "budget_tokens": 1024},
                    "output_config": {"effort": "low"}})
                self.assertAnswer(r, 200)
                up = self.fu.last()["json"]
                self.assertEqual(up["thinking"]["budget_tokens"], 1024)
                self.assertEqual(up["output_config"], {"effort": "low"})
                self.assertEqual(up["max_tokens"], 50000)
                # adaptive without an effort: set for low and medium only
                r = w.model({"messages": [{"role": "user", "content": "t"}],
                             "thinking": {"type": "adaptive"}})
                self.assertAnswer(r, 200)
                up = self.fu.last()["json"]
                self.assertEqual(up["thinking"], {"type": "adaptive"})
                self.assertEqual(up.get("output_config"),
                                 {"effort": level} if level in
                                 ("low", "medium") else None)
                self.assertEqual(up["max_tokens"], 16384)

    def test_rebuild_details(self):
        ok_tools = [{"name": "t1", "description": "d", "input_schema": {
            "type": "object", "properties": {"a": {"$ref": "#/$defs/x"}},
            "enum": [{"$ref": "https://evil/data-not-schema"}],
            "$defs": {"x": {"type": "string"}}},
            "cache_control": {"type": "ephemeral", "extra": 1}}]
        with self.in_turn() as (w, tr, turn):
            r = w.model({"max_tokens": 10, "tools": ok_tools,
                         "tool_choice": {"type": "tool", "name": "t1",
                                         "disable_parallel_tool_use": True,
                                         "evil": 1},
                         "stop_sequences": ["s"] * 17,
                         "system": [{"type": "text", "text": "sys",
                                     "cache_control": {"type": "ephemeral",
                                                       "ttl": "1h"}}],
                         "messages": [{"role": "user", "content": [
                             {"type": "text", "text": "x",
                              "cache_control": {"type": "ephemeral",
                                                "ttl": "5m", "x": 2}},
                             {"type": "image", "source": {
                                 "type": "base64", "media_type": "image/png",
                                 "data": "iVBORw0KGgo="}}]}]})
            self.assertAnswer(r, 200)
            up = self.fu.last()["json"]
            self.assertEqual(up["tools"][0]["input_schema"],
                             ok_tools[0]["input_schema"])
            self.assertEqual(up["tools"][0]["cache_control"],
                             {"type": "ephemeral"})
            self.assertEqual(up["tool_choice"], {
                "type": "tool", "name": "t1",
                "disable_parallel_tool_use": True})
            self.assertNotIn("stop_sequences", up)
            self.assertEqual(up["system"][0]["cache_control"],
                             {"type": "ephemeral", "ttl": "1h"})
            blocks = up["messages"][0]["content"]
            self.assertEqual(blocks[0]["cache_control"],
                             {"type": "ephemeral"})
            self.assertEqual(blocks[1]["source"]["data"], "iVBORw0KGgo=")
            n = len(self.fu.requests())
            for body in (
                    {"thinking": {"type": "enabled", "budget_tokens": 1023}},
                    {"thinking": {"type": "enabled", "budget_tokens": 2.5}},
                    {"thinking": {"type": "other"}},
                    {"tools": [{"name": "t", "input_schema": {
                        "type": "object", "properties": {
                            "a": {"$ref": "https://evil/x"}}}}]},
                    {"tools": [{"type": "web_search_20250305",
                                "name": "web_search"}]},
                    {"tools": [{"name": "bad name", "input_schema": {}}]},
                    {"tool_choice": {"type": "tool"}},
                    {"tool_choice": {"type": "sometimes"}},
                    {"system": [{"type": "document", "source": {}}]}):
                with self.subTest(body=body):
                    body["messages"] = [{"role": "user", "content": "x"}]
                    r = w.model(body)
                    self.assertAnswer(r, 400)
                    self.assertEqual(r.json()["error"]["type"],
                                     "invalid_request_error")
            self.assertEqual(len(self.fu.requests()), n)

    def test_claude_code_tool_schemas(self):
        """Tools shaped as Claude Code sends them, "$schema" of draft-07
        in every input_schema, reach the upstream unchanged; a "$schema"
        that is no published meta-schema is still refused."""
        draft7 = "http://json-schema.org/draft-07/schema#"
        tools = [
            {"name": "Bash",
             "description": "Executes a given bash command.",
             "input_schema": {
                 "type": "object",
                 "properties": {
                     "command": {"type": "string",
                                 "description": "The command to execute"},
                     "timeout": {"type": "number",
                                 "description": "Optional timeout in ms"}},
                 "required": ["command"],
                 "additionalProperties": False,
                 "$schema": draft7}},
            {"name": "TodoWrite",
             "description": "Update the todo list.",
             "input_schema": {
                 "type": "object",
                 "properties": {"todos": {"type": "array", "items": {
                     "type": "object",
                     "properties": {
                         "content": {"type": "string", "minLength": 1},
                         "status": {"type": "string", "enum": [
                             "pending", "in_progress", "completed"]}},
                     "required": ["content", "status"],
                     "additionalProperties": False}}},
                 "required": ["todos"],
                 "additionalProperties": False,
                 "$schema": "https://json-schema.org/draft/2020-12/schema"},
             "cache_control": {"type": "ephemeral"}}]
        with self.in_turn() as (w, tr, turn):
            r = w.model({"max_tokens": 10, "tools": tools,
                         "messages": [{"role": "user", "content": "x"}]})
            self.assertAnswer(r, 200)
            self.assertEqual(self.fu.last()["json"]["tools"], tools)
            n = len(self.fu.requests())
            bad = json.loads(json.dumps(tools[:1]))
            bad[0]["input_schema"]["$schema"] = "https://evil.example/s#"
            r = w.model({"max_tokens": 10, "tools": bad,
                         "messages": [{"role": "user", "content": "x"}]})
            self.assertAnswer(r, 400)
            self.assertIn("$schema", r.json()["error"]["message"])
            self.assertEqual(len(self.fu.requests()), n)

    def test_sse_streamed(self):
        self.fu.script({"kind": "sse", "delay_ms": 300})
        with self.in_turn() as (w, tr, turn):
            r = w.model({"max_tokens": 50, "stream": True,
                         "messages": [{"role": "user", "content": "s"}]})
        self.assertAnswer(r, 200)
        self.assertTrue(r.complete, r)
        self.assertTrue(r.header("content-type").startswith(
            "text/event-stream"))
        # The upstream marks its answer finished after its last write, which
        # the worker may have read by then.
        rec = self.fu.wait_for(len(self.fu.requests()), done=True)[-1]
        self.assertEqual(rec["json"]["stream"], True)
        first = r.time_at(r.raw.index(b"event: message_start"))
        finished = rec["response"]["finished"]
        self.assertLess(first, finished - 1.0,
                        "the first event waited for the whole answer")
        msg = fake_upstream.message_from_events(
            fake_upstream.parse_sse(r.body))
        self.assertEqual(msg["content"][0]["text"],
                         "Hello from the fake upstream.")

    def test_small_events_arrive_at_once(self):
        """The reflection filter holds back only what could begin the
        secret: four 14-byte events 0.5 s apart each reach the worker
        before the next one leaves the upstream."""
        events = [{"raw": "data: tick-%d\n\n" % i} for i in range(4)]
        self.fu.script({"kind": "sse", "events": events, "delay_ms": 500})
        with self.in_turn() as (w, tr, turn):
            r = w.model({"max_tokens": 50, "stream": True,
                         "messages": [{"role": "user", "content": "s"}]})
        self.assertAnswer(r, 200)
        self.assertTrue(r.complete, r)
        sent = self.fu.last()["response"]["event_times"]
        self.assertEqual(len(sent), 4, sent)
        for i in range(3):
            got = r.time_at(r.raw.index(b"tick-%d" % i))
            self.assertLess(got, sent[i + 1],
                            "event %d waited for the next one" % i)

    def test_reflection_cut(self):
        with self.in_turn() as (w, tr, turn):
            for enc in ENCODINGS:
                for split in (False, True):
                    with self.subTest(encoding=enc, split=split):
                        self.fu.script({"kind": "reflect", "encoding": enc,
                                        "split": split, "delay_ms": 50})
                        r = w.model({"max_tokens": 10, "stream": True,
                                     "messages": [{"role": "user",
                                                   "content": "r"}]})
                        self.assertTrue(r.eof, r)
                        self.assertFalse(r.status == 200 and r.complete, r)
                        if r.status is not None and r.status != 200:
                            self.assertEqual(r.status, 502, r)
                        for e in all_encodings(REAL_TOKEN):
                            self.assertNotIn(e, r.raw)
                        # no half of it either: what could begin the
                        # token is held back until it is known clean;
                        # the text before it ("leak:") may flow on
                        tok = encode_token(REAL_TOKEN, enc)
                        self.assertNotIn(tok[len(tok) // 2:], r.body)
                        self.assertNotIn(tok[:len(tok) // 2], r.body)

    def test_reflection_after_headers_cuts_mid_body(self):
        lead = "event: ping\ndata: {\"type\": \"ping\"}\n\n" + ": pad\n" * 60
        self.fu.script({"kind": "reflect", "encoding": "base64",
                        "lead": lead, "delay_ms": 500})
        with self.in_turn() as (w, tr, turn):
            r = w.model({"max_tokens": 10, "stream": True,
                         "messages": [{"role": "user", "content": "r"}]})
        self.assertAnswer(r, 200)
        self.assertTrue(r.eof)
        self.assertFalse(r.complete, r)
        self.assertTrue(r.body.startswith(b"event: ping"), r.body[:100])
        for e in all_encodings(REAL_TOKEN):
            self.assertNotIn(e, r.raw)

    def test_slow_worker_holds_the_upstream(self):
        """Back-pressure end to end (PROTOCOL.md 3.2): while the worker
        reads nothing, the upstream stops sending once the kernel's
        buffers and egress's window are full, the broker and egress do not
        take the rest into memory, and every byte arrives afterwards."""
        self.fu.script({"kind": "big", "bytes": 48 * MIB,
                        "content_type": "application/octet-stream"})
        with self.in_turn() as (w, tr, turn):
            pids = {"broker": self.broker_pid(),
                    "egress": self.role_pid("egress")}
            before = {k: vm_mib(p, "VmRSS") for k, p in pids.items()}
            s = w.send("POST", "/anthropic/v1/messages",
                       {"max_tokens": 5,
                        "messages": [{"role": "user", "content": "x"}]})
            s.settimeout(60)
            total = 0
            while total < MIB:
                chunk = s.recv(1 << 16)
                self.assertTrue(chunk, "the answer ended at %d" % total)
                total += len(chunk)
            # The upstream's count stops moving: it is held.
            held, deadline = -1, time.monotonic() + 30
            while time.monotonic() < deadline:
                time.sleep(0.5)
                now = self.fu.last()["response"]["bytes"]
                if now == held:
                    break
                held = now
            self.assertEqual(now, held, "the upstream was never held")
            grew = {k: vm_mib(p, "VmRSS") - before[k]
                    for k, p in pids.items()}
            sys.stderr.write("\n  worker read %d KiB; upstream held at %d "
                             "KiB; broker grew %.1f MiB, egress %.1f MiB ... "
                             % (total >> 10, held >> 10, grew["broker"],
                                grew["egress"]))
            # Loopback TCP buffers grow to some 10 MiB in all; the rest
            # of the 48 MiB waits at the upstream, not in broker or egress
            # (growth, not size: a sanitizer build starts at 20-100 MiB,
            # and its quarantine keeps what the held bytes passed through).
            self.assertLess(held, 24 * MIB)
            self.assertLess(grew["broker"], 24, grew)
            self.assertLess(grew["egress"], 24, grew)
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                total += len(chunk)
            s.close()
        self.assertTrue(self.fu.last()["response"]["done"])
        # the body and its head and chunk framing
        self.assertGreater(total, 48 * MIB)
        self.assertLess(total, 48 * MIB + 64 * 1024)

    def test_redirect_502(self):
        self.fu.script({"kind": "redirect", "status": 302,
                        "location": self.fu.url + "/v1/messages"})
        with self.in_turn() as (w, tr, turn):
            self.assertAnswer(w.model(), 502, "Broker call failed")
            self.fu.script({"kind": "redirect", "status": 307})
            self.assertAnswer(w.model(), 502, "Broker call failed")
        self.assertEqual(len(self.fu.requests()), 2)

    def test_body_over_50_mib_cut(self):
        self.fu.script({"kind": "big", "bytes": 50 * MIB + 1})
        with self.in_turn() as (w, tr, turn):
            r = w.model(limit=1 << 16)
        self.assertTrue(r.eof)
        # either refused before the headers, or cut within the body
        if r.status == 200:
            self.assertFalse(r.complete, r)
        else:
            self.assertAnswer(r, 502, "Broker call failed")
        self.assertLessEqual(r.total, 50 * MIB + 4096)
        self.assertEqual(len(self.fu.requests()), 1)

    def test_body_of_50_mib_passes(self):
        self.fu.script({"kind": "big", "bytes": 50 * MIB,
                        "content_type": "application/octet-stream"})
        with self.in_turn() as (w, tr, turn):
            s = w.send("POST", "/anthropic/v1/messages",
                       {"max_tokens": 5,
                        "messages": [{"role": "user", "content": "x"}]})
            raw = bytearray()
            s.settimeout(60)
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                raw += chunk
            s.close()
        self.assertTrue(raw.startswith(b"HTTP/1.1 200 "), raw[:100])
        head, _, rest = bytes(raw).partition(b"\r\n\r\n")
        self.assertIn(b"transfer-encoding: chunked", head.lower())
        self.assertTrue(rest.endswith(b"\r\n0\r\n\r\n"), rest[-100:])
        # Every byte where the upstream put it: the fake upstream writes its
        # 64 KiB block 800 times, a 1004-byte unit repeated in it.
        body, pos = [], 0
        while True:
            end = rest.index(b"\r\n", pos)
            size = int(rest[pos:end], 16)
            if size == 0:
                break
            body.append(rest[end + 2:end + 2 + size])
            self.assertEqual(rest[end + 2 + size:end + 4 + size], b"\r\n",
                             "chunk at %d is not %d bytes long" % (pos, size))
            pos = end + 4 + size
        unit = bytes(i % 251 for i in range(1004))
        block = (unit * (65536 // len(unit) + 1))[:65536]
        body = b"".join(body)
        self.assertEqual(len(body), 50 * MIB)
        self.assertTrue(body == block * 800, "the body differs from what was sent")


# ---------------------------------------------------------------- 3.3 MCP

BROKER_REFUSALS = {(400, "Invalid input"), (403, "MCP method refused"),
                   (404, "Not found"), (410, "Turn ended"),
                   (429, "Broker budget exhausted")}


def mcp_admitted(tc, r):
    """The broker let the call through to egress: not one of its own
    refusals (whatever the MCP server answers; 502 "Broker call failed" is
    what the MCP CA bug gives today)."""
    tc.assertTrue(r.head_complete, r)
    tc.assertNotIn((r.status, r.text), BROKER_REFUSALS, r)
    if r.status == 502:
        tc.assertEqual(r.text, "Broker call failed")


class Mcp(BrokerCase):
    CHANNEL = "brk-mcp"

    def setUp(self):
        super().setUp()
        self.start_channel()

    def test_allowed_methods_admitted(self):
        """initialize, notifications/initialized, ping, tools/list and an
        allowed tools/call pass the broker's method filter (whatever the MCP
        server then says)."""
        with self.in_turn() as (w, tr, turn):
            for body in (rpc("initialize", 1, INIT_PARAMS),
                         rpc("notifications/initialized", None),
                         rpc("ping", "p"), rpc("tools/list", 2),
                         rpc("tools/call", 3, {"name": "echo",
                                               "arguments": {"text": "x"}}),
                         rpc("tools/call", 4, {"name": "add", "arguments": {
                             "a": 1, "b": 2}})):
                with self.subTest(body=json.dumps(body)[:80]):
                    mcp_admitted(self, w.mcp(body))

    def test_session_round_trip(self):
        with self.in_turn() as (w, tr, turn):
            body = rpc("initialize", 1, INIT_PARAMS, evil={"x": 1})
            r = w.mcp(body, headers=[("mcp-protocol-version", "2025-06-18"),
                                     ("cookie", "c=1"), ("x-evil", "1")])
            self.assertAnswer(r, 200)
            sid = r.header("mcp-session-id")
            self.assertTrue(sid and sid.startswith("fake-files-"), r.headers)
            self.assertEqual(r.json()["result"]["serverInfo"]["name"],
                             "fake-files")
            rec = self.fu.last()
            self.assertEqual(rec["path"], "/mcp/files")
            self.assertEqual(rec["token"], MCP_TOKEN)
            self.assertEqual(rec["json"], rpc("initialize", 1, INIT_PARAMS))
            names = {n.lower() for n, _ in rec["headers"]}
            self.assertLessEqual(names, UPSTREAM_MCP_HEADERS, rec["headers"])
            self.assertEqual(header(rec, "mcp-protocol-version"),
                             "2025-06-18")
            self.assertNotIn("sandbox-dummy-token", rec["raw_headers"])
            sh = [("mcp-session-id", sid)]
            r = w.mcp(rpc("notifications/initialized", None), headers=sh)
            self.assertIn(r.status, (200, 202), r)
            r = w.mcp(rpc("tools/list", 2), headers=sh)
            self.assertAnswer(r, 200)
            self.assertEqual(r.header("mcp-session-id"), sid)
            self.assertIn("echo", [t["name"] for t in
                                   r.json()["result"]["tools"]])
            r = w.mcp(rpc("tools/call", "c3", {"name": "echo",
                                               "arguments": {"text": "hi"}}),
                      headers=sh)
            self.assertAnswer(r, 200)
            self.assertEqual(r.json()["result"]["content"][0]["text"], "hi")
            r = w.mcp(rpc("ping", 4), headers=sh)
            self.assertAnswer(r, 200)
            recs = self.fu.requests()
            self.assertEqual([x["mcp"]["method"] for x in recs],
                             ["initialize", "notifications/initialized",
                              "tools/list", "tools/call", "ping"])
            for x in recs[1:]:
                self.assertEqual(x["mcp"]["session"], sid)
                self.assertTrue(x["mcp"]["session_valid"])
                self.assertEqual(x["token"], MCP_TOKEN)
            self.assertEqual(recs[3]["json"],
                             rpc("tools/call", "c3",
                                 {"name": "echo",
                                  "arguments": {"text": "hi"}}))
            for x in recs:
                self.assertNotIn(REAL_TOKEN, x["raw_headers"])

    def test_session_header_bounds(self):
        """mcp-session-id and mcp-protocol-version go up only when at most
        256 chars; a longer session id from the worker is dropped."""
        with self.in_turn() as (w, tr, turn):
            r = w.mcp(rpc("tools/list", 1), headers=[
                ("mcp-session-id", "s" * 257),
                ("mcp-protocol-version", "v" * 256)])
            self.assertEqual(r.status, 400, r)   # the server wants a session
            rec = self.fu.last()
            self.assertIsNotNone(rec)
            self.assertIsNone(header(rec, "mcp-session-id"))
            self.assertEqual(header(rec, "mcp-protocol-version"), "v" * 256)
            self.assertEqual(rec["token"], MCP_TOKEN)

    def test_refused_methods_403(self):
        with self.in_turn() as (w, tr, turn):
            for body in (rpc("resources/list"), rpc("resources/read", 1,
                                                    {"uri": "file:///x"}),
                         rpc("prompts/list"), rpc("sampling/createMessage"),
                         rpc("tools/call", 1, {"name": "whoami",
                                               "arguments": {}}),
                         rpc("tools/call", 1, {"name": "fail",
                                               "arguments": {}}),
                         rpc("tools/call", 1, {"name": "echo",
                                               "arguments": "x"}),
                         rpc("tools/call", 1, {"name": "echo"}),
                         rpc("logging/setLevel", 1, {"level": "debug"}),
                         [rpc("tools/list")]):
                with self.subTest(body=json.dumps(body)[:80]):
                    self.assertAnswer(w.mcp(body), 403, "MCP method refused")
        self.assertNothingUpstream()

    def test_startup_window_refusals(self):
        """Before any turn: metadata methods are admitted, tools/call is
        refused (403), and everything but a known MCP server is 410."""
        key = "brk-mcp-window"
        self.start_channel(key)
        w = self.worker(key)
        for body in (rpc("initialize", 1, INIT_PARAMS), rpc("tools/list", 2),
                     rpc("ping", 3), rpc("notifications/initialized", None)):
            with self.subTest(body=body["method"]):
                mcp_admitted(self, w.mcp(body))
        self.assertAnswer(w.mcp(rpc("tools/call", 4, {
            "name": "echo", "arguments": {"text": "x"}})),
            403, "MCP method refused")
        self.assertAnswer(w.mcp(rpc("resources/list", 5)),
                          403, "MCP method refused")
        # no model call, no host tool, no other path (rule 5)
        self.assertAnswer(w.model(), 410)
        self.assertAnswer(w.model(target="/anthropic/v1/messages/"
                                  "count_tokens"), 410)
        self.assertAnswer(w.model(target="/anthropic/v1/messages"
                                  "?beta=true"), 410)
        self.assertAnswer(w.tool("roll_dice", {"input": {}}), 410)
        self.assertAnswer(w.tool("unlisted", {"input": {}}), 410)
        self.assertAnswer(w.req("POST", "/nope", {}), 410)
        self.assertAnswer(w.mcp(rpc("tools/list"), server="other"), 410)
        self.assertAnswer(w.req("POST", "/worker/ready?beta=true"), 410)
        # a known MCP server with a wrong method or a query is rule 6
        self.assertAnswer(w.req("GET", "/mcp/files"), 404, "Not found")
        self.assertAnswer(w.req("POST", "/mcp/files?beta=true",
                                rpc("tools/list")), 404, "Not found")
        self.assertEqual(self.fu.requests(path="/v1/*"), [])
        self.assertEqual(self.fu.requests(path="/mcp/other"), [])
        for x in self.fu.requests():
            self.assertEqual(x["token"], MCP_TOKEN)

    def test_startup_window_metadata_reaches_server(self):
        key = "brk-mcp-window2"
        self.start_channel(key)
        w = self.worker(key)
        r = w.mcp(rpc("initialize", 1, INIT_PARAMS))
        self.assertAnswer(r, 200)
        sid = r.header("mcp-session-id")
        self.assertTrue(sid)
        sh = [("mcp-session-id", sid)]
        r = w.mcp(rpc("tools/list", 2), headers=sh)
        self.assertAnswer(r, 200)
        self.assertEqual(r.header("mcp-session-id"), sid)
        self.assertEqual([t["name"] for t in r.json()["result"]["tools"]],
                         [t["name"] for t in fake_upstream.MCP_TOOLS])
        self.assertAnswer(w.mcp(rpc("ping", 3), headers=sh), 200)
        self.assertAnswer(w.mcp(rpc("tools/call", 4, {
            "name": "echo", "arguments": {"text": "x"}}), headers=sh),
            403, "MCP method refused")
        recs = self.fu.requests()
        self.assertEqual([x["mcp"]["method"] for x in recs],
                         ["initialize", "tools/list", "ping"])
        for x in recs:
            self.assertEqual(x["token"], MCP_TOKEN)


# ---------------------------------------------------------------- DESIGN.md 1

def zeros_body(size):
    """{"x":[0,0,...]} of exactly size bytes: two bytes a JSON value."""
    n = (size - len(b'{"x":[0]}')) // 2
    body = b'{"x":[' + b"0," * n + b"0]}"
    return body + b" " * (size - len(body))


def vm_mib(pid, field="VmHWM"):
    """A process's peak (VmHWM) or current (VmRSS) resident size, from
    /proc/<pid>/status."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no %s for pid %d" % (field, pid))


class Bounds(BrokerCase):
    """No byte from the worker ends the broker or makes it use memory
    without bound (DESIGN.md 1, invariants 7 and 8): the broker's pid stays
    the same across every hostile request, and its peak resident size
    stays far below what cJSON would spend on a body of tiny values."""

    CHANNEL = "brk-bounds"
    # A 96 MiB body is read whole, then refused by the node count before
    # any tree is built: the body and some slack, nowhere near the
    # gigabytes cJSON would take.
    HWM_MAX_MIB = 400

    def setUp(self):
        super().setUp()
        self.start_channel()

    def send_big(self, w, target, body, timeout=60):
        headers = [("content-type", "application/json")]
        return w.req("POST", target, body, headers, timeout=timeout)

    def test_mcp_96_mib_of_values_in_startup_window(self):
        key = "brk-bounds-window"
        self.start_channel(key)
        w = self.worker(key)
        pid = self.broker_pid(key)
        r = self.send_big(w, "/mcp/files", zeros_body(96 * MIB))
        hwm = vm_mib(pid)
        sys.stderr.write("\n  broker VmHWM after a 96 MiB MCP body: "
                         "%.1f MiB\n" % hwm)
        self.assertAnswer(r, 400, "Invalid input")
        self.assertEqual(self.broker_pid(key), pid)
        self.assertLess(hwm, self.HWM_MAX_MIB)
        # the window still serves
        mcp_admitted(self, w.mcp(rpc("ping", 1)))
        self.assertEqual([x["mcp"]["method"] for x in self.fu.requests()],
                         ["ping"])

    def test_model_96_mib_of_values_in_turn(self):
        pid = self.broker_pid()
        with self.in_turn() as (w, tr, turn):
            r = self.send_big(w, "/anthropic/v1/messages",
                              zeros_body(96 * MIB))
            hwm = vm_mib(pid)
            sys.stderr.write("\n  broker VmHWM after a 96 MiB model body: "
                             "%.1f MiB\n" % hwm)
            self.assertAnswer(r, 400)
            self.assertEqual(r.json()["error"]["type"],
                             "invalid_request_error")
            self.assertIn("values and keys", r.json()["error"]["message"])
            self.assertLess(hwm, self.HWM_MAX_MIB)
            self.assertAnswer(w.model(), 200)
        self.assertEqual(self.broker_pid(), pid)
        self.assertEqual(len(self.fu.requests(path="/v1/*")), 1)

    def test_model_body_that_grows_when_printed(self):
        """5e-324 comes out as 4.94065645841247e-324: a 96 MiB body can
        rebuild to more than the 100 MiB a frame to egress carries.  It is
        refused with a 400; the broker goes on."""
        head = (b'{"messages":[{"role":"user","content":"x"},'
                b'{"role":"assistant","content":[{"type":"tool_use",'
                b'"id":"t1","name":"n","input":{"a":[' +
                b",".join([b"5e-324"] * 400000) +
                b']}},{"type":"text","text":"')
        tail = b'"}]}]}'
        body = head + b"a" * (96 * MIB - len(head) - len(tail)) + tail
        pid = self.broker_pid()
        with self.in_turn() as (w, tr, turn):
            r = w.req("POST", "/anthropic/v1/messages", body, timeout=60)
            self.assertAnswer(r, 400)
            self.assertEqual(r.json()["error"]["message"],
                             "Request body is too large once rebuilt")
            self.assertAnswer(w.model(), 200)
        self.assertEqual(self.broker_pid(), pid)
        self.assertEqual(len(self.fu.requests(path="/v1/*")), 1)

    def test_refused_flood_rests(self):
        """A worker whose requests are refused 64 times within a second is
        not served for the rest of that second (BROKER_REFUSALS_MAX): the
        broker says so in the log once, stays up, and serves again."""
        key = "brk-bounds-flood"
        self.start_channel(key)
        w = self.worker(key)
        pid = self.broker_pid(key)
        mark = len(self.d.read_log())
        # no turn bound: a model call is 410
        for _ in range(63):
            self.assertAnswer(w.model(timeout=10), 410)
        self.assertNotIn("refusals within",
                         self.d.read_log()[mark:])
        self.assertAnswer(w.model(timeout=10), 410)
        deadline = time.monotonic() + 10
        while ("64 refusals within 1000 ms"
               not in self.d.read_log()[mark:]):
            self.assertLess(time.monotonic(), deadline,
                            self.d.read_log()[mark:])
            time.sleep(0.05)
        t0 = time.monotonic()
        for _ in range(200):
            self.assertAnswer(w.model(timeout=10), 410)
        # served at 64 a second at most: 200 take three rests or more
        self.assertGreater(time.monotonic() - t0, 2.5)
        # logged once a minute at most
        self.assertEqual(self.d.read_log()[mark:].count(
            "refusals within"), 1)
        self.assertEqual(self.broker_pid(key), pid)
        mcp_admitted(self, w.mcp(rpc("ping", 1)))

    @staticmethod
    def raw_request(target, body, headers):
        """A request whose header values are bytes, sent as they are."""
        head = b"POST %s HTTP/1.1\r\nHost: broker\r\n" % target.encode()
        for n, v in headers:
            head += n.encode() + b": " + v + b"\r\n"
        body = json.dumps(body).encode()
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body

    def test_model_headers_that_cannot_be_copied(self):
        """A header egress would not copy is dropped by the broker, which
        answers the call; one the head parser refuses is a 400."""
        body = {"max_tokens": 5, "messages": [{"role": "user",
                                                "content": "hi"}]}
        dropped = [
            ("not UTF-8", b"\xff\xfe2023-06-01"),
            ("a cut sequence", b"2023-06-01\xc3"),
            ("a surrogate", b"\xed\xa0\x80"),
            ("4 097 chars", b"v" * 4097),
            ("over egress's bound", b"v" * 30000),
            ("2 049 emoji", "\U0001F600".encode() * 2049)]
        pid = self.broker_pid()
        with self.in_turn() as (w, tr, turn):
            for what, value in dropped:
                with self.subTest(what):
                    self.fu.reset()
                    r = w.req("POST", "/anthropic/v1/messages",
                              raw=self.raw_request(
                                  "/anthropic/v1/messages", body, [
                                      ("anthropic-version", value),
                                      ("user-agent", value),
                                      ("x-app", b"cli")]))
                    self.assertAnswer(r, 200)
                    rec = self.fu.last()
                    self.assertIsNone(header(rec, "anthropic-version"))
                    self.assertIsNone(header(rec, "user-agent"))
                    self.assertEqual(header(rec, "x-app"), "cli")
                    self.assertEqual(rec["json"]["messages"],
                                     body["messages"])
            # PROTOCOL.md 3.5: a head the parser refuses is 400 bad request
            for what, value in (("a control byte", b"2023\x01-06-01"),
                                ("DEL", b"2023\x7f"),
                                ("100 000 bytes", b"v" * 100000)):
                with self.subTest(what):
                    self.fu.reset()
                    r = w.req("POST", "/anthropic/v1/messages",
                              raw=self.raw_request(
                                  "/anthropic/v1/messages", body,
                                  [("anthropic-version", value)]))
                    self.assertAnswer(r, 400, "bad request")
                    self.assertNothingUpstream(0.1)
            self.assertAnswer(w.model(), 200)
        self.assertEqual(self.broker_pid(), pid)

    def test_mcp_headers_that_cannot_be_copied(self):
        body = rpc("initialize", 1, INIT_PARAMS)
        pid = self.broker_pid()
        with self.in_turn() as (w, tr, turn):
            for what, value in (("not UTF-8", b"\xff" * 8),
                                ("257 chars", b"s" * 257),
                                ("129 euro signs", "\u20ac".encode() * 257),
                                ("over egress's bound", b"s" * 30000)):
                with self.subTest(what):
                    self.fu.reset()
                    r = w.req("POST", "/mcp/files", raw=self.raw_request(
                        "/mcp/files", body,
                        [("mcp-session-id", value),
                         ("mcp-protocol-version", value)]))
                    self.assertAnswer(r, 200)
                    rec = self.fu.last()
                    self.assertEqual(rec["path"], "/mcp/files")
                    self.assertIsNone(header(rec, "mcp-session-id"))
                    self.assertIsNone(header(rec, "mcp-protocol-version"))
                    self.assertEqual(rec["json"], body)
            # at the bound, the value goes up
            r = w.req("POST", "/mcp/files", raw=self.raw_request(
                "/mcp/files", body, [("mcp-protocol-version",
                                      "\u20ac".encode() * 256)]))
            self.assertAnswer(r, 200)
            self.assertEqual(header(self.fu.last(), "mcp-protocol-version")
                             .encode("latin-1").decode(), "\u20ac" * 256)
        self.assertEqual(self.broker_pid(), pid)

    def test_large_legitimate_request_rebuilt(self):
        """8 images of 7 MiB of base64 each (42 MiB decoded, under the
        64 MiB of 4.3) and 2 000 messages: the largest kind of request a
        worker sends reaches the upstream, rebuilt."""
        img = base64.b64encode(bytes(range(256)) * (7 * MIB // 4 * 3 // 256)
                               ).decode()
        self.assertEqual(len(img), 7 * MIB)
        first = {"role": "user", "content": [
            {"type": "image", "source": {"type": "base64",
                                         "media_type": "image/png",
                                         "data": img}}
            for _ in range(8)] + [{"type": "text", "text": "look"}]}
        msgs = [first] + [
            {"role": "assistant" if i % 2 else "user",
             "content": [{"type": "text", "text": "turn %d" % i}]}
            for i in range(1, 2000)]
        body = {"model": "x", "max_tokens": 10, "messages": msgs,
                "evil": [0] * 1000}
        key = "brk-bounds-big"
        self.start_channel(key)
        pid = self.broker_pid(key)
        with self.in_turn(key) as (w, tr, turn):
            r = w.model(body, timeout=120)
            self.assertAnswer(r, 200)
        sys.stderr.write("\n  broker VmHWM after a 56 MiB model body: "
                         "%.1f MiB\n" % vm_mib(pid))
        self.assertEqual(self.broker_pid(key), pid)
        up = self.fu.last()["json"]
        self.assertEqual(up["model"], MODEL)
        self.assertNotIn("evil", up)
        self.assertEqual(len(up["messages"]), 2000)
        self.assertEqual(up["messages"][1999], msgs[1999])
        blocks = up["messages"][0]["content"]
        self.assertEqual(len(blocks), 9)
        for b in blocks[:8]:
            self.assertEqual(b["source"]["data"], img)


# ---------------------------------------------------------------- 3.4

class StartupWindow(BrokerCase):
    CHANNEL = "brk-window"

    def test_rearm(self):
        t0 = self.start_channel()
        # the window was armed when the broker started: after t0 and before
        # the worker's first POST /worker/ready was answered
        t_ready = self.first_ready
        w = self.worker()
        # a fresh broker's window: 32 calls (refused ones count too)
        refused = rpc("resources/list")
        for i in range(32):
            self.assertAnswer(w.mcp(refused), 403, "MCP method refused")
        self.assertAnswer(w.mcp(refused), 429, "Broker budget exhausted")
        self.assertAnswer(w.mcp(rpc("ping")), 429, "Broker budget exhausted")
        self.assertAnswer(w.model(), 410)
        # within 10 s of the arming: neither ready nor discovery re-arms
        self.assertAnswer(w.ready(), 200, "Ready")
        self.assertAnswer(w.req("GET", "/mcp-tools"), 200)
        self.assertAnswer(w.mcp(rpc("ping")), 429, "Broker budget exhausted")
        self.assertAnswer(w.model(), 410)
        self.assertLess(time.monotonic() - t0, 9.8,
                        "too slow to check the 10 s rule")
        time.sleep(max(0.0, t_ready + 10.5 - time.monotonic()))
        self.assertAnswer(w.ready(), 200, "Ready")
        # a fresh window: 32 calls again, then 429
        for i in range(32):
            self.assertAnswer(w.mcp(refused), 403, "MCP method refused")
        self.assertAnswer(w.mcp(rpc("ping")), 429, "Broker budget exhausted")
        # the window never allows a model call
        self.assertAnswer(w.model(), 410)
        self.assertAnswer(w.tool("roll_dice", {"input": {}}), 410)
        self.assertEqual(self.fu.requests(), [])

    def test_four_in_flight_in_the_window(self):
        """The startup window holds the rule of 4 calls in flight as a
        bound turn does (PROTOCOL.md 3.4): a 5th MCP call while 4 wait
        upstream is refused, and goes through once they are gone.  A
        channel of its own: the window's 32 calls are its broker's."""
        key = "brk-window-inflight"
        self.start_channel(key)
        w = self.worker(key)
        self.fu.script({"kind": "stall", "seconds": 5, "repeat": 4,
                        "match": "/mcp/files"})
        held = [w.send("POST", "/mcp/files", rpc("ping", i), w.MCP_HEADERS)
                for i in range(4)]
        try:
            self.fu.wait_for(4, timeout=10)
            self.assertAnswer(w.mcp(rpc("ping", 5)), 429,
                              "Broker budget exhausted")
            self.assertEqual(len(self.fu.requests()), 4)
        finally:
            for s in held:
                s.close()
        r, deadline = None, time.monotonic() + 5
        while time.monotonic() < deadline:
            r = w.mcp(rpc("ping", 6))
            if r.status != 429:
                break
            time.sleep(0.1)
        mcp_admitted(self, r)

    def test_defaults_90s_window_and_120s_silence(self):
        """The defaults as they run, no shortened timers: the startup
        window admits metadata until 90 s after the broker armed it and
        not after; a request body that goes silent is cut 120 s after its
        last byte.  Both clocks run side by side (about two minutes)."""
        key = "brk-window-defaults"
        t0 = self.start_channel(key)
        w = self.worker(key)
        # the window was armed between t0 and the first answered ready
        self.assertLess(self.first_ready - t0, 30)
        silent = connect(w.path, 10)
        silent.sendall(build_request("POST", "/mcp/files", headers=[
            ("content-type", "application/json"),
            ("content-length", "200")]) + b'{"jsonrpc":')
        t_last = time.monotonic()
        time.sleep(max(0.0, t0 + 88 - time.monotonic()))
        self.assertLess(time.monotonic(), self.first_ready + 89.5,
                        "too slow to see the window before it ends")
        mcp_admitted(self, w.mcp(rpc("ping", 1)))
        time.sleep(max(0.0, self.first_ready + 90.5 - time.monotonic()))
        self.assertAnswer(w.mcp(rpc("ping", 2)), 410)
        self.assertAnswer(w.model(), 410)
        # still open: not a byte came, and 120 s have not passed
        r = read_response(silent, timeout=t_last + 135 - time.monotonic())
        cut = r.arrivals[-1][0] if r.arrivals else time.monotonic()
        self.assertTrue(r.eof, "the silent connection was not cut")
        self.assertEqual(r.raw, b"")
        self.assertGreater(cut - t_last, 119)
        self.assertLess(cut - t_last, 126)
        self.assertEqual([x["mcp"]["method"] for x in self.fu.requests()],
                         ["ping"])


# ---------------------------------------------------------------- 3.5

class Listener(BrokerCase):
    CHANNEL = "brk-listen"

    def setUp(self):
        super().setUp()
        self.start_channel()

    def test_seventeenth_connection_closed(self):
        w = self.worker()
        held = []
        try:
            for _ in range(16):
                held.append(connect(w.path, 10))
            time.sleep(0.3)
            t = time.monotonic()
            extra = connect(w.path, 10)
            try:
                extra.sendall(build_request("POST", "/worker/ready"))
            except (BrokenPipeError, ConnectionResetError):
                pass            # closed even before the request went out
            r = read_response(extra, 5)
            self.assertTrue(r.eof)
            self.assertEqual(r.raw, b"")
            self.assertLess(time.monotonic() - t, 2)
            # the 16 are still served
            held[0].sendall(build_request("POST", "/worker/ready"))
            self.assertAnswer(read_response(held.pop(0), 5), 200, "Ready")
        finally:
            for s in held:
                s.close()
        # and once they are gone, new ones are
        self.assertTrue(wait_until(lambda: w.ready().status == 200, 5))

    def test_bad_request_400(self):
        w = self.worker()
        for raw in (b"GARBAGE\r\n\r\n",
                    b"GET /mcp-tools HTTP/1.1\r\nHost: broker\r\nX: " +
                    b"a" * 70000 + b"\r\n\r\n",
                    b"POST /worker/ready HTTP/1.1\r\nHost: broker\r\n"
                    b"Content-Length: 1\r\nTransfer-Encoding: chunked"
                    b"\r\n\r\n0\r\n\r\n",
                    b"GET /mcp-tools HTTP/1.1\r\nHost: broker\r\n"
                    b"Bad Header\r\n\r\n",
                    b"GET /mcp-tools\r\n\r\n"):
            with self.subTest(raw=raw[:60]):
                r = w.req(None, None, raw=raw, timeout=15)
                self.assertAnswer(r, 400, "bad request")
                self.assertTrue(r.eof)
        # a partial head then end of file
        r = w.req(None, None, raw=b"GET /mcp-tools HTTP/1.1\r\nHost:")
        self.assertTrue(r.eof)

    def test_poll_held_45s_then_408(self):
        w = self.worker()
        t = time.monotonic()
        r = w.req("GET", "/worker/next", timeout=60)
        elapsed = time.monotonic() - t
        self.assertAnswer(r, 408, "Retry")
        self.assertGreater(elapsed, 44)
        self.assertLess(elapsed, 47.5)

    def test_slowloris_400_at_10s(self):
        w = self.worker()
        s = connect(w.path, 20)
        t = time.monotonic()
        s.sendall(b"GET /worker/next HTTP/1.1\r\nHost: bro")
        time.sleep(2)
        s.sendall(b"ker\r\nX-Slow: 1")
        r = read_response(s, 15)
        elapsed = r.arrivals[0][0] - t if r.arrivals else None
        self.assertAnswer(r, 400, "bad request")
        self.assertTrue(r.eof)
        self.assertIsNotNone(elapsed)
        self.assertGreater(elapsed, 9.0)
        self.assertLess(elapsed, 11.0)


# ---------------------------------------------------------------- 3.3 tools

class HostTools(BrokerCase):
    CHANNEL = "brk-tools"

    def setUp(self):
        super().setUp()
        self.start_channel()

    def test_identity_from_binding(self):
        def hook(p):
            return {"ok": True, "text": "rolled 4"}
        with self.in_turn(hook=hook) as (w, tr, turn):
            r = w.tool("roll_dice", {
                "input": {"sides": 6}, "channel": "forged:1",
                "profile": "evil", "speaker": {"id": "root", "name": "Root"},
                "turnId": "forged-turn", "thinking": "xhigh",
                "context": {"channel": "forged:2"}})
            self.assertAnswer(r, 200)
            self.assertEqual(r.json(), {"ok": True, "text": "rolled 4"})
        self.assertEqual(len(tr.hook_calls), 1)
        p = tr.hook_calls[0]
        self.assertEqual(p["name"], "roll_dice")
        self.assertEqual(p["input"], {"sides": 6})
        self.assertEqual(p["context"], {
            "channel": self.CHANNEL, "profile": "default",
            "speaker": {"id": "u-1", "name": "Ann"}, "thinking": "low",
            "turnId": turn["turnId"]})
        self.assertNotIn("forged", json.dumps(p))

    def test_bad_answer_502(self):
        png = base64.b64encode(b"\x89PNG\r\n").decode()
        bad = [{"ok": "yes"}, {"text": "no ok"}, {"ok": True, "text": 5},
               {"ok": True, "text": "t" * 1000001},
               {"ok": True, "text": "t" * 999999 + "\U0001F600"},
               {"ok": False, "error": "e" * 10001},
               {"ok": True, "image": {"data": "x", "mimeType": "image/png"}},
               {"ok": True, "image": {"data": png, "mimeType": "image/bmp"}},
               {"ok": True, "image": {"data": png, "mimeType": "image/png",
                                      "x": 1}},
               {"ok": True, "text": "x", "evil": 1}, [1], "text", None]
        answers = iter(bad)
        with self.in_turn(hook=lambda p: next(answers)) as (w, tr, turn):
            for i, a in enumerate(bad):
                with self.subTest(answer=json.dumps(a)[:60]):
                    self.assertAnswer(w.tool("lookup", {"input": {"q": i}}),
                                      502, "Broker call failed")
            # valid ones at the limits pass, as the hook gave them
            good = [{"ok": False, "error": "e" * 10000},
                    {"ok": True, "text": "t" * 999998 + "\U0001F600"},
                    {"ok": True, "image": {"data": png,
                                           "mimeType": "image/png"}}]
            answers = iter(good)
            tr.hook = lambda p: next(answers)
            for a in good:
                r = w.tool("lookup", {"input": {}})
                self.assertAnswer(r, 200)
                self.assertEqual(r.json(), a)

    def test_unlisted_tool_404(self):
        with self.in_turn() as (w, tr, turn):
            for name in ("unlisted", "Roll_dice", "roll-dice", "roll_dice2",
                         "x" * 49):
                self.assertAnswer(w.tool(name, {"input": {}}), 404,
                                  "Not found")
        self.assertEqual(tr.hook_calls, [])

    def test_invalid_input_400(self):
        with self.in_turn() as (w, tr, turn):
            for body in ({}, {"input": "text"}, {"input": [1]},
                         {"input": None}, {"input": 3}, {"name": "x"}):
                with self.subTest(body=body):
                    self.assertAnswer(w.tool("roll_dice", body), 400,
                                      "Invalid tool input")
            for raw in (b"[1]", b"{bad", b'"s"'):
                with self.subTest(raw=raw):
                    self.assertAnswer(w.req("POST", "/tools/roll_dice", raw),
                                      400, "Invalid input")
        self.assertEqual(tr.hook_calls, [])


# ---------------------------------------------------------------- turns

class TurnSemantics(BrokerCase):
    """DESIGN.md 6: busy, deadline, cancel, a client that leaves."""

    TURN_MS = 3000
    CHANNEL = "brk-turns"

    def test_invalid_turn(self):
        for extra in ({"turnId": "../x"}, {"turnId": ""},
                      {"text": "a" * 100001},
                      {"text": "a" * 99999 + "\U0001F600"},
                      {"author": {"id": "i" * 257, "name": "n"}},
                      {"memory": "m" * 100001}, {"thinking": "max"},
                      {"images": [{"data": "eA==", "mimeType": "image/bmp"}]},
                      {"images": [{"data": "eA==",
                                   "mimeType": "image/png"}] * 9}):
            with self.subTest(field=list(extra)[0]):
                res = self.ctl.call("turn.run",
                                    self.turn_params("brk-invalid", **extra))
                self.assertEqual(res["ok"], False, res)
                self.assertEqual(res["reason"], "invalid", res)
        self.assertFalse(self.container_exists("brk-invalid"))

    def test_busy(self):
        key = "brk-busy"
        self.start_channel(key)
        w = self.worker(key)
        tr = self.begin_turn(key)
        turn = self.next_turn(w, tr)
        with Client(self.d.socket) as c2:
            res = c2.call("turn.run", self.turn_params(key))
        self.assertEqual(res["ok"], False)
        self.assertEqual(res["reason"], "busy")
        # and on the first client too
        res = self.ctl.call("turn.run", self.turn_params(key))
        self.assertEqual(res["reason"], "busy")
        self.assertAnswer(w.result(turn["turnId"], {"ok": True, "text": "1",
                                                    "files": []}),
                          200, "Accepted")
        self.assertEqual(tr.wait()["text"], "1")

    def test_deadline(self):
        key = "brk-deadline"
        self.start_channel(key)
        self.assertTrue(self.container_exists(key))
        w = self.worker(key)
        tr = self.begin_turn(key)
        turn = self.next_turn(w, tr)
        res = tr.wait(20)
        self.assertEqual(res["ok"], False)
        self.assertEqual(res["reason"], "timeout")
        elapsed = tr.answered_at - tr.sent_at
        self.assertGreater(elapsed, 2.5)
        self.assertLess(elapsed, 3.0 + 3)
        self.assertTrue(wait_until(lambda: not self.container_exists(key),
                                   20), "the container outlived the turn")
        r = self.ctl.call("channel.status", {"channel": key})
        self.assertEqual(r["state"], "missing")
        # the late result finds nothing
        if os.path.exists(w.path):
            try:
                r = w.result(turn["turnId"], {"ok": True, "text": "late",
                                              "files": []})
                self.assertNotEqual(r.status, 200)
            except OSError:
                pass

    def test_cancel(self):
        key = "brk-cancel"
        self.start_channel(key)
        w = self.worker(key)
        tr = self.begin_turn(key)
        self.next_turn(w, tr)
        self.assertEqual(self.ctl.call("turn.cancel", {"channel": key}),
                         {"cancelled": True})
        res = tr.wait(10)
        self.assertEqual(res["ok"], False)
        self.assertEqual(res["reason"], "cancelled")
        self.assertTrue(wait_until(lambda: not self.container_exists(key),
                                   20), "the container outlived the turn")
        self.assertEqual(self.ctl.call("turn.cancel", {"channel": key}),
                         {"cancelled": False})

    def test_result_arriving_when_the_turn_ends_400(self):
        """PROTOCOL.md 3.1: a result whose turn ends while it is read gets
        400 Invalid result before its connection goes."""
        key = "brk-cut-result"
        self.start_channel(key)
        w = self.worker(key)
        tr = self.begin_turn(key)
        tid = self.next_turn(w, tr)["turnId"]
        body = json.dumps({"turnId": tid, "result": {
            "ok": True, "text": "late", "files": []}}).encode()
        s = w.send("POST", "/worker/result", raw=(
            b"POST /worker/result HTTP/1.1\r\nHost: broker\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body[:10]))
        time.sleep(0.3)
        # Once the broker has answered a request sent after those bytes
        # were written, it has read them: one event loop serves both.  On
        # a loaded machine 0.3 s alone was not always enough.
        self.assertAnswer(w.req("GET", "/mcp-tools"), 200)
        self.assertEqual(self.ctl.call("turn.cancel", {"channel": key}),
                         {"cancelled": True})
        self.assertAnswer(read_response(s, 20), 400, "Invalid result")
        res = tr.wait(20)
        self.assertEqual(res["reason"], "cancelled")

    def test_worker_ready_again_ends_its_turn(self):
        """A worker that announces itself while its turn is delivered and
        unanswered started again: that turn, delivered at most once, ends
        now, and its container goes."""
        key = "brk-restarted"
        self.start_channel(key)
        w = self.worker(key)
        tr = self.begin_turn(key)
        self.next_turn(w, tr)
        self.assertAnswer(w.ready(), 200, "Ready")
        res = tr.wait(10)
        self.assertEqual(res, {"ok": False, "reason": "worker_failed",
                               "message": "The worker stopped before it "
                                          "answered", "timedOut": False})
        self.assertFalse(self.container_exists(key))

    def test_client_disconnect_cancels(self):
        key = "brk-leave"
        self.start_channel(key)
        w = self.worker(key)
        tr = self.begin_turn(key)
        self.next_turn(w, tr)
        self.assertTrue(self.container_exists(key))
        tr.disconnect()
        self.assertTrue(wait_until(lambda: not self.container_exists(key),
                                   20), "the container outlived the turn")
        # the channel is free again: a new turn is not busy
        res = self.ctl.call("turn.cancel", {"channel": key})
        self.assertEqual(res, {"cancelled": False})



if __name__ == "__main__":
    unittest.main(verbosity=2)
