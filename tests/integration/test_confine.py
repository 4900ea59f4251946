"""Brokers and research jobs without their empty root (DESIGN.md 1,
invariant 10), against the real rtsandboxd.

Where the kernel refuses a user namespace, or the tmpfs in one (Ubuntu's
AppArmor restriction lets the namespace be made and denies it every
capability), rtsandbox-deny (RTSANDBOX_DENY) stands in for that kernel:
rtsandboxd refuses to start unless sandbox.empty_root is "optional"; with
it, rtsandboxd starts with a warning and tells every broker so (-e optional
on its command line), and the broker says it runs with the host's file
system in view.  Without the field, brokers are told -e required."""

import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rtsb  # noqa: E402
from rtsb import Client, Daemon, wait_until  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
DENY = os.environ.get("RTSANDBOX_DENY", os.path.join(
    rtsb.BUILD, "tests", "rtsandbox-deny"))
PREFIX = "rtsbc%d" % os.getpid()
REFUSALS = (("unshare", "no user namespace"),
            ("fsopen", "no tmpfs in a user namespace"))


def broker_cmdline(c, channel):
    """The command line of the broker of channel, from daemon.stats."""
    for p in c.call("daemon.stats")["processes"]:
        if p["role"] == "broker" and p.get("name") == channel:
            with open("/proc/%d/cmdline" % p["pid"], "rb") as f:
                return [a.decode() for a in f.read().split(b"\0")[:-1]]
    return None


class EmptyRoot(unittest.TestCase):

    def deny(self, call):
        if not os.access(DENY, os.X_OK):
            self.skipTest("%s is not built" % DENY)
        return [DENY, "EPERM:" + call, "--"]

    def daemon(self, optional=False, wrap=()):
        def conf(c):
            c["image"] = IMAGE
            c["docker"] = {"container_prefix": PREFIX}
            if optional:
                c["sandbox"] = {"empty_root": "optional"}
        d = Daemon(config=conf, wrap=wrap)
        self.addCleanup(d.cleanup)
        self.addCleanup(rtsb.remove_containers, PREFIX)
        self.addCleanup(d.stop)
        return d

    def test_refuses_to_start_without_it(self):
        for call, what in REFUSALS:
            with self.subTest(call=call):
                d = self.daemon(wrap=self.deny(call))
                d.start(wait=False)
                self.assertEqual(d.proc.wait(30), 1)
                log = d.read_log()
                self.assertIn('fatal in supervisor: sandbox.empty_root is '
                              '"required" and this host refuses brokers '
                              'and research jobs their empty root (%s: '
                              'Operation not permitted): refusing to start'
                              % what, log)
                self.assertIn('set sandbox.empty_root to "optional"', log)
                self.assertFalse(os.path.exists(d.socket))

    def start_channel(self, d, channel):
        reason = rtsb.docker_skip_reason(IMAGE)
        if reason:
            self.skipTest(reason)
        with Client(d.socket) as c:
            c.sock.settimeout(90)
            self.assertEqual(c.call("channel.start", {
                "channel": channel, "profile": "default"}), {})
            return broker_cmdline(c, rtsb_segment(channel))

    def test_starts_when_accepted(self):
        """sandbox.empty_root "optional": a warning at start, and brokers
        told so, which run and warn in their turn."""
        for call, what in REFUSALS:
            with self.subTest(call=call):
                d = self.daemon(optional=True, wrap=self.deny(call))
                d.start()
                log = d.read_log()
                self.assertIn('supervisor: no empty root for brokers and '
                              'research jobs (%s: Operation not permitted), '
                              'accepted by sandbox.empty_root "optional"'
                              % what, log)
                argv = self.start_channel(d, "confine:%s" % call)
                self.assertIsNotNone(argv)
                i = argv.index("-e")
                self.assertEqual(argv[i + 1], "optional")
                seg = "confine_%s" % call
                self.assertTrue(wait_until(lambda: (
                    "broker[%s]: %s: Operation not permitted: the host's "
                    "file system stays in view" % (seg, what))
                    in d.read_log(), 10), d.read_log())
                self.assertNotIn("fatal in broker", d.read_log())
                d.stop()
                rtsb.remove_containers(PREFIX)

    def test_brokers_told_it_is_required(self):
        """Without the field, where the kernel grants it: every broker is
        told the empty root is required, and has it."""
        d = self.daemon()
        try:
            d.start()
        except AssertionError:
            if "refuses brokers and research jobs their empty root" in \
                    d.read_log():
                self.skipTest("no empty root on this host")
            raise
        self.assertNotIn("no empty root", d.read_log())
        argv = self.start_channel(d, "confine:req")
        i = argv.index("-e")
        self.assertEqual(argv[i + 1], "required")
        self.assertNotIn("no empty root", d.read_log())
        self.assertNotIn("stays in view", d.read_log())


def rtsb_segment(key):
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-")
                   else "_" for ch in key)


if __name__ == "__main__":
    unittest.main(verbosity=2)
