"""Credentials from the bot, per call (upstream.credential "hook"), against
the real daemon, egress, the reference worker and Docker.

For each model call egress asks, through the supervisor, the credential.get
hook of the client that asked for the turn, naming the channel, profile and
speaker; the token goes to the upstream for that call alone and never into
the log.  A hook that answers an error, an empty token or nothing within
10 s fails that one call with a 502 before any connection, and the turn goes
on (the reference worker then answers it as failed); the next turn with a
working hook succeeds.  Without a client that serves the hook the call
fails the same way."""

import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import rtsb  # noqa: E402
from rtsb import Client, Daemon  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
PREFIX = "rtsbc%d" % os.getpid()


class CredClient(Client):
    """A client that serves credential.get as told by self.mode:
    "token" (a token naming the speaker), "error", "empty" or "hold"."""

    def __init__(self, path):
        super().__init__(path, hooks=("credential.get",))
        self.mode = "token"
        self.asked = []

    def turn(self, params, timeout=60):
        self.sock.settimeout(timeout)
        rid = self.request("turn.run", params)
        while True:
            m = self.read_message()
            if m.get("id") == rid and "method" not in m:
                if "error" in m:
                    raise AssertionError(m["error"])
                return m["result"]
            if m.get("method") == "credential.get":
                self.asked.append(m["params"])
                self.answer(m)

    def answer(self, m):
        import json
        if self.mode == "hold":
            return
        if self.mode == "error":
            msg = {"error": {"code": -32000, "message": "getter threw"}}
        elif self.mode == "empty":
            msg = {"result": {"token": ""}}
        else:
            sp = m["params"].get("speaker") or {}
            msg = {"result": {"token": "sk-hook-%s" % sp.get("id")}}
        msg.update({"jsonrpc": "2.0", "id": m["id"]})
        self.send_raw((json.dumps(msg) + "\n").encode())


class CredHook(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        reason = rtsb.docker_skip_reason(IMAGE)
        if reason:
            raise unittest.SkipTest(reason)
        cls.certdir = tempfile.mkdtemp(prefix="rtsb-certs-", dir="/tmp")
        cls.fu = FakeUpstream(cls.certdir, default_delay_ms=5)
        cls.fu.start()

        def conf(c):
            c["docker"] = {"container_prefix": PREFIX}
            c["upstream"] = {"url": cls.fu.url, "ca_file": cls.fu.ca_file,
                             "credential": "hook"}
            c["timeouts"] = {"start_ms": 20000, "turn_ms": 40000}
        cls.d = Daemon(config=conf)
        try:
            cls.d.start()
            cls.c = CredClient(cls.d.socket)
        except Exception:
            cls.tearDownClass()
            raise
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "c", None) is not None:
            cls.c.close()
        d = getattr(cls, "d", None)
        if d is not None:
            try:
                d.stop()
            finally:
                rtsb.remove_containers(PREFIX)
                d.cleanup()
        cls.fu.stop()
        shutil.rmtree(cls.certdir, ignore_errors=True)

    def setUp(self):
        self.fu.reset()
        self.c.mode = "token"
        self.c.asked = []

    def turn(self, key, speaker="u1", timeout=60):
        type(self).n += 1
        return self.c.turn({
            "channel": key, "profile": "default", "turnId": "t%d" % self.n,
            "author": {"id": speaker, "name": "Speaker " + speaker},
            "text": "hello", "images": [], "memory": "",
            "thinking": "low"}, timeout)

    def test_daemon_config_says_hook(self):
        cfg = self.c.call("daemon.config")
        self.assertEqual(cfg["upstream"]["credential"], "hook")
        self.assertEqual(cfg["mcp"]["credential"], "none")

    def test_each_call_gets_its_speakers_token(self):
        for who in ("alice", "bob"):
            res = self.turn("cred:speakers", speaker=who)
            self.assertTrue(res["ok"], res)
            reqs = self.fu.requests(path="/v1/messages")
            self.assertGreaterEqual(len(reqs), 1)
            self.assertEqual(reqs[-1]["token"], "sk-hook-" + who)
        asked = [a for a in self.c.asked if a["kind"] == "model"]
        self.assertEqual(asked[-1], {
            "kind": "model", "channel": "cred:speakers",
            "profile": "default",
            "speaker": {"id": "bob", "name": "Speaker bob"}})
        self.assertNotIn("sk-hook-", self.d.read_log())

    def failed_call(self, mode, timeout=60):
        res = self.turn("cred:" + mode)    # warm: the channel is up
        self.assertTrue(res["ok"], res)
        self.fu.reset()
        self.c.mode = mode
        t0 = time.monotonic()
        res = self.turn("cred:" + mode, timeout=timeout)
        took = time.monotonic() - t0
        # the call failed before any connection; the turn went on to the
        # worker's own answer, not a deadline or a daemon failure
        self.assertEqual(self.fu.requests(path="/v1/messages"), [])
        self.assertFalse(res["ok"], res)
        self.assertEqual(res["reason"], "worker_failed", res)
        self.c.mode = "token"
        res2 = self.turn("cred:" + mode)
        self.assertTrue(res2["ok"], res2)
        return took

    def test_getter_that_throws(self):
        self.failed_call("error")

    def test_getter_that_answers_empty(self):
        self.failed_call("empty")

    def test_getter_that_never_answers(self):
        took = self.failed_call("hold")
        self.assertGreaterEqual(took, 9.5)
        self.assertLess(took, 30)

    def test_no_client_serves_the_hook(self):
        """A turn asked by a client without the hook, while no other
        client serves it either: each call fails with a 502."""
        self.c.close()
        try:
            with Client(self.d.socket) as plain:
                plain.sock.settimeout(60)
                type(self).n += 1
                res = plain.call("turn.run", {
                    "channel": "cred:none", "profile": "default",
                    "turnId": "t%d" % self.n,
                    "author": {"id": "u", "name": "U"}, "text": "hello",
                    "images": [], "memory": "", "thinking": "low"})
            self.assertFalse(res["ok"], res)
            self.assertEqual(res["reason"], "worker_failed", res)
            self.assertEqual(self.fu.requests(path="/v1/messages"), [])
            self.assertIn("no client serves credential.get",
                          self.d.read_log())
        finally:
            type(self).c = CredClient(self.d.socket)


if __name__ == "__main__":
    unittest.main(verbosity=2)
