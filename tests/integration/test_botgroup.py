"""bot_group (rtsandboxd.conf(5)): the chat bot's own user, another
unprivileged user in that group, lists and reads each channel's sessions/
and writes in its attachments/, and gets nowhere else in the state
directory.  The file guard gives the group search on the state directory,
the channel's directory and workspace, read on sessions/ and its archive,
read and write on attachments/, through POSIX ACLs.

The tests run as the service user; the bot's user (RTSB_BOT_USER, default
rtsandbox-bot, made by scripts/lib.sh's setup_host) is reached through a
container of its uid and gid with the state directory mounted at its own
path, where tests/fixtures/access asks the kernel what that user may do.
RTSB_NOACL_FS names a file system without ACLs (scripts/test mounts a
ramfs) for the refusal at start."""

import grp
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rtsb  # noqa: E402
from rtsb import Client, Daemon  # noqa: E402

BOT_USER = os.environ.get("RTSB_BOT_USER", "rtsandbox-bot")
PREFIX_BASE = "rtbg%dx" % os.getpid()
ACCESS_SRC = os.path.join(HERE, "..", "fixtures", "access", "access.c")

_probe_dir = None


def skip_reason():
    try:
        pw = pwd.getpwnam(BOT_USER)
        gr = grp.getgrnam(BOT_USER)
    except KeyError:
        return ("no user and group %s: scripts/lib.sh's setup_host makes "
                "them" % BOT_USER)
    if gr.gr_gid in os.getgroups() or pw.pw_uid == os.getuid():
        return "the tests' own user must not be %s or in its group" % BOT_USER
    why = rtsb.docker_skip_reason("rtsandbox-worker:latest")
    if why is not None:
        return why
    return rtsb.ensure_sleeper()


SKIP = skip_reason()


def setUpModule():
    global _probe_dir
    if SKIP is not None:
        rtsb.docker_cleanup()
        raise unittest.SkipTest(SKIP)
    _probe_dir = tempfile.mkdtemp(prefix="rtsb-access-", dir="/tmp")
    os.chmod(_probe_dir, 0o755)
    r = subprocess.run(["gcc", "-static", "-O2", "-o",
                        os.path.join(_probe_dir, "access"), ACCESS_SRC],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise unittest.SkipTest("cannot build the access probe: " + r.stderr)


def tearDownModule():
    if _probe_dir is not None:
        shutil.rmtree(_probe_dir, ignore_errors=True)
    rtsb.docker_cleanup()


def as_bot(state, *ops):
    """Each "op:path" as the bot's user: {(op, path): "ok ..." or errno}."""
    pw = pwd.getpwnam(BOT_USER)
    gid = grp.getgrnam(BOT_USER).gr_gid
    r = rtsb.docker("run", "--rm", "--network", "none", "--cap-drop", "ALL",
                    "--security-opt", "no-new-privileges",
                    "--user", "%d:%d" % (pw.pw_uid, gid),
                    "-v", "%s:%s" % (state, state),
                    "-v", "%s:/access:ro" % os.path.join(_probe_dir,
                                                         "access"),
                    "--entrypoint", "/access", rtsb.SLEEPER, *ops)
    if r.returncode != 0:
        raise AssertionError("access probe: %s %s" % (r.stdout, r.stderr))
    out = {}
    for line in r.stdout.splitlines():
        op, path, rest = line.split(" ", 2)
        out[(op, path)] = rest
    return out


class BotGroup(unittest.TestCase):
    counter = 0

    def daemon(self, conf=None, start=True):
        BotGroup.counter += 1
        prefix = "%s%d" % (PREFIX_BASE, BotGroup.counter)

        def config(c):
            c["docker"] = {"container_prefix": prefix}
            c["bot_group"] = BOT_USER
            if conf:
                conf(c)
        d = Daemon(config=config)
        d.state = d.config["state_dir"]
        self.addCleanup(d.cleanup)
        self.addCleanup(rtsb.remove_containers, prefix)
        self.addCleanup(d.stop)
        if start:
            d.start()
        return d

    def test_the_bot_reads_sessions_and_writes_attachments(self):
        d = self.daemon()
        st = os.stat(d.state)
        # the state directory gained the group's search bit, and no more
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o710)
        key = "bot:1"
        with Client(d.socket) as c:
            paths = c.call("channel.paths", {"channel": key})
            self.assertEqual(c.call("daemon.config")["bot_group"], BOT_USER)
        sessions, attachments = paths["sessions"], paths["attachments"]
        seg = os.path.dirname(os.path.dirname(sessions))
        ws = os.path.join(seg, "workspace")
        # a session file as the worker writes one: its uid, its own
        # strict umask, an ordinary creation mode
        old = os.umask(0o077)
        try:
            with open(os.path.join(sessions, "2024-05-06.jsonl"), "w") as f:
                f.write('{"type":"session"}\n')
        finally:
            os.umask(old)
        got = as_bot(d.state,
                     "list:" + sessions,
                     "read:" + os.path.join(sessions, "2024-05-06.jsonl"),
                     "create:" + os.path.join(attachments, "from-bot.txt"),
                     "list:" + attachments,
                     "list:" + d.state,
                     "list:" + seg,
                     "list:" + os.path.join(seg, "run"),
                     "read:" + os.path.join(seg, ".channel-key"),
                     "list:" + ws,
                     "list:" + os.path.join(ws, "outbox"),
                     "create:" + os.path.join(sessions, "planted.jsonl"),
                     "create:" + os.path.join(ws, "planted"))
        self.assertEqual(got[("list", sessions)], "ok 2024-05-06.jsonl")
        self.assertEqual(got[("read", os.path.join(
            sessions, "2024-05-06.jsonl"))], 'ok {"type":"session"}')
        self.assertEqual(got[("create", os.path.join(
            attachments, "from-bot.txt"))], "ok")
        self.assertEqual(got[("list", attachments)], "ok from-bot.txt")
        for op, path in (("list", d.state), ("list", seg),
                         ("list", os.path.join(seg, "run")),
                         ("read", os.path.join(seg, ".channel-key")),
                         ("list", ws), ("list", os.path.join(ws, "outbox")),
                         ("create", os.path.join(sessions, "planted.jsonl")),
                         ("create", os.path.join(ws, "planted"))):
            self.assertEqual(got[(op, path)], "EACCES", (op, path))
        # what the bot put in attachments/ the worker (the service user)
        # reads and may remove
        bot_file = os.path.join(attachments, "from-bot.txt")
        self.assertEqual(os.stat(bot_file).st_uid,
                         pwd.getpwnam(BOT_USER).pw_uid)
        with open(bot_file) as f:
            self.assertEqual(f.read(), "from the bot\n")
        # the archive of a fresh start is the group's to read as well
        with Client(d.socket) as c:
            res = c.call("channel.fresh", {"channel": key})
        self.assertEqual(res["archived"], 1)
        folder = os.path.join(sessions, "archive", res["folder"])
        got = as_bot(d.state, "list:" + os.path.join(sessions, "archive"),
                     "read:" + os.path.join(folder, "2024-05-06.jsonl"),
                     "list:" + sessions)
        self.assertEqual(got[("list", os.path.join(sessions, "archive"))],
                         "ok " + res["folder"])
        self.assertEqual(got[("read", os.path.join(
            folder, "2024-05-06.jsonl"))], 'ok {"type":"session"}')
        self.assertEqual(got[("list", sessions)], "ok archive")
        os.unlink(bot_file)

    def test_state_dir_with_other_bits_refused(self):
        for mode in (0o750, 0o711):
            d = self.daemon(start=False)
            os.chmod(d.state, mode)
            d.start(wait=False)
            rc = d.proc.wait(15)
            d.close_log()
            log = d.read_log()
            self.assertNotEqual(rc, 0, log)
            self.assertIn("beyond bot_group's search bit", log)
            self.assertEqual(stat.S_IMODE(os.stat(d.state).st_mode), mode)
            self.assertEqual(os.listdir(d.state), [])

    def test_no_acls_refused_at_start(self):
        fs = os.environ.get("RTSB_NOACL_FS")
        if not fs:
            self.skipTest("no file system without ACLs (RTSB_NOACL_FS)")
        state = tempfile.mkdtemp(prefix="st", dir=fs)
        self.addCleanup(shutil.rmtree, state, True)
        d = self.daemon(lambda c: c.update(state_dir=state), start=False)
        d.start(wait=False)
        rc = d.proc.wait(15)
        d.close_log()
        log = d.read_log()
        self.assertNotEqual(rc, 0, log)
        self.assertIn("has no POSIX ACLs, which bot_group needs", log)
        self.assertIn(state, log)
        self.assertEqual(stat.S_IMODE(os.stat(state).st_mode), 0o700)
        # -n says it beforehand
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", d.config_path],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("has no POSIX ACLs, which bot_group (%s) needs" %
                      BOT_USER, r.stderr)
        # without bot_group the same directory serves
        d = self.daemon(lambda c: (c.update(state_dir=state),
                                   c.pop("bot_group")))
        with Client(d.socket) as c:
            self.assertIn("sessions", c.call("channel.paths",
                                             {"channel": "noacl:1"}))

    def test_check_only(self):
        d = self.daemon(start=False)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", d.config_path],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        os.chmod(d.state, 0o750)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", d.config_path],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("beyond the search bit of %s (bot_group)" % BOT_USER,
                      r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
