"""Evidence an operator can audit: one record per upstream call egress makes
with a credential, the first error event of a 200 stream, a failed turn's
cause, and a timed-out worker's last log lines read before its container
is removed.  The real rtsandboxd as an unprivileged user, the real Docker
daemon and the fake upstream; the journal is played by a datagram socket
that parses every entry field by field (tests/fixtures/fake_journal.py),
where the daemon is told to write as to journald (test.journal_socket, a
test-seam build's).  Without it, records are one line of the log.

The call records use the sleeper image, the test playing the worker
(test_broker.py's classes); the worker's log uses the reference worker
image, RTSANDBOX_WORKER_IMAGE or rtsandbox-worker:latest."""
import json
import os
import re
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))

import rtsb  # noqa: E402
import test_broker as tb  # noqa: E402
from test_broker import setUpModule, tearDownModule  # noqa: E402,F401
from fake_journal import FakeJournal  # noqa: E402

WORKER_IMAGE = os.environ.get("RTSANDBOX_WORKER_IMAGE",
                              "rtsandbox-worker:latest")
CALL = {"max_tokens": 10, "messages": [{"role": "user", "content": "e"}]}
EVIL_SPEAKER = "u-9\nRTSANDBOX_STATUS=200"


def journal_path():
    d = tempfile.mkdtemp(prefix="rtsb-j-", dir="/tmp")
    return os.path.join(d, "journal.sock")


class Journaled(tb.BrokerCase):
    """A daemon whose records go to a journal played here."""

    @classmethod
    def configure(cls, c):
        cls.journal = FakeJournal(journal_path())
        c["test"] = {"journal_socket": cls.journal.path}

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.journal.close()

    def setUp(self):
        super().setUp()
        self.journal.reset()

    def record(self, **fields):
        """The one call record with these fields."""
        got = self.journal.wait("upstream call:", **fields)
        self.assertEqual(len(got), 1, (fields, self.journal.entries,
                                       self.journal.errors))
        self.assertEqual(self.journal.errors, [])
        return got[0]

    def assertTimes(self, e):
        ttfb, ms = int(e.get("RTSANDBOX_TTFB_MS")), int(e.get("RTSANDBOX_MS"))
        self.assertLessEqual(ttfb, ms, e)
        self.assertLess(ms, 30000, e)


class CallRecords(Journaled):
    CHANNEL = "ev-calls"

    def setUp(self):
        super().setUp()
        self.start_channel()

    def test_model_call(self):
        with self.in_turn() as (w, tr, turn):
            r = w.model(CALL)
            self.assertAnswer(r, 200)
            # the stand-in counts what it sent after sending it: the
            # record is read once its answer is done
            up = self.fu.wait_for(len(self.fu.requests()), done=True)[-1]
            e = self.record(turn=turn["turnId"])
        self.assertEqual(e.get("RTSANDBOX_CHANNEL"), self.CHANNEL)
        self.assertEqual(e.get("RTSANDBOX_SPEAKER"), "u-1")
        self.assertEqual(e.get("RTSANDBOX_ROUTE"), "model /v1/messages")
        self.assertEqual(e.get("RTSANDBOX_MODEL"), tb.MODEL)
        self.assertEqual(e.get("RTSANDBOX_STATUS"), "200")
        self.assertEqual(int(e.get("RTSANDBOX_BYTES_OUT")), len(up["body"]))
        self.assertEqual(int(e.get("RTSANDBOX_BYTES_IN")),
                         up["response"]["bytes"])
        self.assertEqual(int(e.get("RTSANDBOX_BYTES_IN")), len(r.body))
        self.assertTimes(e)
        self.assertIsNone(e.get("RTSANDBOX_ERROR"))
        self.assertEqual(e.get("PRIORITY"), "6")
        self.assertNotIn(tb.REAL_TOKEN.encode(), b"".join(
            v for _, v in e.fields))

    def test_query_and_count_tokens(self):
        with self.in_turn() as (w, tr, turn):
            self.assertAnswer(w.model(
                CALL, target="/anthropic/v1/messages/count_tokens"
                "?beta=true"), 200)
            e = self.record(turn=turn["turnId"])
        self.assertEqual(e.get("RTSANDBOX_ROUTE"),
                         "model /v1/messages/count_tokens?beta=true")

    def test_mcp_calls(self):
        """Startup-window metadata calls have no turn; a tools/call names
        its tool; neither has a model.  A channel of its own, whose
        broker's startup window no turn has ended."""
        key = "ev-mcp"
        self.start_channel(key)
        w = self.worker(key)
        r = w.mcp(tb.rpc("initialize", 1, tb.INIT_PARAMS))
        self.assertAnswer(r, 200)
        sh = [("mcp-session-id", r.header("mcp-session-id"))]
        e = self.record(route="mcp files initialize", channel=key)
        self.assertIsNone(e.get("RTSANDBOX_TURN"))
        self.assertIsNone(e.get("RTSANDBOX_SPEAKER"))
        self.assertIsNone(e.get("RTSANDBOX_MODEL"))
        with self.in_turn(key) as (w, tr, turn):
            self.assertAnswer(w.mcp(tb.rpc(
                "tools/call", "c1", {"name": "echo",
                                     "arguments": {"text": "hi"}}),
                headers=sh), 200)
            e = self.record(route="mcp files tools/call echo")
        self.assertEqual(e.get("RTSANDBOX_TURN"), turn["turnId"])
        self.assertEqual(e.get("RTSANDBOX_SPEAKER"), "u-1")
        self.assertEqual(e.get("RTSANDBOX_STATUS"), "200")
        self.assertIsNone(e.get("RTSANDBOX_MODEL"))

    def test_error_body_head_without_the_credential(self):
        """A 529 whose body quotes the credential, raw or encoded, with a
        control character: the head is recorded, the credential is not,
        the control character is escaped, the head is bounded."""
        encs = ("raw", "base64", "hex", "percent")
        with self.in_turn() as (w, tr, turn):
            for enc in encs:
                self.fu.script({
                    "kind": "reflect", "status": 529, "encoding": enc,
                    "prefix": '{"type":"error","error":{"type":'
                              '"overloaded_error","message":"\x01bad key ',
                    "suffix": " %s\"}}" % ("x" * 2000),
                    "headers": {"content-type": "application/json"}})
                w.model(CALL)
            got = self.journal.wait("upstream call:", count=len(encs),
                                    turn=turn["turnId"])
        self.assertEqual(len(got), len(encs), self.journal.entries)
        for e in got:
            self.assertEqual(e.get("RTSANDBOX_STATUS"), "529")
            err = e.get("RTSANDBOX_ERROR")
            self.assertIn("overloaded_error", err)
            self.assertIn("[redacted]", err)
            for form in tb.all_encodings(tb.REAL_TOKEN):
                self.assertNotIn(form, b"".join(v for _, v in e.fields))
            self.assertIn("\\x01bad key", err)
            self.assertNotIn("\x01", err)
            self.assertTrue(err.endswith("..."), err)
            self.assertLess(len(err), 400)
            self.assertEqual(e.get("PRIORITY"), "4")

    def test_stream_error_event_after_200(self):
        """The first error event of a 200 stream is recorded once; the
        worker gets every byte of the stream as the upstream sent it."""
        events = [
            {"event": "message_start", "data": {
                "type": "message_start", "message": {
                    "id": "m1", "type": "message", "role": "assistant",
                    "model": tb.MODEL, "content": [],
                    "stop_reason": None, "usage": {"input_tokens": 1,
                                                   "output_tokens": 1}}}},
            {"event": "error", "data": {"type": "error", "error": {
                "type": "overloaded_error", "message": "first"}}},
            {"event": "error", "data": {"type": "error", "error": {
                "type": "api_error", "message": "second"}}},
        ]
        with self.in_turn() as (w, tr, turn):
            self.fu.script({"kind": "sse", "events": events,
                            "delay_ms": 20})
            r = w.model(dict(CALL, stream=True))
            self.assertAnswer(r, 200)
            self.assertTrue(r.complete, r)
            e = self.record(turn=turn["turnId"])
        sent = b"".join(tb.fake_upstream.sse_event(
            ev["event"], ev["data"]) for ev in events)
        self.assertEqual(r.body, sent)
        self.assertEqual(e.get("RTSANDBOX_STATUS"), "200")
        err = e.get("RTSANDBOX_ERROR")
        self.assertTrue(err.startswith("stream error event: "), err)
        self.assertIn("overloaded_error", err)
        self.assertNotIn("second", err)
        self.assertEqual(e.get("PRIORITY"), "4")

    def test_failure_before_any_answer(self):
        """A connection closed without an answer: egress's reason, no
        status and no time to a first byte."""
        with self.in_turn() as (w, tr, turn):
            self.fu.script({"kind": "drop"})
            self.assertAnswer(w.model(CALL), 502)
            e = self.record(turn=turn["turnId"])
        self.assertEqual(e.get("RTSANDBOX_STATUS"), "0")
        self.assertIsNone(e.get("RTSANDBOX_TTFB_MS"))
        self.assertTrue(e.get("RTSANDBOX_ERROR"))

    def test_speaker_cannot_add_a_field(self):
        """A speaker id with a newline and a field in it stays that one
        value: the entry has one status, the upstream's."""
        with self.in_turn(author={"id": EVIL_SPEAKER, "name": "Eve"}) as \
                (w, tr, turn):
            self.fu.script({"kind": "status", "status": 429})
            w.model(CALL)
            e = self.record(turn=turn["turnId"])
        self.assertEqual(e.all("RTSANDBOX_SPEAKER"),
                         [EVIL_SPEAKER.encode()])
        self.assertEqual(e.all("RTSANDBOX_STATUS"), [b"429"])
        self.assertIn("speaker=\"u-9\\x0aRTSANDBOX_STATUS=200\"",
                      e.get("MESSAGE"))


class LogLines(tb.BrokerCase):
    """No journal: one escaped key=value line of the log per call."""
    CHANNEL = "ev-log"

    def test_one_line(self):
        self.start_channel()
        with self.in_turn(author={"id": EVIL_SPEAKER, "name": "Eve"}) as \
                (w, tr, turn):
            self.assertAnswer(w.model(CALL), 200)
            pat = re.compile(r"^egress: upstream call: channel=ev-log turn=%s"
                             r" speaker=\"u-9\\x0aRTSANDBOX_STATUS=200\" "
                             r"route=\"model /v1/messages\" model=%s "
                             r"status=200 ttfb_ms=\d+ ms=\d+ bytes_out=\d+ "
                             r"bytes_in=\d+$" % (turn["turnId"], tb.MODEL),
                             re.M)
            self.assertTrue(rtsb.wait_until(
                lambda: pat.search(self.d.read_log()), 10),
                self.d.read_log()[-3000:])
        self.assertNotIn("\nRTSANDBOX_STATUS=200", self.d.read_log())


def worker_skip_reason():
    return rtsb.docker_skip_reason(WORKER_IMAGE)


@unittest.skipIf(worker_skip_reason() is not None, worker_skip_reason())
class WorkerLog(unittest.TestCase):
    """The reference worker logs each turn it starts; the model call then
    hangs until the turn's deadline: the answer says timedOut, a record
    keeps the cause, and the worker's last lines are read and recorded
    before its container is removed, within a bounded time."""

    TURN_MS = 4000

    @classmethod
    def setUpClass(cls):
        cls.prefix = "rtev%dx" % os.getpid()
        cls.fu = tb.FakeUpstream(tb._certdir, default_delay_ms=5)
        cls.fu.start()
        cls.journal = FakeJournal(journal_path())

        def conf(c):
            c["image"] = WORKER_IMAGE
            c["docker"] = {"container_prefix": cls.prefix}
            c["upstream"]["url"] = cls.fu.url
            c["upstream"]["ca_file"] = cls.fu.ca_file
            c["profiles"] = {"default": {"model": tb.MODEL}}
            c["timeouts"] = {"start_ms": 30000, "turn_ms": cls.TURN_MS}
            c["test"] = {"journal_socket": cls.journal.path}
        cls.d = rtsb.Daemon(config=conf)
        cls.d.start()
        cls.ctl = rtsb.Client(cls.d.socket)
        cls.ctl.sock.settimeout(90)

    @classmethod
    def tearDownClass(cls):
        cls.ctl.close()
        try:
            cls.d.stop()
        finally:
            tb.remove_containers(cls.prefix + "-")
            cls.d.cleanup()
            cls.fu.stop()
            cls.journal.close()

    def turn(self, turn_id, text="hello"):
        return {"channel": "ev-worker", "profile": "default",
                "turnId": turn_id, "author": {"id": "u-7", "name": "Ann"},
                "text": text, "images": []}

    def test_timeout_reads_the_log_then_removes(self):
        # a first turn starts the container; the second one hangs
        self.assertTrue(self.ctl.call("turn.run", self.turn("warm"))["ok"])
        self.fu.script({"kind": "stall", "seconds": 60,
                        "before_headers": True, "match": "/v1/messages"})
        t0 = time.monotonic()
        res = self.ctl.call("turn.run", self.turn("slow-1"))
        took = time.monotonic() - t0
        self.assertEqual(res, {"ok": False, "reason": "timeout",
                               "message": "The turn ran out of time",
                               "timedOut": True})
        # the deadline, at most 2 s of logs, and the removal
        self.assertLess(took, self.TURN_MS / 1000 + 2 + 8, took)
        failed = self.journal.wait("turn failed:", turn="slow-1")
        self.assertEqual(len(failed), 1, self.journal.entries)
        f = failed[0]
        self.assertEqual(f.get("RTSANDBOX_CHANNEL"), "ev-worker")
        self.assertEqual(f.get("RTSANDBOX_SPEAKER"), "u-7")
        self.assertEqual(f.get("RTSANDBOX_REASON"), "timeout")
        self.assertEqual(f.get("RTSANDBOX_TIMED_OUT"), "true")
        self.assertEqual(f.get("RTSANDBOX_MESSAGE"),
                         "The turn ran out of time")
        logs = self.journal.wait("worker log before removal:",
                                 turn="slow-1")
        self.assertEqual(len(logs), 1, self.journal.entries)
        text = logs[0].get("RTSANDBOX_WORKER_LOG")
        self.assertIn("turn slow-1: started", text)
        self.assertIn("turn warm: started", text)
        n = int(logs[0].get("RTSANDBOX_LINES"))
        self.assertEqual(n, len(text.split("\n")))
        self.assertLessEqual(n, 200)
        self.assertEqual(self.journal.errors, [])
        # gone once answered
        self.assertEqual(tb.prefixed_containers(self.prefix + "-"), [])

    def test_worker_failure_keeps_its_cause(self):
        """The model refuses with a 400 the worker gives up on: the worker
        answers ok:false; the container stays, its log is read all the
        same, and the answer says it did not time out."""
        self.fu.script({"kind": "status", "status": 400, "repeat": -1,
                        "match": "/v1/messages",
                        "body": {"type": "error", "error": {
                            "type": "invalid_request_error",
                            "message": "no"}}})
        try:
            res = self.ctl.call("turn.run", self.turn("bad-1"))
        finally:
            self.fu.reset()
        self.assertEqual(res["ok"], False, res)
        self.assertEqual(res["reason"], "worker_failed", res)
        self.assertIs(res["timedOut"], False, res)
        self.assertIn("workerError", res)
        f = self.journal.wait("turn failed:", turn="bad-1")[0]
        self.assertEqual(f.get("RTSANDBOX_TIMED_OUT"), "false")
        self.assertEqual(f.get("RTSANDBOX_WORKER_ERROR"), res["workerError"])
        logs = self.journal.wait("worker log:", turn="bad-1")
        self.assertEqual(len(logs), 1, self.journal.entries)
        self.assertIn("turn bad-1: failed",
                      logs[0].get("RTSANDBOX_WORKER_LOG"))
        self.assertEqual(len(tb.prefixed_containers(self.prefix + "-")), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
