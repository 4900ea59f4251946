"""The reference worker's precheck command (rtsandbox-worker precheck)
outside a container, against a broker played here on a Unix socket that
PRECHECK_BROKER_SOCKET names: stdout holds the one answer and nothing
else, the script's log goes to stderr, the MCP requests are what the
contract says, the broker's refusals come back as statuses or errors, two
calls at once meet a 409, and a write to a place the worker may not write
is reported by its errno name.  No Docker: the static binary runs here as
the test's user."""
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import rtsb  # noqa: E402

WORKER = os.path.join(rtsb.BUILD, "worker", "rtsandbox-worker")

GRANTED = [{"name": "srv", "tools": ["get", "slow", "secret", "busy"]}]


def read_request(sock):
    sock.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("the worker left before its request")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target = lines[0].split(" ")[:2]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    n = int(headers.get("content-length", "0"))
    while len(body) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("the worker left mid-body")
        body += chunk
    return {"method": method, "target": target, "headers": headers,
            "body": body}


def send(sock, status, body):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    try:
        sock.sendall(b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\n"
                     b"content-length: %d\r\nconnection: close\r\n\r\n"
                     % (status, len(body)) + body)
    finally:
        sock.close()


class Broker:
    """A precheck run's broker: srv is granted, one call at a time."""

    def __init__(self, path):
        self.path = path
        self.requests = []
        self.in_flight = 0
        self.lock = threading.Lock()
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(path)
        self.lsock.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                s, _ = self.lsock.accept()
            except OSError:
                return
            # Read here, in the order of arrival, so that a second call
            # sent while the first is held is seen as one at once.
            try:
                req = read_request(s)
            except (OSError, AssertionError):
                s.close()
                continue
            self.requests.append(req)
            with self.lock:
                busy = self.in_flight > 0
                if not busy:
                    self.in_flight += 1
            if busy:
                send(s, 409, {"error": "one call at a time"})
                continue
            threading.Thread(target=self._answer, args=(s, req),
                             daemon=True).start()

    def _answer(self, s, req):
        try:
            status, body = self.route(req)
            if req["target"] == "/mcp/srv" and \
                    json.loads(req["body"])["params"]["name"] == "slow":
                time.sleep(0.5)
        finally:
            with self.lock:
                self.in_flight -= 1
        send(s, status, body)

    def route(self, req):
        if req["method"] != "POST" or not req["target"].startswith("/mcp/"):
            return 404, {"error": "not found"}
        if req["target"] != "/mcp/srv":
            return 404, {"error": "server not granted"}
        tool = json.loads(req["body"])["params"]["name"]
        if tool == "secret":
            return 403, {"error": "tool not granted"}
        if tool == "busy":
            return 429, {"error": "too many calls"}
        if tool not in GRANTED[0]["tools"]:
            return 403, {"error": "tool not granted"}
        return 200, {"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": "3 new messages"}],
            "structuredContent": {"count": 3, "first": "Hello"}}}

    def close(self):
        self.lsock.close()


@unittest.skipUnless(os.path.exists(WORKER),
                     "no static worker in this build (sanitizers, fuzzing)")
class Precheck(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtsb-precheck-")
        self.broker = Broker(os.path.join(self.tmp, "broker.sock"))

    def tearDown(self):
        self.broker.close()
        ro = os.path.join(self.tmp, "ro")
        if os.path.isdir(ro):
            os.chmod(ro, 0o755)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_raw(self, data):
        p = subprocess.run(
            [WORKER, "precheck"], input=data, capture_output=True,
            timeout=60, env={"PRECHECK_BROKER_SOCKET": self.broker.path})
        self.assertEqual(p.returncode, 0, p.stderr)
        # One JSON object and nothing else, not even a newline.
        answer = json.loads(p.stdout.decode())
        self.assertEqual(p.stdout, json.dumps(
            answer, separators=(",", ":"), ensure_ascii=False).encode())
        self.assertIsInstance(answer, dict)
        return answer, p.stderr.decode()

    def run_script(self, script, servers=GRANTED):
        return self.run_raw(json.dumps({
            "script": script, "firedAt": "2025-03-01T07:00:00.000Z",
            "timeZone": "Europe/Paris", "today": "2025-03-01",
            "schedule": {"id": 42, "title": "Inbox"},
            "servers": servers}).encode())

    def test_a_whole_script(self):
        ro = os.path.join(self.tmp, "ro")
        os.mkdir(ro)
        os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
        out = os.path.join(self.tmp, "out.txt")
        script = "\n".join([
            "# a precheck of the inbox",
            "log checking ${schedule.title} for ${today}",
            "call srv get {\"folder\": \"${schedule.title}\", \"n\": 5}",
            "log got ${last.content.0.text}",
            "json srv get",
            "log count ${last.count}",
            "try POST /mcp/other {\"jsonrpc\":\"2.0\"}",
            "try POST /mcp/srv {\"jsonrpc\":\"2.0\",\"id\":1,"
            "\"method\":\"tools/call\",\"params\":{\"name\":\"secret\"}}",
            "try GET /nowhere",
            "try2 srv slow {}",
            "write %s ${statuses}" % out,
            "write %s/x nope" % ro,
            "write %s/none/x nope" % self.tmp,
            "write /proc/version nope",
            "log writes ${writes}",
            "when count > 2 wake ${last.count} new: ${last.first} "
            "${statuses} ${writes}",
            "skip not reached",
        ])
        answer, err = self.run_script(script)
        ro_errno = "ok" if os.geteuid() == 0 else "EACCES"
        statuses = [404, 403, 404, 200, 409]
        writes = ["ok", ro_errno, "ENOENT", "EACCES"]
        self.assertEqual(answer, {"ok": True, "result": {
            "wake": True,
            "context": "3 new: Hello %s %s" % (
                json.dumps(statuses, separators=(",", ":")),
                json.dumps(writes, separators=(",", ":")))}})
        # The log is on stderr, in order.
        self.assertIn("checking Inbox for 2025-03-01\n", err)
        self.assertIn("got 3 new messages\n", err)
        self.assertIn("count 3\n", err)
        self.assertIn("writes %s\n" % json.dumps(
            writes, separators=(",", ":")), err)
        with open(out) as f:
            self.assertEqual(f.read(), "[404,403,404,200,409]")

        # What reached the broker: two calls, three tries, the pair.
        reqs = self.broker.requests
        self.assertEqual([(r["method"], r["target"]) for r in reqs], [
            ("POST", "/mcp/srv"), ("POST", "/mcp/srv"),
            ("POST", "/mcp/other"), ("POST", "/mcp/srv"),
            ("GET", "/nowhere"), ("POST", "/mcp/srv"),
            ("POST", "/mcp/srv")])
        first = reqs[0]
        self.assertEqual(first["headers"]["host"], "broker")
        self.assertEqual(first["headers"]["content-type"],
                         "application/json")
        self.assertEqual(json.loads(first["body"]), {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get",
                       "arguments": {"folder": "Inbox", "n": 5}}})
        self.assertEqual(json.loads(reqs[1]["body"])["params"],
                         {"name": "get", "arguments": {}})
        for r in reqs[5:]:
            self.assertEqual(json.loads(r["body"])["params"],
                             {"name": "slow", "arguments": {}})

    def test_refusals_end_the_script(self):
        cases = [
            ("call srv nope", "srv/nope is not granted to this script", 0),
            ("call other get", "other/get is not granted to this script", 0),
            ("call srv secret", "srv/secret: that server or tool is not "
             "granted to this script", 1),
            ("call srv busy", "srv/busy: the script made too many MCP "
             "calls", 1),
        ]
        for script, error, reached in cases:
            before = len(self.broker.requests)
            answer, _ = self.run_script(script + "\nwake not reached")
            self.assertEqual(answer, {"ok": False, "error": error}, script)
            self.assertEqual(len(self.broker.requests) - before, reached)

    def test_not_this_language(self):
        answer, _ = self.run_script(
            "const r = await mcp.call('srv', 'get', {});\n"
            "return { wake: r.count > 0 };")
        self.assertFalse(answer["ok"])
        self.assertTrue(answer["error"].startswith(
            "line 1: unknown statement"), answer)
        self.assertEqual(self.broker.requests, [])

    def test_input(self):
        answer, _ = self.run_script("")
        self.assertEqual(answer, {"ok": True, "result": None})
        answer, _ = self.run_raw(b"not json")
        self.assertEqual(answer, {"ok": False,
                                  "error": "invalid precheck input"})
        answer, _ = self.run_raw(b"")
        self.assertEqual(answer, {"ok": False,
                                  "error": "invalid precheck input"})
        # 64 KiB at most: the limit is read, one byte more is refused.
        base = json.dumps({
            "script": "skip\n#", "firedAt": "f", "timeZone": "z",
            "today": "t", "schedule": {"id": 1, "title": "x"},
            "servers": []}).encode()
        pad = 65536 - len(base)
        at = base.replace(b"skip\\n#", b"skip\\n#" + b"x" * pad)
        self.assertEqual(len(at), 65536)
        answer, _ = self.run_raw(at)
        self.assertEqual(answer, {"ok": True, "result": {"wake": False}})
        answer, _ = self.run_raw(at + b" ")
        self.assertEqual(answer, {"ok": False, "error":
                                  "the precheck input is too long"})

    def test_no_broker(self):
        self.broker.close()
        os.unlink(self.broker.path)
        answer, err = self.run_script("try GET /x\ncall srv get")
        self.assertEqual(answer, {"ok": False,
                                  "error": "srv/get: the broker call failed"})
        self.assertIn("cannot connect", err)

    def test_error_cut(self):
        answer, _ = self.run_script("fail " + "\u00e9" * 1200)
        self.assertEqual(answer, {"ok": False, "error": "\u00e9" * 1000})


if __name__ == "__main__":
    unittest.main(verbosity=2)
