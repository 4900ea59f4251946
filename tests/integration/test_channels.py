"""The channel.* methods of the real rtsandboxd, run as an unprivileged
user: the file guard's rules on the state directory (PROTOCOL.md 6) and the
containers made through the real Docker daemon (PROTOCOL.md 7).

Every daemon gets its own container prefix (rtsbt<pid>x<n>), so these tests
never touch containers other than their own, and every test removes the
containers of its prefix at the end."""

import datetime
import json
import os
import re
import resource
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import rtsb  # noqa: E402
from rtsb import Client, Daemon, RpcError, wait_until  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
ALT_IMAGE = "rtsandbox-worker:alt%d" % os.getpid()
PREFIX_BASE = "rtsbt%dx" % os.getpid()
DOCKER_SOCKET = "/var/run/docker.sock"
MIB = 1024 * 1024
LABEL_CHANNEL = "roundtable.sandbox.channel"
LABEL_PROFILE = "roundtable.sandbox.profile"
REAL_TOKEN = "sk-test-real-token"
DOCKER_TIMEOUT = 30
# An atime and mtime far in the past: with relatime (or strictatime) any
# read of a sentinel moves its atime, so a read is seen as a change.
OLD_TIME_NS = 1000000000 * 10 ** 9
ARCHIVE_FOLDER = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})-(\d{2})(\.\d{3})?Z(-\d+)?$")

docker = rtsb.docker
DOCKER_SKIP = rtsb.docker_skip_reason(IMAGE)
needs_docker = unittest.skipIf(DOCKER_SKIP is not None, DOCKER_SKIP)
prefixed_containers = rtsb.prefixed_containers
inspect = rtsb.inspect_container


def remove_containers(prefix):
    if DOCKER_SKIP is None:
        rtsb.remove_containers(prefix)


def tearDownModule():
    if DOCKER_SKIP is None:
        names = [n for n in docker("ps", "-a", "--format",
                                   "{{.Names}}").stdout.split()
                 if n.startswith(PREFIX_BASE)]
        if names:
            docker("rm", "-f", *names)
        if docker("image", "inspect", ALT_IMAGE).returncode == 0:
            docker("rmi", ALT_IMAGE)
    rtsb.docker_cleanup()


def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


def ready_brokers(c):
    return [p["pid"] for p in c.call("daemon.stats")["processes"]
            if p["role"] == "broker" and p["state"] == "ready"]


def segment_of(key):
    """PROTOCOL.md 6: each UTF-16 code unit outside [A-Za-z0-9_-] -> '_'."""
    out = []
    for ch in key:
        if re.match(r"[A-Za-z0-9_-]", ch):
            out.append(ch)
        else:
            out.append("_" * (2 if ord(ch) > 0xFFFF else 1))
    return "".join(out)


class Sentinel:
    """A directory outside the state directory, with files and a
    subdirectory whose inode, mode, size, times (atime included: reads
    count) and listings are compared before and after."""

    def __init__(self, key=None):
        self.root = tempfile.mkdtemp(prefix="rtsb-sent-", dir="/tmp")
        self.files = {
            "secret.txt": b"sentinel secret, never to be read\n",
            "sub/inner.txt": b"inner sentinel\n",
        }
        if key is not None:
            # What a followed link would find: the right key bytes.
            self.files["sub/.channel-key"] = key.encode()
            self.files["key-copy"] = key.encode()
        os.mkdir(self.path("sub"), 0o700)
        for rel, data in self.files.items():
            with open(self.path(rel), "wb") as f:
                f.write(data)
        self.dirs = {"": sorted(n for n in self.files if "/" not in n) +
                     ["sub"],
                     "sub": sorted(n[4:] for n in self.files
                                   if n.startswith("sub/"))}
        self.reset()

    def path(self, rel=""):
        return os.path.join(self.root, rel) if rel else self.root

    def reset(self):
        for rel in list(self.files) + ["sub", ""]:
            os.utime(self.path(rel), ns=(OLD_TIME_NS, OLD_TIME_NS),
                     follow_symlinks=False)
        self.before = self.stats()

    def stats(self):
        out = {}
        for rel in list(self.files) + list(self.dirs):
            st = os.lstat(self.path(rel))
            out[rel] = (st.st_ino, st.st_mode, st.st_nlink, st.st_uid,
                        st.st_size, st.st_mtime_ns, st.st_atime_ns,
                        st.st_ctime_ns)
        return out

    def check(self, tc, what=""):
        """Untouched, unread, nothing created.  Reading here moves the
        atimes, so the times are set back afterwards."""
        after = self.stats()     # lstat only, before anything is read
        try:
            for rel in self.before:
                tc.assertEqual(after[rel], self.before[rel],
                               "sentinel %r changed or read %s" % (rel, what))
            for rel, names in self.dirs.items():
                tc.assertEqual(sorted(os.listdir(self.path(rel))), names,
                               "sentinel directory %r listing %s" %
                               (rel, what))
            for rel, data in self.files.items():
                with open(self.path(rel), "rb") as f:
                    tc.assertEqual(f.read(), data,
                                   "sentinel %r %s" % (rel, what))
        finally:
            self.reset()

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)


class DaemonTest(unittest.TestCase):
    counter = 0

    def daemon(self, conf=None, start=True):
        """A daemon with a container prefix of its own; at the end of the
        test: stopped, its containers removed, its directory removed."""
        DaemonTest.counter += 1
        prefix = "%s%d" % (PREFIX_BASE, DaemonTest.counter)

        def config(c):
            c["docker"] = {"container_prefix": prefix}
            if conf:
                conf(c)
        d = Daemon(config=config)
        d.prefix = prefix
        d.state = d.config["state_dir"]
        self.addCleanup(d.cleanup)
        self.addCleanup(remove_containers, prefix)
        self.addCleanup(d.stop)
        if start:
            d.start()
        return d

    def sentinel(self, key=None):
        s = Sentinel(key)
        self.addCleanup(s.remove)
        return s

    def client(self, d):
        c = Client(d.socket)
        self.addCleanup(c.close)
        return c

    def refused(self, c, method, params, *fragments):
        with self.assertRaises(RpcError, msg=(method, params)) as e:
            c.call(method, params)
        self.assertEqual(e.exception.code, -32000, e.exception.message)
        for frag in fragments:
            self.assertIn(frag, e.exception.message)
        return e.exception

    def assertAlive(self, d):
        with Client(d.socket) as c:
            procs = {p["role"]: p for p in c.call("daemon.stats")["processes"]}
        for role in ("fsguard", "docker", "egress"):
            self.assertEqual(procs[role]["state"], "ready", role)
            self.assertEqual(procs[role]["restarts"], 0, role)
        return procs

    def assertOwnDir(self, path):
        st = os.lstat(path)
        self.assertTrue(stat.S_ISDIR(st.st_mode), path)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700, path)
        self.assertEqual(st.st_uid, os.getuid(), path)


class FileGuard(DaemonTest):
    """PROTOCOL.md 6 through channel.paths and channel.start; a refusal
    comes before any Docker call, so these run without Docker too."""

    def setUp(self):
        self.d = self.daemon()
        self.c = self.client(self.d)

    def seg_dir(self, key):
        return os.path.join(self.d.state, segment_of(key))

    def both_refused(self, key, *fragments):
        """paths and start of key are refused, and quickly."""
        t0 = time.monotonic()
        self.refused(self.c, "channel.paths", {"channel": key}, *fragments)
        self.refused(self.c, "channel.start",
                     {"channel": key, "profile": "default"}, *fragments)
        self.assertLess(time.monotonic() - t0, 5)

    def test_alias_refused(self):
        s = self.sentinel()
        r = self.c.call("channel.paths", {"channel": "discord:1"})
        ws = os.path.join(self.d.state, "discord_1", "workspace")
        self.assertEqual(r, {"sessions": ws + "/sessions",
                             "attachments": ws + "/attachments"})
        self.both_refused("discord_1", "Channel workspace alias refused")
        for key in ("discord.1", "discord 1", "discord\u00e91"):
            self.refused(self.c, "channel.paths", {"channel": key},
                         "Channel workspace alias refused")
        with open(os.path.join(self.d.state, "discord_1",
                               ".channel-key"), "rb") as f:
            self.assertEqual(f.read(), b"discord:1")
        # the owner of the segment goes on working
        self.assertEqual(self.c.call("channel.paths",
                                     {"channel": "discord:1"}), r)
        # and the other way round: the plain key first
        self.c.call("channel.paths", {"channel": "slack_2"})
        self.both_refused("slack:2", "Channel workspace alias refused")
        self.assertEqual(sorted(os.listdir(self.d.state)),
                         ["discord_1", "slack_2"])
        s.check(self)
        self.assertAlive(self.d)

    def test_channel_key_symlink_new_channel(self):
        key = "keylink:1"
        s = self.sentinel(key)
        seg = self.seg_dir(key)
        os.mkdir(seg, 0o700)
        # a link to a file holding the right key bytes
        os.symlink(s.path("key-copy"), os.path.join(seg, ".channel-key"))
        self.both_refused(key, ".channel-key is a symbolic link")
        self.assertTrue(os.path.islink(os.path.join(seg, ".channel-key")))
        s.check(self)
        # a dangling link: O_EXCL must not create its target
        key2 = "keylink:2"
        seg2 = self.seg_dir(key2)
        os.mkdir(seg2, 0o700)
        target = s.path("created-by-daemon")
        os.symlink(target, os.path.join(seg2, ".channel-key"))
        self.both_refused(key2, ".channel-key is a symbolic link")
        self.assertFalse(os.path.lexists(target))
        s.check(self)
        self.assertAlive(self.d)

    def test_channel_key_symlink_existing_channel(self):
        key = "keylink:3"
        s = self.sentinel(key)
        self.c.call("channel.paths", {"channel": key})
        kf = os.path.join(self.seg_dir(key), ".channel-key")
        os.unlink(kf)
        os.symlink(s.path("key-copy"), kf)
        self.both_refused(key, ".channel-key is a symbolic link")
        s.check(self)

    def test_channel_key_fifo(self):
        key = "fifo:1"
        seg = self.seg_dir(key)
        os.mkdir(seg, 0o700)
        os.mkfifo(os.path.join(seg, ".channel-key"), 0o600)
        self.c.sock.settimeout(10)
        t0 = time.monotonic()
        self.both_refused(key, ".channel-key is not a regular file")
        self.assertLess(time.monotonic() - t0, 5)
        self.assertTrue(stat.S_ISFIFO(
            os.lstat(os.path.join(seg, ".channel-key")).st_mode))
        procs = self.assertAlive(self.d)
        # the file guard still serves other channels
        self.c.call("channel.paths", {"channel": "fifo:2"})
        self.assertEqual(self.assertAlive(self.d)["fsguard"]["pid"],
                         procs["fsguard"]["pid"])

    def test_segment_directory_symlink(self):
        key = "seglink:1"
        s = self.sentinel(key)
        # the link points at a directory holding the right key
        os.symlink(s.path("sub"), self.seg_dir(key))
        self.both_refused(key, "channel directory is a symbolic link")
        self.assertTrue(os.path.islink(self.seg_dir(key)))
        s.check(self)
        # a dangling one: nothing is created at its target
        key2 = "seglink:2"
        os.symlink(s.path("new-dir"), self.seg_dir(key2))
        self.both_refused(key2, "channel directory is a symbolic link")
        self.assertFalse(os.path.lexists(s.path("new-dir")))
        s.check(self)
        # a regular file is no directory either
        key3 = "seglink:3"
        with open(self.seg_dir(key3), "w") as f:
            f.write("x")
        self.both_refused(key3, "channel directory is not a directory")
        self.assertAlive(self.d)

    def _planted_channel_dir(self, name, symlink_msg, notdir_msg):
        key = "plant-%s:1" % name
        s = self.sentinel(key)
        self.c.call("channel.paths", {"channel": key})
        p = os.path.join(self.seg_dir(key), name)
        shutil.rmtree(p)
        os.symlink(s.path("sub"), p)
        self.both_refused(key, symlink_msg)
        self.assertTrue(os.path.islink(p))
        s.check(self, "(%s link)" % name)
        # before the first use as well
        key2 = "plant-%s:2" % name
        os.mkdir(self.seg_dir(key2), 0o700)
        os.symlink(s.path("sub"), os.path.join(self.seg_dir(key2), name))
        self.both_refused(key2, symlink_msg)
        s.check(self, "(%s link, new channel)" % name)
        # a file in its place
        os.unlink(p)
        with open(p, "w") as f:
            f.write("not a directory")
        self.both_refused(key, notdir_msg)
        self.assertAlive(self.d)

    def test_run_symlink(self):
        self._planted_channel_dir("run",
                                  "channel run directory is a symbolic link",
                                  "channel run directory is not a directory")

    def test_workspace_symlink(self):
        self._planted_channel_dir("workspace",
                                  "channel workspace is a symbolic link",
                                  "channel workspace is not a directory")

    def test_workspace_entries_replaced(self):
        """attachments, outbox and sessions planted as links (to a
        directory, to a file, dangling) or as files become real 0700
        directories; the links' targets stay as they were."""
        key = "repair:1"
        s = self.sentinel()
        r = self.c.call("channel.paths", {"channel": key})
        ws = os.path.join(self.seg_dir(key), "workspace")
        plants = {
            "dir link": lambda p: os.symlink(s.path("sub"), p),
            "file link": lambda p: os.symlink(s.path("secret.txt"), p),
            "dangling link": lambda p: os.symlink(s.path("made"), p),
            "file": lambda p: write_file(p, "guest file"),
        }
        for name in ("attachments", "outbox", "sessions"):
            for how, plant in plants.items():
                p = os.path.join(ws, name)
                if os.path.islink(p) or not os.path.isdir(p):
                    os.unlink(p)
                else:
                    shutil.rmtree(p)
                plant(p)
                self.assertEqual(
                    self.c.call("channel.paths", {"channel": key}), r)
                self.assertOwnDir(p)
                self.assertEqual(os.listdir(p), [], (name, how))
                self.assertFalse(os.path.lexists(s.path("made")))
                s.check(self, "(%s as %s)" % (name, how))
        # a wrong mode on a real directory is set back to 0700
        os.chmod(os.path.join(ws, "outbox"), 0o755)
        self.c.call("channel.paths", {"channel": key})
        self.assertOwnDir(os.path.join(ws, "outbox"))
        self.assertAlive(self.d)

    def test_sessions_archive_planted_not_followed(self):
        """sessions/archive is only used by channel.fresh (which replaces a
        planted one, see ChannelFiles); paths never follows it."""
        key = "archive:1"
        s = self.sentinel()
        self.c.call("channel.paths", {"channel": key})
        sess = os.path.join(self.seg_dir(key), "workspace", "sessions")
        os.symlink(s.path("sub"), os.path.join(sess, "archive"))
        self.c.call("channel.paths", {"channel": key})
        s.check(self)
        os.unlink(os.path.join(sess, "archive"))
        with open(os.path.join(sess, "archive"), "w") as f:
            f.write("guest")
        self.c.call("channel.paths", {"channel": key})
        s.check(self)

    def test_channel_key_lengths(self):
        c = self.c
        for key in ("a" * 257, "\U0001F600" * 129, "", 5):
            with self.assertRaises(RpcError) as e:
                c.call("channel.paths", {"channel": key})
            self.assertEqual(e.exception.code, -32602, key)
        # 256 chars is a valid key, but a 256-byte segment cannot be a
        # file name (NAME_MAX 255): a clear refusal, no crash
        for key in ("b" * 256, "\u00e9" * 256, "\U0001F600" * 128):
            for method in ("channel.paths", "channel.start"):
                params = {"channel": key}
                if method == "channel.start":
                    params["profile"] = "default"
                self.refused(c, method, params,
                             "longer than a file name may be (255 bytes)")
        self.assertAlive(self.d)
        # 255 chars works
        key = "c" * 255
        r = c.call("channel.paths", {"channel": key})
        self.assertEqual(r["sessions"], os.path.join(
            self.d.state, key, "workspace", "sessions"))
        self.assertOwnDir(r["sessions"])
        self.assertOwnDir(r["attachments"])
        key = "\u00e9" * 255
        r = c.call("channel.paths", {"channel": key})
        self.assertEqual(r["attachments"], os.path.join(
            self.d.state, "_" * 255, "workspace", "attachments"))
        with open(os.path.join(self.d.state, "_" * 255,
                               ".channel-key"), "rb") as f:
            self.assertEqual(f.read(), key.encode())
        self.assertAlive(self.d)

    def test_non_bmp_key(self):
        key = "tg:\U0001F600"
        r = self.c.call("channel.paths", {"channel": key})
        # t g, ':' -> '_', U+1F600 (two UTF-16 code units) -> '__'
        seg = os.path.join(self.d.state, "tg___")
        self.assertEqual(r, {"sessions": seg + "/workspace/sessions",
                             "attachments": seg + "/workspace/attachments"})
        self.assertOwnDir(seg)
        kst = os.lstat(os.path.join(seg, ".channel-key"))
        self.assertTrue(stat.S_ISREG(kst.st_mode))
        self.assertEqual(stat.S_IMODE(kst.st_mode), 0o600)
        with open(os.path.join(seg, ".channel-key"), "rb") as f:
            self.assertEqual(f.read(), key.encode("utf-8"))
        for name in ("run", "workspace", "workspace/attachments",
                     "workspace/outbox", "workspace/sessions"):
            self.assertOwnDir(os.path.join(seg, name))
        self.refused(self.c, "channel.paths", {"channel": "tg:\u00e9\u00e9"},
                     "Channel workspace alias refused")


class StateDirectory(DaemonTest):
    def test_group_or_other_bits_refused(self):
        for mode in (0o750, 0o701):
            d = self.daemon(start=False)
            os.chmod(d.state, mode)
            d.start(wait=False)
            rc = d.proc.wait(15)
            d.close_log()
            log = d.read_log()
            self.assertNotEqual(rc, 0, log)
            self.assertIn("group or other permission bits", log)
            self.assertIn(d.state, log)
            self.assertEqual(os.listdir(d.state), [])
            self.assertEqual(stat.S_IMODE(os.stat(d.state).st_mode), mode)


class DockerUnreachable(DaemonTest):
    def _check(self, sock):
        d = self.daemon(conf=lambda c: c["docker"].update(socket=sock))
        c = self.client(d)
        for method, params in (
                ("channel.start", {"channel": "x:1", "profile": "default"}),
                ("channel.status", {"channel": "x:1"}),
                ("channel.stop", {"channel": "x:1"}),
                ("channel.list", None)):
            t0 = time.monotonic()
            self.refused(c, method, params, "Docker daemon unreachable")
            self.assertLess(time.monotonic() - t0, 10, method)
        self.assertIn("processes", c.call("daemon.stats"))
        self.assertAlive(d)
        r = subprocess.run([rtsb.RTSANDBOXCTL, "-s", d.socket, "status",
                            "x:1"], capture_output=True, text=True,
                           timeout=15)
        self.assertEqual(r.returncode, 1)
        self.assertIn("unreachable", r.stderr)
        # the file guard's part still works
        self.assertIn("sessions", c.call("channel.paths", {"channel": "x:1"}))

    def test_missing_socket(self):
        root = tempfile.mkdtemp(prefix="rtsb-ds-", dir="/tmp")
        self.addCleanup(shutil.rmtree, root, True)
        self._check(os.path.join(root, "no-docker.sock"))

    def test_socket_nobody_listens_on(self):
        root = tempfile.mkdtemp(prefix="rtsb-ds-", dir="/tmp")
        self.addCleanup(shutil.rmtree, root, True)
        path = os.path.join(root, "dead-docker.sock")
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.close()
        self._check(path)


class DockerTest(DaemonTest):
    def start(self, c, key, profile="default"):
        self.assertEqual(c.call("channel.start", {"channel": key,
                                                  "profile": profile}), {})

    def container(self, d, key):
        return "%s-%s" % (d.prefix, segment_of(key))

    def created_count(self, d, key):
        """How many times the supervisor logged a creation for key."""
        return len(re.findall(r"channel %s: container [0-9a-f]{12} created" %
                              re.escape(segment_of(key)), d.read_log()))


@needs_docker
class SlowDocker(DockerTest):
    """Docker answering slowly: every call is bounded by its 15 s
    (PROTOCOL.md 7), the start says so, the Docker client is not restarted
    for it, and the channel works once Docker answers again."""

    def test_slow_create(self):
        root = tempfile.mkdtemp(prefix="rtsb-sd-", dir="/tmp")
        self.addCleanup(shutil.rmtree, root, True)
        px = rtsb.DockerProxy(os.path.join(root, "slow-docker.sock"))
        self.addCleanup(px.close)
        d = self.daemon(conf=lambda c: c["docker"].update(socket=px.path))
        c = self.client(d)
        px.slow, px.delay = (b"POST /v1.41/containers/create",), 25
        t0 = time.monotonic()
        e = self.refused(c, "channel.start", {"channel": "slow:1",
                                              "profile": "default"},
                         "timed out after 15000 ms")
        took = time.monotonic() - t0
        self.assertGreater(took, 14, e.message)
        self.assertLess(took, 22, e.message)
        self.assertAlive(d)
        px.slow = ()
        # what Docker made once the held request reached it is replaced
        self.start(c, "slow:1")
        self.assertTrue(inspect(self.container(d, "slow:1"))["State"][
            "Running"])
        self.assertAlive(d)


@needs_docker
class StartStopped(DockerTest):
    """A turn that times out or is cancelled while its channel starts stops
    the start at once, as PiSandboxRuntime 0.7.3 did, instead of waiting
    out start_ms; whoever shares the attempt hears why, the container is
    removed before the turn is answered, and no broker is left.  The
    worker is the sleeper, which never announces itself."""

    START_MS = 30000

    def setUp(self):
        why = rtsb.ensure_sleeper()
        if why is not None:
            self.skipTest(why)

    def daemon_slow(self, turn_ms=1000, socket=None):
        def conf(c):
            c["image"] = rtsb.SLEEPER
            c["timeouts"] = {"start_ms": self.START_MS, "turn_ms": turn_ms}
            if socket is not None:
                c["docker"]["socket"] = socket
        return self.daemon(conf=conf)

    @staticmethod
    def params(key, turn_id="t1"):
        return {"channel": key, "profile": "default", "turnId": turn_id,
                "author": {"id": "u1", "name": "Ann"}, "text": "hi",
                "images": []}

    @staticmethod
    def wait_phase(c, phase):
        """Until the turn.progress of that phase (the start is under way
        once "container" came)."""
        while True:
            m = c.read_message()
            if m.get("method") == "turn.progress" and \
                    m["params"]["phase"] == phase:
                return
            if "method" not in m:
                c.pending.append(m)

    def assertNothingLeft(self, d, c, key):
        self.assertIsNone(inspect(self.container(d, key)))
        self.assertNotIn("broker", [p["role"] for p in
                                    c.call("daemon.stats")["processes"]])
        self.assertFalse(c.call("channel.status", {"channel": key})["busy"])
        self.assertAlive(d)

    def test_deadline_stops_the_start(self):
        d = self.daemon_slow()
        c, c2 = self.client(d), self.client(d)
        key = "startdl:1"
        t0 = time.monotonic()
        rid = c.request("turn.run", self.params(key))
        self.wait_phase(c, "container")
        shared = c2.request("channel.start", {"channel": key,
                                              "profile": "default"})
        res = c.wait(rid)
        took = time.monotonic() - t0
        self.assertEqual((res["ok"], res["reason"]), (False, "timeout"), res)
        # answered within a second or so of its deadline, not after the
        # 30 s the start would have waited
        self.assertLess(took, 8, d.read_log()[-3000:])
        # answered once the container is gone
        self.assertIsNone(inspect(self.container(d, key)))
        with self.assertRaises(RpcError) as e:
            c2.wait(shared)
        self.assertEqual(e.exception.code, -32000)
        self.assertEqual(e.exception.message,
                         "Start stopped: the channel's turn timed out")
        self.assertNothingLeft(d, c, key)
        self.assertIn("start stopped", d.read_log())

    def test_cancel_stops_the_start(self):
        d = self.daemon_slow(turn_ms=60000)
        c, c2 = self.client(d), self.client(d)
        # turn.cancel
        key = "startcc:1"
        t0 = time.monotonic()
        rid = c.request("turn.run", self.params(key))
        self.wait_phase(c, "container")
        shared = c2.request("channel.start", {"channel": key,
                                              "profile": "default"})
        self.assertEqual(c2.call("turn.cancel", {"channel": key}),
                         {"cancelled": True})
        res = c.wait(rid)
        self.assertEqual((res["ok"], res["reason"]), (False, "cancelled"),
                         res)
        self.assertLess(time.monotonic() - t0, 8)
        with self.assertRaises(RpcError) as e:
            c2.wait(shared)
        self.assertEqual(e.exception.message,
                         "Start stopped: the channel's turn was cancelled")
        self.assertNothingLeft(d, c, key)
        # $/cancelRequest
        key = "startcc:2"
        t0 = time.monotonic()
        rid = c.request("turn.run", self.params(key))
        self.wait_phase(c, "container")
        c.send_raw(json.dumps({"jsonrpc": "2.0", "method": "$/cancelRequest",
                               "params": {"id": rid}}).encode() + b"\n")
        with self.assertRaises(RpcError) as e:
            c.wait(rid)
        self.assertEqual(e.exception.code, -32800)
        self.assertLess(time.monotonic() - t0, 8)
        self.assertNothingLeft(d, c, key)
        # the client that leaves
        key = "startcc:3"
        c3 = Client(d.socket)
        c3.request("turn.run", self.params(key))
        self.wait_phase(c3, "container")
        t0 = time.monotonic()
        c3.close()
        self.assertTrue(wait_until(lambda: not c.call(
            "channel.status", {"channel": key})["busy"], 8))
        self.assertTrue(wait_until(lambda: inspect(
            self.container(d, key)) is None, 8))
        self.assertLess(time.monotonic() - t0, 8)
        self.assertNothingLeft(d, c, key)

    def test_deadline_while_docker_creates(self):
        """The deadline comes while Docker still makes the container: the
        callers sharing the start hear it at once, and the turn is answered
        once what Docker made is removed again."""
        root = tempfile.mkdtemp(prefix="rtsb-ss-", dir="/tmp")
        self.addCleanup(shutil.rmtree, root, True)
        px = rtsb.DockerProxy(os.path.join(root, "slow-docker.sock"))
        self.addCleanup(px.close)
        d = self.daemon_slow(socket=px.path)
        c, c2 = self.client(d), self.client(d)
        key = "startdk:1"
        px.slow, px.delay = (b"POST /v1.41/containers/create",), 4
        t0 = time.monotonic()
        rid = c.request("turn.run", self.params(key))
        self.wait_phase(c, "container")
        shared = c2.request("channel.start", {"channel": key,
                                              "profile": "default"})
        with self.assertRaises(RpcError) as e:
            c2.wait(shared)
        self.assertEqual(e.exception.message,
                         "Start stopped: the channel's turn timed out")
        self.assertLess(time.monotonic() - t0, 3.5)
        res = c.wait(rid)
        self.assertEqual(res["reason"], "timeout", res)
        took = time.monotonic() - t0
        self.assertGreater(took, 3.9)
        self.assertLess(took, 12)
        px.slow = ()
        self.assertNothingLeft(d, c, key)
        self.assertEqual(prefixed_containers(d.prefix), [])


def tasks_of_user():
    """What RLIMIT_NPROC counts: the tasks (threads too) of our real uid."""
    n = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/status" % p) as f:
                st = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if int(st["Uid"].split()[0]) == os.getuid():
            n += int(st["Threads"])
    return n


@needs_docker
class ProcessLimit(DockerTest):
    """The service user's process limit reached: a start fails saying so,
    the daemon goes on, and the channel starts once processes are free."""

    def test_broker_cannot_be_started(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        limit = tasks_of_user() + 40
        if hard != resource.RLIM_INFINITY and hard < limit + 60:
            self.skipTest("hard RLIMIT_NPROC %d too low" % hard)
        # the daemon inherits the limit; this process keeps its own
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, hard))
        try:
            d = self.daemon()
        finally:
            resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))
        c = self.client(d)
        fillers = []

        def free():
            for p in fillers:
                p.kill()
                p.wait()
        self.addCleanup(free)
        # past the limit, with room for other users' processes ending
        while tasks_of_user() < limit + 30 and len(fillers) < 400:
            fillers.append(subprocess.Popen(["sleep", "600"]))
        self.refused(c, "channel.start", {"channel": "nproc:1",
                                          "profile": "default"},
                     "the broker could not be started",
                     "process limit")
        procs = self.assertAlive(d)
        self.assertNotIn("broker", {p["role"] for p in procs.values()})
        free()
        fillers.clear()
        self.start(c, "nproc:1")


@needs_docker
class ChannelFiles(DockerTest):
    """The file guard's part of channel.start and channel.fresh."""

    def test_broker_socket(self):
        d = self.daemon()
        c = self.client(d)
        key = "sock:1"
        self.start(c, key)
        seg = os.path.join(d.state, "sock_1")
        sock = os.path.join(seg, "run", "broker.sock")
        st = os.lstat(sock)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertEqual(st.st_uid, os.getuid())
        for p in (d.state, seg, os.path.join(seg, "run"),
                  os.path.join(seg, "workspace")):
            self.assertOwnDir(p)
        kst = os.lstat(os.path.join(seg, ".channel-key"))
        self.assertEqual(stat.S_IMODE(kst.st_mode), 0o600)
        self.assertEqual(c.call("channel.status", {"channel": key})["broker"],
                         "ready")
        # a planted link in the socket's place is removed, not followed
        s = self.sentinel()
        c.call("channel.stop", {"channel": key})
        if os.path.lexists(sock):
            os.unlink(sock)
        os.symlink(s.path("secret.txt"), sock)
        self.start(c, key)
        self.assertTrue(stat.S_ISSOCK(os.lstat(sock).st_mode))
        s.check(self)

    def test_broker_socket_path_limit(self):
        base = tempfile.mkdtemp(prefix="rtsb-long-", dir="/tmp")
        self.addCleanup(shutil.rmtree, base, True)
        # <state>/c/run/broker.sock is 100 chars, <state>/cc/... 101
        state = os.path.join(base, "s" * (82 - len(base) - 1))
        self.assertEqual(len(state), 82)
        os.mkdir(state, 0o700)
        d = self.daemon(conf=lambda c: c.update(state_dir=state))
        c = self.client(d)
        ok = os.path.join(state, "c", "run", "broker.sock")
        self.assertEqual(len(ok), 100)
        self.start(c, "c")
        self.assertTrue(stat.S_ISSOCK(os.lstat(ok).st_mode))
        t0 = time.monotonic()
        self.refused(c, "channel.start", {"channel": "cc", "profile":
                                          "default"},
                     "broker socket path is longer than 100 chars")
        self.assertLess(time.monotonic() - t0, 10)
        self.assertFalse(os.path.lexists(
            os.path.join(state, "cc", "run", "broker.sock")))
        self.assertIsNone(inspect(self.container(d, "cc")))
        self.assertEqual(c.call("channel.status", {"channel": "cc"})["state"],
                         "missing")
        # paths has no socket and works
        self.assertIn("sessions", c.call("channel.paths", {"channel": "cc"}))
        self.assertEqual(prefixed_containers(d.prefix),
                         [self.container(d, "c")])
        self.assertAlive(d)

    def test_fresh_archives_sessions(self):
        d = self.daemon()
        c = self.client(d)
        key = "fresh:1"
        s = self.sentinel()
        self.start(c, key)
        name = self.container(d, key)
        self.assertIsNotNone(inspect(name))
        sess = c.call("channel.paths", {"channel": key})["sessions"]
        files = {"a.jsonl": b'{"a":1}\n', "b.jsonl": b'{"b":2}\n',
                 "c.txt": b"stays\n"}
        for n, data in files.items():
            with open(os.path.join(sess, n), "wb") as f:
                f.write(data)
        os.symlink(s.path("secret.txt"), os.path.join(sess, "d.jsonl"))
        os.mkdir(os.path.join(sess, "e.jsonl"), 0o700)
        before = datetime.datetime.now(datetime.timezone.utc)
        r = c.call("channel.fresh", {"channel": key})
        after = datetime.datetime.now(datetime.timezone.utc)
        self.assertEqual(r["archived"], 2, r)
        folder = r["folder"]
        m = ARCHIVE_FOLDER.match(folder)
        self.assertTrue(m, folder)
        when = datetime.datetime(*[int(x) for x in m.groups()[:6]],
                                 tzinfo=datetime.timezone.utc)
        self.assertLessEqual(before.replace(microsecond=0) -
                             datetime.timedelta(seconds=1), when)
        self.assertLessEqual(when, after + datetime.timedelta(seconds=1))
        # the container is gone, its broker too
        self.assertIsNone(inspect(name))
        st = c.call("channel.status", {"channel": key})
        self.assertEqual((st["state"], st["broker"]), ("missing", "none"))
        arch = os.path.join(sess, "archive", folder)
        self.assertOwnDir(os.path.join(sess, "archive"))
        self.assertOwnDir(arch)
        self.assertEqual(sorted(os.listdir(arch)), ["a.jsonl", "b.jsonl"])
        for n in ("a.jsonl", "b.jsonl"):
            with open(os.path.join(arch, n), "rb") as f:
                self.assertEqual(f.read(), files[n])
        self.assertEqual(sorted(os.listdir(sess)),
                         ["archive", "c.txt", "d.jsonl", "e.jsonl"])
        self.assertEqual(os.readlink(os.path.join(sess, "d.jsonl")),
                         s.path("secret.txt"))
        self.assertTrue(os.path.isdir(os.path.join(sess, "e.jsonl")))
        s.check(self)
        # nothing left to archive
        r = c.call("channel.fresh", {"channel": key})
        self.assertEqual(r["archived"], 0)
        # and the channel starts again
        self.start(c, key)
        self.assertTrue(inspect(name)["State"]["Running"])

    def test_fresh_replaces_planted_archive(self):
        d = self.daemon()
        c = self.client(d)
        key = "fresh:2"
        s = self.sentinel()
        sess = c.call("channel.paths", {"channel": key})["sessions"]
        attachments = os.path.join(os.path.dirname(sess), "attachments")
        archive = os.path.join(sess, "archive")
        for how, plant in (
                ("dir link", lambda p: os.symlink(s.path("sub"), p)),
                ("dangling link", lambda p: os.symlink(s.path("made"), p)),
                ("file", lambda p: write_file(p, "guest"))):
            if os.path.isdir(archive) and not os.path.islink(archive):
                shutil.rmtree(archive)
            plant(archive)
            shutil.rmtree(attachments)
            os.symlink(s.path("sub"), attachments)
            with open(os.path.join(sess, "x.jsonl"), "w") as f:
                f.write("{}\n")
            r = c.call("channel.fresh", {"channel": key})
            self.assertEqual(r["archived"], 1, how)
            self.assertOwnDir(archive)
            self.assertEqual(os.listdir(archive), [r["folder"]])
            self.assertEqual(os.listdir(os.path.join(archive, r["folder"])),
                             ["x.jsonl"])
            # fresh repairs attachments/ as well
            self.assertOwnDir(attachments)
            self.assertFalse(os.path.lexists(s.path("made")))
            s.check(self, "(archive as %s)" % how)

    def test_alias_does_not_reach_the_container(self):
        d = self.daemon()
        c = self.client(d)
        self.start(c, "discord:7")
        name = self.container(d, "discord:7")
        first = inspect(name)
        self.refused(c, "channel.start", {"channel": "discord_7",
                                          "profile": "default"},
                     "Channel workspace alias refused")
        for method in ("channel.stop", "channel.fresh", "channel.status"):
            self.refused(c, method, {"channel": "discord_7"},
                         "Channel workspace alias refused")
        # the owner's status is the container's
        st = c.call("channel.status", {"channel": "discord:7"})
        self.assertEqual((st["state"], st["profile"]),
                         ("running", "default"))
        now = inspect(name)
        self.assertEqual(now["Id"], first["Id"])
        self.assertTrue(now["State"]["Running"])
        self.assertEqual(now["Config"]["Labels"][LABEL_CHANNEL], "discord:7")
        self.assertEqual(prefixed_containers(d.prefix), [name])


@needs_docker
class Containers(DockerTest):
    def test_container_spec(self):
        d = self.daemon()
        c = self.client(d)
        key = "spec:1"
        self.start(c, key)
        name = self.container(d, key)
        info = inspect(name)
        self.assertIsNotNone(info)
        self.assertEqual(info["Name"], "/" + name)
        self.assertTrue(info["State"]["Running"])
        hc, cf = info["HostConfig"], info["Config"]
        self.assertEqual(hc["NetworkMode"], "none")
        self.assertIs(hc["ReadonlyRootfs"], True)
        self.assertEqual(hc["Tmpfs"],
                         {"/tmp": "rw,nosuid,nodev,size=512m,mode=1777"})
        self.assertEqual(hc["Memory"], 1536 * MIB)
        self.assertEqual(hc["MemorySwap"], 1536 * MIB)
        self.assertEqual(hc["NanoCpus"], 10 ** 9)
        self.assertEqual(hc["PidsLimit"], 256)
        self.assertEqual(hc["Ulimits"],
                         [{"Name": "nofile", "Soft": 256, "Hard": 256}])
        self.assertEqual(hc["CapDrop"], ["ALL"])
        self.assertFalse(hc.get("CapAdd"))
        self.assertIs(hc["Privileged"], False)
        self.assertEqual(hc["SecurityOpt"], ["no-new-privileges"])
        self.assertEqual(hc["RestartPolicy"]["Name"], "unless-stopped")
        self.assertEqual(hc["LogConfig"], {"Type": "local", "Config": {
            "max-size": "10m", "max-file": "2"}})
        seg = os.path.join(d.state, "spec_1")
        run, ws = os.path.join(seg, "run"), os.path.join(seg, "workspace")
        self.assertEqual(hc["Binds"], [run + ":/run/sandbox:ro",
                                       ws + ":/workspace"])
        mounts = sorted((m["Type"], m["Source"], m["Destination"], m["RW"])
                        for m in info["Mounts"])
        self.assertEqual(mounts, [("bind", run, "/run/sandbox", False),
                                  ("bind", ws, "/workspace", True)])
        self.assertEqual(cf["Image"], IMAGE)
        uid, gid = os.getuid(), os.getgid()
        self.assertGreater(uid, 0)
        self.assertGreater(gid, 0)
        self.assertEqual(cf["User"], "%d:%d" % (uid, gid))
        self.assertEqual(cf["Labels"][LABEL_CHANNEL], key)
        self.assertEqual(cf["Labels"][LABEL_PROFILE], "default")
        expected = {
            "SANDBOX_PROFILE=default",
            "TZ=UTC",
            "ANTHROPIC_BASE_URL=http://127.0.0.1:8080/anthropic",
            "CLAUDE_CODE_OAUTH_TOKEN=sandbox-dummy-token",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
            "SANDBOX_CONTENT=/app/worker/content.ts",
            "HOME=/tmp/home",
            "PI_CODING_AGENT_DIR=/tmp/pi-agent",
            "CLAUDE_CONFIG_DIR=/workspace/claude",
        }
        env = cf["Env"]
        self.assertEqual(len(env), len(set(env)))
        self.assertLessEqual(expected, set(env))
        # anything else comes from the image itself
        image_env = json.loads(docker("image", "inspect", IMAGE).stdout)[0][
            "Config"].get("Env") or []
        self.assertLessEqual(set(env) - expected, set(image_env))
        for e in env:
            for secret in (REAL_TOKEN, d.root, d.state,
                           d.config["upstream"]["credential_file"]):
                self.assertNotIn(secret, e)
        self.assertNotIn(REAL_TOKEN, json.dumps(info))

    def test_keep_then_recreate_after_docker_stop(self):
        d = self.daemon()
        c = self.client(d)
        key = "keep:1"
        self.start(c, key)
        name = self.container(d, key)
        first = inspect(name)["Id"]
        self.start(c, key)
        self.assertEqual(inspect(name)["Id"], first)
        st = c.call("channel.status", {"channel": key})
        self.assertEqual((st["state"], st["container"], st["broker"]),
                         ("running", first, "ready"))
        self.assertEqual(self.created_count(d, key), 1)
        r = docker("stop", "-t", "5", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(wait_until(lambda: c.call(
            "channel.status", {"channel": key})["state"] == "stopped",
            DOCKER_TIMEOUT))
        self.start(c, key)
        now = inspect(name)
        self.assertNotEqual(now["Id"], first)
        self.assertTrue(now["State"]["Running"])
        st = c.call("channel.status", {"channel": key})
        self.assertEqual((st["state"], st["container"], st["broker"]),
                         ("running", now["Id"], "ready"))
        self.assertEqual(prefixed_containers(d.prefix), [name])
        self.assertEqual(self.created_count(d, key), 2)

    def test_recreate_on_image_change(self):
        r = docker("tag", IMAGE, ALT_IMAGE)
        self.assertEqual(r.returncode, 0, r.stderr)
        # runs after the daemon's containers are removed
        self.addCleanup(docker, "rmi", ALT_IMAGE)
        d = self.daemon()
        key = "image:1"
        name = self.container(d, key)
        with Client(d.socket) as c:
            self.start(c, key)
        first = inspect(name)["Id"]

        def restart(image):
            self.assertEqual(d.stop(), 0)
            d.config["image"] = image
            with open(d.config_path, "w") as f:
                json.dump(d.config, f)
            d.start()
        # a restarted daemon with the same image keeps the container
        restart(IMAGE)
        self.assertTrue(inspect(name)["State"]["Running"])
        with Client(d.socket) as c:
            self.start(c, key)
        self.assertEqual(inspect(name)["Id"], first)
        # another image: recreated
        restart(ALT_IMAGE)
        with Client(d.socket) as c:
            self.start(c, key)
            info = inspect(name)
            self.assertNotEqual(info["Id"], first)
            self.assertTrue(info["State"]["Running"])
            self.assertEqual(info["Config"]["Image"], ALT_IMAGE)
            st = c.call("channel.status", {"channel": key})
            self.assertEqual((st["state"], st["image"], st["broker"]),
                             ("running", ALT_IMAGE, "ready"))
            self.assertEqual(prefixed_containers(d.prefix), [name])
            c.call("channel.stop", {"channel": key})
        self.assertIsNone(inspect(name))

    def test_recreate_on_profile_change(self):
        def conf(c):
            c["profiles"]["second"] = {"model": "claude-other"}
            c["time_zone"] = "Europe/Berlin"
        d = self.daemon(conf=conf)
        c = self.client(d)
        key = "profile:1"
        name = self.container(d, key)
        self.start(c, key)
        first = inspect(name)
        self.assertEqual(first["Config"]["Labels"][LABEL_PROFILE], "default")
        self.assertIn("TZ=Europe/Berlin", first["Config"]["Env"])
        broker1 = ready_brokers(c)
        self.assertEqual(len(broker1), 1, broker1)
        self.start(c, key, "second")
        now = inspect(name)
        self.assertNotEqual(now["Id"], first["Id"])
        self.assertTrue(now["State"]["Running"])
        self.assertEqual(now["Config"]["Labels"][LABEL_PROFILE], "second")
        self.assertEqual(now["Config"]["Labels"][LABEL_CHANNEL], key)
        self.assertIn("SANDBOX_PROFILE=second", now["Config"]["Env"])
        st = c.call("channel.status", {"channel": key})
        self.assertEqual({k: st[k] for k in ("state", "image", "profile",
                                             "container", "broker")},
                         {"state": "running", "image": IMAGE,
                          "profile": "second", "container": now["Id"],
                          "broker": "ready"})
        broker2 = ready_brokers(c)
        self.assertEqual(len(broker2), 1, broker2)
        self.assertNotEqual(broker1, broker2)
        # the same profile again: kept
        self.start(c, key, "second")
        self.assertEqual(inspect(name)["Id"], now["Id"])
        # an unknown profile is an invalid parameter
        with self.assertRaises(RpcError) as e:
            c.call("channel.start", {"channel": key, "profile": "nope"})
        self.assertEqual(e.exception.code, -32602)
        self.assertEqual(prefixed_containers(d.prefix), [name])

    def test_status_and_list(self):
        d = self.daemon()
        c = self.client(d)
        st = c.call("channel.status", {"channel": "list:1"})
        self.assertEqual((st["state"], st["broker"], st["busy"]),
                         ("missing", "none", False))
        self.assertNotIn("image", st)
        self.assertEqual(c.call("channel.list"), {"containers": []})
        self.start(c, "list:1")
        self.start(c, "list:2")
        st = c.call("channel.status", {"channel": "list:1"})
        self.assertEqual((st["state"], st["image"], st["profile"],
                          st["broker"], st["busy"]),
                         ("running", IMAGE, "default", "ready", False))
        listed = sorted(c.call("channel.list")["containers"],
                        key=lambda x: x["name"])
        self.assertEqual(listed, [
            {"name": self.container(d, "list:%d" % i),
             "channel": "list:%d" % i, "profile": "default",
             "state": "running", "image": IMAGE} for i in (1, 2)])
        docker("stop", "-t", "5", self.container(d, "list:2"))
        self.assertTrue(wait_until(lambda: c.call(
            "channel.status", {"channel": "list:2"})["state"] == "stopped",
            DOCKER_TIMEOUT))
        states = {x["channel"]: x["state"]
                  for x in c.call("channel.list")["containers"]}
        self.assertEqual(states["list:1"], "running")
        self.assertNotEqual(states["list:2"], "running")
        # a container of the channel's name without the profile label
        # has no profile
        r = docker("create", "--name", self.container(d, "list:3"),
                   "--label", "%s=list:3" % LABEL_CHANNEL, IMAGE)
        self.assertEqual(r.returncode, 0, r.stderr)
        st = c.call("channel.status", {"channel": "list:3"})
        self.assertEqual(st["state"], "stopped")
        self.assertNotIn("profile", st)

    def test_stop_twice(self):
        d = self.daemon()
        c = self.client(d)
        key = "stop:1"
        name = self.container(d, key)
        self.start(c, key)
        self.assertIsNotNone(inspect(name))
        self.assertEqual(c.call("channel.stop", {"channel": key}), {})
        self.assertIsNone(inspect(name))
        self.assertEqual(c.call("channel.stop", {"channel": key}), {})
        self.assertIsNone(inspect(name))
        st = c.call("channel.status", {"channel": key})
        self.assertEqual((st["state"], st["broker"]), ("missing", "none"))
        self.assertTrue(wait_until(lambda: not [
            p for p in c.call("daemon.stats")["processes"]
            if p["role"] == "broker"], 10))
        # a channel never started stops fine too
        self.assertEqual(c.call("channel.stop", {"channel": "stop:2"}), {})
        self.assertEqual(prefixed_containers(d.prefix), [])
        # and the stopped one starts again
        self.start(c, key)
        self.assertTrue(inspect(name)["State"]["Running"])

    def test_concurrent_starts_one_connection(self):
        d = self.daemon()
        c = self.client(d)
        key = "conc:1"
        r1 = c.request("channel.start", {"channel": key, "profile": "default"})
        r2 = c.request("channel.start", {"channel": key, "profile": "default"})
        self.assertEqual(c.wait(r1), {})
        self.assertEqual(c.wait(r2), {})
        name = self.container(d, key)
        self.assertEqual(prefixed_containers(d.prefix), [name])
        self.assertEqual(self.created_count(d, key), 1)
        self.assertTrue(inspect(name)["State"]["Running"])

    def test_concurrent_starts_two_connections(self):
        d = self.daemon()
        c1, c2 = self.client(d), self.client(d)
        key = "conc:2"
        name = self.container(d, key)
        ids = []
        for round_ in (1, 2):
            r1 = c1.request("channel.start", {"channel": key,
                                              "profile": "default"})
            r2 = c2.request("channel.start", {"channel": key,
                                              "profile": "default"})
            self.assertEqual(c1.wait(r1), {})
            self.assertEqual(c2.wait(r2), {})
            self.assertEqual(prefixed_containers(d.prefix), [name])
            self.assertEqual(self.created_count(d, key), round_)
            info = inspect(name)
            self.assertTrue(info["State"]["Running"])
            ids.append(info["Id"])
            # both statuses name the one container
            self.assertEqual(c1.call("channel.status", {"channel": key})[
                "container"], info["Id"])
            self.assertEqual(c2.call("channel.status", {"channel": key})[
                "container"], info["Id"])
            # second round: a stopped container, which both would recreate
            docker("stop", "-t", "5", name)
            self.assertTrue(wait_until(lambda: c1.call(
                "channel.status", {"channel": key})["state"] == "stopped",
                DOCKER_TIMEOUT))
        self.assertNotEqual(ids[0], ids[1])

    def ctl(self, d, *args):
        r = subprocess.run([rtsb.RTSANDBOXCTL, "-s", d.socket] + list(args),
                           capture_output=True, text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin"})
        return r

    def ctl_ok(self, d, *args):
        r = self.ctl(d, *args)
        self.assertEqual(r.returncode, 0, (args, r.stdout, r.stderr))
        return r.stdout

    def test_rtsandboxctl(self):
        def conf(c):
            c["profiles"]["second"] = {"model": "claude-other"}
        d = self.daemon(conf=conf)
        key = "ctl:1"
        name = self.container(d, key)
        out = self.ctl_ok(d, "status", key)
        self.assertIn("container missing", out)
        self.assertIn("broker none", out)
        out = self.ctl_ok(d, "start", key)
        self.assertIn("channel %s started" % key, out)
        info = inspect(name)
        self.assertTrue(info["State"]["Running"])
        out = self.ctl_ok(d, "status", key)
        self.assertIn("container running", out)
        self.assertIn("image %s" % IMAGE, out)
        self.assertIn("profile default", out)
        self.assertIn("broker ready", out)
        st = json.loads(self.ctl_ok(d, "--json", "status", key))
        self.assertEqual((st["state"], st["container"]),
                         ("running", info["Id"]))
        out = self.ctl_ok(d, "paths", key)
        ws = os.path.join(d.state, "ctl_1", "workspace")
        self.assertEqual(out.split(), ["sessions", ws + "/sessions",
                                       "attachments", ws + "/attachments"])
        out = self.ctl_ok(d, "ps")
        lines = out.splitlines()
        self.assertIn("CONTAINER", lines[0])
        row = [l.split() for l in lines[1:] if l.split()[0] == name]
        self.assertEqual(row, [[name, "running", "default", key]])
        ps = json.loads(self.ctl_ok(d, "--json", "ps"))
        self.assertEqual([x["name"] for x in ps["containers"]], [name])
        # another profile, the option before the channel
        out = self.ctl_ok(d, "start", "-p", "second", key)
        self.assertIn("started", out)
        self.assertEqual(inspect(name)["Config"]["Labels"][LABEL_PROFILE],
                         "second")
        with open(os.path.join(ws, "sessions", "s.jsonl"), "w") as f:
            f.write("{}\n")
        out = self.ctl_ok(d, "fresh", key)
        m = re.search(r"1 session file\(s\) archived in archive/(\S+)", out)
        self.assertTrue(m, out)
        self.assertTrue(ARCHIVE_FOLDER.match(m.group(1)), out)
        self.assertTrue(os.path.isfile(os.path.join(
            ws, "sessions", "archive", m.group(1), "s.jsonl")))
        self.assertIsNone(inspect(name))
        self.assertIn("container missing", self.ctl_ok(d, "status", key))
        self.ctl_ok(d, "start", key)
        self.assertIn("stopped", self.ctl_ok(d, "stop", key))
        self.assertIn("stopped", self.ctl_ok(d, "stop", key))
        self.assertIsNone(inspect(name))
        out = self.ctl_ok(d, "ps")
        self.assertNotIn(name, out)
        # errors: exit code 1 with the daemon's message
        r = self.ctl(d, "paths", "x" * 257)
        self.assertEqual(r.returncode, 1)
        self.assertIn("-32602", r.stderr)

    # The form of the usage text, "start CHANNEL [-p PROFILE]": cmd_start()
    # must restart getopt with optind = 0 after main()'s getopt_long("+..."),
    # or glibc keeps stopping at the first non-option (CHANNEL).
    def test_rtsandboxctl_start_profile_after_channel(self):
        def conf(c):
            c["profiles"]["second"] = {"model": "claude-other"}
        d = self.daemon(conf=conf)
        key = "ctl:2"
        out = self.ctl_ok(d, "start", key, "-p", "second")
        self.assertIn("started", out)
        self.assertEqual(inspect(self.container(d, key))["Config"]["Labels"][
            LABEL_PROFILE], "second")


if __name__ == "__main__":
    unittest.main(verbosity=2)
