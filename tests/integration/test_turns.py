"""turn.run end to end (DESIGN.md 5, 6, 10; PROTOCOL.md 2, 4): the real
rtsandboxd, run as an unprivileged user, the real Docker daemon, the real
reference worker (rtsandbox-worker:latest) in each channel's container, and
the fake upstream of tests/fixtures/fake_upstream.py over HTTPS with a test
CA made now.

The fake model's rules (see its docstring): "echo: <last user text>";
[[tool:NAME {json}]] -> a tool_use block; [[file:NAME content]] -> a
write_file tool_use; after tool results -> "done: <result texts>".  The
reference worker puts "<author name>: " before the turn's text, sends the
memory as system text, and asks for a stream when the text holds
[[stream]] (worker/agent.c).

Every daemon gets its own container prefix (rttu<pid>x<n>), and every test
removes the containers of its prefix at the end."""

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import rtsb  # noqa: E402
from rtsb import Client, Daemon, wait_until  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
ALT_IMAGE = "rtsandbox-worker:turns%d" % os.getpid()
PREFIX_BASE = "rttu%dx" % os.getpid()
REAL_TOKEN = "sk-test-real-token"
DUMMY_TOKEN = "sandbox-dummy-token"
MIB = 1024 * 1024
AUTHOR = {"id": "u1", "name": "Ann"}
# A 1x1 PNG.
TINY_PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db4000000"
    "0049454e44ae426082")).decode()
MEMORY_INTRO = "\n\nWhat you remember about this channel:\n"

_certdir = None
FU = None


docker = rtsb.docker
prefixed_containers = rtsb.prefixed_containers
inspect = rtsb.inspect_container


def docker_skip_reason():
    if shutil.which("openssl") is None:
        return "openssl is needed for the fake upstream's test CA"
    return rtsb.docker_skip_reason(IMAGE)


DOCKER_SKIP = docker_skip_reason()


def setUpModule():
    global FU, _certdir
    if DOCKER_SKIP is not None:
        rtsb.docker_cleanup()
        raise unittest.SkipTest(DOCKER_SKIP)
    _certdir = tempfile.mkdtemp(prefix="rtsb-certs-", dir="/tmp")
    os.chmod(_certdir, 0o755)
    FU = FakeUpstream(os.path.join(_certdir, "certs"))
    FU.start()


def tearDownModule():
    if FU is not None:
        FU.stop()
    if DOCKER_SKIP is None:
        names = [n for n in docker("ps", "-a", "--format",
                                   "{{.Names}}").stdout.split()
                 if n.startswith(PREFIX_BASE)]
        if names:
            docker("rm", "-f", *names)
        if docker("image", "inspect", ALT_IMAGE).returncode == 0:
            docker("rmi", ALT_IMAGE)
    if _certdir is not None:
        shutil.rmtree(_certdir, ignore_errors=True)
    rtsb.docker_cleanup()


def segment_of(key):
    """PROTOCOL.md 6, for the ASCII keys used here."""
    return "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-")
                   else "_" for ch in key)


def message_text(msg):
    c = msg["content"]
    if isinstance(c, str):
        return c
    return "\n".join(b.get("text", "") for b in c if b.get("type") == "text")


def model_requests(since=0):
    return [r for r in FU.requests(since=since) if r["path"] == "/v1/messages"]


def last_seq():
    recs = FU.requests()
    return recs[-1]["seq"] if recs else 0


class HookError(Exception):
    """Raised by a hook handler: its answer is a JSON-RPC error, as a
    bot's whose hook threw."""

    def __init__(self, message, code=-32000):
        super().__init__(message)
        self.code = code
        self.message = message


class Outcome:
    """What one turn.run brought: its result (or RPC error), the progress
    notifications and the hook requests, in the order they came."""

    def __init__(self):
        self.result = None
        self.error = None
        self.progress = []
        self.hooks = []
        self.seconds = None

    def phases(self):
        return [p["phase"] for p in self.progress]


class TurnTest(unittest.TestCase):
    counter = 0

    def setUp(self):
        FU.reset()

    def daemon(self, conf=None, wait=True):
        """A daemon of its own prefix, against the fake upstream; at the end
        of the test stopped, its containers and directory removed."""
        TurnTest.counter += 1
        prefix = "%s%d" % (PREFIX_BASE, TurnTest.counter)

        def config(c):
            c["docker"] = {"container_prefix": prefix}
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
                for n in prefixed_containers(prefix):
                    docker("rm", "-f", n)
                d.cleanup()
        self.addCleanup(done)
        d.start(wait=wait)
        return d

    def restart(self, d, image=None):
        """SIGTERM (containers stay), then the same configuration and state
        directory again, with another image if asked."""
        self.assertEqual(d.stop(), 0, d.read_log()[-3000:])
        if image is not None:
            d.config["image"] = image
            with open(d.config_path, "w") as f:
                json.dump(d.config, f)
        d.start()

    def client(self, d, hooks=("tool.call",)):
        c = Client(d.socket, hooks=hooks)
        c.sock.settimeout(120)
        self.addCleanup(c.close)
        return c

    def container(self, d, key):
        return "%s-%s" % (d.prefix, segment_of(key))

    def container_id(self, c, key):
        return c.call("channel.status", {"channel": key}).get("container")

    def assertGone(self, d, key, timeout=15):
        name = self.container(d, key)
        self.assertTrue(wait_until(lambda: inspect(name) is None, timeout,
                                   0.2), "container %s still there" % name)

    @staticmethod
    def params(key, text, turn_id="t1", **extra):
        p = {"channel": key, "profile": "default", "turnId": turn_id,
             "author": dict(AUTHOR), "text": text, "images": []}
        p.update(extra)
        return p

    @staticmethod
    def dice(params):
        return {"ok": True, "text": "4"}

    def finish(self, c, rid, handlers=None, timeout=120):
        """Answer the hooks (handlers: method -> function(params) -> result)
        until the answer to rid comes."""
        handlers = dict(handlers or {})
        handlers.setdefault("tool.call", self.dice)
        out = Outcome()
        t0 = time.monotonic()
        c.sock.settimeout(timeout)
        while True:
            m = c.pending.pop(0) if c.pending else c.read_message()
            if "method" in m:
                if m["method"] == "turn.progress":
                    out.progress.append(m["params"])
                elif "id" in m:
                    out.hooks.append((m["method"], m["params"]))
                    fn = handlers.get(m["method"])
                    try:
                        if fn is None:
                            raise HookError("no such hook", -32601)
                        ans = {"jsonrpc": "2.0", "id": m["id"],
                               "result": fn(m["params"])}
                    except HookError as e:
                        ans = {"jsonrpc": "2.0", "id": m["id"], "error": {
                            "code": e.code, "message": e.message}}
                    c.send_raw(json.dumps(ans).encode() + b"\n")
                continue
            if m.get("id") != rid:
                c.pending.append(m)
                if len(c.pending) > 1000:
                    raise AssertionError("runaway answers: %r" % m)
                continue
            out.seconds = time.monotonic() - t0
            if "error" in m:
                out.error = m["error"]
            else:
                out.result = m["result"]
            return out

    def turn(self, c, params, handlers=None, timeout=120):
        return self.finish(c, c.request("turn.run", params), handlers,
                           timeout)

    def ok(self, c, params, handlers=None, timeout=120):
        o = self.turn(c, params, handlers, timeout)
        self.assertIsNotNone(o.result, o.error)
        self.assertTrue(o.result.get("ok"), o.result)
        return o

    def failed(self, c, params, reason, timeout=120):
        o = self.turn(c, params, timeout=timeout)
        self.assertIsNotNone(o.result, o.error)
        self.assertIs(o.result.get("ok"), False, o.result)
        self.assertEqual(o.result.get("reason"), reason, o.result)
        self.assertIsInstance(o.result.get("message"), str)
        return o

    def assertProgress(self, o, key, turn_id, tools=0, calls=None):
        """starting, container, ready, delivered, then model and tool calls,
        result last; all of this channel and turn."""
        for p in o.progress:
            self.assertEqual((p["channel"], p["turnId"]), (key, turn_id), p)
        ph = o.phases()
        self.assertEqual(ph[:4], ["starting", "container", "ready",
                                  "delivered"], ph)
        self.assertEqual(ph[-1], "result", ph)
        middle = ph[4:-1]
        self.assertEqual(set(middle) - {"model_call", "tool_call"}, set(), ph)
        self.assertEqual(middle.count("tool_call"), tools, ph)
        if calls is None:
            calls = 2 if tools else 1
        self.assertEqual(middle.count("model_call"), calls, ph)
        self.assertEqual(middle[0], "model_call", ph)

    def stall_model(self, seconds):
        FU.script({"kind": "stall", "seconds": seconds,
                   "match": "/v1/messages"})


class Turns(TurnTest):
    def test_host_tool_and_reply_file(self):
        d = self.daemon()
        c = self.client(d)
        key = "turn:1"
        content = ("Hello from inside the sandbox, "
                   "\u00fcn\u00efc\u00f6de \u2713")
        text = ('roll [[tool:roll_dice {"sides":6}]] and '
                '[[file:hello.txt %s]]' % content)
        o = self.ok(c, self.params(key, text))
        body = content.encode()
        self.assertEqual(o.result, {
            "ok": True,
            "text": "done: 4\nWrote hello.txt (%d bytes); it goes with the "
                    "reply." % len(body),
            "files": [{"name": "hello.txt",
                       "data": base64.b64encode(body).decode()}]})
        self.assertEqual(base64.b64decode(o.result["files"][0]["data"],
                                          validate=True), body)
        # the tool.call hook: the bound identity
        self.assertEqual(o.hooks, [("tool.call", {
            "name": "roll_dice", "input": {"sides": 6},
            "context": {"channel": key, "profile": "default",
                        "speaker": AUTHOR, "thinking": "low",
                        "turnId": "t1"}})])
        self.assertProgress(o, key, "t1", tools=1)
        # two model calls: the first with the turn, the second with the
        # tool results; the profile's model, the real credential
        reqs = model_requests()
        self.assertEqual(len(reqs), 2, reqs)
        first, second = reqs[0]["json"], reqs[1]["json"]
        self.assertEqual(first["model"], "claude-test")
        self.assertEqual(message_text(first["messages"][0]), "Ann: " + text)
        self.assertNotIn("stream", first)
        results = [b for b in second["messages"][-1]["content"]
                   if b["type"] == "tool_result"]
        self.assertEqual(len(results), 2, second)
        for r in reqs:
            self.assertEqual(r["token"], REAL_TOKEN)
        # the file is in the outbox of the turn
        ob = os.path.join(d.state, "turn_1", "workspace", "outbox", "t1",
                          "hello.txt")
        with open(ob, "rb") as f:
            self.assertEqual(f.read(), body)
        # and the channel goes on: a plain echo with another turn id
        o = self.ok(c, self.params(key, "plain words", "t2"))
        self.assertEqual(o.result, {"ok": True, "text": "echo: Ann: plain "
                                    "words", "files": []})
        self.assertEqual(o.hooks, [])
        self.assertProgress(o, key, "t2")

    def test_tool_failures(self):
        d = self.daemon()
        c = self.client(d)
        key = "toolfail:1"
        # the host's tool says no: an error result the model sees
        o = self.ok(c, self.params(key, "[[tool:roll_dice {}]]"), {
            "tool.call": lambda p: {"ok": False, "error": "no dice today"}})
        self.assertEqual(o.result["text"], "done: no dice today")
        results = [b for b in model_requests()[-1]["json"]["messages"][-1][
            "content"] if b["type"] == "tool_result"]
        self.assertEqual([r.get("is_error") for r in results], [True])
        # a malformed hook answer: the worker's tool call fails (502)
        o = self.ok(c, self.params(key, "[[tool:roll_dice {}]]", "t2"), {
            "tool.call": lambda p: {"ok": "yes"}})
        self.assertEqual(o.result["text"], "done: Tool roll_dice failed: "
                         "HTTP 502 Broker call failed")
        # a tool the configuration does not allow never reaches the hook
        o = self.ok(c, self.params(key, "[[tool:rm_rf {}]]", "t3"))
        self.assertEqual(o.hooks, [])
        self.assertEqual(o.result["text"], "done: Tool rm_rf failed: HTTP "
                         "404 Not found")
        self.assertProgress(o, key, "t3", tools=0, calls=2)

    def test_tool_hook_that_throws(self):
        """As 0.7.3's broker when the host tool threw: 502 "Broker call
        failed" for the worker; the exception's text reaches neither the
        worker nor the log, which names the tool."""
        d = self.daemon()
        c = self.client(d)
        key = "toolthrow:1"
        secret = "internal: token=sk-live-SECRET at /srv/bot/dice.ts:12"

        def boom(p):
            raise HookError(secret)
        o = self.ok(c, self.params(key, "[[tool:roll_dice {}]]"),
                    {"tool.call": boom})
        self.assertEqual(o.result["text"], "done: Tool roll_dice failed: "
                         "HTTP 502 Broker call failed")
        self.assertEqual([m for m, _ in o.hooks], ["tool.call"])
        for r in model_requests():
            self.assertNotIn("sk-live-SECRET", json.dumps(r["json"]))
        log = d.read_log()
        self.assertNotIn("sk-live-SECRET", log)
        self.assertNotIn("/srv/bot", log)
        self.assertIn("the tool.call hook for roll_dice failed: the client "
                      "answered with an error", log)

    def test_streamed_turn(self):
        d = self.daemon()
        c = self.client(d)
        key = "stream:1"
        text = "[[stream]] say hello"
        o = self.ok(c, self.params(key, text))
        self.assertEqual(o.result, {"ok": True, "files": [],
                                    "text": "echo: Ann: " + text})
        self.assertProgress(o, key, "t1")
        reqs = model_requests()
        self.assertEqual(len(reqs), 1)
        self.assertIs(reqs[0]["json"].get("stream"), True)
        # really streamed: many events, written one by one
        self.assertGreater(len(reqs[0]["response"]["event_times"]), 5)
        self.assertEqual(reqs[0]["response"]["status"], 200)
        # a streamed tool_use (input_json_delta pieces) and file
        data = "streamed file body " * 20
        text = ('[[stream]] [[tool:roll_dice {"sides":20}]] '
                '[[file:s.txt %s]]' % data)
        o = self.ok(c, self.params(key, text, "t2"))
        self.assertEqual(o.result["text"], "done: 4\nWrote s.txt (%d bytes); "
                         "it goes with the reply." % len(data))
        self.assertEqual(base64.b64decode(o.result["files"][0]["data"]),
                         data.encode())
        self.assertEqual(o.hooks[0][1]["input"], {"sides": 20})
        self.assertProgress(o, key, "t2", tools=1)
        for r in model_requests():
            self.assertIs(r["json"].get("stream"), True)

    def test_tool_input_numbers_exact(self):
        # numbers cJSON's 15 digits would change reach the bot as the model
        # wrote them; one past a double's range is refused, not nulled
        d = self.daemon()
        c = self.client(d)
        key = "numbers:1"
        inp = {"sides": 6, "seed": 9007199254740991,
               "p": 0.30000000000000004, "tiny": 5e-324}
        o = self.ok(c, self.params(key, "[[tool:roll_dice %s]]"
                                   % json.dumps(inp)))
        self.assertEqual(o.hooks[0][1]["input"], inp)
        self.assertIsInstance(o.hooks[0][1]["input"]["seed"], int)

    def test_credential_never_inside(self):
        d = self.daemon()
        c = self.client(d)
        key = "cred:1"
        o = self.ok(c, self.params(
            key, '[[tool:roll_dice {}]] [[file:f.txt abc]]'))
        self.assertEqual(len(o.result["files"]), 1)
        name = self.container(d, key)
        info = inspect(name)
        self.assertIsNotNone(info)
        cf = info["Config"]
        cred = d.config["upstream"]["credential_file"]
        for part, value in (("Env", cf.get("Env")), ("Cmd", cf.get("Cmd")),
                            ("Entrypoint", cf.get("Entrypoint")),
                            ("Args", info.get("Args")),
                            ("Path", info.get("Path")),
                            ("Mounts", info.get("Mounts")),
                            ("Labels", cf.get("Labels")),
                            ("HostConfig", info.get("HostConfig"))):
            s = json.dumps(value)
            self.assertNotIn(REAL_TOKEN, s, part)
            self.assertNotIn(cred, s, part)
        self.assertNotIn(REAL_TOKEN, json.dumps(info))
        self.assertIn("CLAUDE_CODE_OAUTH_TOKEN=" + DUMMY_TOKEN, cf["Env"])
        self.assertEqual(sorted(m["Destination"] for m in info["Mounts"]),
                         ["/run/sandbox", "/workspace"])
        # what the guest can see or has written: nothing holds the token
        seg = os.path.join(d.state, segment_of(key))
        seen = 0
        for top in ("workspace", "run"):
            for root, dirs, files in os.walk(os.path.join(seg, top)):
                for f in files:
                    p = os.path.join(root, f)
                    if not os.path.isfile(p) or os.path.islink(p):
                        continue
                    seen += 1
                    with open(p, "rb") as fh:
                        self.assertNotIn(REAL_TOKEN.encode(), fh.read(), p)
        self.assertGreaterEqual(seen, 1)    # the reply file at least
        logs = docker("logs", name)
        self.assertEqual(logs.returncode, 0, logs.stderr)
        self.assertIn("answered, 1 file", logs.stderr + logs.stdout)
        self.assertNotIn(REAL_TOKEN, logs.stdout + logs.stderr)
        # the upstream saw the real token only, never the dummy one
        recs = FU.requests()
        self.assertEqual(len(recs), 2)
        for r in recs:
            self.assertEqual(r["token"], REAL_TOKEN)
            auth = [v for n, v in r["headers"]
                    if n.lower() == "authorization"]
            self.assertEqual(auth, ["Bearer " + REAL_TOKEN])
            self.assertNotIn(DUMMY_TOKEN, r["raw_headers"])
            self.assertNotIn(DUMMY_TOKEN.encode(), r["body"])

    def test_busy(self):
        d = self.daemon()
        c = self.client(d)
        c2 = self.client(d)
        key = "busy:1"
        self.stall_model(8)
        rid = c.request("turn.run", self.params(key, "slow one"))
        # while it starts (same connection: read in order)
        o = self.turn(c, self.params(key, "second", "t2"))
        self.assertEqual((o.result["ok"], o.result["reason"]),
                         (False, "busy"), o.result)
        FU.wait_for(1, 60, path="/v1/messages")
        # while the model call runs, from another client too
        for cl in (c, c2):
            o = self.turn(cl, self.params(key, "third", "t3"))
            self.assertEqual(o.result["reason"], "busy", o.result)
        # another channel is not busy
        o = self.ok(c2, self.params("busy:2", "other channel"))
        self.assertEqual(o.result["text"], "echo: Ann: other channel")
        t0 = time.monotonic()
        self.assertEqual(c2.call("turn.cancel", {"channel": key}),
                         {"cancelled": True})
        o = self.finish(c, rid)
        self.assertEqual(o.result["reason"], "cancelled", o.result)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertGone(d, key)
        self.assertFalse(c2.call("channel.status", {"channel": key})["busy"])

    def test_status_busy_during_turn(self):
        d = self.daemon()
        c = self.client(d)
        c2 = self.client(d, hooks=())
        key = "busy:3"
        self.stall_model(8)
        rid = c.request("turn.run", self.params(key, "slow one"))
        FU.wait_for(1, 60, path="/v1/messages")
        during = c2.call("channel.status", {"channel": key})
        self.assertEqual(c2.call("turn.cancel", {"channel": key}),
                         {"cancelled": True})
        self.assertEqual(self.finish(c, rid).result["reason"], "cancelled")
        self.assertGone(d, key)
        after = c2.call("channel.status", {"channel": key})
        self.assertEqual((during["state"], during["broker"]),
                         ("running", "ready"))
        self.assertFalse(after["busy"])
        self.assertTrue(during["busy"], during)


class Bounds(TurnTest):
    """PROTOCOL.md 4.1 and 4.3: each bound and one past it.  The refused
    ones never start anything; the allowed ones run in the real worker."""

    def test_bounds(self):
        d = self.daemon()
        c = self.client(d)
        key, never = "bounds:1", "bounds:2"

        def runs(text_expected, **over):
            p = self.params(key, "hi", "b%d" % runs.n)
            p.update(over)
            runs.n += 1
            since = last_seq()
            o = self.ok(c, p)
            self.assertEqual(o.result["text"], text_expected)
            reqs = model_requests(since)
            self.assertEqual(len(reqs), 1)
            return reqs[0]["json"]
        runs.n = 1

        def refused(fragment=None, **over):
            p = self.params(never, "hi", "x1")
            p.update(over)
            o = self.turn(c, p)
            self.assertEqual((o.result["ok"], o.result["reason"]),
                             (False, "invalid"), (list(over), o.result))
            self.assertEqual(o.phases(), [])
            self.assertLess(o.seconds, 10)
            return o.result

        # text
        text = "x" * 100000
        body = runs(("echo: Ann: " + text)[:100000], text=text)
        self.assertEqual(message_text(body["messages"][0]), "Ann: " + text)
        refused(text="x" * 100001)
        # text counted in UTF-16 code units: 50000 non-BMP chars = 100000
        # (the reply is cut at 100000 without splitting a character)
        runs("echo: Ann: " + "\U0001F600" * 49994,
             text="\U0001F600" * 50000)
        refused(text="\U0001F600" * 50000 + "y")
        # memory: into the system text
        mem = "m" * 100000
        body = runs("echo: Ann: hi", memory=mem)
        self.assertTrue(body["system"].endswith(MEMORY_INTRO + mem))
        refused(memory="m" * 100001)
        # author id and name
        runs("echo: Ann: hi", author={"id": "i" * 256, "name": "Ann"})
        refused(author={"id": "i" * 257, "name": "Ann"})
        name = "n" * 256
        runs("echo: %s: hi" % name, author={"id": "u1", "name": name})
        refused(author={"id": "u1", "name": "n" * 257})
        # images: 8 of them, 9
        img = {"data": TINY_PNG, "mimeType": "image/png"}
        body = runs("echo: Ann: hi", images=[img] * 8)
        blocks = body["messages"][0]["content"]
        self.assertEqual([b["type"] for b in blocks], ["image"] * 8 +
                         ["text"])
        self.assertEqual(blocks[0]["source"], {
            "type": "base64", "media_type": "image/png", "data": TINY_PNG})
        refused(images=[img] * 9)
        # 20 MiB decoded, and one byte more (the same base64 length:
        # 20 MiB = 3k+2 bytes has one pad, 20 MiB + 1 = 3k' has none)
        big = base64.b64encode(b"\x89" * (20 * MIB)).decode()
        bigger = base64.b64encode(b"\x89" * (20 * MIB + 1)).decode()
        self.assertEqual(len(big), len(bigger))
        body = runs("echo: Ann: hi",
                    images=[{"data": big, "mimeType": "image/jpeg"}])
        src = body["messages"][0]["content"][0]["source"]
        self.assertEqual((src["media_type"], len(src["data"])),
                         ("image/jpeg", len(big)))
        self.assertEqual(src["data"], big)
        del body, src
        refused(images=[{"data": bigger, "mimeType": "image/jpeg"}])
        del big, bigger
        # other image rules
        refused(images=[{"data": TINY_PNG, "mimeType": "image/bmp"}])
        refused(images=[{"data": TINY_PNG[:-1], "mimeType": "image/png"}])
        refused(images=[{"data": "", "mimeType": "image/png"}])
        # turnId: a safe file name
        for tid in (".", "..", "a/b", "a\\b", "a\nb", "", "t" * 256):
            refused(turnId=tid)
        p = self.params(key, "hi", "t" * 255)
        o = self.ok(c, p)
        self.assertEqual(o.result["text"], "echo: Ann: hi")
        # thinking
        refused(thinking="max")
        refused(thinking="")
        for level in ("low", "medium", "high", "xhigh"):
            p = self.params(key, "[[tool:roll_dice {}]]", "th-" + level,
                            thinking=level)
            o = self.ok(c, p)
            self.assertEqual(o.hooks[0][1]["context"]["thinking"], level)
        # missing or mistyped fields
        refused(text=5)
        refused(author={"id": "u1"})
        refused(images={"data": TINY_PNG})
        # the never-valid channel was never started
        self.assertIsNone(inspect(self.container(d, never)))
        st = c.call("channel.status", {"channel": never})
        self.assertEqual((st["state"], st["broker"], st["busy"]),
                         ("missing", "none", False))


    def test_images_total(self):
        """At most 64 MiB of images in all (PROTOCOL.md 4.3).  The slowest
        test here: each turn.run line is about 90 MB, parsed by the
        supervisor, the broker and the worker, and by this test's stand-in
        upstream; under a sanitizer with another suite beside it that
        passes a minute, so the turn has three."""
        d = self.daemon(lambda c: c["timeouts"].update(turn_ms=180000))
        c = self.client(d)
        key = "total:1"
        part = base64.b64encode(b"\x47" * (16 * MIB)).decode()
        more = base64.b64encode(b"\x47" * (16 * MIB + 1)).decode()
        imgs = [{"data": part, "mimeType": "image/gif"}] * 4
        o = self.turn(c, self.params("total:2", "hi", images=imgs[:3] + [
            {"data": more, "mimeType": "image/gif"}]))
        self.assertEqual((o.result["ok"], o.result["reason"]),
                         (False, "invalid"), o.result)
        self.assertIsNone(inspect(self.container(d, "total:2")))
        o = self.ok(c, self.params(key, "hi", images=imgs))
        self.assertEqual(o.result["text"], "echo: Ann: hi")
        blocks = model_requests()[-1]["json"]["messages"][0]["content"]
        self.assertEqual([b["type"] for b in blocks], ["image"] * 4 +
                         ["text"])
        self.assertTrue(all(b["source"]["data"] == part
                            for b in blocks[:4]))
        del blocks, imgs, part, more
        FU.reset()


class Deadlines(TurnTest):
    def test_timeout_removes_container(self):
        d = self.daemon(lambda c: c["timeouts"].update(turn_ms=5000))
        c = self.client(d)
        key = "late:1"
        # the channel is up first, so the deadline runs out in the model call
        self.assertEqual(c.call("channel.start", {"channel": key,
                                                  "profile": "default"}), {})
        first = self.container_id(c, key)
        self.stall_model(30)
        o = self.failed(c, self.params(key, "never answered"), "timeout")
        self.assertGreaterEqual(o.seconds, 4.9)
        self.assertLess(o.seconds, 5 + 3)
        self.assertEqual(o.phases()[-1], "result")
        self.assertIn("delivered", o.phases())
        # answered once the container is gone, not before
        self.assertIsNone(inspect(self.container(d, key)))
        self.assertEqual(len(model_requests()), 1)
        # the channel works again, in a new container
        o = self.ok(c, self.params(key, "again", "t2"))
        self.assertEqual(o.result["text"], "echo: Ann: again")
        self.assertNotEqual(self.container_id(c, key), first)

    def test_turn_cancel(self):
        d = self.daemon()
        c = self.client(d)
        c2 = self.client(d, hooks=())
        key = "cancel:1"
        self.assertEqual(c2.call("turn.cancel", {"channel": key}),
                         {"cancelled": False})
        self.stall_model(30)
        rid = c.request("turn.run", self.params(key, "to be cancelled"))
        FU.wait_for(1, 60, path="/v1/messages")
        self.assertEqual(c2.call("turn.cancel", {"channel": key}),
                         {"cancelled": True})
        o = self.finish(c, rid, timeout=10)
        self.assertEqual((o.result["ok"], o.result["reason"]),
                         (False, "cancelled"), o.result)
        self.assertEqual(o.phases()[-1], "result")
        self.assertIsNone(inspect(self.container(d, key)))
        self.assertEqual(c2.call("turn.cancel", {"channel": key}),
                         {"cancelled": False})
        o = self.ok(c, self.params(key, "after", "t2"))
        self.assertEqual(o.result["text"], "echo: Ann: after")

    def test_stop_during_turn(self):
        d = self.daemon()
        c = self.client(d)
        c2 = self.client(d, hooks=())
        key = "stopturn:1"
        self.stall_model(30)
        rid = c.request("turn.run", self.params(key, "to be stopped"))
        FU.wait_for(1, 60, path="/v1/messages")
        self.assertEqual(c2.call("channel.stop", {"channel": key}), {})
        o = self.finish(c, rid, timeout=10)
        self.assertEqual((o.result["ok"], o.result["reason"]),
                         (False, "cancelled"), o.result)
        self.assertGone(d, key)
        self.assertFalse(c2.call("channel.status", {"channel": key})["busy"])

    def test_stop_brokers_keeps_containers(self):
        d = self.daemon()
        c = self.client(d)
        key = "stopbrokers:1"
        self.ok(c, self.params(key, "first"))
        before = self.container_id(c, key)
        # so that wait_for below waits for this turn's call, not the first's
        FU.reset()
        self.stall_model(30)
        rid = c.request("turn.run", self.params(key, "to be cut", "t2"))
        FU.wait_for(1, 60, path="/v1/messages")
        c2 = self.client(d, hooks=())
        self.assertEqual(c2.call("daemon.stop_brokers"), {"stopped": 1})
        o = self.finish(c, rid, timeout=10)
        self.assertEqual((o.result["ok"], o.result["reason"]),
                         (False, "cancelled"), o.result)
        st = c2.call("channel.status", {"channel": key})
        self.assertEqual((st["state"], st["broker"], st["container"]),
                         ("running", "none", before))
        FU.reset()
        o = self.ok(c, self.params(key, "again", "t3"))
        self.assertEqual(o.result["text"], "echo: Ann: again")
        self.assertEqual(self.container_id(c, key), before)

    def test_cancel_request(self):
        d = self.daemon()
        c = self.client(d)
        key = "cancelreq:1"
        self.stall_model(30)
        # the largest integer id: echoed and matched exactly, not within
        # the epsilon cJSON compares doubles with
        rid = 2 ** 53 - 1
        c.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid,
                               "method": "turn.run",
                               "params": self.params(key, "to be cancelled")
                               }).encode() + b"\n")
        FU.wait_for(1, 60, path="/v1/messages")
        self.assertEqual(c.call("$/cancelRequest", {"id": rid - 1}),
                         {"cancelled": False})
        c.send_raw(json.dumps({"jsonrpc": "2.0", "method": "$/cancelRequest",
                               "params": {"id": rid}}).encode() + b"\n")
        o = self.finish(c, rid, timeout=10)
        self.assertIsNone(o.result)
        self.assertEqual(o.error["code"], -32800, o.error)
        # answered once the container is gone, as every cancel is
        self.assertIsNone(inspect(self.container(d, key)))
        self.assertFalse(c.call("channel.status", {"channel": key})["busy"])
        o = self.ok(c, self.params(key, "after", "t2"))
        self.assertEqual(o.result["text"], "echo: Ann: after")

    def test_client_disconnects(self):
        d = self.daemon()
        c = Client(d.socket, hooks=["tool.call"])
        key = "gone:1"
        self.stall_model(30)
        c.request("turn.run", self.params(key, "the client leaves"))
        FU.wait_for(1, 60, path="/v1/messages")
        self.assertIsNotNone(inspect(self.container(d, key)))
        c.close()
        self.assertGone(d, key)
        c2 = self.client(d)
        self.assertTrue(wait_until(lambda: not c2.call(
            "channel.status", {"channel": key})["busy"], 10))
        o = self.ok(c2, self.params(key, "another client", "t2"))
        self.assertEqual(o.result["text"], "echo: Ann: another client")


class Hooks(TurnTest):
    def test_memory_and_effort(self):
        d = self.daemon()
        c = self.client(d, hooks=("tool.call", "memory.block",
                                  "effort.judge"))
        key = "hooks:1"
        handlers = {"memory.block": lambda p: {"text": "remember X"},
                    "effort.judge": lambda p: {"level": "high"}}
        text = 'think [[tool:roll_dice {"sides":6}]]'
        o = self.ok(c, self.params(key, text), handlers)
        self.assertEqual(o.result["text"], "done: 4")
        got = {m: p for m, p in o.hooks}
        self.assertEqual(sorted(m for m, _ in o.hooks),
                         ["effort.judge", "memory.block", "tool.call"])
        self.assertEqual(got["memory.block"], {"channel": key, "id": "u1",
                                               "name": "Ann"})
        # a first turn has no judged level to pass on
        self.assertEqual(got["effort.judge"], {"text": text})
        # the judged level is the turn's: the bound context says so
        self.assertEqual(got["tool.call"]["context"]["thinking"], "high")
        # the memory reached the worker, which sends it as system text
        reqs = model_requests()
        self.assertEqual(len(reqs), 2)
        for r in reqs:
            self.assertTrue(r["json"]["system"].endswith(
                MEMORY_INTRO + "remember X"), r["json"]["system"])
        # The reference worker asks for no thinking, so the ceiling of
        # "high" (PROTOCOL.md 5) has nothing to lower: no thinking and
        # no output_config go out, max_tokens stays what it asked.
        for r in reqs:
            self.assertNotIn("thinking", r["json"])
            self.assertNotIn("output_config", r["json"])
            self.assertEqual(r["json"]["max_tokens"], 4096)
        # the next turn: previous is the level the last one ran at
        o = self.ok(c, self.params(key, "again", "t2"), {
            "memory.block": lambda p: {"text": "second memory"},
            "effort.judge": lambda p: {"level": "medium"}})
        self.assertEqual(o.result["text"], "echo: Ann: again")
        got = {m: p for m, p in o.hooks}
        self.assertEqual(got["effort.judge"], {"text": "again",
                                               "previous": "high"})
        self.assertTrue(model_requests()[-1]["json"]["system"].endswith(
            MEMORY_INTRO + "second memory"))
        # memory and thinking given: no hook is asked
        o = self.ok(c, self.params(key, "[[tool:roll_dice {}]]", "t3",
                                   memory="given memory", thinking="xhigh"),
                    handlers)
        self.assertEqual([m for m, _ in o.hooks], ["tool.call"])
        self.assertEqual(o.hooks[0][1]["context"]["thinking"], "xhigh")
        self.assertTrue(model_requests()[-1]["json"]["system"].endswith(
            MEMORY_INTRO + "given memory"))
        # an empty memory is a memory; previous is the level the hook
        # judged last, not the one given in t3
        o = self.ok(c, self.params(key, "[[tool:roll_dice {}]]", "t4"), {
            "memory.block": lambda p: {"text": ""},
            "effort.judge": lambda p: {"level": "low"}})
        got = {m: p for m, p in o.hooks}
        self.assertEqual(got["effort.judge"]["previous"], "medium")
        self.assertEqual(got["tool.call"]["context"]["thinking"], "low")
        self.assertNotIn(MEMORY_INTRO, model_requests()[-1]["json"]["system"])
        # a client without the hooks gets none, and an empty memory
        c2 = self.client(d, hooks=())
        o = self.ok(c2, self.params(key, "[[tool:roll_dice {}]]", "t5"))
        self.assertEqual(o.hooks, [])
        # no tool.call hook: the tool fails inside the turn
        self.assertTrue(o.result["text"].startswith("done: "), o.result)
        self.assertNotEqual(o.result["text"], "done: 4")


class Compaction(TurnTest):
    """The reference worker speaks compaction (rtsandbox-protocol(7),
    0.7.10 and 0.7.12): it asks GET /worker/config at start, and a guest's
    "/compact" goes through the broker to the client's compaction.compact
    hook, whose summary is the reply; the report of how it ended is logged
    for the channel."""

    def test_compact_through_the_hook(self):
        d = self.daemon(lambda c: c.update(compaction={"engine": "test/jev"}))
        c = self.client(d, hooks=("tool.call", "compaction.compact"))
        key = "compact:1"

        def compact(p):
            r = p["request"]
            return {"summary": "Ann wants the rolls kept.",
                    "firstKeptEntryId": r["firstKeptEntryId"],
                    "tokensBefore": r["tokensBefore"],
                    "estimatedTokensAfter": 7}
        o = self.ok(c, self.params(key, "/compact keep the dice rolls"),
                    {"compaction.compact": compact})
        self.assertEqual(o.result["text"], "Compacted by test/jev: Ann "
                         "wants the rolls kept.")
        self.assertEqual(model_requests(), [])
        (method, p), = o.hooks
        self.assertEqual(method, "compaction.compact")
        self.assertEqual(p["context"], {"channel": key, "profile": "default",
                                        "speaker": dict(AUTHOR),
                                        "turnId": "t1", "engine": "test/jev"})
        r = p["request"]
        self.assertEqual((r["reason"], r["firstKeptEntryId"],
                          r["customInstructions"], r["isSplitTurn"]),
                         ("manual", "t1", "keep the dice rolls", False))
        self.assertEqual(r["messagesToSummarize"][0]["role"], "user")
        self.assertEqual(r["messagesToSummarize"][0]["content"][-1]["text"],
                         "Ann: /compact keep the dice rolls")
        log = d.read_log()
        self.assertIn("channel %s: turn t1: host compactor answered (engine "
                      "test/jev, reason manual, tokensBefore %d, tokensAfter "
                      "7" % (key, r["tokensBefore"]), log)
        self.assertTrue(wait_until(lambda: (
            "channel %s: turn t1: conversation compacted (engine extension, "
            "trigger self, tokensBefore %d, tokensAfter 7)" % (
                key, r["tokensBefore"])) in d.read_log(), 10, 0.2),
            d.read_log()[-3000:])
        # declined: the worker falls back, and says so
        o = self.ok(c, self.params(key, "/compact", "t2"),
                    {"compaction.compact": lambda p: None})
        self.assertEqual(o.result["text"], "Compaction fell back: the "
                         "compactor declined")
        self.assertTrue(wait_until(lambda: (
            "turn t2: compaction failed (trigger self, aborted false, "
            "willRetry false): the host compactor fell back: the compactor "
            "declined") in d.read_log(), 10, 0.2), d.read_log()[-3000:])

    def test_no_host_compactor(self):
        d = self.daemon()
        c = self.client(d, hooks=("tool.call", "compaction.compact"))
        o = self.ok(c, self.params("compact:2", "/compact"))
        self.assertEqual(o.result["text"], "No host compactor: this worker "
                         "keeps no history to compact")
        self.assertEqual(o.hooks, [])


def children_by_role(c):
    return {p["role"]: p for p in c.call("daemon.stats")["processes"]
            if p["role"] != "broker"}


class HelperRestarts(TurnTest):
    """A helper that is starting or restarting is waited for, within the
    request's own bound, instead of failing the request."""

    def test_turn_the_moment_the_socket_appears(self):
        d = self.daemon(wait=False)
        self.assertTrue(wait_until(lambda: os.path.exists(d.socket), 10,
                                   0.001))
        while True:
            try:
                c = Client(d.socket, hooks=("tool.call",))
                break
            except (ConnectionError, OSError):
                time.sleep(0.001)
        self.addCleanup(c.close)
        c.sock.settimeout(120)
        o = self.ok(c, self.params("early:1", "first of all"))
        self.assertEqual(o.result["text"], "echo: Ann: first of all")

    def test_start_and_turn_during_restarts(self):
        d = self.daemon()
        c = self.client(d)
        for role in ("docker", "fsguard", "egress"):
            with self.subTest(role=role):
                pid = children_by_role(c)[role]["pid"]
                os.kill(pid, signal.SIGKILL)
                # the daemon knows it is gone: down, or starting again
                self.assertTrue(wait_until(lambda: children_by_role(c)[
                    role]["state"] != "ready", 10, 0.01))
                key = "restart:" + role
                # asked at once, while the helper is down or starting
                self.assertEqual(c.call("channel.start", {
                    "channel": key, "profile": "default"}), {})
                o = self.ok(c, self.params(key, "after " + role,
                                           "t-" + role))
                self.assertEqual(o.result["text"],
                                 "echo: Ann: after " + role)
                self.assertNotEqual(children_by_role(c)[role]["pid"], pid)


class DeadProcesses(TurnTest):
    """A turn whose egress, broker or worker is gone ends within about a
    second, saying which, and its container goes as for a cancel."""

    def stalled_turn(self, c, key):
        self.assertEqual(c.call("channel.start", {"channel": key,
                                                  "profile": "default"}), {})
        self.stall_model(30)
        rid = c.request("turn.run", self.params(key, "stalled"))
        FU.wait_for(1, 60, path="/v1/messages")
        return rid

    def test_egress_dies(self):
        d = self.daemon()
        c = self.client(d)
        key = "dead:egress"
        rid = self.stalled_turn(c, key)
        t0 = time.monotonic()
        os.kill(children_by_role(c)["egress"]["pid"], signal.SIGKILL)
        o = self.finish(c, rid, timeout=20)
        self.assertLess(time.monotonic() - t0, 3)
        # egress's death, or its brokers' that follow it, whichever the
        # supervisor hears of first
        self.assertEqual((o.result["ok"], o.result["reason"]),
                         (False, "internal"), o.result)
        self.assertIn(o.result["message"], (
            "Egress stopped during the turn", "The channel's broker stopped"))
        self.assertIsNone(inspect(self.container(d, key)))
        FU.reset()
        self.ok(c, self.params(key, "again", "t2"))

    def test_broker_dies(self):
        d = self.daemon()
        c = self.client(d)
        key = "dead:broker"
        rid = self.stalled_turn(c, key)
        brokers = [p for p in c.call("daemon.stats")["processes"]
                   if p["role"] == "broker"]
        self.assertEqual(len(brokers), 1)
        t0 = time.monotonic()
        os.kill(brokers[0]["pid"], signal.SIGKILL)
        o = self.finish(c, rid, timeout=20)
        self.assertLess(time.monotonic() - t0, 3)
        self.assertEqual(o.result, {"ok": False, "reason": "internal",
                                    "message": "The channel's broker "
                                               "stopped",
                                    "timedOut": False})
        self.assertIsNone(inspect(self.container(d, key)))
        FU.reset()
        self.ok(c, self.params(key, "again", "t2"))

    def test_worker_killed(self):
        """The worker is the container's main process: killed from the
        host, the container stops, Docker's event stream says so, and the
        turn ends with the exit code instead of at its deadline."""
        d = self.daemon()
        c = self.client(d)
        key = "dead:worker"
        rid = self.stalled_turn(c, key)
        info = inspect(self.container(d, key))
        t0 = time.monotonic()
        os.kill(info["State"]["Pid"], signal.SIGKILL)
        o = self.finish(c, rid, timeout=20)
        self.assertLess(time.monotonic() - t0, 3)
        self.assertEqual(o.result, {
            "ok": False, "reason": "worker_failed",
            "message": "The worker's container stopped (exit code 137)",
            "timedOut": False})
        self.assertGone(d, key)
        FU.reset()
        self.ok(c, self.params(key, "again", "t2"))

    def test_docker_away_during_turn(self):
        """Docker gone under a turn (its socket cut, as when dockerd
        restarts): a cancelled turn is still answered, though its container
        cannot be removed then; it is removed once Docker is back."""
        root = tempfile.mkdtemp(prefix="rtsb-dp-", dir="/tmp")
        self.addCleanup(shutil.rmtree, root, True)
        px = rtsb.DockerProxy(os.path.join(root, "docker.sock"))
        self.addCleanup(px.close)
        d = self.daemon(lambda c: c["docker"].update(socket=px.path))
        c = self.client(d)
        key = "dead:docker"
        rid = self.stalled_turn(c, key)
        name = self.container(d, key)
        self.assertTrue(wait_until(
            lambda: "docker events: following" in d.read_log(), 10))
        px.down()
        self.assertTrue(wait_until(
            lambda: "not following any more" in d.read_log(), 10))
        self.assertEqual(c.call("turn.cancel", {"channel": key}),
                         {"cancelled": True})
        o = self.finish(c, rid, timeout=30)
        self.assertEqual((o.result["ok"], o.result["reason"]),
                         (False, "cancelled"), o.result)
        self.assertTrue(inspect(name)["State"]["Running"])
        px.up()
        self.assertGone(d, key, timeout=20)
        FU.reset()
        self.ok(c, self.params(key, "again", "t2"))

    def test_container_removed_between_turns(self):
        """A warm start trusts the container it saw running only while
        Docker would have said it stopped: removed or stopped behind the
        daemon's back, the next turn makes a new one."""
        d = self.daemon()
        c = self.client(d)
        key = "dead:between"
        self.ok(c, self.params(key, "one", "t1"))
        self.ok(c, self.params(key, "two", "t2"))
        first = self.container_id(c, key)
        docker("rm", "-f", self.container(d, key))
        o = self.ok(c, self.params(key, "three", "t3"), timeout=60)
        self.assertLess(o.seconds, 30)
        second = self.container_id(c, key)
        self.assertNotEqual(first, second)
        docker("stop", "-t", "0", self.container(d, key))
        self.ok(c, self.params(key, "four", "t4"), timeout=60)
        self.assertNotEqual(self.container_id(c, key), second)
        self.assertIn("docker events: following", d.read_log())


class Reload(TurnTest):
    """SIGHUP: what may change while the daemon runs is applied to what
    starts from then on; the rest is refused, saying which field, and
    nothing changes."""

    def reconfigure(self, d, change):
        change(d.config)
        with open(d.config_path + ".new", "w") as f:
            json.dump(d.config, f)
        # replaced by a rename, as editors and configuration managers do
        os.rename(d.config_path + ".new", d.config_path)

    def hup(self, c, d, field):
        before = c.call("daemon.stats")["counters"][field]
        os.kill(d.proc.pid, signal.SIGHUP)
        self.assertTrue(wait_until(
            lambda: c.call("daemon.stats")["counters"][field] == before + 1,
            10), d.read_log()[-2000:])

    def broker_pid(self, c):
        pids = [p["pid"] for p in c.call("daemon.stats")["processes"]
                if p["role"] == "broker"]
        self.assertEqual(len(pids), 1)
        return pids[0]

    def test_reload_applies(self):
        d = self.daemon()
        c = self.client(d)
        key = "reload:1"
        self.ok(c, self.params(key, "one", "t1"))
        container = self.container_id(c, key)
        broker = self.broker_pid(c)
        # a turn in flight keeps what it started with
        FU.script({"kind": "sse", "delay_ms": 300, "match": "/v1/messages"})
        rid = c.request("turn.run", self.params(key, "[[stream]] in flight",
                                                "t2"))
        FU.wait_for(2, 30, path="/v1/messages")

        def change(conf):
            conf["profiles"]["default"]["model"] = "claude-test-2"
            conf["profiles"]["second"] = {"model": "claude-test"}
            conf["tools"] = ["roll_dice", "flip_coin"]
            conf["timeouts"] = {"start_ms": 60000, "turn_ms": 4000}
        self.reconfigure(d, change)
        self.hup(c, d, "reloads")
        o = self.finish(c, rid)
        self.assertTrue(o.result["ok"], o.result)
        self.assertEqual(model_requests()[-1]["json"]["model"],
                         "claude-test")
        self.assertEqual(self.broker_pid(c), broker)
        # the next start replaces the broker, keeps the container, and
        # egress admits the new model
        FU.reset()
        self.ok(c, self.params(key, "three", "t3"))
        self.assertEqual(model_requests()[-1]["json"]["model"],
                         "claude-test-2")
        self.assertNotEqual(self.broker_pid(c), broker)
        self.assertEqual(self.container_id(c, key), container)
        # the new profile, and the new turn deadline
        self.ok(c, self.params("reload:2", "two", "t1", profile="second"))
        self.stall_model(30)
        o = self.turn(c, self.params(key, "slow", "t4"), timeout=60)
        self.assertEqual(o.result["reason"], "timeout", o.result)
        self.assertLess(o.seconds, 30)
        self.assertIn("configuration reloaded", d.read_log())

    def test_reload_refused(self):
        d = self.daemon()
        c = self.client(d)
        key = "reload:3"
        self.ok(c, self.params(key, "one", "t1"))

        def change(conf):
            conf["image"] = "rtsandbox-worker:other"
            conf["profiles"]["second"] = {"model": "claude-test"}
        self.reconfigure(d, change)
        self.hup(c, d, "reloads_refused")
        self.assertIn("reload refused: image changed", d.read_log())
        # nothing of it applied: not the profile either
        with self.assertRaises(rtsb.RpcError):
            c.call("channel.start", {"channel": "reload:4",
                                     "profile": "second"})
        self.ok(c, self.params(key, "two", "t2"))
        # a file that does not parse: each error logged, nothing changed
        with open(d.config_path, "w") as f:
            f.write('{"state_dir": 7')
        self.hup(c, d, "reloads_refused")
        self.assertIn("reload refused: %s:" % d.config_path, d.read_log())
        with open(d.config_path, "w") as f:
            json.dump(dict(d.config, tools=["roll_dice"],
                           image=IMAGE, turns=1), f)
        self.hup(c, d, "reloads_refused")
        self.assertRegex(d.read_log(), r"reload refused: .*turns")
        self.ok(c, self.params(key, "three", "t3"))
        self.assertEqual(c.call("daemon.stats")["counters"]["reloads"], 0)


class Semantics(TurnTest):
    """What bots written for PiSandboxRuntime 0.7.3 rely on."""

    def test_judge_previous_only_after_a_judged_turn(self):
        d = self.daemon(lambda c: c["timeouts"].update(turn_ms=3000))
        c = self.client(d, hooks=("tool.call", "effort.judge"))
        key = "judge:1"
        seen = []

        def judge(level):
            def fn(p):
                seen.append(p)
                return {"level": level}
            return fn
        # first turn: no previous, whatever default_thinking is
        self.ok(c, self.params(key, "one"), {"effort.judge": judge("high")})
        self.assertEqual(seen[-1], {"text": "one"})
        # a turn that fails still leaves the level it was judged at
        self.stall_model(10)
        o = self.turn(c, self.params(key, "two", "t2"),
                      {"effort.judge": judge("xhigh")})
        self.assertEqual(o.result["reason"], "timeout", o.result)
        self.assertEqual(seen[-1], {"text": "two", "previous": "high"})
        FU.reset()
        self.ok(c, self.params(key, "three", "t3"),
                {"effort.judge": judge("medium")})
        self.assertEqual(seen[-1], {"text": "three", "previous": "xhigh"})
        # after channel.stop and channel.fresh, a first turn again
        self.assertEqual(c.call("channel.stop", {"channel": key}), {})
        self.ok(c, self.params(key, "four", "t4"),
                {"effort.judge": judge("low")})
        self.assertEqual(seen[-1], {"text": "four"})
        c.call("channel.fresh", {"channel": key})
        self.ok(c, self.params(key, "five", "t5"),
                {"effort.judge": judge("low")})
        self.assertEqual(seen[-1], {"text": "five"})

    def test_hook_failures_fail_the_turn(self):
        """A memory.block or effort.judge that throws (an error answer) or
        answers nonsense fails the turn, as under 0.7.3: no turn with an
        empty memory or a level nobody judged."""
        d = self.daemon()
        c = self.client(d, hooks=("tool.call", "memory.block",
                                  "effort.judge"))
        key = "hookfail:1"
        secret = "internal: token=sk-live-SECRET at /srv/bot/memory.ts:3"
        good = {"memory.block": lambda p: {"text": "remember X"},
                "effort.judge": lambda p: {"level": "high"}}

        def boom(p):
            raise HookError(secret)
        cases = [
            ("memory.block", boom, "memory hook failed"),
            ("memory.block", lambda p: {"nope": 1}, "memory hook failed"),
            ("memory.block", lambda p: {"text": 5}, "memory hook failed"),
            ("memory.block", lambda p: "remember X", "memory hook failed"),
            ("effort.judge", boom, "effort hook failed"),
            ("effort.judge", lambda p: {"level": "max"},
             "effort hook failed"),
            ("effort.judge", lambda p: {}, "effort hook failed"),
            ("effort.judge", lambda p: ["high"], "effort hook failed"),
        ]
        for i, (hook, fn, message) in enumerate(cases):
            handlers = dict(good)
            handlers[hook] = fn
            o = self.turn(c, self.params(key, "hello", "t%d" % i), handlers)
            self.assertEqual(o.result, {"ok": False, "reason": "internal",
                                        "message": message,
                                        "timedOut": False}, (i, hook))
            self.assertEqual(o.phases()[-1], "result")
        self.assertEqual(model_requests(), [])
        log = d.read_log()
        self.assertNotIn("sk-live-SECRET", log)
        self.assertIn("the memory.block hook failed: the client answered "
                      "with an error", log)
        self.assertIn("the effort.judge hook failed: an answer other than",
                      log)
        # the channel goes on when the hooks answer
        o = self.ok(c, self.params(key, "hello", "t9"), good)
        self.assertEqual(o.result["text"], "echo: Ann: hello")
        self.assertTrue(model_requests()[-1]["json"]["system"].endswith(
            MEMORY_INTRO + "remember X"))

    def test_previous_absent_until_judged(self):
        """previous is a level the hook judged: a channel whose turns ran
        at default_thinking, or at a level turn.run gave, has none."""
        d = self.daemon(lambda c: c.update(default_thinking="medium"))
        plain = self.client(d, hooks=("tool.call",))
        judge = self.client(d, hooks=("tool.call", "effort.judge"))
        key = "prev:1"
        seen = []

        def level(lv):
            def fn(p):
                seen.append(p)
                return {"level": lv}
            return fn
        self.ok(plain, self.params(key, "one", "t1"))
        self.ok(plain, self.params(key, "two", "t2", thinking="xhigh"))
        o = self.ok(judge, self.params(key, "three", "t3"),
                    {"effort.judge": level("high")})
        self.assertEqual(seen, [{"text": "three"}])
        self.ok(plain, self.params(key, "four", "t4", thinking="low"))
        self.ok(judge, self.params(key, "five", "t5"),
                {"effort.judge": level("medium")})
        self.assertEqual(seen[-1], {"text": "five", "previous": "high"})
        # the level a turn without the hook runs at is still the last one
        # a turn ran at
        o = self.ok(plain, self.params(key, "[[tool:roll_dice {}]]", "t6"))
        self.assertEqual(o.hooks[0][1]["context"]["thinking"], "medium")

    def test_memory_too_large_fails_the_turn(self):
        d = self.daemon()
        c = self.client(d, hooks=("tool.call", "memory.block"))
        key = "mem:1"
        o = self.turn(c, self.params(key, "hello"), {
            "memory.block": lambda p: {"text": "m" * 100001}})
        self.assertEqual(o.result, {"ok": False, "reason": "invalid",
                                    "message": "Memory context too large",
                                    "timedOut": False})
        self.assertEqual(model_requests(), [])
        # at the limit, it is the turn's memory
        o = self.ok(c, self.params(key, "hello", "t2"), {
            "memory.block": lambda p: {"text": "m" * 100000}})
        self.assertTrue(model_requests()[-1]["json"]["system"].endswith(
            MEMORY_INTRO + "m" * 100000))


class Containers(TurnTest):
    def test_profile_switch_recreates(self):
        d = self.daemon(lambda c: c["profiles"].update(
            second={"model": "claude-other"}))
        c = self.client(d)
        key = "prof:1"
        o = self.ok(c, self.params(key, "[[tool:roll_dice {}]]"))
        self.assertEqual(o.hooks[0][1]["context"]["profile"], "default")
        first = self.container_id(c, key)
        self.assertTrue(first)
        p = self.params(key, "[[tool:roll_dice {}]]", "t2")
        p["profile"] = "second"
        o = self.ok(c, p)
        self.assertEqual(o.hooks[0][1]["context"]["profile"], "second")
        st = c.call("channel.status", {"channel": key})
        self.assertEqual(st["profile"], "second")
        self.assertNotEqual(st["container"], first)
        self.assertEqual([r["json"]["model"] for r in model_requests()],
                         ["claude-test"] * 2 + ["claude-other"] * 2)
        # the same profile again keeps it
        p = self.params(key, "same", "t3")
        p["profile"] = "second"
        self.ok(c, p)
        self.assertEqual(self.container_id(c, key), st["container"])
        self.assertEqual(prefixed_containers(d.prefix),
                         [self.container(d, key)])

    def test_image_change_recreates(self):
        r = docker("tag", IMAGE, ALT_IMAGE)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(docker, "rmi", ALT_IMAGE)
        d = self.daemon()
        key = "img:1"
        with Client(d.socket, hooks=["tool.call"]) as c:
            self.ok(c, self.params(key, "first"))
            first = self.container_id(c, key)
        self.restart(d, ALT_IMAGE)
        c = self.client(d)
        o = self.ok(c, self.params(key, "second", "t2"))
        self.assertEqual(o.result["text"], "echo: Ann: second")
        st = c.call("channel.status", {"channel": key})
        self.assertEqual(st["image"], ALT_IMAGE)
        self.assertNotEqual(st["container"], first)
        self.assertEqual(inspect(self.container(d, key))["Config"]["Image"],
                         ALT_IMAGE)

    def test_kept_container_served_after_restart(self):
        d = self.daemon()
        key = "keep:1"
        name = self.container(d, key)
        with Client(d.socket, hooks=["tool.call"]) as c:
            self.ok(c, self.params(key, "before"))
            first = self.container_id(c, key)
        self.restart(d)
        # SIGTERM kept the container running
        info = inspect(name)
        self.assertTrue(info["State"]["Running"])
        self.assertEqual(info["Id"], first)
        t0 = time.monotonic()
        c = self.client(d)
        o = self.ok(c, self.params(key, "after [[file:k.txt kept]]", "t2"),
                    timeout=90)
        elapsed = time.monotonic() - t0
        self.assertEqual(o.result["text"], "done: Wrote k.txt (4 bytes); it "
                         "goes with the reply.")
        self.assertEqual(self.container_id(c, key), first)
        self.assertEqual(inspect(name)["Id"], first)
        # The worker's poll fails with the old broker gone and it retries
        # every 250 ms, so it re-announces itself at once, not after 45 s.
        sys.stderr.write("[kept container served %.1f s after the "
                         "restart] " % elapsed)
        self.assertLess(elapsed, 60)

    def test_fresh_archives_sessions(self):
        d = self.daemon()
        c = self.client(d)
        key = "fresh:1"
        self.ok(c, self.params(key, "first"))
        first = self.container_id(c, key)
        paths = c.call("channel.paths", {"channel": key})
        sess = paths["sessions"]
        self.assertEqual(sess, os.path.join(d.state, "fresh_1", "workspace",
                                            "sessions"))
        data = b'{"type":"session","turn":"t1"}\n'
        with open(os.path.join(sess, "s1.jsonl"), "wb") as f:
            f.write(data)
        r = c.call("channel.fresh", {"channel": key})
        self.assertEqual(r["archived"], 1, r)
        self.assertIsNone(inspect(self.container(d, key)))
        self.assertFalse(os.path.exists(os.path.join(sess, "s1.jsonl")))
        folders = os.listdir(os.path.join(sess, "archive"))
        self.assertEqual(folders, [r["folder"]])
        with open(os.path.join(sess, "archive", folders[0], "s1.jsonl"),
                  "rb") as f:
            self.assertEqual(f.read(), data)
        o = self.ok(c, self.params(key, "fresh start", "t2"))
        self.assertEqual(o.result["text"], "echo: Ann: fresh start")
        self.assertProgress(o, key, "t2")
        now = self.container_id(c, key)
        self.assertTrue(now)
        self.assertNotEqual(now, first)
        # nothing to archive the second time
        self.assertEqual(c.call("channel.fresh", {"channel": key}),
                         {"archived": 0})

    def test_two_channels_at_once(self):
        d = self.daemon()
        ca, cb = self.client(d), self.client(d)
        ka, kb = "two:a", "two:b"
        for k in (ka, kb):
            self.assertEqual(ca.call("channel.start", {
                "channel": k, "profile": "default"}), {})
        # the first model call to come is answered after 3 s
        FU.script({"kind": "json", "delay_ms": 3000, "match": "/v1/messages",
                   "body": {"id": "msg_slow", "type": "message",
                            "role": "assistant", "model": "claude-test",
                            "content": [{"type": "text",
                                         "text": "slow answer for a"}],
                            "stop_reason": "end_turn",
                            "stop_sequence": None,
                            "usage": {"input_tokens": 1,
                                      "output_tokens": 1}}})
        t0 = time.monotonic()
        ra = ca.request("turn.run", dict(self.params(ka, "channel a",
                                                     "ta")))
        FU.wait_for(1, 30, path="/v1/messages")
        ob = self.ok(cb, self.params(kb, "[[tool:roll_dice {}]] b", "tb"))
        tb = time.monotonic() - t0
        oa = self.finish(ca, ra)
        ta = time.monotonic() - t0
        self.assertEqual(oa.result, {"ok": True, "text": "slow answer for a",
                                     "files": []})
        self.assertEqual(ob.result, {"ok": True, "text": "done: 4",
                                     "files": []})
        self.assertLess(tb, 3.0, "channel b waited for channel a")
        self.assertGreaterEqual(ta, 3.0)
        self.assertGreater(ta, tb)
        self.assertProgress(oa, ka, "ta")
        self.assertProgress(ob, kb, "tb", tools=1)
        self.assertEqual(ob.hooks[0][1]["context"]["channel"], kb)
        ida, idb = self.container_id(ca, ka), self.container_id(ca, kb)
        self.assertTrue(ida and idb and ida != idb)
        self.assertEqual(prefixed_containers(d.prefix),
                         sorted([self.container(d, ka),
                                 self.container(d, kb)]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
