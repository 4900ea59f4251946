"""The reference worker's own client timers (PROTOCOL.md 2), against a broker
played here on a Unix socket: POST /worker/ready gives up after 5 s,
GET /worker/next after 55 s, POST /worker/result after 60 s.  When ready or
the poll fails, or answers other than 2xx, the worker sleeps 250 ms and
starts again at /worker/ready; the result's fate it ignores, and goes
straight back to /worker/ready.  The broker's 45 s poll must end before
the worker's 55 s (common/limits.h checks it when it builds).  Two workers
run side by side, so the whole takes about a minute.  No Docker: the static
worker binary runs here as the test's user."""
import json
import os
import queue
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
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))

import rtsb  # noqa: E402
from fake_upstream import anthropic_message  # noqa: E402

WORKER = os.path.join(rtsb.BUILD, "worker", "rtsandbox-worker")

# The worker's timers and the time its own side takes around them.
SLACK = 1.0


class Conn:
    """One connection from the worker, its request read."""

    def __init__(self, accepted, sock):
        self.accepted, self.sock = accepted, sock
        data = b""
        sock.settimeout(10)
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError("the worker left before its request: %r"
                                     % data)
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.method, self.target = lines[0].split(" ")[:2]
        n = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                n = int(value)
        while len(body) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError("the worker left mid-body")
            body += chunk
        self.body = body

    def answer(self, status, body=b"", ctype="text/plain"):
        if isinstance(body, (dict, list)):
            body, ctype = json.dumps(body).encode(), "application/json"
        elif isinstance(body, str):
            body = body.encode()
        self.sock.sendall(b"HTTP/1.1 %d X\r\ncontent-type: %s\r\n"
                          b"content-length: %d\r\nconnection: close\r\n\r\n"
                          % (status, ctype.encode(), len(body)) + body)
        self.sock.close()
        return time.monotonic()

    def held(self, timeout=70):
        """Hold the request unanswered: when the worker gives up on it."""
        self.sock.settimeout(timeout)
        while self.sock.recv(65536):
            pass
        t = time.monotonic()
        self.sock.close()
        return t - self.accepted, t


class Broker:
    """The broker's socket, and the worker it serves."""

    def __init__(self, tmp, name):
        self.path = os.path.join(tmp, name + ".sock")
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(self.path)
        self.lsock.listen(16)
        self.conns = queue.Queue()
        threading.Thread(target=self._accept, daemon=True).start()
        ws = os.path.join(tmp, name + "-ws")
        os.mkdir(ws)
        self.log = open(os.path.join(tmp, name + ".log"), "w+")
        self.proc = subprocess.Popen(
            [WORKER], stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT,
            env={"RTSANDBOX_SOCKET": self.path, "RTSANDBOX_WORKSPACE": ws})

    def _accept(self):
        while True:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            self.conns.put((time.monotonic(), s))

    def next(self, method, target, timeout=70):
        try:
            t, s = self.conns.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no %s %s from the worker in %d s:\n%s" % (
                method, target, timeout, self.read_log()))
        c = Conn(t, s)
        if (c.method, c.target) != (method, target):
            raise AssertionError("%s %s, not %s %s" % (
                c.method, c.target, method, target))
        return c

    def read_log(self):
        self.log.seek(0)
        return self.log.read()

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.lsock.close()
        self.log.close()


@unittest.skipUnless(os.path.exists(WORKER),
                     "no static worker in this build (sanitizers, fuzzing)")
class Timers(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtsb-worker-")
        self.brokers = []

    def tearDown(self):
        for b in self.brokers:
            b.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def broker(self, name):
        b = Broker(self.tmp, name)
        self.brokers.append(b)
        b.next("GET", "/mcp-tools").answer(200, {"servers": []})
        # a 0.7.3 broker's answer: no host compactor
        b.next("GET", "/worker/config").answer(404, "Not found")
        return b

    def ready_next(self, b):
        """Ready, then the poll; the measures of what the worker did."""
        m = {}
        # ready unanswered: given up at 5 s, then 250 ms and again
        m["ready"], gone = b.next("POST", "/worker/ready").held()
        c = b.next("POST", "/worker/ready")
        m["after_ready"] = c.accepted - gone
        # a refusal: 250 ms, and again
        done = c.answer(503, "busy")
        c = b.next("POST", "/worker/ready")
        m["after_503"] = c.accepted - done
        c.answer(200, "Ready")
        # the poll unanswered: given up at 55 s, then ready again
        m["next"], gone = b.next("GET", "/worker/next").held()
        c = b.next("POST", "/worker/ready")
        m["after_next"] = c.accepted - gone
        return m

    def result(self, b, m):
        b.next("POST", "/worker/ready").answer(200, "Ready")
        turn = {"turnId": "t1", "author": {"id": "u1", "name": "Ann"},
                "text": "hi", "memory": "", "images": [], "thinking": "low"}
        b.next("GET", "/worker/next").answer(200, turn)
        c = b.next("POST", "/anthropic/v1/messages")
        model = json.loads(c.body).get("model", "m")
        c.answer(200, anthropic_message(model, [{"type": "text",
                                                 "text": "done"}],
                                        "end_turn"))
        c = b.next("POST", "/worker/result")
        m["result_body"] = json.loads(c.body)
        # the result unanswered: given up at 60 s, then ready at once
        m["result"], gone = c.held()
        c = b.next("POST", "/worker/ready")
        m["after_result"] = c.accepted - gone

    def test_timers(self):
        a, b = self.broker("a"), self.broker("b")
        mb, errors = {}, []

        def side():
            try:
                self.result(b, mb)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        t = threading.Thread(target=side)
        t.start()
        ma = self.ready_next(a)
        t.join(90)
        self.assertFalse(t.is_alive(), "worker b's side never ended")
        if errors:
            raise errors[0]
        m = dict(ma, **mb)
        sys.stderr.write("\n  %s ... " % ", ".join(
            "%s %.2f s" % (k, v) for k, v in sorted(m.items())
            if isinstance(v, float)))
        # The worker's clock starts before it connects, ours when it has.
        for name, limit in (("ready", 5), ("next", 55), ("result", 60)):
            self.assertGreater(m[name], limit - SLACK, name)
            self.assertLess(m[name], limit + SLACK, name)
        for name in ("after_ready", "after_503", "after_next"):
            self.assertGreaterEqual(m[name], 0.24, name)
            self.assertLess(m[name], 0.25 + SLACK, name)
        self.assertLess(m["after_result"], SLACK)
        self.assertEqual(m["result_body"]["turnId"], "t1")
        self.assertEqual(m["result_body"]["result"]["ok"], True,
                         m["result_body"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
