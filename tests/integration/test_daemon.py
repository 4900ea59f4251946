"""The process tree and the control socket of the real rtsandboxd, run as an
unprivileged user."""

import grp
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import rtsb  # noqa: E402
from rtsb import Client, Daemon, RpcError, pid_alive, wait_until  # noqa: E402

LINE_MAX = 128 * 1024 * 1024
ROLES = {"fsguard": "rtsandbox-fsguard", "docker": "rtsandbox-docker",
         "egress": "rtsandbox-egress"}


def status_fields(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def children_by_role(c):
    return {p["role"]: p for p in c.call("daemon.stats")["processes"]}


def assert_not_dumpable(test, pid, what):
    """A process of the service user that is not dumpable: its /proc files
    are root's (but for the directory itself), and what only a tracer may
    read (its environment, its descriptors, its executable's path) is
    refused to this same user; its status is still read."""
    if os.getuid() == 0:
        return      # root reads every process; test_root.py looks as root
    test.assertEqual(os.stat("/proc/%d/fd" % pid).st_uid, 0, what)
    test.assertEqual(os.stat("/proc/%d" % pid).st_uid, os.getuid(), what)
    test.assertEqual(int(status_fields(pid)["Uid"].split()[0]), os.getuid(),
                     what)
    for f in ("environ", "smaps_rollup", "fd"):
        with test.assertRaises(PermissionError, msg=(what, f)):
            if f == "fd":
                os.listdir("/proc/%d/fd" % pid)
            else:
                open("/proc/%d/%s" % (pid, f), "rb").close()
    with test.assertRaises(PermissionError, msg=what):
        os.readlink("/proc/%d/exe" % pid)


class ProcessTree(unittest.TestCase):
    def setUp(self):
        self.d = Daemon().start()
        self.addCleanup(self.d.cleanup)
        self.addCleanup(self.d.stop)

    def test_helpers_are_sandboxed_processes(self):
        with Client(self.d.socket) as c:
            procs = children_by_role(c)
        self.assertEqual(procs["supervisor"]["pid"], self.d.proc.pid)
        pids = {procs[r]["pid"] for r in ROLES}
        self.assertEqual(len(pids), 3)
        self.assertNotIn(self.d.proc.pid, pids)
        for role, binary in ROLES.items():
            pid = procs[role]["pid"]
            self.assertEqual(procs[role]["state"], "ready")
            # read from the file each child handed over before it stopped
            # being dumpable
            self.assertGreater(procs[role]["rss_kib"], 0)
            self.assertGreater(procs[role]["pss_kib"], 0)
            self.assertGreater(procs[role]["uss_kib"], 0)
            self.assertLessEqual(procs[role]["uss_kib"],
                                 procs[role]["pss_kib"])
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                self.assertEqual(f.read().split(b"\0")[0].decode(), binary)
            st = status_fields(pid)
            self.assertEqual(int(st["PPid"]), self.d.proc.pid)
            self.assertEqual(st["Seccomp"], "2", role)
            self.assertEqual(st["NoNewPrivs"], "1", role)
            for cap in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
                self.assertEqual(int(st[cap], 16), 0, (role, cap))
            assert_not_dumpable(self, pid, role)
            with open("/proc/%d/limits" % pid) as f:
                core = [l for l in f if l.startswith("Max core file size")]
            self.assertEqual(core[0].split()[4:6], ["0", "0"], role)
        # the supervisor is confined too
        st = status_fields(self.d.proc.pid)
        self.assertEqual(st["Seccomp"], "2")
        self.assertEqual(st["NoNewPrivs"], "1")
        assert_not_dumpable(self, self.d.proc.pid, "supervisor")
        self.assertGreater(procs["supervisor"]["pss_kib"], 0)
        self.assertGreater(procs["supervisor"]["uss_kib"], 0)

    def test_spawner(self):
        """One more child of the supervisor, not a helper: the spawner,
        confined too and not dumpable (test_root.py lists its descriptors,
        which only root can); killing it ends the daemon (nothing could be
        started without it)."""
        with Client(self.d.socket) as c:
            st = c.call("daemon.stats")["processes"]
        helpers = {p["pid"] for p in st if p["role"] != "spawner"}
        listed = [p for p in st if p["role"] == "spawner"]
        # daemon.stats lists it, with its memory, for the daemon's total
        self.assertEqual(len(listed), 1, st)
        self.assertGreater(listed[0]["pss_kib"], 0)
        self.assertGreater(listed[0]["uss_kib"], 0)
        kids = []
        for p in os.listdir("/proc"):
            try:
                if p.isdigit() and status_fields(int(p)).get("PPid") == \
                        str(self.d.proc.pid):
                    kids.append(int(p))
            except FileNotFoundError:
                pass        # another user's process, gone meanwhile
        others = [p for p in kids if p not in helpers]
        self.assertEqual(others, [listed[0]["pid"]], (kids, helpers))
        spawner = others[0]
        with open("/proc/%d/cmdline" % spawner, "rb") as f, \
                open("/proc/%d/cmdline" % self.d.proc.pid, "rb") as g:
            self.assertEqual(f.read(), g.read())
        st = status_fields(spawner)
        self.assertEqual(st["Seccomp"], "2")
        self.assertEqual(st["NoNewPrivs"], "1")
        assert_not_dumpable(self, spawner, "spawner")
        os.kill(spawner, signal.SIGKILL)
        self.assertEqual(self.d.proc.wait(10), 1)
        self.assertIn("the spawner (pid %d) died" % spawner,
                      self.d.read_log())
        for pid in helpers - {self.d.proc.pid}:
            self.assertTrue(wait_until(lambda: not pid_alive(pid), 5), pid)

    def test_killed_helpers_are_restarted(self):
        with Client(self.d.socket) as c:
            before = children_by_role(c)
            for role in ROLES:
                os.kill(before[role]["pid"], signal.SIGKILL)

            def restarted():
                now = children_by_role(c)
                return all(now[r]["state"] == "ready" and
                           now[r]["pid"] != before[r]["pid"] and
                           now[r]["restarts"] >= 1 for r in ROLES) and now
            now = wait_until(restarted, timeout=10)
            self.assertTrue(now, self.d.read_log())
            for r in ROLES:
                self.assertFalse(pid_alive(before[r]["pid"]))
            counters = c.call("daemon.stats")["counters"]
            self.assertGreaterEqual(counters["child_restarts"], 3)
        log = self.d.read_log()
        self.assertIn("killed by signal 9", log)

    def test_sigterm_takes_every_process(self):
        with Client(self.d.socket) as c:
            pids = [p["pid"] for p in c.call("daemon.stats")["processes"]]
        self.assertEqual(self.d.stop(), 0)
        for pid in pids:
            self.assertTrue(wait_until(lambda: not pid_alive(pid), 5), pid)
        self.assertFalse(os.path.exists(self.d.socket))

    def test_helpers_die_with_the_supervisor(self):
        with Client(self.d.socket) as c:
            pids = [p["pid"] for p in c.call("daemon.stats")["processes"]
                    if p["role"] != "supervisor"]
        self.d.proc.kill()
        self.d.proc.wait()
        for pid in pids:
            self.assertTrue(wait_until(lambda: not pid_alive(pid), 5), pid)


class ControlSocket(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon().start()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()
        cls.d.cleanup()

    def raw(self, line, client=None):
        c = client or Client(self.d.socket, initialize=False)
        c.send_raw(line)
        m = c.read_message()
        if client is None:
            c.close()
        return m

    def assertAlive(self):
        with Client(self.d.socket) as c:
            self.assertIn("processes", c.call("daemon.stats"))

    def test_mode_0600(self):
        st = os.stat(self.d.socket)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)

    def test_bad_json(self):
        with Client(self.d.socket, initialize=False) as c:
            m = self.raw(b"this is not json\n", c)
            self.assertEqual(m["error"]["code"], -32700)
            self.assertIsNone(m["id"])
            m = self.raw(b'{"jsonrpc":"2.0","id":1,"method":"\xff"}\n', c)
            self.assertEqual(m["error"]["code"], -32700)
            # the connection goes on
            m = self.raw(b'{"jsonrpc":"2.0","id":2,"method":"initialize",'
                         b'"params":{"client":"x"}}\n', c)
            self.assertIn("result", m)
        self.assertAlive()

    def test_invalid_requests(self):
        for line in (b"[]", b"[1,2]", b"42", b'{"id":1,"method":"x"}',
                     b'{"jsonrpc":"1.0","id":1,"method":"x"}',
                     b'{"jsonrpc":"2.0","id":1,"method":7}',
                     b'{"jsonrpc":"2.0","id":1.5,"method":"initialize"}',
                     b'{"jsonrpc":"2.0","id":1e400,"method":"initialize"}',
                     b'{"jsonrpc":"2.0","id":-1e400,"method":"initialize"}',
                     b'{"jsonrpc":"2.0","id":9007199254740992,'
                     b'"method":"initialize"}',
                     b'{"jsonrpc":"2.0","id":null,"method":"initialize"}',
                     b'{"jsonrpc":"2.0","id":"%s","method":"initialize"}'
                     % (b"i" * 1025),
                     b'{"jsonrpc":"2.0","id":1,"method":"x","extra":1}',
                     b'{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}'):
            m = self.raw(line + b"\n")
            self.assertEqual(m["error"]["code"], -32600, line)
        # the largest id a double holds exactly, and its negative, are ids
        for n in (9007199254740991, -9007199254740991):
            m = self.raw(b'{"jsonrpc":"2.0","id":%d,"method":"initialize",'
                         b'"params":{"client":"x"}}\n' % n)
            self.assertEqual(m["id"], n)
            self.assertIn("result", m)
        # and a string id of up to 1024 bytes
        m = self.raw(b'{"jsonrpc":"2.0","id":"%s","method":"initialize",'
                     b'"params":{"client":"x"}}\n' % (b"i" * 1024))
        self.assertEqual(m["id"], "i" * 1024)
        self.assertIn("result", m)
        self.assertAlive()

    def test_unknown_method(self):
        with Client(self.d.socket) as c:
            with self.assertRaises(RpcError) as e:
                c.call("no.such.method")
            self.assertEqual(e.exception.code, -32601)

    def test_bad_params(self):
        with Client(self.d.socket, initialize=False) as c:
            for params in ([1], {"client": ""}, {"client": 5},
                           {"client": "x" * 257},
                           {"client": "x", "hooks": ["nope"]},
                           {"client": "x", "hooks": "tool.call"},
                           {"client": "x", "hooks": ["tool.call",
                                                     "tool.call"]},
                           {"client": "x", "other": 1}):
                with self.assertRaises(RpcError) as e:
                    c.call("initialize", params)
                self.assertEqual(e.exception.code, -32602, params)
            r = c.call("initialize", {"client": "x" * 256,
                                      "hooks": ["tool.call",
                                                "memory.block"]})
            self.assertEqual(r["hooks"], ["tool.call", "memory.block"])
            self.assertEqual(r["limits"]["line_bytes"], LINE_MAX)
            with self.assertRaises(RpcError) as e:
                c.call("daemon.stats", {"verbose": True})
            self.assertEqual(e.exception.code, -32602)
            with self.assertRaises(RpcError) as e:
                c.call("initialize", {"client": "again"})
            self.assertEqual(e.exception.code, -32600)

    def test_initialize_first(self):
        with Client(self.d.socket, initialize=False) as c:
            with self.assertRaises(RpcError) as e:
                c.call("daemon.stats")
            self.assertEqual(e.exception.code, -32002)

    def test_several_requests_in_flight(self):
        with Client(self.d.socket) as c:
            lines = b"".join(json.dumps({
                "jsonrpc": "2.0", "id": "r%d" % i,
                "method": "daemon.stats"}).encode() + b"\n"
                for i in range(5))
            c.send_raw(lines)
            ids = sorted(c.read_message()["id"] for _ in range(5))
            self.assertEqual(ids, ["r%d" % i for i in range(5)])

    def test_lines_in_pieces_answered_in_order(self):
        # 200 requests in one write, cut in the middle of a line, the last
        # ones ending in CRLF and sent a byte at a time: every line is one
        # request, and the answers come in the order they were asked.
        lines = [json.dumps({"jsonrpc": "2.0", "id": i,
                             "method": "$/cancelRequest",
                             "params": {"id": 10 ** 6 + i}}).encode()
                 for i in range(200)]
        data = b"\n".join(lines[:197]) + b"\n"
        tail = b"".join(x + b"\r\n" for x in lines[197:])
        with Client(self.d.socket) as c:
            c.send_raw(data[:len(data) // 2])
            time.sleep(0.05)
            c.send_raw(data[len(data) // 2:])
            for b in tail:
                c.send_raw(bytes([b]))
            got = [c.read_message() for _ in range(200)]
            self.assertEqual([m["id"] for m in got], list(range(200)))
            self.assertTrue(all(m["result"] == {"cancelled": False}
                                for m in got))

    def test_notifications_get_no_answer(self):
        with Client(self.d.socket) as c:
            c.send_raw(b'{"jsonrpc":"2.0","method":"daemon.stats"}\n'
                       b'{"jsonrpc":"2.0","method":"no.such"}\n')
            self.assertIn("processes", c.call("daemon.stats"))
            self.assertEqual(c.pending, [])

    def test_cancel_request(self):
        with Client(self.d.socket) as c:
            self.assertEqual(c.call("$/cancelRequest", {"id": 12345}),
                             {"cancelled": False})
            for params in (None, {}, {"id": None}, {"id": 1, "x": 2}):
                with self.assertRaises(RpcError) as e:
                    c.call("$/cancelRequest", params)
                self.assertEqual(e.exception.code, -32602)

    def test_line_at_the_limit(self):
        head = b'{"jsonrpc":"2.0","id":1,"method":"initialize",' \
               b'"params":{"client":"x"}'
        line = head + b" " * (LINE_MAX - len(head) - 1) + b"}"
        self.assertEqual(len(line), LINE_MAX)
        with Client(self.d.socket, initialize=False) as c:
            c.sock.settimeout(300)
            m = self.raw(line + b"\n", c)
            self.assertIn("result", m)

    def test_line_past_the_limit(self):
        line = b'{"jsonrpc":"2.0","id":1,"method":"initialize"' + \
            b" " * LINE_MAX
        c = Client(self.d.socket, initialize=False)
        # 128 MiB through a sanitizer build on a busy machine takes a while
        c.sock.settimeout(300)
        try:
            c.send_raw(line[:LINE_MAX + 1])
        except (BrokenPipeError, ConnectionResetError):
            pass
        m = c.read_message()
        self.assertEqual(m["error"]["code"], -32600)
        self.assertIn("longer than 134217728", m["error"]["message"])
        with self.assertRaises((ConnectionError, OSError)):
            while True:
                c.read_message()
        c.close()
        self.assertAlive()

    def test_client_disconnect_mid_line(self):
        c = Client(self.d.socket, initialize=False)
        c.send_raw(b'{"jsonrpc":"2.0","id":1,"met')
        c.close()
        self.assertAlive()

    def test_rtsandboxctl(self):
        r = subprocess.run([rtsb.RTSANDBOXCTL, "-s", self.d.socket, "stats"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        for role in ("supervisor", "spawner", "fsguard", "docker", "egress"):
            self.assertIn(role, r.stdout)
        self.assertIn("RSS KiB", r.stdout)
        self.assertIn("USS KiB", r.stdout)
        r = subprocess.run([rtsb.RTSANDBOXCTL, "-s", self.d.socket,
                            "--json", "stats"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        stats = json.loads(r.stdout)
        self.assertEqual(len(stats["processes"]), 5)
        r = subprocess.run([rtsb.RTSANDBOXCTL, "-s", self.d.socket, "call",
                            "no.such"], capture_output=True, text=True,
                           timeout=10)
        self.assertEqual(r.returncode, 1)
        self.assertIn("-32601", r.stderr)


class DaemonConfig(unittest.TestCase):
    """daemon.config: what a client standing in for PiSandboxRuntime
    0.7.3 reads from its options, never a credential or its path."""

    def expected(self, d):
        return {
            "version": None,
            "state_dir": d.config["state_dir"],
            "image": "rtsandbox-worker:latest",
            "profiles": {
                "default": {"model": "claude-test", "mcp": []},
                "web": {"model": "claude-web", "mcp": ["search", "notes"]}},
            "upstream": {"url": "https://127.0.0.1:8443",
                         "credential": "file"},
            "mcp": {"servers": [
                {"name": "search", "url": "https://mcp.example/s?k=1",
                 "tools": ["find", "fetch-page"]},
                {"name": "notes", "url": "http://127.0.0.1:9000/mcp",
                 "tools": []}],
                "allow_http": True, "credential": "file"},
            "tools": ["roll_dice", "flip_coin"],
            "docker": {"container_prefix": "rtcfg",
                       "label_channel": "x.channel",
                       "label_profile": "x.profile"},
            "time_zone": "Europe/Paris",
            "timeouts": {"start_ms": 5000, "turn_ms": 60000},
            "budgets": {"max_calls": 7, "max_output_tokens": 4096},
            "default_thinking": "medium",
            "bot_group": self.group,
            "precheck": None,
        }

    def setUp(self):
        self.group = grp.getgrgid(os.getgid()).gr_name

        def conf(c):
            root = os.path.dirname(c["state_dir"])
            c["profiles"] = {
                "default": {"model": "claude-test"},
                "web": {"model": "claude-web", "mcp": ["search", "notes"]}}
            c["mcp"] = {
                "servers": [
                    {"name": "search", "url": "https://mcp.example/s?k=1",
                     "tools": ["find", "fetch-page"]},
                    {"name": "notes", "url": "http://127.0.0.1:9000/mcp",
                     "tools": []}],
                "allow_http": True,
                "credential_file": os.path.join(root, "mcp-credential")}
            c["tools"] = ["roll_dice", "flip_coin"]
            c["docker"] = {"container_prefix": "rtcfg",
                           "label_channel": "x.channel",
                           "label_profile": "x.profile"}
            c["time_zone"] = "Europe/Paris"
            c["timeouts"] = {"start_ms": 5000, "turn_ms": 60000}
            c["budgets"] = {"max_calls": 7, "max_output_tokens": 4096}
            c["default_thinking"] = "medium"
            c["bot_group"] = self.group
            # with these two a reload crashed the confined supervisor,
            # which cannot read the group database
            c["control_group"] = self.group
        self.d = Daemon(config=conf)
        self.addCleanup(self.d.cleanup)
        self.mcp_cred = self.d.config["mcp"]["credential_file"]
        with open(self.mcp_cred, "w") as f:
            f.write("sk-mcp-secret-token\n")
        os.chmod(self.mcp_cred, 0o600)
        self.d.start()
        self.addCleanup(self.d.stop)

    def assertNoCredential(self, got):
        text = json.dumps(got)
        for secret in ("sk-test-real-token", "sk-mcp-secret-token",
                       self.d.config["upstream"]["credential_file"],
                       self.mcp_cred, "credential_file"):
            self.assertNotIn(secret, text)

    def reload(self, c, change, counter="reloads"):
        change(self.d.config)
        with open(self.d.config_path + ".new", "w") as f:
            json.dump(self.d.config, f)
        os.rename(self.d.config_path + ".new", self.d.config_path)
        before = c.call("daemon.stats")["counters"][counter]
        os.kill(self.d.proc.pid, signal.SIGHUP)
        self.assertTrue(wait_until(
            lambda: c.call("daemon.stats")["counters"][counter] ==
            before + 1, 10), self.d.read_log()[-2000:])

    def test_config_and_reload(self):
        with Client(self.d.socket) as c:
            got = c.call("daemon.config")
            want = self.expected(self.d)
            self.assertIsInstance(got["version"], str)
            want["version"] = got["version"]
            self.assertEqual(got, want)
            self.assertEqual(list(got["profiles"]), ["default", "web"])
            self.assertNoCredential(got)
            # no params, and not before initialize
            with self.assertRaises(RpcError) as e:
                c.call("daemon.config", {"x": 1})
            self.assertEqual(e.exception.code, -32602)

            # SIGHUP: what it applied is what daemon.config says
            def change(conf):
                conf["profiles"]["second"] = {"model": "claude-2",
                                              "mcp": ["notes"]}
                del conf["profiles"]["web"]
                conf["mcp"]["servers"] = conf["mcp"]["servers"][1:]
                conf["tools"] = ["flip_coin"]
                conf["timeouts"] = {"start_ms": 9000, "turn_ms": 4000}
                conf["budgets"] = {"max_calls": 1000}
                conf["default_thinking"] = "xhigh"
                conf["precheck"] = {"max_calls": 100,
                                    "limits": {"cpus": 0.5}}
            self.reload(c, change)
            got = c.call("daemon.config")
            want["profiles"] = {
                "default": {"model": "claude-test", "mcp": []},
                "second": {"model": "claude-2", "mcp": ["notes"]}}
            want["mcp"]["servers"] = want["mcp"]["servers"][1:]
            want["tools"] = ["flip_coin"]
            want["timeouts"] = {"start_ms": 9000, "turn_ms": 4000}
            want["budgets"] = {"max_calls": 1000,
                               "max_output_tokens": 128000}
            want["default_thinking"] = "xhigh"
            want["precheck"] = {
                "entrypoint": ["bun", "/app/node_modules/"
                               "pi-roundtable-sandbox/worker/"
                               "precheck-main.ts"],
                "timeout_ms": 60000, "max_calls": 100, "max_runs": 4,
                "limits": {"memory_mib": 256, "cpus": 0.5, "pids": 32}}
            self.assertEqual(got, want)
            # a reload refused changes nothing it says
            self.reload(c, lambda conf: conf.update(image="other:1"),
                        "reloads_refused")
            self.assertEqual(c.call("daemon.config"), want)
        with Client(self.d.socket, initialize=False) as c:
            with self.assertRaises(RpcError) as e:
                c.call("daemon.config")
            self.assertEqual(e.exception.code, -32002)

    def test_defaults(self):
        """Without MCP credential and bot_group: "none" and null."""
        d = Daemon()
        self.addCleanup(d.cleanup)
        d.start()
        self.addCleanup(d.stop)
        with Client(d.socket) as c:
            got = c.call("daemon.config")
        self.assertEqual(got["mcp"], {"servers": [], "allow_http": False,
                                      "credential": "none"})
        self.assertIsNone(got["bot_group"])
        self.assertEqual(got["upstream"], {"url": "https://127.0.0.1:8443",
                                           "credential": "file"})
        self.assertEqual(got["docker"], {
            "container_prefix": "roundtable-sandbox",
            "label_channel": "roundtable.sandbox.channel",
            "label_profile": "roundtable.sandbox.profile"})
        self.assertEqual((got["time_zone"], got["default_thinking"]),
                         ("UTC", "low"))
        self.assertEqual(got["timeouts"], {"start_ms": 90000,
                                           "turn_ms": 600000})
        self.assertEqual(got["budgets"], {"max_calls": 128,
                                          "max_output_tokens": 128000})
        self.assertEqual(got["tools"], ["roll_dice"])


class FromOptions(unittest.TestCase):
    """rtsandboxctl config --from-options: a bot's 0.7.3
    PiSandboxRuntimeOptions as the rtsandboxd.json that rtsandboxd -n
    accepts, and that the daemon then runs with."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="rtsb-fo-", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.root, True)
        os.chmod(self.root, 0o700)
        self.state = os.path.join(self.root, "state")
        os.mkdir(self.state, 0o700)
        self.cred = os.path.join(self.root, "credential")
        self.mcp_cred = os.path.join(self.root, "mcp-credential")
        for path in (self.cred, self.mcp_cred):
            with open(path, "w") as f:
                f.write("sk-test-real-token\n")
            os.chmod(path, 0o600)
        self.sock = os.path.join(self.root, "control.sock")

    def options(self, **extra):
        o = {"partyDir": self.state, "image": "rtsandbox-worker:latest",
             "profiles": {"default": {"model": "claude-test"},
                          "web": {"model": "claude-web",
                                  "mcp": ["search"]}},
             "mcp": {"servers": [{"name": "search",
                                  "url": "http://127.0.0.1:9000/mcp",
                                  "tools": ["find", "fetch-page"]}]},
             "upstream": "https://127.0.0.1:8443",
             "maxCalls": 64, "maxOutputTokens": 32000,
             "allowHttpMcp": True, "timeZone": "Europe/Paris",
             "containerPrefix": "rtfo", "labelChannel": "x.channel",
             "labelProfile": "x.profile", "startTimeoutMs": 30000,
             "turnTimeoutMs": 120000, "tools": {"names": ["roll_dice"]}}
        o.update(extra)
        return o

    def convert(self, opts, *flags):
        path = os.path.join(self.root, "options.json")
        with open(path, "w") as f:
            f.write(opts if isinstance(opts, str) else json.dumps(opts))
        return subprocess.run([rtsb.RTSANDBOXCTL, "config",
                               "--from-options", path] + list(flags),
                              capture_output=True, text=True, timeout=10)

    def test_options_to_a_configuration(self):
        r = self.convert(self.options(), "--credential-file", self.cred,
                         "--mcp-credential-file", self.mcp_cred,
                         "--control-socket", self.sock)
        self.assertEqual(r.returncode, 0, r.stderr)
        conf = json.loads(r.stdout)
        self.assertEqual(conf, {
            "state_dir": self.state, "control_socket": self.sock,
            "image": "rtsandbox-worker:latest",
            "profiles": {"default": {"model": "claude-test"},
                         "web": {"model": "claude-web", "mcp": ["search"]}},
            "upstream": {"url": "https://127.0.0.1:8443",
                         "credential_file": self.cred},
            "mcp": {"servers": [{"name": "search",
                                 "url": "http://127.0.0.1:9000/mcp",
                                 "tools": ["find", "fetch-page"]}],
                    "allow_http": True, "credential_file": self.mcp_cred},
            "tools": ["roll_dice"],
            "docker": {"container_prefix": "rtfo",
                       "label_channel": "x.channel",
                       "label_profile": "x.profile"},
            "time_zone": "Europe/Paris",
            "timeouts": {"start_ms": 30000, "turn_ms": 120000},
            "budgets": {"max_calls": 64, "max_output_tokens": 32000}})
        self.assertIn("note: bot_group: not set", r.stderr)
        self.assertNotIn("note: upstream.credential_file", r.stderr)
        # what rtsandboxd -n says of it, with its host checks
        out = os.path.join(self.root, "rtsandboxd.json")
        with open(out, "w") as f:
            f.write(r.stdout)
        n = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", out],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(n.returncode, 0, n.stderr)
        self.assertIn("configuration OK", n.stderr)
        # and the daemon runs with it: daemon.config gives the options back
        d = Daemon(config=lambda c: (c.clear(), c.update(conf)))
        self.addCleanup(d.cleanup)
        d.start()
        self.addCleanup(d.stop)
        with Client(self.sock) as c:
            got = c.call("daemon.config")
        self.assertEqual(got["state_dir"], self.state)
        self.assertEqual(got["profiles"]["web"], {"model": "claude-web",
                                                  "mcp": ["search"]})
        self.assertEqual(got["timeouts"], {"start_ms": 30000,
                                           "turn_ms": 120000})
        self.assertEqual(got["budgets"], {"max_calls": 64,
                                          "max_output_tokens": 32000})
        self.assertEqual(got["docker"]["container_prefix"], "rtfo")

    def test_placeholders_said(self):
        """What the options cannot say: the documented default socket and
        credential files the operator fills, each said on stderr."""
        opts = self.options()
        del opts["mcp"], opts["allowHttpMcp"]
        opts["profiles"] = {"default": {"model": "claude-test"}}
        r = self.convert(opts)
        self.assertEqual(r.returncode, 0, r.stderr)
        conf = json.loads(r.stdout)
        self.assertEqual(conf["control_socket"],
                         "/run/rtsandbox/control.sock")
        self.assertEqual(conf["upstream"]["credential_file"],
                         "/etc/rtsandbox/upstream.token")
        self.assertNotIn("mcp", conf)
        self.assertIn("note: control_socket: /run/rtsandbox/control.sock",
                      r.stderr)
        self.assertIn("note: upstream.credential_file: "
                      "/etc/rtsandbox/upstream.token: write there",
                      r.stderr)
        self.assertNotIn("mcp.credential_file", r.stderr)
        # callbacks are the client's: left out, said so
        r = self.convert(self.options(memory={}, effort={}, logger={},
                                      tools={"names": ["roll_dice"],
                                             "call": {}}))
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("memory", "effort", "logger", "tools.call"):
            self.assertIn("note: %s: served by" % name, r.stderr)
        self.assertIn("note: mcp.credential_file: /etc/rtsandbox/mcp.token",
                      r.stderr)

    def test_refusals_name_the_option(self):
        r = self.convert(self.options(driver={}, fetchImpl=None,
                                      oauthToken="sk-live-x", foo=1,
                                      partyDir="state", maxCalls=0,
                                      maxOutputTokens=1024,
                                      startTimeoutMs=999,
                                      turnTimeoutMs=600001,
                                      upstream="http://api.example",
                                      containerPrefix="Bad",
                                      labelChannel="x.profile",
                                      timeZone="../etc",
                                      tools={"names": ["Roll"]},
                                      mcp={"servers": [], "token": "t"},
                                      profiles={"d": {"model": "m",
                                                      "mcp": ["nope"]}}))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        for want in (
                "driver: refused: rtsandboxd drives the container engine "
                "itself",
                "fetchImpl: refused: every upstream call leaves through "
                "rtsandboxd's egress",
                "oauthToken: refused: a credential is never written",
                "mcp.token: refused: a credential is never written",
                "foo: not an option of PiSandboxRuntime 0.7.3",
                "partyDir: must be an absolute path",
                "maxCalls: must be an integer from 1 to 1000",
                "maxOutputTokens: must be an integer from 1025 to 200000",
                "startTimeoutMs: must be an integer from 1000 to 600000",
                "turnTimeoutMs: must be an integer from 1000 to 600000",
                "upstream: must be an https URL",
                "containerPrefix: must match",
                "labelProfile: must differ from docker.label_channel",
                "timeZone: must be an IANA zone name",
                "tools.names[0]: must match [a-z][a-z0-9_]{0,47}",
                "profiles.d.mcp[0]: names no server in mcp.servers"):
            self.assertIn("rtsandboxctl: " + want, r.stderr)
        self.assertNotIn("sk-live-x", r.stderr)
        # at the limits: accepted
        r = self.convert(self.options(maxCalls=1000, maxOutputTokens=1025,
                                      startTimeoutMs=1000,
                                      turnTimeoutMs=600000))
        self.assertEqual(r.returncode, 0, r.stderr)
        for bad in ("[]", "not json", '{"tools": ["roll_dice"]}'):
            r = self.convert(bad)
            self.assertEqual(r.returncode, 1, bad)
        self.assertIn('tools: must be {"names": [...]}', r.stderr)


class Startup(unittest.TestCase):
    def test_backoff_of_a_helper_that_dies_at_once(self):
        helpers = tempfile.mkdtemp(prefix="rtsb-x-", dir="/tmp")
        self.addCleanup(shutil.rmtree, helpers, True)
        for role, path in rtsb.HELPERS.items():
            shutil.copy(path, helpers)
        # a file guard that exits at once, every time
        shutil.copy("/bin/false", os.path.join(helpers, "rtsandbox-fsguard"))
        d = Daemon(helper_dir=helpers)
        self.addCleanup(d.cleanup)
        d.start(wait=False)
        time.sleep(3.5)
        with Client(d.socket) as c:
            procs = children_by_role(c)
        # 100 + 200 + 400 + 800 + 1600 ms: five restarts at most, not a spin
        self.assertLessEqual(procs["fsguard"]["restarts"], 6)
        self.assertGreaterEqual(procs["fsguard"]["restarts"], 3)
        self.assertEqual(procs["egress"]["state"], "ready")
        with open("/proc/%d/stat" % d.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu_ticks = int(fields[11]) + int(fields[12])
        self.assertLess(cpu_ticks, os.sysconf("SC_CLK_TCK") // 2)
        self.assertIn("restarting fsguard in 800 ms", d.read_log())
        self.assertEqual(d.stop(), 0)

    def test_missing_helpers(self):
        empty = tempfile.mkdtemp(prefix="rtsb-x-", dir="/tmp")
        self.addCleanup(shutil.rmtree, empty, True)
        d = Daemon(helper_dir=empty)
        self.addCleanup(d.cleanup)
        d.start(wait=False)
        self.assertEqual(d.proc.wait(10), 1)
        self.assertIn("rtsandbox-fsguard", d.read_log())

    def test_check_only(self):
        d = Daemon()
        self.addCleanup(d.cleanup)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", d.config_path],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("configuration OK", r.stderr)
        bad = dict(d.config)
        bad["timeouts"] = {"start_ms": 999}
        bad["image"] = "-bad"
        with open(d.config_path, "w") as f:
            json.dump(bad, f)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", d.config_path],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 1)
        self.assertIn("timeouts.start_ms", r.stderr)
        self.assertIn("image", r.stderr)

    def test_control_group_mode(self):
        group = grp.getgrgid(os.getgid()).gr_name

        def conf(c):
            c["control_group"] = group
        with Daemon(config=conf) as d:
            st = os.stat(d.socket)
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
            self.assertEqual(st.st_gid, os.getgid())
            # a reload: the confined supervisor cannot read the group
            # database, and once died of trying
            with Client(d.socket) as c:
                os.kill(d.proc.pid, signal.SIGHUP)
                self.assertTrue(wait_until(lambda: c.call("daemon.stats")[
                    "counters"]["reloads"] == 1, 10), d.read_log()[-2000:])
            self.assertIsNone(d.proc.poll())

    def test_control_socket_directory(self):
        """The socket's directory must be a directory of the service user
        (or root) that no one else may write to, not a link: else nobody
        could be sure the name that gets its mode and group is the socket
        just bound."""
        d = Daemon()
        self.addCleanup(d.cleanup)
        open_dir = os.path.join(d.root, "open")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        link = os.path.join(d.root, "link")
        os.symlink(d.root, link)
        group_w = os.path.join(d.root, "groupw")
        os.mkdir(group_w)
        os.chmod(group_w, 0o770)
        for where, why in ((open_dir, "not writable by group or others"),
                           (group_w, "not writable by group or others"),
                           (link, "control socket directory")):
            conf = dict(d.config)
            conf["control_socket"] = os.path.join(where, "c.sock")
            with open(d.config_path, "w") as f:
                json.dump(conf, f)
            r = subprocess.run([rtsb.RTSANDBOXD, "-d", "-f", d.config_path],
                               capture_output=True, text=True, timeout=10)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(why, r.stderr)
            self.assertFalse(os.path.exists(conf["control_socket"]))
        # /tmp itself (1777) is refused as well
        conf = dict(d.config)
        conf["control_socket"] = "/tmp/rtsb-%d.sock" % os.getpid()
        with open(d.config_path, "w") as f:
            json.dump(conf, f)
        r = subprocess.run([rtsb.RTSANDBOXD, "-d", "-f", d.config_path],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("not writable by group or others", r.stderr)

    def test_stale_socket_and_second_daemon(self):
        d = Daemon()
        self.addCleanup(d.cleanup)
        s = socket.socket(socket.AF_UNIX)
        s.bind(d.socket)
        s.close()   # a stale socket from a daemon that died
        d.start()
        second = subprocess.run([rtsb.RTSANDBOXD, "-d", "-f", d.config_path],
                                capture_output=True, text=True, timeout=10)
        self.assertEqual(second.returncode, 1)
        self.assertIn("another rtsandboxd", second.stderr)
        with Client(d.socket) as c:
            self.assertIn("processes", c.call("daemon.stats"))
        self.assertEqual(d.stop(), 0)


class OutOfDescriptors(unittest.TestCase):
    def test_accept_stops_and_resumes_never_spins(self):
        """With every descriptor of the supervisor in use (RLIMIT_NOFILE
        4096), accepting stops for a while, without spinning and with one
        log line, and resumes as soon as a connection goes."""
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 5000:
            self.skipTest("RLIMIT_NOFILE hard limit %d" % hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(
            hard, 8192) if hard != resource.RLIM_INFINITY else 8192, hard))
        self.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE,
                        (soft, hard))
        d = Daemon().start()
        self.addCleanup(d.cleanup)
        self.addCleanup(d.stop)
        socks = []
        self.addCleanup(lambda: [s.close() for s in socks])
        deadline = time.monotonic() + 60
        while "control socket accept:" not in d.read_log():
            self.assertLess(time.monotonic(), deadline)
            self.assertLess(len(socks), 6000)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(d.socket)
            except BlockingIOError:
                s.close()	# the backlog is full for now
                time.sleep(0.05)
                continue
            socks.append(s)
        # no spin: the supervisor's CPU over two seconds of this
        def cpu():
            with open("/proc/%d/stat" % d.proc.pid) as f:
                v = f.read().rsplit(")", 1)[1].split()
            return int(v[11]) + int(v[12])
        before = cpu()
        time.sleep(2)
        used = cpu() - before
        self.assertLess(used, os.sysconf("SC_CLK_TCK") // 5, used)
        self.assertEqual(d.read_log().count("control socket accept:"), 1)
        # connections go, and a new one is served at once
        for s in socks[:100]:
            s.close()
        del socks[:100]
        self.assertTrue(wait_until(lambda: self._stats_ok(d), 10))
        self.assertIn("control socket accepts again", d.read_log())

    @staticmethod
    def _stats_ok(d):
        try:
            with Client(d.socket) as c:
                return "processes" in c.call("daemon.stats")
        except (OSError, ConnectionError):
            return False


class ServiceManager(unittest.TestCase):
    """rtsandboxd under systemd: contrib/systemd, and the readiness it
    reports over NOTIFY_SOCKET (sd_notify(3)'s protocol)."""

    UNIT = os.path.join(os.path.dirname(__file__), "..", "..", "contrib",
                        "systemd", "rtsandboxd.service")

    def test_ready_once_every_helper_is(self):
        d = Daemon()
        self.addCleanup(d.cleanup)
        sock_path = os.path.join(d.root, "notify.sock")
        ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        ns.bind(sock_path)
        ns.settimeout(15)
        self.addCleanup(ns.close)
        log = open(d.log_path, "ab")
        self.addCleanup(log.close)
        # no -d: with a manager listening it stays in front all the same
        p = subprocess.Popen([rtsb.RTSANDBOXD, "-f", d.config_path],
                             stdin=subprocess.DEVNULL, stdout=log,
                             stderr=log, env={"PATH": "/usr/bin:/bin",
                                              "NOTIFY_SOCKET": sock_path})
        d.proc = p
        msg = ns.recv(4096).decode()
        self.assertIn("READY=1", msg.split("\n"))
        self.assertIsNone(p.poll())
        with Client(d.socket) as c:
            for pr in c.call("daemon.stats")["processes"]:
                self.assertEqual(pr["state"], "ready", pr)
        p.send_signal(signal.SIGTERM)
        self.assertIn("STOPPING=1", ns.recv(4096).decode().split("\n"))
        self.assertEqual(p.wait(15), 0)
        # the helpers never saw the variable
        self.assertNotIn("NOTIFY_SOCKET", d.read_log())

    def test_unreachable_notify_socket_refused(self):
        d = Daemon()
        self.addCleanup(d.cleanup)
        r = subprocess.run([rtsb.RTSANDBOXD, "-f", d.config_path],
                           capture_output=True, text=True, timeout=10,
                           env={"PATH": "/usr/bin:/bin", "NOTIFY_SOCKET":
                                os.path.join(d.root, "nobody-listens")})
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("NOTIFY_SOCKET", r.stderr)

    def test_unit_verifies(self):
        if shutil.which("systemd-analyze") is None:
            self.skipTest("no systemd-analyze")
        tmp = tempfile.mkdtemp(prefix="rtsb-unit-", dir="/tmp")
        self.addCleanup(shutil.rmtree, tmp, True)
        # its own binary and man pages, as installed ones would be
        man = os.path.join(os.path.dirname(__file__), "..", "..", "man")
        for sec, page in (("8", "rtsandboxd.8"), ("5", "rtsandboxd.conf.5")):
            os.makedirs(os.path.join(tmp, "man" + sec), exist_ok=True)
            os.symlink(os.path.abspath(os.path.join(man, page)),
                       os.path.join(tmp, "man" + sec, page))
        with open(self.UNIT) as f:
            unit = f.read().replace("/usr/bin/rtsandboxd",
                                    os.path.abspath(rtsb.RTSANDBOXD))
        # the daemon's processes are bounded as a whole, and the manual
        # says how and why
        with open(os.path.join(man, "rtsandboxd.8")) as f:
            page = f.read()
        for key in ("MemoryMax", "TasksMax", "OOMPolicy"):
            lines = [ln for ln in unit.splitlines()
                     if ln.startswith(key + "=")]
            self.assertEqual(len(lines), 1, key)
            self.assertIn("Cm %s" % lines[0], page)
        path = os.path.join(tmp, "rtsandboxd.service")
        with open(path, "w") as f:
            f.write(unit)
        env = dict(os.environ, MANPATH=tmp)
        r = subprocess.run(["systemd-analyze", "verify", path],
                           capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.strip(), "")
        r = subprocess.run(["systemd-analyze", "security", "--offline=true",
                            path], capture_output=True, text=True, env=env,
                           timeout=60)
        level = [ln for ln in r.stdout.splitlines()
                 if "Overall exposure level" in ln]
        self.assertEqual(len(level), 1, r.stdout + r.stderr)
        print("[%s]" % level[0].split(":", 1)[1].strip(), end=" ",
              file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
