#!/usr/bin/env python3
"""A helper killed while it holds a request of the next turn, or just before
the next turn comes: that turn succeeds (DESIGN.md 1, invariant 7; the
fault rules of rtsandboxd(8)).

The file guard and the Docker client are stopped (SIGSTOP) before the turn
is asked, so that the turn's request waits in their pipe, then killed: the
supervisor sends what is safe to repeat (directory preparation, status,
ensure-running, remove, bind) again once the helper is back.  Egress is
killed the same way while it holds the turn's bind: the turn, which no
broker had yet, starts its channel again (a new broker for the new egress)
and is bound anew.  The broker and the worker are killed just before the
turn is asked.  Each turn is answered ok within its deadline, and the
killed helper came back."""

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import rtsb  # noqa: E402
from rtsb import Client, Daemon, wait_until  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
PREFIX = "rtsbk%d" % os.getpid()
TURN_MS = 30000


class Kills(unittest.TestCase):

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
            c["upstream"]["url"] = cls.fu.url
            c["upstream"]["ca_file"] = cls.fu.ca_file
            c["timeouts"] = {"start_ms": 20000, "turn_ms": TURN_MS}
        cls.d = Daemon(config=conf)
        try:
            cls.d.start()
            cls.ctl = Client(cls.d.socket)
            cls.ctl.sock.settimeout(60)
        except Exception:
            cls.tearDownClass()
            raise
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "ctl", None) is not None:
            cls.ctl.close()
        if os.environ.get("RTSB_LOG_TAIL") and getattr(cls, "d", None):
            sys.stderr.write(cls.d.read_log()[
                -int(os.environ["RTSB_LOG_TAIL"]):])
        d = getattr(cls, "d", None)
        if d is not None:
            try:
                d.stop()
            finally:
                rtsb.remove_containers(PREFIX)
                d.cleanup()
        cls.fu.stop()
        shutil.rmtree(cls.certdir, ignore_errors=True)

    def pid(self, role, name=None):
        for p in self.ctl.call("daemon.stats")["processes"]:
            if p["role"] == role and p.get("name") == name and \
                    p.get("pid") and p["state"] == "ready":
                return p["pid"]
        return None

    def turn(self, key):
        """A turn on channel key, answered within its deadline."""
        type(self).n += 1
        with Client(self.d.socket, hooks=("tool.call",)) as c:
            c.sock.settimeout(TURN_MS / 1000 + 30)
            t0 = time.monotonic()
            res = c.call("turn.run", {
                "channel": key, "profile": "default",
                "turnId": "t%d" % self.n, "author": {"id": "u", "name": "U"},
                "text": "hello", "images": [], "memory": "",
                "thinking": "low"})
            self.assertLess(time.monotonic() - t0, TURN_MS / 1000 + 5)
        return res

    def turn_async(self, key):
        box = {}

        def run():
            try:
                box["res"] = self.turn(key)
            except BaseException as e:  # noqa: B902 - reported by join
                box["e"] = e
        t = threading.Thread(target=run)
        t.start()

        def join():
            t.join(TURN_MS / 1000 + 60)
            if "e" in box:
                raise box["e"]
            return box["res"]
        return join

    def held_then_killed(self, role, key, holds):
        """role stopped, the turn on key asked, role killed once the log
        says the turn waits for it (holds: what it waits with)."""
        pid = self.pid(role)
        self.assertIsNotNone(pid)
        log0 = len(self.d.read_log())
        os.kill(pid, signal.SIGSTOP)
        try:
            join = self.turn_async(key)
            # the request is in the helper's pipe once it was sent
            time.sleep(0.5)
        finally:
            os.kill(pid, signal.SIGKILL)
        res = join()
        self.assertTrue(res["ok"], res)
        log = self.d.read_log()[log0:]
        for h in holds:
            self.assertIn(h, log)
        self.assertTrue(wait_until(lambda: self.pid(role) not in (None, pid),
                                   10))

    def test_file_guard_holding_the_turns_preparation(self):
        self.turn("kill:fsg")
        self.held_then_killed("fsguard", "kill:fsg",
                              ["fsguard stopped holding fsg_prepare"])

    def test_docker_client_holding_the_turns_status(self):
        self.held_then_killed("docker", "kill:dock",
                              ["docker stopped holding dock_status"])

    def test_egress_holding_the_turns_bind(self):
        self.turn("kill:egr")
        self.held_then_killed("egress", "kill:egr",
                              ["starting the channel again"])

    def test_broker_killed_just_before(self):
        self.turn("kill:brk")
        pid = self.pid("broker", "kill_brk")
        os.kill(pid, signal.SIGKILL)
        # as soon as it is dead, before the supervisor has reaped it
        self.assertTrue(wait_until(lambda: not rtsb.pid_alive(pid), 5,
                                   0.001))
        res = self.turn("kill:brk")
        self.assertTrue(res["ok"], res)

    def test_worker_killed_just_before(self):
        self.turn("kill:wrk")
        pid = rtsb.inspect_container("%s-kill_wrk" % PREFIX)["State"]["Pid"]
        os.kill(pid, signal.SIGKILL)
        # the turn comes as soon as the process is gone, before Docker
        # has said so, or started the container again
        self.assertTrue(wait_until(lambda: not rtsb.pid_alive(pid), 5,
                                   0.001))
        res = self.turn("kill:wrk")
        self.assertTrue(res["ok"], res)

    def test_egress_killed_just_before(self):
        self.turn("kill:egr2")
        os.kill(self.pid("egress"), signal.SIGKILL)
        res = self.turn("kill:egr2")
        self.assertTrue(res["ok"], res)

    def test_file_guard_killed_just_before(self):
        os.kill(self.pid("fsguard"), signal.SIGKILL)
        res = self.turn("kill:fsg2")
        self.assertTrue(res["ok"], res)

    def test_docker_client_killed_just_before(self):
        os.kill(self.pid("docker"), signal.SIGKILL)
        res = self.turn("kill:dock2")
        self.assertTrue(res["ok"], res)


if __name__ == "__main__":
    unittest.main(verbosity=2)
