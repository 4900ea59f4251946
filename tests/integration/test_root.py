"""What only root can see: rtsandboxd refuses uid 0 and gid 0 and says how
to run it instead; and, run as the service user, none of its processes is
dumpable, the spawner holds only what it should, daemon.stats still has
every process's memory where /proc hides them (the unit's
ProtectProc=invisible), and a running broker's image is what the kernel
was asked for (its /proc/PID/maps are root's once it is not dumpable)."""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import rtsb  # noqa: E402
from rtsb import Client, Daemon  # noqa: E402

SERVICE_USER = "rtsandbox"
PREFIX = "rtsbroot%d" % os.getpid()


class RefuseRoot(unittest.TestCase):
    @unittest.skipUnless(os.getuid() == 0, "needs root")
    def test_refuses_uid_0(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([rtsb.RTSANDBOXD, "-d", "-f",
                                os.path.join(tmp, "none.json")],
                               capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 1)
        self.assertIn("refusing to run with uid 0", r.stderr)
        self.assertIn("runuser -u rtsandbox", r.stderr)

    @unittest.skipUnless(os.getuid() == 0, "needs root")
    def test_doctor_fails_as_root(self):
        """doctor says what root can reach is not what the service user
        can, and fails."""
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([rtsb.RTSANDBOXCTL, "doctor", "-f",
                                os.path.join(tmp, "none.json")],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL  user: uid 0, gid 0", r.stdout)
        self.assertIn("run this as the service user", r.stdout)


def broker_link():
    """How the build links the broker: -Dbroker_link as meson.build
    resolved it, from buildconf.h."""
    with open(os.path.join(rtsb.BUILD, "buildconf.h")) as f:
        for line in f:
            if line.startswith("#define RTSANDBOX_BROKER_LINK "):
                return line.split()[2].strip('"')
    raise AssertionError("no RTSANDBOX_BROKER_LINK in buildconf.h")


def status_fields(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


@unittest.skipUnless(os.getuid() == 0, "needs root")
class AsServiceUser(unittest.TestCase):
    """rtsandboxd as the service user, in a mount namespace whose /proc
    hides what a process may not trace (hidepid=invisible, which the unit's
    ProtectProc=invisible mounts); this test, as root, sees it all."""

    def setUp(self):
        try:
            pw = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            self.skipTest("no user %s" % SERVICE_USER)
        for tool in ("unshare", "setpriv", "mount"):
            if shutil.which(tool) is None:
                self.skipTest("no %s" % tool)
        self.uid = pw.pw_uid
        wrap = ["unshare", "--mount", "--propagation", "private", "--",
                "sh", "-c", "mount -t proc -o hidepid=invisible proc /proc "
                "&& exec setpriv --reuid=%d --regid=%d --init-groups "
                "--inh-caps=-all -- \"$@\"" % (pw.pw_uid, pw.pw_gid), "sh"]
        self.d = Daemon(wrap=wrap, config=lambda c: c.update(
            docker={"container_prefix": PREFIX}))
        self.addCleanup(self.d.cleanup)
        self.addCleanup(self.d.stop)
        for top, dirs, files in os.walk(self.d.root):
            for n in [top] + [os.path.join(top, f) for f in dirs + files]:
                os.chown(n, pw.pw_uid, pw.pw_gid)
        self.d.start()
        self.assertEqual(status_fields(self.d.proc.pid)["Uid"].split()[0],
                         str(self.uid))

    def test_every_process_not_dumpable_and_measured(self):
        with Client(self.d.socket) as c:
            procs = c.call("daemon.stats")["processes"]
        self.assertEqual(len(procs), 5, procs)
        for p in procs:
            # from the file each child handed over: its /proc is hidden
            # from the spawner
            self.assertGreater(p.get("rss_kib", 0), 0, p)
            self.assertGreater(p.get("pss_kib", 0), 0, p)
            self.assertLessEqual(p["pss_kib"], p["rss_kib"], p)
            self.assertLessEqual(p["uss_kib"], p["pss_kib"], p)
        self.assertIn(self.spawner(procs), [p["pid"] for p in procs])
        for pid in [p["pid"] for p in procs]:
            self.assertEqual(status_fields(pid)["Uid"].split()[0],
                             str(self.uid))
            # root's, not the process's user's: not dumpable
            self.assertEqual(os.stat("/proc/%d/fd" % pid).st_uid, 0, pid)

    def test_broker_image_mappings(self):
        """Nothing writable and executable, a stack that is not
        executable, and, linked statically, no file mapped but its own (no
        dynamic linker, no shared library) and its RELRO read-only."""
        if rtsb.docker_skip_reason("rtsandbox-worker:latest"):
            self.skipTest(rtsb.docker_skip_reason("rtsandbox-worker:latest"))
        self.addCleanup(rtsb.remove_containers, PREFIX)
        with Client(self.d.socket) as c:
            c.sock.settimeout(90)
            self.assertEqual(c.call("channel.start", {
                "channel": "img:1", "profile": "default"}), {})
            pid = [p["pid"] for p in c.call("daemon.stats")["processes"]
                   if p["role"] == "broker"][0]
            try:
                exe = os.readlink("/proc/%d/exe" % pid)
                files, stack, perms_of = set(), None, []
                with open("/proc/%d/maps" % pid) as f:
                    for line in f:
                        parts = line.split(None, 5)
                        perms = parts[1]
                        path = parts[5].strip() if len(parts) > 5 else ""
                        self.assertFalse("w" in perms and "x" in perms,
                                         line)
                        if path == "[stack]":
                            stack = perms
                        elif path.startswith("/"):
                            files.add(path)
                        if path == exe:
                            perms_of.append(perms[:3])
            finally:
                c.call("channel.stop", {"channel": "img:1"})
        self.assertEqual(stack, "rw-p")
        if broker_link() == "dynamic":
            return
        self.assertEqual(files, {exe})
        # read-only headers and rodata, code, RELRO read-only, then data
        self.assertEqual(perms_of[-3:], ["r--", "r--", "rw-"], perms_of)
        self.assertIn("r-x", perms_of)

    def spawner(self, procs):
        pids = {p["pid"] for p in procs if p["role"] != "spawner"}
        kids = []
        for p in os.listdir("/proc"):
            try:
                if p.isdigit() and int(p) not in pids and status_fields(
                        int(p)).get("PPid") == str(self.d.proc.pid):
                    kids.append(int(p))
            except FileNotFoundError:
                pass
        self.assertEqual(len(kids), 1, kids)
        return kids[0]

    def test_spawner_descriptors(self):
        """The spawner holds its socket to the supervisor and, for each
        child alive, a pidfd and the memory file it handed over; nothing
        of a child that is gone."""
        with Client(self.d.socket) as c:
            procs = c.call("daemon.stats")["processes"]
        spawner = self.spawner(procs)
        children = {p["pid"] for p in procs
                    if p["role"] not in ("supervisor", "spawner")}

        def fds():
            out = {}
            for f in os.listdir("/proc/%d/fd" % spawner):
                out[int(f)] = os.readlink("/proc/%d/fd/%s" % (spawner, f))
            return out
        now = fds()
        self.assertEqual(sorted(k for k in now if k <= 3), [0, 1, 2, 3])
        self.assertTrue(now[3].startswith("socket:"), now)
        rest = sorted(v for k, v in now.items() if k > 3)
        self.assertEqual(rest, sorted(
            ["anon_inode:[pidfd]"] * len(children) +
            ["/proc/%d/smaps_rollup" % p for p in children]), now)
        # a child gone: its two are closed at the next request
        egress = [p["pid"] for p in procs if p["role"] == "egress"][0]
        os.kill(egress, 9)
        with Client(self.d.socket) as c:
            rtsb.wait_until(lambda: all(
                p["state"] == "ready" and p["pid"] != egress
                for p in c.call("daemon.stats")["processes"]), 10)
            procs = c.call("daemon.stats")["processes"]
        children = {p["pid"] for p in procs
                    if p["role"] not in ("supervisor", "spawner")}
        self.assertNotIn(egress, children)
        rest = sorted(v for k, v in fds().items() if k > 3)
        self.assertEqual(rest, sorted(
            ["anon_inode:[pidfd]"] * len(children) +
            ["/proc/%d/smaps_rollup" % p for p in children]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
