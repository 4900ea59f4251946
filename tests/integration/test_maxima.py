"""One broker at every maximum of PROTOCOL.md at once, against the real
rtsandboxd (the harness of test_broker.py): the turn with 64 MiB of images
and 100 000 chars of text and memory, taken by a worker that reads none of
it; a host tool's answer of 1 000 000 chars and a 20 MiB image, unread too;
four model calls of 96 MiB, each with MODEL_NODES_MAX values, held in
flight by the upstream as far as egress admits them (it holds a peer to
its own cap of body bytes); and a result of 72 MiB.

Every one of them must be served within the broker's RLIMIT_DATA (read
from /proc/<pid>/limits: the limit the broker set itself), and the peak of
its VmData, sampled every millisecond, is printed: the figure
BROKER_DATA_MAX in common/limits.h is derived from.  RTSB_MAXIMA_SCALE
(default 1) runs the same at a fraction of each size, for a quick look."""

import base64
import os
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_broker as tb  # noqa: E402

MIB = 1048576
SCALE = float(os.environ.get("RTSB_MAXIMA_SCALE", "1"))
# PROTOCOL.md and common/limits.h
MODEL_BODY_MAX = 96 * MIB
MODEL_NODES_MAX = 4194304
RESULT_BODY_MAX = 72 * MIB
IMAGE_BYTES_MAX = 20 * MIB
IMAGES_TOTAL_MAX = 64 * MIB
TOOL_TEXT_MAX = 1000000
TEXT_MAX = 100000
REPLY_FILE_MAX = 10 * MIB
REPLY_FILES_TOTAL_MAX = 50 * MIB


def setUpModule():
    tb.setUpModule()


def tearDownModule():
    tb.tearDownModule()


def status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def data_limit(pid):
    """The process's own RLIMIT_DATA, in bytes (None: unlimited)."""
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max data size"):
                v = line.split()[3]
                return None if v == "unlimited" else int(v)
    raise AssertionError("no data limit for %d" % pid)


class Sampler(threading.Thread):
    """VmData of pid every millisecond: its peak and when."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.stop = threading.Event()
        self.marks = []

    def run(self):
        while not self.stop.is_set():
            try:
                v = status_kib(self.pid, "VmData")
            except OSError:
                return
            if v is not None and v > self.peak:
                self.peak = v
            time.sleep(0.001)

    def mark(self, what):
        self.marks.append((what, self.peak,
                           status_kib(self.pid, "VmData") or 0))


def model_body(size, nodes):
    """A model request of exactly size bytes holding about nodes JSON values
    and keys: a tool_use input of zeros, and a text that fills the rest."""
    zeros = max(nodes - 40, 1)
    head = (b'{"model":"m","max_tokens":100,"messages":['
            b'{"role":"user","content":"go"},'
            b'{"role":"assistant","content":[{"type":"tool_use","id":"t1",'
            b'"name":"n","input":{"a":[' + b"0," * (zeros - 1) + b'0]}}]},'
            b'{"role":"user","content":[{"type":"tool_result",'
            b'"tool_use_id":"t1","content":"')
    tail = b'"}]}]}'
    fill = size - len(head) - len(tail)
    assert fill >= 0, (size, nodes)
    return head + b"a" * fill + tail


def image(nbytes):
    raw = bytes(range(256)) * (nbytes // 256) + bytes(nbytes % 256)
    return {"data": base64.b64encode(raw).decode(), "mimeType": "image/png"}


def result_body(turn_id, size):
    """A result of exactly size bytes: 10 files, 50 MiB decoded in all,
    text of 100 000 chars, white space up to size."""
    n = 10
    each = int(min(REPLY_FILE_MAX, REPLY_FILES_TOTAL_MAX // n) * SCALE)
    raw = bytes(range(256)) * (each // 256) + bytes(each % 256)
    b64 = base64.b64encode(raw).decode()
    files = ",".join('{"name":"f%d.bin","data":"%s"}' % (i, b64)
                     for i in range(n))
    body = ('{"turnId":"%s","result":{"ok":true,"text":"%s","files":[%s]}}'
            % (turn_id, "t" * int(TEXT_MAX * SCALE), files)).encode()
    assert len(body) <= size, (len(body), size)
    return body + b" " * (size - len(body))


class Maxima(tb.BrokerCase):
    CHANNEL = "brk-maxima"
    TURN_MS = 600000

    def test_every_maximum_at_once(self):
        self.start_channel()
        pid = self.broker_pid()
        limit = data_limit(pid)
        w = self.worker()
        smp = Sampler(pid)
        smp.start()
        self.addCleanup(smp.stop.set)

        # The turn: 64 MiB of images, 100 000 chars of text and memory.
        per = int(IMAGE_BYTES_MAX * SCALE)
        total = int(IMAGES_TOTAL_MAX * SCALE)
        imgs = []
        while total > 0:
            imgs.append(image(min(per, total)))
            total -= min(per, total)

        def hook(params):
            # a host tool's largest answer
            return {"ok": True, "text": "x" * int(TOOL_TEXT_MAX * SCALE),
                    "image": image(int(IMAGE_BYTES_MAX * SCALE))}
        tr = self.begin_turn(hook=hook, images=imgs,
                             text="y" * int(TEXT_MAX * SCALE),
                             memory="z" * int(TEXT_MAX * SCALE))
        # taken, and read no further than its head: the broker keeps the
        # rest for the worker
        s_next = w.send("GET", "/worker/next", timeout=600)
        head = s_next.recv(4096)
        self.assertIn(b" 200 ", head.split(b"\r\n", 1)[0])
        turn_id = tr.params["turnId"]
        self.assertTrue(tb.wait_until(lambda: "delivered" in tr.progress,
                                      60), tr.progress)
        smp.mark("turn delivered, unread")

        # A host tool's largest answer, unread.
        s_tool = w.send("POST", "/tools/lookup", {"input": {"q": 1}},
                        timeout=600)
        self.assertIn(b" 200 ", s_tool.recv(4096).split(b"\r\n", 1)[0])
        self.assertTrue(tb.wait_until(lambda: len(tr.hook_calls) == 1, 30))
        smp.mark("tool answer, unread")

        # Four model calls of 96 MiB, held in flight by the upstream.
        self.fu.script({"match": "/v1/messages", "kind": "stall",
                        "seconds": 600, "repeat": 4})
        body = model_body(int(MODEL_BODY_MAX * SCALE),
                          int(MODEL_NODES_MAX * SCALE))
        calls = []
        for _ in range(4):
            s = w.send("POST", "/anthropic/v1/messages", raw=(
                "POST /anthropic/v1/messages HTTP/1.1\r\nHost: broker\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\n"
                "\r\n" % len(body)).encode(), timeout=600)
            calls.append(s)
        senders = [threading.Thread(target=s.sendall, args=(body,))
                   for s in calls]
        for t in senders:
            t.start()
        for t in senders:
            t.join(600)
        heads = []
        for s in calls:
            s.settimeout(600)
            heads.append(s.recv(4096))
        # The broker reads, rebuilds and hands egress every one; egress
        # keeps a peer to its own cap of body bytes (egress.c), past which
        # it answers busy.
        admitted = 0
        for h in heads:
            line = h.split(b"\r\n", 1)[0]
            if b" 200 " in line:
                admitted += 1
            else:
                self.assertIn(b" 503 ", line, h[:200])
                self.assertTrue(h.endswith(b"\r\n\r\nBroker call failed"),
                                h[:200])
        self.assertGreaterEqual(admitted, 1)
        self.assertEqual(len(self.fu.requests(path="/v1/messages")),
                         admitted)
        self.assertEqual(self.d.read_log().count(
            "broker[%s]: call refused: egress holds" % self.CHANNEL) +
            admitted, 4)
        smp.mark("four model calls, %d in flight" % admitted)

        # The result, with all of it still held.
        rbody = result_body(turn_id, int(RESULT_BODY_MAX * SCALE))
        r = w.req("POST", "/worker/result", raw=(
            "POST /worker/result HTTP/1.1\r\nHost: broker\r\n"
            "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % len(rbody)).encode() + rbody, timeout=600)
        self.assertEqual(r.status, 200, r)
        smp.mark("result accepted")
        res = tr.wait(600)
        self.assertTrue(res["ok"], str(res)[:200])
        self.assertEqual(len(res["files"]), 10)
        smp.stop.set()
        smp.join(5)
        for s in calls + [s_next, s_tool]:
            s.close()
        sys.stderr.write("\n  broker VmData peak at every maximum at once "
                         "(scale %g): %.1f MiB; RLIMIT_DATA %s\n" % (
                             SCALE, smp.peak / 1024.0,
                             "unlimited" if limit is None else
                             "%.0f MiB" % (limit / MIB)))
        for what, peak, now in smp.marks:
            sys.stderr.write("    %-30s peak %.1f MiB, then %.1f MiB\n" % (
                what, peak / 1024.0, now / 1024.0))
        self.assertEqual(self.broker_pid(), pid)
        if limit is not None:
            self.assertLess(smp.peak * 1024, limit)


if __name__ == "__main__":
    unittest.main(verbosity=2)
