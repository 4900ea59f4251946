"""A precheck run's broker: the real rtsandbox-broker, in its sandbox, with
this test playing the supervisor on its pipe and egress on the other, and a
script's client on its listening socket.  Every rule of the route in its
order, the budget at the limit and one past it, the body bound, what reaches
egress, and the configurations and messages it refuses."""

import ctypes
import fcntl
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtsb import HELPERS  # noqa: E402

BROKER = HELPERS["broker"]
DUMMY = "Bearer sandbox-dummy-key"
REQUEST_MAX = 64 * 1024
TOOLS = {"files": ["search", "fetch_page"], "other": ["echo"]}


def high(fd):
    """fd moved out of the way of the child's slots, close-on-exec."""
    h = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return h


class Pipe:
    """One end of a frame edge: u32 json length, u32 data length, both
    big-endian, the JSON, the data; descriptors with the first byte."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def send(self, msg, data=b"", fds=()):
        j = json.dumps(msg, separators=(",", ":")).encode()
        frame = struct.pack(">II", len(j), len(data)) + j + data
        if fds:
            socket.send_fds(self.sock, [frame], list(fds))
        else:
            self.sock.sendall(frame)

    def recv(self, timeout=5.0):
        """The next frame as (msg, data), or None when none came in time."""
        end = time.monotonic() + timeout
        while True:
            if len(self.buf) >= 8:
                jl, dl = struct.unpack(">II", self.buf[:8])
                if len(self.buf) >= 8 + jl + dl:
                    msg = json.loads(self.buf[8:8 + jl])
                    data = self.buf[8 + jl:8 + jl + dl]
                    self.buf = self.buf[8 + jl + dl:]
                    return msg, data
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return None
            try:
                chunk = self.sock.recv(1 << 20)
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            self.buf += chunk


class Broker:
    """rtsandbox-broker with a fake supervisor and a fake egress."""

    def __init__(self, **conf):
        self.dir = tempfile.mkdtemp(prefix="rtsb-pc-", dir="/tmp")
        self.path = os.path.join(self.dir, "broker.sock")
        sup, sup_child = socket.socketpair()
        egr, egr_child = socket.socketpair()
        a, b = high(sup_child.detach()), high(egr_child.detach())

        def slots():
            # as the supervisor starts a child (DESIGN.md 4)
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [BROKER, "-e", "optional", "-n", "pc_test"], env={},
            preexec_fn=slots, pass_fds=(3, 4), stderr=subprocess.PIPE)
        os.close(a)
        os.close(b)
        self.sup, self.egr = Pipe(sup), Pipe(egr)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(64)
        msg = {"t": "config_broker", "channel": "precheck:1", "profile": "default",
               "model": "claude-test", "max_calls": 3, "max_output_tokens": 128000,
               "tools": [], "precheck": True, "deadline_ms": 60000}
        msg.update(conf)
        try:
            self.sup.send({k: v for k, v in msg.items() if v is not None},
                          fds=[self.listener.fileno()])
            for name, tools in TOOLS.items():
                self.sup.send({"t": "config_broker_mcp", "name": name, "tools": tools})
            self.sup.send({"t": "config_done"})
        except (BrokenPipeError, ConnectionResetError):
            pass    # a configuration refused: the broker is gone

    def ready(self):
        got = self.sup.recv()
        return got is not None and got[0] == {"t": "ready"}

    def died(self, timeout=5.0):
        try:
            return self.proc.wait(timeout) != 0
        except subprocess.TimeoutExpired:
            return False

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stderr.close()
        self.listener.close()
        self.sup.sock.close()
        self.egr.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def open(self, method="POST", target="/mcp/files", body=b"", auth=None,
             headers=()):
        """Send a request; the socket, for answer()."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.path)
        head = "%s %s HTTP/1.1\r\nHost: broker\r\nContent-Length: %d\r\n" % (
            method, target, len(body))
        if auth is not None:
            head += "Authorization: %s\r\n" % auth
        for h in headers:
            head += h + "\r\n"
        s.sendall(head.encode() + b"\r\n" + body)
        return s

    @staticmethod
    def answer(s, timeout=10.0):
        """(status, body) of the answer, read to the close."""
        s.settimeout(timeout)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        s.close()
        head, _, body = out.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1]) if head else 0
        if b"transfer-encoding: chunked" in head.lower():
            body = dechunk(body)
        return status, body

    def request(self, *args, **kw):
        return self.answer(self.open(*args, **kw))

    def egress_call(self, timeout=5.0):
        """The next egr_call, acks and cancels passed over; None if none."""
        while True:
            got = self.egr.recv(timeout)
            if got is None or got[0]["t"] == "egr_call":
                return got

    def egress_answer(self, call, body=b'{"jsonrpc":"2.0","id":1,"result":{}}'):
        self.egr.send({"t": "egr_head", "call": call, "status": 200,
                       "hnames": ["content-type"], "hvalues": ["application/json"]})
        self.egr.send({"t": "egr_data", "call": call}, body)
        self.egr.send({"t": "egr_end", "call": call, "ok": True})


def dechunk(b):
    out = b""
    while b:
        size, _, rest = b.partition(b"\r\n")
        n = int(size.split(b";")[0], 16)
        if n == 0:
            break
        out += rest[:n]
        b = rest[n + 2:]
    return out


def call(name="search", arguments=None, method="tools/call", **extra):
    params = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    msg = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    msg.update(extra)
    return json.dumps(msg).encode()


def envelope(name, arguments):
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


class PrecheckBroker(unittest.TestCase):
    def start(self, **conf):
        b = Broker(**conf)
        self.addCleanup(b.close)
        self.assertTrue(b.ready(), "no ready after configuration")
        return b

    def served(self, b, body, server="files", auth=None):
        """A call egress gets: what it got, and the script's answer."""
        s = b.open(target="/mcp/" + server, body=body, auth=auth)
        got = b.egress_call()
        self.assertIsNotNone(got, "nothing reached egress")
        msg, data = got
        b.egress_answer(msg["call"])
        status, answer = b.answer(s)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(answer), {"jsonrpc": "2.0", "id": 1, "result": {}})
        return msg, data

    def test_call_reaches_egress_rebuilt(self):
        b = self.start()
        msg, data = self.served(b, call(arguments={"q": "x"}, extra=1), auth=DUMMY)
        self.assertEqual(msg, {"t": "egr_call", "call": msg["call"], "kind": "mcp",
                               "path": "", "server": "files", "hnames": [],
                               "hvalues": []})
        self.assertEqual(json.loads(data), envelope("search", {"q": "x"}))
        # without authorization, and absent arguments are {}
        msg, data = self.served(b, call("echo"), server="other")
        self.assertEqual(msg["server"], "other")
        self.assertEqual(json.loads(data), envelope("echo", {}))

    def test_no_worker_header_reaches_egress(self):
        b = self.start()
        s = b.open(body=call(arguments={}), headers=(
            "mcp-session-id: s1", "mcp-protocol-version: 2025-06-18", "x-app: cli"))
        msg, _ = b.egress_call()
        self.assertEqual((msg["hnames"], msg["hvalues"]), ([], []))
        b.egress_answer(msg["call"])
        self.assertEqual(b.answer(s)[0], 200)

    def test_not_found(self):
        b = self.start(max_calls=1)
        body = call(arguments={})
        for kw in [dict(method="GET"), dict(method="PUT"), dict(method="HEAD"),
                   dict(target="/mcp/files?x=1"), dict(target="/mcp/files?"),
                   dict(target="/mcp/files?beta=true"), dict(target="/mcp/files#f"),
                   dict(target="/mcp/nope"), dict(target="/mcp/"),
                   dict(target="/mcp/files/"), dict(target="/mcp/Files"),
                   dict(target="/worker/ready"), dict(method="GET", target="/worker/next"),
                   dict(method="GET", target="/mcp-tools"), dict(target="/mcp-tools"),
                   dict(target="/anthropic/v1/messages"), dict(target="/tools/roll_dice"),
                   dict(target="/compaction/compact"),
                   dict(auth="Bearer sk-real"), dict(auth="bearer sandbox-dummy-key"),
                   dict(auth=DUMMY + "x"), dict(auth="")]:
            try:
                status, text = b.request(body=body, **kw)
            except TimeoutError:
                self.fail("no answer to %r" % kw)
            self.assertEqual((status, text if kw.get("method") != "HEAD" else
                              b"Not found"), (404, b"Not found"), kw)
        # two authorizations, one of them not the dummy
        status, _ = b.request(body=body, auth=DUMMY, headers=("Authorization: Bearer x",))
        self.assertEqual(status, 404)
        self.assertIsNone(b.egress_call(0.2))
        # none of them spent the one call
        self.served(b, body)

    def test_one_call_at_a_time_then_budget(self):
        b = self.start(max_calls=3)
        first = b.open(body=call(arguments={}))
        msg, _ = b.egress_call()
        # pending: 409, and the budget is untouched
        for _ in range(5):
            self.assertEqual(b.request(body=call(arguments={})),
                             (409, b"One call at a time"))
        b.egress_answer(msg["call"])
        self.assertEqual(b.answer(first)[0], 200)
        self.served(b, call(arguments={}))
        self.served(b, call(arguments={}))       # the third: the limit
        self.assertEqual(b.request(body=call(arguments={})),
                         (429, b"Call budget exhausted"))  # one past
        self.assertIsNone(b.egress_call(0.2))
        # 404 still comes first
        self.assertEqual(b.request(method="GET")[0], 404)

    def test_refusals_spend_the_call(self):
        b = self.start(max_calls=9)
        refused = (403, b"MCP method or tool refused")
        for body in [call(method="tools/list"), call(method="initialize"),
                     json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode(),
                     call("delete_all", {}), call("echo", {}),   # another server's
                     call("search", []), call("search", "x")]:
            self.assertEqual(b.request(body=body), refused, body)
        self.assertEqual(b.request(body=b"{not json"), (400, b"Invalid input"))
        self.assertEqual(b.request(body=b'{"method":"tools/call","params":{"name":"search",'
                                        b'"name":"delete_all"}}'), (400, b"Invalid input"))
        self.assertIsNone(b.egress_call(0.2))
        self.assertEqual(b.request(body=call(arguments={})),
                         (429, b"Call budget exhausted"))

    def test_request_max(self):
        b = self.start(max_calls=3)
        head = b'{"method":"tools/call","params":{"name":"search","arguments":{"p":"'
        tail = b'"}}}'
        at = head + b"a" * (REQUEST_MAX - len(head) - len(tail)) + tail
        self.assertEqual(len(at), REQUEST_MAX)
        _, data = self.served(b, at)
        self.assertEqual(json.loads(data)["params"]["arguments"]["p"],
                         "a" * (REQUEST_MAX - len(head) - len(tail)))
        past = head + b"a" * (REQUEST_MAX + 1 - len(head) - len(tail)) + tail
        self.assertEqual(b.request(body=past), (413, b"Request body too large"))
        # chunked, past the bound
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(b.path)
        s.sendall(b"POST /mcp/files HTTP/1.1\r\nHost: broker\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n" +
                  b"%x\r\n" % len(past) + past + b"\r\n0\r\n\r\n")
        self.assertEqual(b.answer(s), (413, b"Request body too large"))
        # both were spent
        self.assertEqual(b.request(body=call(arguments={}))[0], 429)

    def test_run_ended(self):
        b = self.start(deadline_ms=1000)
        time.sleep(1.2)
        self.assertEqual(b.request(body=call(arguments={})), (410, b"Run ended"))
        self.assertEqual(b.request(method="GET")[0], 404)
        self.assertIsNone(b.egress_call(0.2))

    def test_deadline_cuts_the_call_in_flight(self):
        b = self.start(deadline_ms=1000)
        s = b.open(body=call(arguments={}))
        msg, _ = b.egress_call()
        status, _ = b.answer(s)
        self.assertEqual(status, 0)     # closed without an answer
        got = b.egr.recv(2)
        self.assertEqual(got[0], {"t": "egr_cancel", "call": msg["call"]})

    def test_turn_messages_are_refused(self):
        for msg in [{"t": "brk_bind", "turn_id": "t1", "thinking": "low",
                     "deadline_ms": 1000, "max_calls": 1},
                    {"t": "brk_cancel", "turn_id": "t1"},
                    {"t": "brk_unbind", "turn_id": "t1"}]:
            b = self.start()
            b.sup.send(msg)
            self.assertTrue(b.died(), msg)

    def test_configurations_refused(self):
        for conf in [dict(max_calls=0), dict(max_calls=101),
                     dict(deadline_ms=999), dict(deadline_ms=610001),
                     dict(deadline_ms=None), dict(tools=["roll_dice"]),
                     dict(compaction_engine="x/y", compaction_timeout_ms=120000,
                          compaction_max_bytes=1024)]:
            b = Broker(**conf)
            self.addCleanup(b.close)
            self.assertFalse(b.ready(), conf)
            self.assertTrue(b.died(), conf)

    def test_configurations_at_the_bounds(self):
        for conf in [dict(max_calls=1), dict(max_calls=100), dict(deadline_ms=1000),
                     dict(deadline_ms=610000)]:
            b = self.start(**conf)
            b.close()

    def test_turn_broker_unchanged(self):
        b = self.start(precheck=None, deadline_ms=None, max_calls=128)
        status, body = b.request(method="GET", target="/mcp-tools")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body), {"servers": [
            {"name": n, "tools": t} for n, t in TOOLS.items()]})
        # the startup window: metadata only
        self.assertEqual(b.request(body=call(arguments={})), (403, b"MCP method refused"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
