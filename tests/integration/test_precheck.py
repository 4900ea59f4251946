"""precheck.run end to end (rtsandbox-protocol(7), contract 0.7.11/0.7.13):
the real rtsandboxd as an unprivileged user, the real Docker daemon, the
reference worker's script runner (`/rtsandbox-worker precheck`) in a sealed
container of its own per run, and the fake upstream's MCP server over HTTPS.

The reference worker's script language (worker/precheck.c): one statement
a line; `call`/`json` make MCP calls as mcp.call/mcp.json do, `try` and
`try2` send raw requests and record their statuses in ${statuses}, `write`
records "ok" or the errno's name in ${writes}, and `wake`, `skip`, `return`
and `fail` end the script.

Each test class has a daemon of its own prefix; a run's container is
<prefix>.precheck-<run>, and none may be left when its answer comes."""

import base64
import json
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
from rtsb import Client, Daemon, wait_until  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
PREFIX_BASE = "rtpc%dx" % os.getpid()
MCP_TOKEN = "mcp-test-secret-Zq81"
MODEL = "claude-test"
ENTRYPOINT = ["/rtsandbox-worker", "precheck"]
INPUT_MAX = 64 * 1024

_certdir = None


def docker_skip_reason():
    if shutil.which("openssl") is None:
        return "openssl is needed for the fake upstream's test CA"
    return rtsb.docker_skip_reason(IMAGE)


DOCKER_SKIP = docker_skip_reason()


def setUpModule():
    global _certdir
    if DOCKER_SKIP is not None:
        rtsb.docker_cleanup()
        raise unittest.SkipTest(DOCKER_SKIP)
    _certdir = tempfile.mkdtemp(prefix="rtsb-pcerts-", dir="/tmp")
    os.chmod(_certdir, 0o755)


def tearDownModule():
    if DOCKER_SKIP is None:
        names = [n for n in rtsb.docker("ps", "-a", "--format",
                                        "{{.Names}}").stdout.split()
                 if n.startswith(PREFIX_BASE)]
        if names:
            rtsb.docker("rm", "-f", *names)
    if _certdir is not None:
        shutil.rmtree(_certdir, ignore_errors=True)
    rtsb.docker_cleanup()


def params(script, servers=None, **kw):
    p = {"channel": "discord:pc", "profile": "default", "script": script,
         "firedAt": "2026-12-06T07:00:00.000Z", "timeZone": "Asia/Taipei",
         "today": "2026-12-06", "schedule": {"id": 7, "title": "standup"}}
    if servers is not None:
        p["servers"] = servers
    p.update(kw)
    return p


FILES_ECHO = [{"name": "files", "tools": ["echo"]}]


def tools_call(name, arguments=None, method="tools/call"):
    p = {"name": name}
    if arguments is not None:
        p["arguments"] = arguments
    return json.dumps({"jsonrpc": "2.0", "id": 3, "method": method,
                       "params": p}, separators=(",", ":"))


class PrecheckCase(unittest.TestCase):
    counter = 0
    TIMEOUT_MS = 20000
    MAX_CALLS = 6
    MAX_RUNS = 2
    PRECHECK = True

    @classmethod
    def setUpClass(cls):
        PrecheckCase.counter += 1
        cls.prefix = "%s%d" % (PREFIX_BASE, PrecheckCase.counter)
        cls.fu = FakeUpstream(_certdir, default_delay_ms=5,
                              mcp_require_session=False)
        cls.fu.start()
        fu = cls.fu

        def conf(c):
            root = os.path.dirname(c["state_dir"])
            mcpcred = os.path.join(root, "mcp-credential")
            with open(mcpcred, "w") as f:
                f.write(MCP_TOKEN + "\n")
            os.chmod(mcpcred, 0o600)
            c["docker"] = {"container_prefix": cls.prefix}
            c["upstream"]["url"] = fu.url
            c["upstream"]["ca_file"] = fu.ca_file
            c["mcp"] = {"servers": [
                {"name": "files", "url": fu.mcp_url("files"),
                 "tools": ["echo", "add", "fail", "whoami"]},
                {"name": "other", "url": fu.mcp_url("other"),
                 "tools": ["echo"]},
                {"name": "elsewhere", "url": fu.mcp_url("elsewhere"),
                 "tools": ["echo"]}],
                "credential_file": mcpcred, "allow_http": False}
            c["profiles"] = {"default": {"model": MODEL,
                                         "mcp": ["files", "other"]}}
            if cls.PRECHECK:
                c["precheck"] = {"entrypoint": ENTRYPOINT,
                                 "timeout_ms": cls.TIMEOUT_MS,
                                 "max_calls": cls.MAX_CALLS,
                                 "max_runs": cls.MAX_RUNS}
        cls.d = None
        try:
            cls.d = Daemon(config=conf)
            cls.d.start()
            cls.ctl = Client(cls.d.socket)
            cls.ctl.sock.settimeout(90)
        except Exception:
            cls._teardown()
            raise

    @classmethod
    def _teardown(cls):
        try:
            if cls.d is not None:
                cls.d.stop()
        finally:
            rtsb.remove_containers(cls.prefix)
            for n in cls.precheck_containers():
                rtsb.docker("rm", "-f", n)
            if cls.d is not None:
                cls.d.cleanup()
            cls.fu.stop()

    @classmethod
    def tearDownClass(cls):
        cls.ctl.close()
        cls._teardown()

    def setUp(self):
        self.fu.reset()

    @classmethod
    def precheck_containers(cls):
        r = rtsb.docker("ps", "-a", "--format", "{{.Names}}")
        return [n for n in r.stdout.split()
                if n.startswith(cls.prefix + ".precheck-")]

    def run_dirs(self):
        top = os.path.join(self.d.config["state_dir"], ".precheck")
        try:
            return os.listdir(top)
        except FileNotFoundError:
            return []

    def run_precheck(self, p):
        r = self.ctl.call("precheck.run", p)
        # the container is gone when the answer comes, the directories
        # right after
        self.assertEqual(self.precheck_containers(), [])
        self.assertTrue(wait_until(lambda: self.run_dirs() == [], 10),
                        self.run_dirs())
        return r

    def tool_calls(self):
        return [r for r in self.fu.requests()
                if r["path"].startswith("/mcp/")]

    def assertRefused(self, r, reason, text):
        self.assertFalse(r["ok"], r)
        self.assertEqual(r["reason"], reason, r)
        self.assertIn(text, r["message"])


class Runs(PrecheckCase):
    def test_wake_with_a_granted_call(self):
        r = self.run_precheck(params(
            'json files echo {"text":"hi ${today} ${schedule.title}"}\n'
            'wake got ${last} in ${timeZone}\n', FILES_ECHO))
        self.assertEqual(r, {"ok": True, "result": {
            "wake": True, "context": "got hi 2026-12-06 standup in "
            "Asia/Taipei"}})
        calls = self.tool_calls()
        self.assertEqual(len(calls), 1)
        c = calls[0]
        self.assertEqual(c["path"], "/mcp/files")
        self.assertEqual(c["token"], MCP_TOKEN)
        # the host writes the request itself: id 1, only name and
        # arguments
        self.assertEqual(c["json"], {"jsonrpc": "2.0", "id": 1,
                                     "method": "tools/call", "params": {
                                         "name": "echo", "arguments": {
                                             "text": "hi 2026-12-06 "
                                             "standup"}}})
        self.assertNotIn(MCP_TOKEN, json.dumps(r))

    def test_skip_return_and_nothing(self):
        r = self.run_precheck(params("skip quiet day\n"))
        self.assertEqual(r, {"ok": True, "result": {"wake": False,
                                                    "note": "quiet day"}})
        r = self.run_precheck(params('log to stderr only\n'
                                     'return {"a":[1,2]}\n'))
        self.assertEqual(r, {"ok": True, "result": {"a": [1, 2]}})
        r = self.run_precheck(params("# nothing at all\n"))
        self.assertEqual(r, {"ok": True, "result": None})
        self.assertEqual(self.tool_calls(), [])

    def test_script_failure(self):
        r = self.run_precheck(params("fail " + "e" * 1500 + "\n"))
        self.assertRefused(r, "script_failed", "e" * 1000)
        self.assertEqual(len(r["message"]), 1000)
        r = self.run_precheck(params("export default async () => 1\n"))
        self.assertRefused(r, "script_failed", "line 1")
        # a tool's own error, and a tool that is not granted to the run
        r = self.run_precheck(params("call files fail {}\n",
                                     [{"name": "files",
                                       "tools": ["fail"]}]))
        self.assertRefused(r, "script_failed", "this tool always fails")
        r = self.run_precheck(params("call files add {}\n", FILES_ECHO))
        self.assertRefused(r, "script_failed", "not granted")

    def test_each_forbidden_thing(self):
        echo = tools_call("echo", {"text": "x"})
        script = "\n".join([
            "try GET /mcp/files",
            "try POST /mcp/files?x=1 " + echo,
            "try POST /mcp/nope " + echo,
            "try POST /mcp/other " + echo,
            "try POST /mcp/elsewhere " + echo,
            "try POST /worker/ready {}",
            "try GET /mcp-tools",
            "try POST /anthropic/v1/messages {}",
            "try POST /tools/roll_dice {\"input\":{}}",
            # spent: 1, 2, 3
            "try POST /mcp/files " + tools_call("echo", method="tools/list"),
            "try POST /mcp/files " + tools_call("whoami", {}),
            "try POST /mcp/files " + tools_call("echo", [1]),
            # 4, and one refused without spending
            'try2 files echo {"text":"two"}',
            "write /workspace/x hi",
            "write /tmp/x hi",
            "write /etc/x hi",
            # 5, 6, then none left
            'call files echo {"text":"a"}',
            'call files echo {"text":"b"}',
            "try POST /mcp/files " + echo,
            "wake ${statuses} ${writes}",
        ]) + "\n"
        r = self.run_precheck(params(script, FILES_ECHO))
        self.assertTrue(r["ok"], r)
        ctx = r["result"]["context"]
        statuses, writes = ctx.split("] [")
        statuses = json.loads(statuses + "]")
        writes = json.loads("[" + writes)
        self.assertEqual(statuses[:12], [404] * 9 + [403] * 3)
        self.assertEqual(sorted(statuses[12:14]), [200, 409])
        self.assertEqual(statuses[14:], [429])
        self.assertEqual(writes, ["EROFS", "ok", "EROFS"])
        # three calls reached the server, all tools/call of echo
        calls = self.tool_calls()
        self.assertEqual(len(calls), 3, calls)
        for c in calls:
            self.assertEqual(c["path"], "/mcp/files")
            self.assertEqual(c["json"]["method"], "tools/call")
            self.assertEqual(c["json"]["params"]["name"], "echo")

    def test_budget_at_the_limit(self):
        script = 'call files echo {"text":"a"}\n' * self.MAX_CALLS + \
            "wake all\n"
        r = self.run_precheck(params(script, FILES_ECHO))
        self.assertEqual(r["result"], {"wake": True, "context": "all"})
        r = self.run_precheck(params(
            'call files echo {"text":"a"}\n' * (self.MAX_CALLS + 1),
            FILES_ECHO))
        self.assertRefused(r, "script_failed", "too many MCP calls")

    def test_input_at_the_limit(self):
        def size(script):
            p = params(script, [])
            return len(json.dumps(
                {k: p[k] for k in ("script", "firedAt", "timeZone", "today",
                                   "schedule", "servers")},
                separators=(",", ":")))
        lines = ["#" + "a" * 898 + "\n"] * 72
        script = "".join(lines) + "return 1\n"
        # the first comment line takes up what is left (a newline is two
        # bytes in the JSON the worker reads)
        script = "#" + "a" * (898 + INPUT_MAX - size(script)) + script[899:]
        self.assertEqual(size(script), INPUT_MAX)
        r = self.run_precheck(params(script, []))
        self.assertEqual(r, {"ok": True, "result": 1})
        r = self.ctl.call("precheck.run", params("#" + script, []))
        self.assertRefused(r, "invalid", "65537 bytes, over 65536")


def mcp_message(result):
    return {"jsonrpc": "2.0", "id": 1, "result": result}


def text_result(text):
    return mcp_message({"content": [{"type": "text", "text": text}]})


def escaped(s):
    return "".join("\\u%04x" % ord(ch) for ch in s)


class Reflection(PrecheckCase):
    """An upstream that echoes the credential: the answer is refused, in
    every form the issue lists, SSE data lines joined first."""

    def call_with(self, *entries):
        self.fu.script(*entries)
        return self.run_precheck(params('json files echo {"text":"x"}\n'
                                        'wake ${last}\n', FILES_ECHO))

    def assertReflected(self, r):
        self.assertRefused(r, "script_failed", "the broker call failed")
        self.assertNotIn(MCP_TOKEN, json.dumps(r))

    def test_plain_escaped_base64_key(self):
        b64 = base64.b64encode(MCP_TOKEN.encode()).decode()
        b64url = base64.urlsafe_b64encode(MCP_TOKEN.encode()).decode()
        cases = [
            {"kind": "json", "body": text_result("key " + MCP_TOKEN)},
            {"kind": "json", "raw": json.dumps(text_result("k")).replace(
                '"k"', '"' + escaped(MCP_TOKEN) + '"')},
            {"kind": "json", "body": text_result(b64)},
            {"kind": "json", "body": text_result(b64url.rstrip("="))},
            {"kind": "json", "body": mcp_message({MCP_TOKEN: 1})},
        ]
        for e in cases:
            e.update({"match": "/mcp/files", "rpc_method": "tools/call"})
            self.assertReflected(self.call_with(e))

    def test_inside_json_text(self):
        # The credential escaped inside a JSON text inside the answer's
        # text: found only once that text is parsed.
        inner = '{"k":"' + escaped(MCP_TOKEN) + '"}'
        self.assertReflected(self.call_with({
            "match": "/mcp/files", "rpc_method": "tools/call",
            "kind": "json", "body": text_result(inner)}))

    def test_sse_data_lines_joined(self):
        inner = '{"k":"' + escaped(MCP_TOKEN) + '"}'
        msg = json.dumps(text_result(inner))
        half = len(msg) // 2
        raw = "data: " + msg[:half] + "\ndata: " + msg[half:] + "\n\n"
        self.assertReflected(self.call_with({
            "match": "/mcp/files", "rpc_method": "tools/call",
            "kind": "sse", "events": [{"raw": raw}]}))
        # the same without a credential: the joined event is the answer
        msg = json.dumps(text_result("fine"))
        raw = "data: " + msg[:10] + "\ndata: " + msg[10:] + "\n\n"
        r = self.call_with({"match": "/mcp/files", "rpc_method": "tools/call",
                            "kind": "sse", "events": [{"raw": raw}]})
        self.assertEqual(r, {"ok": True, "result": {"wake": True,
                                                    "context": "fine"}})

    def test_upstream_failures(self):
        for e in ({"kind": "status", "status": 500, "body": {"x": 1}},
                  {"kind": "json", "raw": "not json"},
                  {"kind": "big", "bytes": 1024 * 1024 + 1,
                   "content_type": "application/json"}):
            e.update({"match": "/mcp/files", "rpc_method": "tools/call"})
            self.assertRefused(self.call_with(e), "script_failed",
                               "the broker call failed")


class Refusals(PrecheckCase):
    def assertInvalid(self, p, text):
        r = self.ctl.call("precheck.run", p)
        self.assertRefused(r, "invalid", text)

    def test_bad_params(self):
        ok = params("return 1\n", FILES_ECHO)
        for key, value, text in (
                ("profile", "nope", "profile"),
                ("channel", "", "channel"),
                ("script", "", "script"),
                ("firedAt", "yesterday", "firedAt"),
                ("firedAt", "2026-13-06T07:00:00Z", "firedAt"),
                ("timeZone", "../etc/passwd", "timeZone"),
                ("today", "2026-12-6", "today"),
                ("schedule", {"id": 1.5, "title": "x"}, "schedule"),
                ("schedule", {"id": 1, "title": "x" * 1001}, "schedule"),
                ("schedule", {"id": 1}, "schedule"),
                ("servers", [{"name": "elsewhere", "tools": ["echo"]}],
                 "not an MCP server of profile default"),
                ("servers", [{"name": "other", "tools": ["add"]}],
                 "not an allowed tool of server other"),
                ("servers", [{"name": "files", "tools": ["echo", "echo"]}],
                 "given twice"),
                ("servers", FILES_ECHO + FILES_ECHO, "given twice"),
                ("servers", {"files": ["echo"]}, "servers")):
            p = dict(ok)
            p[key] = value
            self.assertInvalid(p, text)
        p = dict(ok)
        p["image"] = "other"
        with self.assertRaises(rtsb.RpcError):
            self.ctl.call("precheck.run", p)
        # the title at its limit
        p = dict(ok)
        p["schedule"] = {"id": 9007199254740991, "title": "t" * 1000}
        self.assertEqual(self.run_precheck(p), {"ok": True, "result": 1})

    def test_busy_and_cancelled(self):
        clients = [Client(self.d.socket) for _ in range(self.MAX_RUNS)]
        try:
            ids = [c.request("precheck.run", params("sleep 20000\n"))
                   for c in clients]
            self.assertTrue(wait_until(
                lambda: len(self.precheck_containers()) == self.MAX_RUNS,
                30), self.precheck_containers())
            r = self.ctl.call("precheck.run", params("return 1\n"))
            self.assertRefused(r, "busy", "precheck.max_runs")
            # a client that leaves cancels its run
            clients[0].close()
            c = clients[1]
            c.send_raw(json.dumps({"jsonrpc": "2.0",
                                   "method": "$/cancelRequest",
                                   "params": {"id": ids[1]}}).encode() + b"\n")
            with self.assertRaises(rtsb.RpcError):
                c.wait(ids[1])
            self.assertTrue(wait_until(
                lambda: self.precheck_containers() == [], 30))
            self.assertTrue(wait_until(lambda: self.run_dirs() == [], 10))
        finally:
            for c in clients:
                c.close()


class Timeout(PrecheckCase):
    TIMEOUT_MS = 2000

    def test_script_out_of_time(self):
        t = time.monotonic()
        r = self.run_precheck(params("sleep 60000\n"))
        self.assertRefused(r, "timeout", "2000 ms")
        self.assertLess(time.monotonic() - t, 30)


class NotConfigured(PrecheckCase):
    PRECHECK = False

    def test_refused(self):
        r = self.ctl.call("precheck.run", params("return 1\n"))
        self.assertRefused(r, "invalid", "not configured")


if __name__ == "__main__":
    unittest.main()
