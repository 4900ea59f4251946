"""Engines and runtimes (rtsandboxd.conf(5) docker.runtime; rtsandboxd(8)
ENGINES; rtsandboxctl(1) doctor), against what this machine has.

- GVisor: real turns with the reference worker under runsc, registered
  with the test dockerd by scripts/test-engines (with --host-uds=open and
  --network=none).  Skips, saying why, when runsc is not registered or a
  container cannot start under it here.
- RootlessPodman: the same turns with docker.socket the current user's own
  `podman system service` socket (RTSANDBOX_PODMAN_SOCKET) and the worker
  image loaded with podman load; the user is in no privileged group.
  scripts/test-engines runs this file as that user; elsewhere it skips.
- Doctor: rtsandboxctl doctor and rtsandboxd -n, each check passing here
  and made to fail: by the configuration, by files made here, by a fake
  engine on a Unix socket saying what a broken one would, and by
  rtsandbox-deny (RTSANDBOX_DENY) refusing the kernel's system calls.

Every daemon has its own container prefix (rten<pid>x<n>) whose containers
are removed at the end."""

import base64
import grp
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import rtsb  # noqa: E402
from rtsb import Client, Daemon, RpcError  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
PREFIX_BASE = "rten%dx" % os.getpid()
DENY = os.environ.get("RTSANDBOX_DENY", os.path.join(
    rtsb.BUILD, "tests", "rtsandbox-deny"))
PODMAN_SOCKET = os.environ.get("RTSANDBOX_PODMAN_SOCKET")
PODMAN_IMAGE = "localhost/rtsandbox-worker:latest"
AUTHOR = {"id": "u1", "name": "Ann"}
# PROTOCOL.md 7, as both engines must keep it.
OUR_ENV = [
    "SANDBOX_PROFILE=default", "TZ=UTC",
    "ANTHROPIC_BASE_URL=http://127.0.0.1:8080/anthropic",
    "CLAUDE_CODE_OAUTH_TOKEN=sandbox-dummy-token",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
    "SANDBOX_CONTENT=/app/worker/content.ts", "HOME=/tmp/home",
    "PI_CODING_AGENT_DIR=/tmp/pi-agent", "CLAUDE_CONFIG_DIR=/workspace/claude",
]

FU = None
_certdir = None
_counter = [0]


def segment_of(key):
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-")
                   else "_" for ch in key)


def docker_ok():
    return rtsb.docker_skip_reason(IMAGE) is None


def gvisor_skip_reason():
    """Why runsc cannot run a channel's container here, or None: the exact
    error of a container started as the daemon would start one."""
    if not docker_ok():
        return rtsb.docker_skip_reason(IMAGE)
    r = rtsb.docker("info", "--format", "{{json .Runtimes}}")
    if r.returncode != 0:
        return "docker info: " + r.stderr.strip()
    if "runsc" not in json.loads(r.stdout or "{}"):
        return ("runsc is not registered with dockerd (scripts/test-engines "
                "setup registers it)")
    name = "%sprobe" % PREFIX_BASE
    r = rtsb.docker("run", "-d", "--name", name, "--runtime", "runsc",
                    "--network", "none", "--read-only", "--cap-drop", "ALL",
                    "--security-opt", "no-new-privileges", "--user",
                    "%d:%d" % (os.getuid(), os.getgid()), "--tmpfs",
                    "/tmp:rw,nosuid,nodev,size=512m,mode=1777", IMAGE,
                    timeout=60)
    try:
        if r.returncode != 0:
            return "a container does not start under runsc: " + \
                r.stderr.strip()[-400:]
        st = rtsb.inspect_container(name)
        if st is None or not st["State"]["Running"]:
            return "a container under runsc stopped at once: %s" % (
                st and st["State"].get("Error"))
    finally:
        rtsb.docker("rm", "-f", name)
    return None


def podman_skip_reason():
    if not PODMAN_SOCKET:
        return ("RTSANDBOX_PODMAN_SOCKET is not set: scripts/test-engines "
                "runs this as the rootless Podman user")
    try:
        status, _ = podman_call("GET", "/_ping")
    except OSError as e:
        return "Podman socket %s: %s" % (PODMAN_SOCKET, e)
    if status != 200:
        return "Podman socket %s answers /_ping %d" % (PODMAN_SOCKET, status)
    status, _ = podman_call("GET", "/images/%s/json" %
                            PODMAN_IMAGE.replace("/", "%2F"))
    if status != 200:
        return "%s is not loaded into Podman" % PODMAN_IMAGE
    return None


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def podman_call(method, path, body=None):
    c = UnixHTTP(PODMAN_SOCKET)
    try:
        c.request(method, "/v1.41" + path, body=body)
        r = c.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data)
        except ValueError:
            # /_ping answers "OK", removals nothing
            return r.status, None
    finally:
        c.close()


def podman_inspect(name):
    status, js = podman_call("GET", "/containers/%s/json" % name)
    return js if status == 200 else None


GVISOR_SKIP = gvisor_skip_reason()
PODMAN_SKIP = podman_skip_reason()


def setUpModule():
    global FU, _certdir
    if GVISOR_SKIP is not None and PODMAN_SKIP is not None:
        return
    _certdir = tempfile.mkdtemp(prefix="rtsb-certs-", dir="/tmp")
    os.chmod(_certdir, 0o755)
    FU = FakeUpstream(os.path.join(_certdir, "certs"))
    FU.start()


def tearDownModule():
    if FU is not None:
        FU.stop()
    if docker_ok():
        names = [n for n in rtsb.docker("ps", "-a", "--format",
                                        "{{.Names}}").stdout.split()
                 if n.startswith(PREFIX_BASE)]
        if names:
            rtsb.docker("rm", "-f", *names)
    if _certdir is not None:
        shutil.rmtree(_certdir, ignore_errors=True)
    rtsb.docker_cleanup()


class EngineTurns(unittest.TestCase):
    """A daemon of its own prefix against the fake upstream, and turns."""

    engine_socket = None
    image = IMAGE

    def setUp(self):
        FU.reset()

    def remove(self, name):
        if self.engine_socket is None:
            rtsb.docker("rm", "-f", name)
        else:
            podman_call("DELETE", "/containers/%s?force=true" % name)

    def inspect(self, name):
        if self.engine_socket is None:
            return rtsb.inspect_container(name)
        return podman_inspect(name)

    def daemon(self, conf=None, prefix=None):
        if prefix is None:
            _counter[0] += 1
            prefix = "%s%d" % (PREFIX_BASE, _counter[0])

        def config(c):
            c["image"] = self.image
            c["docker"] = {"container_prefix": prefix}
            if self.engine_socket is not None:
                c["docker"]["socket"] = self.engine_socket
            c["upstream"]["url"] = FU.url
            c["upstream"]["ca_file"] = FU.ca_file
            c["tools"] = ["roll_dice"]
            c["timeouts"] = {"start_ms": 60000, "turn_ms": 60000}
            if conf:
                conf(c)
        d = Daemon(config=config)
        d.prefix = prefix
        d.state = d.config["state_dir"]

        def done():
            try:
                d.stop()
            finally:
                for key in getattr(d, "keys", ()):
                    self.remove("%s-%s" % (prefix, segment_of(key)))
                d.cleanup()
        self.addCleanup(done)
        d.keys = []
        d.start()
        return d

    def client(self, d):
        c = Client(d.socket, hooks=("tool.call",))
        c.sock.settimeout(120)
        self.addCleanup(c.close)
        return c

    def name(self, d, key):
        return "%s-%s" % (d.prefix, segment_of(key))

    def params(self, d, key, text, turn_id="t1"):
        if key not in d.keys:
            d.keys.append(key)
        return {"channel": key, "profile": "default", "turnId": turn_id,
                "author": dict(AUTHOR), "text": text, "images": []}

    def finish(self, c, rid, timeout=120):
        """Answers tool.call with "4" until the answer to rid comes."""
        hooks = []
        c.sock.settimeout(timeout)
        while True:
            m = c.pending.pop(0) if c.pending else c.read_message()
            if m.get("method") == "tool.call":
                hooks.append(m["params"])
                c.send_raw(json.dumps({"jsonrpc": "2.0", "id": m["id"],
                                       "result": {"ok": True, "text": "4"}}
                                      ).encode() + b"\n")
                continue
            if "method" in m:
                continue
            if m.get("id") != rid:
                c.pending.append(m)
                continue
            if "error" in m:
                raise RpcError(m["error"]["code"], m["error"]["message"])
            return m["result"], hooks

    def turn(self, c, params):
        return self.finish(c, c.request("turn.run", params))

    def assertProtocol7(self, d, key, info):
        """PROTOCOL.md 7, as the engine reports the container."""
        cfg, hc = info["Config"], info["HostConfig"]
        self.assertEqual(cfg["User"], "%d:%d" % (os.getuid(), os.getgid()))
        self.assertEqual(cfg["Labels"]["roundtable.sandbox.channel"], key)
        self.assertEqual(cfg["Labels"]["roundtable.sandbox.profile"],
                         "default")
        if self.engine_socket is None:
            self.assertEqual(cfg["Env"][:9], OUR_ENV)
        else:
            # Podman keeps the environment as a map: no order
            self.assertEqual(set(OUR_ENV) - set(cfg["Env"]), set())
        self.assertNotIn("sk-test-real-token", json.dumps(info))
        self.assertEqual(hc["NetworkMode"], "none")
        self.assertIs(hc["ReadonlyRootfs"], True)
        self.assertEqual(hc["SecurityOpt"], ["no-new-privileges"])
        self.assertEqual(hc["RestartPolicy"]["Name"], "unless-stopped")
        self.assertFalse(hc.get("Privileged"))
        self.assertFalse(hc.get("CapAdd"))
        ws = os.path.join(d.state, segment_of(key))
        binds = sorted(b.split(",")[0] if self.engine_socket else b
                       for b in hc["Binds"])
        self.assertEqual(binds, sorted([
            ws + "/run:/run/sandbox:ro", ws + "/workspace:/workspace" +
            (":rw" if self.engine_socket else "")]))
        self.assertEqual(hc["Tmpfs"]["/tmp"].split(",")[:5],
                         ["rw", "nosuid", "nodev", "size=512m", "mode=1777"])

    def turns_end_to_end(self, d, key):
        """A reply, a host tool, a reply file, the same container for the
        next turn, and a cancel that removes the container."""
        c = self.client(d)
        r, hooks = self.turn(c, self.params(d, key, "hello"))
        self.assertEqual(r, {"ok": True, "text": "echo: Ann: hello",
                             "files": []})
        first = c.call("channel.status", {"channel": key})["container"]
        text = 'roll [[tool:roll_dice {"sides":6}]] and [[file:a.txt hi]]'
        r, hooks = self.turn(c, self.params(d, key, text, "t2"))
        self.assertEqual(r, {
            "ok": True, "text": "done: 4\nWrote a.txt (2 bytes); it goes "
            "with the reply.", "files": [{"name": "a.txt", "data":
                                          base64.b64encode(b"hi").decode()}]})
        self.assertEqual([h["name"] for h in hooks], ["roll_dice"])
        self.assertEqual(hooks[0]["context"]["channel"], key)
        # the worker's file is the service user's on the host
        out = os.path.join(d.state, segment_of(key), "workspace", "outbox")
        for p in (out, os.path.join(out, "t2"),
                  os.path.join(out, "t2", "a.txt")):
            st = os.lstat(p)
            self.assertEqual((st.st_uid, st.st_gid),
                             (os.getuid(), os.getgid()), p)
        with open(os.path.join(out, "t2", "a.txt"), "rb") as f:
            self.assertEqual(f.read(), b"hi")
        self.assertEqual(c.call("channel.status", {"channel": key})[
            "container"], first)
        # cancelled mid-turn: answered once the container is gone
        calls = len([r for r in FU.requests() if r["path"] == "/v1/messages"])
        FU.script({"kind": "stall", "seconds": 30, "match": "/v1/messages"})
        rid = c.request("turn.run", self.params(d, key, "stalled", "t3"))
        FU.wait_for(calls + 1, 60, path="/v1/messages")
        self.assertEqual(c.call("turn.cancel", {"channel": key}),
                         {"cancelled": True})
        r, _ = self.finish(c, rid, timeout=30)
        self.assertEqual((r["ok"], r["reason"]), (False, "cancelled"), r)
        self.assertIsNone(self.inspect(self.name(d, key)))
        # and the channel works again in a new container
        r, _ = self.turn(c, self.params(d, key, "after", "t4"))
        self.assertEqual(r["text"], "echo: Ann: after")
        self.assertNotEqual(c.call("channel.status", {"channel": key})[
            "container"], first)
        return c


@unittest.skipIf(GVISOR_SKIP is not None, GVISOR_SKIP)
class GVisor(EngineTurns):
    """docker.runtime "runsc": the user-space kernel between the guest and
    the host's."""

    def runsc(self, c):
        c["docker"]["runtime"] = "runsc"

    def test_turns_under_gvisor(self):
        d = self.daemon(self.runsc)
        key = "gvisor:1"
        c = self.turns_end_to_end(d, key)
        info = rtsb.inspect_container(self.name(d, key))
        self.assertEqual(info["HostConfig"]["Runtime"], "runsc")
        self.assertProtocol7(d, key, info)
        hc = info["HostConfig"]
        self.assertEqual(hc["CapDrop"], ["ALL"])
        self.assertEqual((hc["Memory"], hc["MemorySwap"], hc["NanoCpus"],
                          hc["PidsLimit"]),
                         (1536 << 20, 1536 << 20, 10 ** 9, 256))
        self.assertEqual(hc["Ulimits"], [{"Name": "nofile", "Hard": 256,
                                          "Soft": 256}])
        self.assertEqual(hc["LogConfig"], {"Type": "local", "Config": {
            "max-size": "10m", "max-file": "2"}})
        self.assertEqual(hc["Tmpfs"], {
            "/tmp": "rw,nosuid,nodev,size=512m,mode=1777"})
        # gVisor's own kernel answers the guest, not the host's
        self.assertTrue(info["State"]["Running"])
        c.call("channel.stop", {"channel": key})
        self.assertIsNone(rtsb.inspect_container(self.name(d, key)))

    def test_runtime_change_recreates(self):
        """Like a changed image: a container under another runtime than
        configured is replaced at its next start; one the engine does not
        have is refused before anything is removed."""
        key = "gvisor:2"
        _counter[0] += 1
        prefix = "%s%d" % (PREFIX_BASE, _counter[0])
        d = self.daemon(prefix=prefix)
        c = self.client(d)
        r, _ = self.turn(c, self.params(d, key, "under runc"))
        self.assertTrue(r["ok"], r)
        first = c.call("channel.status", {"channel": key})["container"]
        self.assertEqual(rtsb.inspect_container(first)["HostConfig"][
            "Runtime"], "runc")
        c.close()
        self.assertEqual(d.stop(), 0)

        def restart(runtime):
            if runtime is None:
                d.config["docker"].pop("runtime", None)
            else:
                d.config["docker"]["runtime"] = runtime
            with open(d.config_path, "w") as f:
                json.dump(d.config, f)
            d.start()
            return self.client(d)

        c = restart("runsc")
        r, _ = self.turn(c, self.params(d, key, "under runsc", "t2"))
        self.assertEqual(r["text"], "echo: Ann: under runsc")
        second = c.call("channel.status", {"channel": key})["container"]
        self.assertNotEqual(second, first)
        self.assertIsNone(rtsb.inspect_container(first))
        self.assertEqual(rtsb.inspect_container(second)["HostConfig"][
            "Runtime"], "runsc")
        # the same runtime again: kept
        self.assertEqual(c.call("channel.start", {
            "channel": key, "profile": "default"}), {})
        self.assertEqual(c.call("channel.status", {"channel": key})[
            "container"], second)
        c.close()
        self.assertEqual(d.stop(), 0)

        # a runtime the engine does not have: a clear error, and the
        # running container is left as it was
        c = restart("rtsb-no-such-runtime")
        r, _ = self.turn(c, self.params(d, key, "refused", "t3"))
        self.assertEqual((r["ok"], r["reason"]), (False, "start_failed"), r)
        self.assertIn("runtime rtsb-no-such-runtime is not one of the "
                      "engine's", r["message"])
        info = rtsb.inspect_container(second)
        self.assertTrue(info["State"]["Running"])
        self.assertEqual(info["HostConfig"]["Runtime"], "runsc")
        # and again on the same daemon: the broker made for the refused
        # container went with it, so the old container serves no turn
        r, _ = self.turn(c, self.params(d, key, "refused again", "t3b"))
        self.assertEqual((r["ok"], r["reason"]), (False, "start_failed"), r)
        c.close()
        self.assertEqual(d.stop(), 0)
        with self.assertRaises(RpcError) as e:
            d.start()
            c = self.client(d)
            c.call("channel.start", {"channel": key, "profile": "default"})
        self.assertIn("runtime rtsb-no-such-runtime", e.exception.message)
        self.assertTrue(rtsb.inspect_container(second)["State"]["Running"])
        c.close()
        self.assertEqual(d.stop(), 0)

        # none configured: the engine's default again
        c = restart(None)
        r, _ = self.turn(c, self.params(d, key, "back", "t4"))
        self.assertTrue(r["ok"], r)
        third = c.call("channel.status", {"channel": key})["container"]
        self.assertNotEqual(third, second)
        self.assertEqual(rtsb.inspect_container(third)["HostConfig"][
            "Runtime"], "runc")


@unittest.skipIf(PODMAN_SKIP is not None, PODMAN_SKIP)
class RootlessPodman(EngineTurns):
    """docker.socket the service user's own Podman: no process of the
    daemon holds anything root-equivalent."""

    engine_socket = PODMAN_SOCKET
    image = PODMAN_IMAGE

    def test_no_privileged_group(self):
        try:
            docker_gid = grp.getgrnam("docker").gr_gid
        except KeyError:
            docker_gid = None
        self.assertNotIn(docker_gid, os.getgroups())
        self.assertNotEqual(os.getuid(), 0)
        for sock in ("/var/run/docker.sock", "/run/podman/podman.sock"):
            if not os.path.exists(sock):
                continue
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            with self.assertRaises(PermissionError, msg=sock):
                s.connect(sock)
            s.close()
        d = self.daemon()
        with Client(d.socket) as c:
            procs = c.call("daemon.stats")["processes"]
        self.assertLessEqual({"supervisor", "fsguard", "docker", "egress"},
                             {p["role"] for p in procs})
        for p in procs:
            if not p.get("pid"):
                continue
            with open("/proc/%d/status" % p["pid"]) as f:
                status = dict(line.split(":", 1) for line in f)
            ids = [int(x) for x in status["Uid"].split() +
                   status["Gid"].split() + status["Groups"].split()]
            self.assertNotIn(0, ids, p)
            self.assertNotIn(docker_gid, ids, p)
            self.assertEqual(int(status["Uid"].split()[0]), os.getuid())

    def test_turns_under_podman(self):
        d = self.daemon()
        key = "podman:1"
        c = self.turns_end_to_end(d, key)
        info = podman_inspect(self.name(d, key))
        self.assertProtocol7(d, key, info)
        # The worker is the service user on the host, not root inside,
        # and no host id maps to the container's root.
        pid = info["State"]["Pid"]
        with open("/proc/%d/status" % pid) as f:
            status = dict(line.split(":", 1) for line in f)
        self.assertEqual(int(status["Uid"].split()[0]), os.getuid())
        self.assertEqual(status["CapEff"].strip(), "0" * 16)
        with open("/proc/%d/uid_map" % pid) as f:
            rows = [[int(x) for x in line.split()] for line in f]
        for inside, outside, count in rows:
            self.assertFalse(outside <= 0 < outside + count, rows)
            if inside == 0:
                self.assertNotEqual(outside, os.getuid(), rows)
        self.assertIn([os.getuid(), os.getuid(), 1], rows)
        # the host side works on what the worker wrote: archiving and
        # repairing the workspace after a fresh start
        paths = c.call("channel.paths", {"channel": key})
        with open(os.path.join(paths["sessions"], "s1.jsonl"), "wb") as f:
            f.write(b'{"t":1}\n')
        r = c.call("channel.fresh", {"channel": key})
        self.assertEqual(r["archived"], 1, r)
        self.assertIsNone(podman_inspect(self.name(d, key)))
        r, _ = self.turn(c, self.params(d, key, "fresh", "t9"))
        self.assertEqual(r["text"], "echo: Ann: fresh")

    def test_worker_killed_under_podman(self):
        """Podman's event stream speaks of a container's end in words of
        its own: the turn still ends at once, not at its deadline."""
        d = self.daemon()
        key = "podman:kill"
        c = self.client(d)
        r, _ = self.turn(c, self.params(d, key, "hello"))
        self.assertTrue(r["ok"], r)
        FU.script({"kind": "stall", "seconds": 30, "match": "/v1/messages"})
        calls = len([q for q in FU.requests() if q["path"] == "/v1/messages"])
        rid = c.request("turn.run", self.params(d, key, "stalled", "t2"))
        FU.wait_for(calls + 1, 60, path="/v1/messages")
        t0 = time.monotonic()
        info = podman_inspect(self.name(d, key))
        os.kill(info["State"]["Pid"], signal.SIGKILL)
        r, _ = self.finish(c, rid, timeout=30)
        self.assertLess(time.monotonic() - t0, 5)
        # Podman writes its events to a file that its service reads
        # behind: the restarted worker's announce may end the turn first.
        self.assertEqual((r["ok"], r["reason"]), (False, "worker_failed"), r)
        self.assertIn(r["message"], (
            "The worker's container stopped (exit code 137)",
            "The worker stopped before it answered"))
        # either way, Podman's "died" was read as the end it is
        self.assertTrue(rtsb.wait_until(
            lambda: "docker events: die %s" % info["Id"][:12] in
            d.read_log(), 10), d.read_log()[-3000:])
        FU.reset()
        r, _ = self.turn(c, self.params(d, key, "again", "t3"))
        self.assertEqual(r["text"], "echo: Ann: again")
        self.assertIn("docker events: following", d.read_log())

    def test_runtime_refused(self):
        """Podman's compatible API would ignore HostConfig.Runtime: asking
        for one is an error, and nothing is made."""
        d = self.daemon(lambda c: c["docker"].update(runtime="runsc"))
        c = self.client(d)
        key = "podman:rt"
        r, _ = self.turn(c, self.params(d, key, "x"))
        self.assertEqual((r["ok"], r["reason"]), (False, "start_failed"), r)
        with self.assertRaises(RpcError) as e:
            c.call("channel.start", {"channel": key, "profile": "default"})
        self.assertIn("containers.conf", e.exception.message)
        self.assertIsNone(podman_inspect(self.name(d, key)))


# ---------------------------------------------------------------- doctor

DOCKER_VERSION = {"Version": "20.10.24", "ApiVersion": "1.41",
                  "MinAPIVersion": "1.12", "Components": [
                      {"Name": "Engine", "Version": "20.10.24"}]}
DOCKER_INFO = {"DefaultRuntime": "runc", "CgroupVersion": "2",
               "MemoryLimit": True, "SwapLimit": True, "PidsLimit": True,
               "CpuCfsQuota": True, "SecurityOptions": [],
               "Runtimes": {"runc": {"path": "runc"}, "runsc": {
                   "path": "/usr/bin/runsc",
                   "runtimeArgs": ["--host-uds=open", "--network=none"]}}}
PODMAN_VERSION = {"Version": "4.3.1", "ApiVersion": "1.41",
                  "MinAPIVersion": "1.24", "Components": [
                      {"Name": "Podman Engine", "Version": "4.3.1"}]}
IMAGE_JSON = {"Id": "sha256:" + "ab" * 32, "RepoTags": [IMAGE]}


class FakeEngine:
    """An Engine API on a Unix socket that says of itself what a test
    wants: answers maps a path after /v1.41 to (status, JSON)."""

    def __init__(self, path, answers):
        self.answers = answers
        self.paths = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                fake.paths.append(path)
                if path.startswith("/v1.41"):
                    path = path[len("/v1.41"):]
                status, js = fake.answers.get(path, (404, {
                    "message": "no such thing"}))
                body = json.dumps(js).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        class Server(socketserver.ThreadingMixIn,
                     socketserver.UnixStreamServer):
            daemon_threads = True

            def get_request(self):
                s, _ = self.socket.accept()
                return s, ("fake", 0)

        self.path = path
        self.server = Server(path, Handler)
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.path)


class Doctor(unittest.TestCase):
    """Each check, passing and failing, by line: "STATUS  name: text"."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="rtsb-dr-", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.root, True)
        os.chmod(self.root, 0o755)
        self.state = os.path.join(self.root, "state")
        os.mkdir(self.state, 0o700)
        self.cred = os.path.join(self.root, "credential")
        with open(self.cred, "w") as f:
            f.write("sk-test\n")
        os.chmod(self.cred, 0o600)
        self.config = {
            "state_dir": self.state,
            "control_socket": os.path.join(self.root, "control.sock"),
            "image": PODMAN_IMAGE if PODMAN_SOCKET else IMAGE,
            "profiles": {"default": {"model": "m"}},
            "upstream": {"credential_file": self.cred},
            "docker": {"socket": PODMAN_SOCKET or rtsb.DOCKER_SOCKET},
        }

    def engine(self, answers):
        path = os.path.join(self.root, "engine.sock")
        fe = FakeEngine(path, answers)
        self.addCleanup(fe.close)
        self.config["docker"]["socket"] = path
        self.config["image"] = IMAGE
        return fe

    def run_doctor(self, conf=None, wrap=(), args=None):
        """(exit status, {name: (status, text)}, output)."""
        if conf:
            conf(self.config)
        path = os.path.join(self.root, "rtsandboxd.json")
        with open(path, "w") as f:
            json.dump(self.config, f)
        cmd = list(wrap) + [rtsb.RTSANDBOXCTL] + (args or ["doctor", "-f",
                                                           path])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin"})
        lines = {}
        for line in r.stdout.splitlines():
            head, _, text = line.partition(": ")
            status, _, name = head.partition("  ")
            if status.strip() in ("ok", "warn", "FAIL"):
                lines[name.strip()] = (status.strip(), text)
        return r.returncode, lines, r.stdout + r.stderr

    def assertLine(self, lines, name, status, *words):
        self.assertIn(name, lines, lines)
        self.assertEqual(lines[name][0], status, lines[name])
        for w in words:
            self.assertIn(w, lines[name][1])

    # ---- this machine, as it is

    def test_this_host(self):
        rc, lines, out = self.run_doctor()
        print(out)
        self.assertEqual(list(lines), [
            "configuration", "user", "groups", "engine", "image", "runtime",
            "log driver", "limits", "landlock", "seccomp", "user namespaces", "state_dir",
            "upstream.credential_file", "control_socket", "socket paths"])
        for name in ("configuration", "user", "engine", "image", "runtime",
                     "log driver", "seccomp", "state_dir", "upstream.credential_file",
                     "control_socket", "socket paths"):
            self.assertEqual(lines[name][0], "ok", (name, lines[name]))
        if PODMAN_SOCKET:
            self.assertLine(lines, "groups", "ok", "no root-equivalent")
            self.assertLine(lines, "engine", "ok", "Podman", "rootless")
        else:
            # the test's service user is in group docker
            self.assertLine(lines, "groups", "warn", "docker",
                            "rootless Podman")
            self.assertLine(lines, "engine", "ok", "Docker Engine",
                            "running as root")
        failed = [n for n, (s, _) in lines.items() if s == "FAIL"]
        self.assertEqual(rc, 1 if failed else 0, out)
        self.assertIn("%d failed" % len(failed), out)

    @unittest.skipIf(PODMAN_SOCKET is not None, "Docker only")
    def test_runtime_known_or_not(self):
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="rtsb-no-such-runtime"))
        self.assertLine(lines, "runtime", "FAIL", "rtsb-no-such-runtime",
                        "is not one of the engine's", "runc",
                        "/etc/docker/daemon.json")
        self.assertEqual(rc, 1)
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="runc"))
        self.assertLine(lines, "runtime", "ok", "runc")

    @unittest.skipIf(PODMAN_SOCKET is not None, "Docker only")
    def test_log_driver(self):
        """docker.log_driver against the engine's Plugins.Log; the default
        is local; a value of neither kind is refused by name."""
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "log driver", "ok", "local",
                        "2 files of 10 MiB")
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(log_driver="journald"))
        self.assertIn(lines["log driver"][0], ("ok", "warn"), out)
        self.assertIn("journald", lines["log driver"][1])
        if not os.path.exists("/run/systemd/journal/socket"):
            self.assertLine(lines, "log driver", "warn", "is missing")
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(log_driver="json-file"))
        self.assertLine(lines, "configuration", "FAIL",
                        "docker.log_driver")
        path = os.path.join(self.root, "rtsandboxd.json")
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("docker.log_driver: must be \"local\"", r.stderr)

    def test_image_missing(self):
        rc, lines, out = self.run_doctor(
            lambda c: c.update(image="rtsb-no-such-image:latest"))
        self.assertLine(lines, "image", "FAIL", "rtsb-no-such-image:latest",
                        "never pulls", "load -i")
        self.assertEqual(rc, 1)

    # ---- the engine, unreachable or saying what a broken one would

    def test_engine_unreachable(self):
        rc, lines, out = self.run_doctor(lambda c: c["docker"].update(
            socket=os.path.join(self.root, "none.sock")))
        self.assertLine(lines, "engine", "FAIL", "No such file",
                        "no engine listens")
        for name in ("image", "runtime", "limits"):
            self.assertNotIn(name, lines)
        self.assertEqual(rc, 1)
        # a socket this user may not open
        path = os.path.join(self.root, "closed.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.listen(1)
        self.addCleanup(s.close)
        os.chmod(path, 0)
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(socket=path))
        self.assertLine(lines, "engine", "FAIL", "Permission denied",
                        "rootless Podman socket")

    def test_engine_api_version(self):
        v = dict(DOCKER_VERSION, ApiVersion="1.52", MinAPIVersion="1.44",
                 Version="29.0.0")
        self.engine({"/version": (200, v), "/info": (200, DOCKER_INFO)})
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "engine", "FAIL", "1.44 to 1.52",
                        "not v1.41")
        self.assertEqual(rc, 1)

    def test_fake_docker_passes(self):
        fe = self.engine({"/version": (200, DOCKER_VERSION),
                          "/info": (200, DOCKER_INFO),
                          "/images/%s/json" % IMAGE.replace(":", "%3A"):
                          (200, IMAGE_JSON)})
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="runsc"))
        self.assertLine(lines, "engine", "ok", "Docker Engine 20.10.24")
        self.assertLine(lines, "image", "ok", IMAGE, "sha256:abab")
        self.assertLine(lines, "runtime", "ok", "runsc", "--host-uds=open")
        self.assertLine(lines, "limits", "ok", "cgroup v2")
        self.assertIn("/v1.41/version", fe.paths)

    def test_gvisor_without_its_options(self):
        info = json.loads(json.dumps(DOCKER_INFO))
        info["Runtimes"]["runsc"]["runtimeArgs"] = ["--network=none"]
        self.engine({"/version": (200, DOCKER_VERSION), "/info": (200, info)})
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="runsc"))
        self.assertLine(lines, "runtime", "FAIL", "--host-uds=open",
                        "broker socket", "runtimeArgs")
        info["Runtimes"]["runsc"]["runtimeArgs"] = ["--host-uds=open"]
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "runtime", "FAIL", "--network=none")
        # gVisor as the engine's default is checked the same way
        info["DefaultRuntime"] = "runsc"
        self.config["docker"].pop("runtime")
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "runtime", "FAIL", "runsc", "--network=none")

    def test_limits_not_enforceable(self):
        info = dict(DOCKER_INFO, SwapLimit=False, PidsLimit=False)
        self.engine({"/version": (200, DOCKER_VERSION), "/info": (200, info)})
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "limits", "FAIL", " swap pids limits",
                        "swapaccount=1")
        self.assertEqual(rc, 1)

    def test_rootless_docker(self):
        info = dict(DOCKER_INFO, SecurityOptions=["name=rootless"])
        self.engine({"/version": (200, DOCKER_VERSION), "/info": (200, info)})
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "engine", "FAIL", "rootless Docker",
                        "subordinate ids")

    def test_fake_podman(self):
        libpod = {"host": {"cgroupVersion": "v1", "cgroupControllers": [],
                           "security": {"rootless": True}}}
        answers = {"/version": (200, PODMAN_VERSION),
                   "/info": (200, {"DefaultRuntime": "crun",
                                   "CgroupVersion": "1"}),
                   "/libpod/info": (200, libpod),
                   "/images/%s/json" % IMAGE.replace(":", "%3A"): (200, {
                       "Id": "sha256:" + "cd" * 32,
                       "RepoTags": [PODMAN_IMAGE]})}
        self.engine(answers)
        rc, lines, out = self.run_doctor(
            lambda c: c.update(image=IMAGE))
        self.assertLine(lines, "engine", "ok", "Podman 4.3.1", "rootless")
        # loaded images are localhost/...: the configured name must be it
        self.assertLine(lines, "image", "FAIL", PODMAN_IMAGE,
                        "every start recreates")
        self.assertLine(lines, "runtime", "ok", "containers.conf")
        self.assertLine(lines, "limits", "FAIL", "cgroup v1", "unbounded",
                        "nofile=256:256")
        # a runtime asked of Podman
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="runsc"))
        self.assertLine(lines, "runtime", "FAIL", "does not choose runtimes")
        # cgroup v2 with the controllers delegated: enforceable
        libpod["host"].update(cgroupVersion="v2",
                              cgroupControllers=["cpu", "memory", "pids"])
        self.config["docker"].pop("runtime")
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "limits", "warn", "cgroup v2",
                        "open-files")
        libpod["host"]["cgroupControllers"] = ["cpu"]
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "limits", "FAIL", " memory pids",
                        "not delegated")
        # Podman as root: as much root as dockerd, and keep-id fails
        libpod["host"]["security"]["rootless"] = False
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "engine", "FAIL", "runs as root")

    # ---- the configuration and the files it names

    def test_configuration_invalid(self):
        rc, lines, out = self.run_doctor(
            lambda c: c.update(image="-bad", timeouts={"start_ms": 1}))
        self.assertLine(lines, "configuration", "FAIL", "image",
                        "and more", "rtsandboxd -n")
        # the checks that need no configuration still run
        for name in ("user", "groups", "landlock", "seccomp",
                     "user namespaces"):
            self.assertIn(name, lines)
        self.assertNotIn("engine", lines)
        self.assertEqual(rc, 1)
        rc, lines, out = self.run_doctor(args=[
            "doctor", "-f", os.path.join(self.root, "missing.json")])
        self.assertLine(lines, "configuration", "FAIL", "missing.json")
        self.assertEqual(rc, 1)
        r = subprocess.run([rtsb.RTSANDBOXCTL, "doctor", "extra"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage", r.stderr)

    def test_state_dir(self):
        os.chmod(self.state, 0o750)
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "state_dir", "FAIL", "mode 0750",
                        "chmod 0700")
        self.assertEqual(rc, 1)
        os.chmod(self.state, 0o700)
        link = os.path.join(self.root, "link")
        os.symlink(self.state, link)
        rc, lines, out = self.run_doctor(lambda c: c.update(state_dir=link))
        self.assertLine(lines, "state_dir", "FAIL", "symbolic link")
        rc, lines, out = self.run_doctor(lambda c: c.update(
            state_dir=os.path.join(self.root, "none")))
        self.assertLine(lines, "state_dir", "FAIL", "does not exist",
                        "install -d -m 0700")

    def test_credential_file(self):
        os.chmod(self.cred, 0o640)
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "upstream.credential_file", "FAIL",
                        "mode 0640", "chmod 0600")
        self.assertEqual(rc, 1)
        os.chmod(self.cred, 0o600)
        mcp = os.path.join(self.root, "mcp.token")
        os.symlink(self.cred, mcp)
        rc, lines, out = self.run_doctor(lambda c: c.update(mcp={
            "credential_file": mcp}))
        self.assertLine(lines, "upstream.credential_file", "ok")
        self.assertLine(lines, "mcp.credential_file", "FAIL",
                        "symbolic link")
        os.unlink(mcp)
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "mcp.credential_file", "FAIL",
                        "does not exist")

    def test_control_socket_directory(self):
        open_dir = os.path.join(self.root, "open")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        rc, lines, out = self.run_doctor(lambda c: c.update(
            control_socket=os.path.join(open_dir, "c.sock")))
        self.assertLine(lines, "control_socket", "FAIL", "mode 0777",
                        "writable by neither")
        self.assertEqual(rc, 1)

    def test_socket_paths(self):
        # 100 - len(state_dir) - 17 characters left for a segment
        deep = self.root + "/" + "d" * (100 - 17 - len(self.root) - 1 - 20)
        os.mkdir(deep, 0o700)
        rc, lines, out = self.run_doctor(lambda c: c.update(state_dir=deep))
        self.assertLine(lines, "socket paths", "warn", "leave 20 "
                        "characters", "shorter state_dir")
        self.assertLine(lines, "configuration", "warn")
        self.assertLine(lines, "state_dir", "ok")
        deep = self.root + "/" + "e" * (100 - 17 - len(self.root) - 1)
        os.mkdir(deep, 0o700)
        rc, lines, out = self.run_doctor(lambda c: c.update(state_dir=deep))
        self.assertLine(lines, "socket paths", "FAIL", "too long")
        self.assertEqual(rc, 1)

    # ---- the kernel, made to refuse

    def deny(self, *rules):
        if not os.access(DENY, os.X_OK):
            self.skipTest("%s is not built" % DENY)
        return [DENY] + list(rules) + ["--"]

    def test_landlock_missing(self):
        rc, lines, out = self.run_doctor(
            wrap=self.deny("ENOSYS:landlock_create_ruleset"))
        self.assertLine(lines, "landlock", "warn", "not in this kernel",
                        "file rules")
        rc, lines, out = self.run_doctor(
            wrap=self.deny("EOPNOTSUPP:landlock_create_ruleset"))
        self.assertLine(lines, "landlock", "warn", "not enabled", "lsm=")

    def test_seccomp_refused(self):
        # PR_SET_SECCOMP is 22
        rc, lines, out = self.run_doctor(wrap=self.deny(
            "ENOSYS:seccomp", "EINVAL:prctl:0=22"))
        self.assertLine(lines, "seccomp", "FAIL", "no filter could be "
                        "loaded", "cannot start")
        self.assertEqual(rc, 1)

    def test_user_namespaces_refused(self):
        """Where the empty root cannot be made: a failure, since the
        daemon would refuse to start, unless sandbox.empty_root accepts it
        (a warning); doctor says which."""
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "user namespaces", "ok", "empty root",
                        'sandbox.empty_root "required"')
        for call, what in (("unshare", "no user namespace"),
                           ("fsopen", "no tmpfs in a user namespace")):
            rc, lines, out = self.run_doctor(wrap=self.deny("EPERM:" + call))
            self.assertLine(lines, "user namespaces", "FAIL",
                            what + ": Operation not permitted",
                            "refuses to start",
                            'sandbox.empty_root "required"',
                            'sandbox.empty_root "optional"')
            self.assertEqual(rc, 1)
            rc, lines, out = self.run_doctor(
                lambda c: c.update(sandbox={"empty_root": "optional"}),
                wrap=self.deny("EPERM:" + call))
            self.assertLine(lines, "user namespaces", "warn",
                            what + ": Operation not permitted",
                            'accepted as missing (sandbox.empty_root '
                            '"optional")', "Landlock and seccomp")
            self.config.pop("sandbox")
        rc, lines, out = self.run_doctor(
            lambda c: c.update(sandbox={"empty_root": "optional"}))
        self.assertLine(lines, "user namespaces", "ok",
                        'sandbox.empty_root "optional"')

    # ---- rtsandboxd -n: the same host checks, never the engine

    def test_rtsandboxd_n(self):
        path = os.path.join(self.root, "rtsandboxd.json")
        with open(path, "w") as f:
            json.dump(self.config, f)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("user", "groups", "landlock", "seccomp",
                     "user namespaces", "state_dir",
                     "upstream.credential_file", "control_socket",
                     "socket paths"):
            self.assertIn(" %s: " % name, r.stderr)
        self.assertIn("configuration OK", r.stderr)
        self.assertIn("rtsandboxctl doctor -f", r.stderr)
        self.assertNotIn("ok    engine:", r.stderr)
        os.chmod(self.cred, 0o644)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("FAIL  upstream.credential_file", r.stderr)
        self.assertIn("the host is not ready", r.stderr)
        os.chmod(self.cred, 0o600)
        r = subprocess.run(self.deny("ENOSYS:seccomp", "EINVAL:prctl:0=22") +
                           [rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("FAIL  seccomp", r.stderr)
        # the empty root: required and missing fails, accepted warns
        r = subprocess.run(self.deny("EPERM:unshare") +
                           [rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("FAIL  user namespaces: no user namespace: Operation "
                      "not permitted: rtsandboxd refuses to start", r.stderr)
        self.config["sandbox"] = {"empty_root": "optional"}
        with open(path, "w") as f:
            json.dump(self.config, f)
        r = subprocess.run(self.deny("EPERM:unshare") +
                           [rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warn  user namespaces: no user namespace: Operation "
                      "not permitted, accepted as missing", r.stderr)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ok    user namespaces: brokers and research jobs run "
                      "in an empty root (sandbox.empty_root \"optional\")",
                      r.stderr)
        self.config.pop("sandbox")


if __name__ == "__main__":
    unittest.main(verbosity=2)
