"""The Python client against the real rtsandboxd of $RTSANDBOX_BUILD, run as
the current, unprivileged user (tests/integration/rtsb.py), the reference
worker in real containers and the fake upstream of tests/fixtures, whose
model answers by rules: [[tool:NAME {json}]] asks for a tool, [[file:NAME
content]] makes the worker write a reply file, after tool results it says
"done: <results>", else "echo: <text>".  The worker puts "<author name>: "
before the turn's text and sends the memory as system text.

CompactionHook needs no daemon and runs without Docker: the
compaction.compact hook served to a fake control socket that speaks the
daemon's side of it."""

import asyncio
import http.server
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "integration"))
sys.path.insert(0, os.path.join(TOP, "tests", "fixtures"))
import rtsb  # noqa: E402
from rtsb import Daemon  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

from rtsandbox_client import (PiSandboxRuntime,  # noqa: E402
                              RtsandboxConnectionError, RtsandboxRpcError,
                              SandboxResearchWorker)

IMAGE = "rtsandbox-worker:latest"
PREFIX_BASE = "rtpy%dx" % os.getpid()
AUTHOR = {"id": "u1", "name": "Ann"}
MEMORY_INTRO = "\n\nWhat you remember about this channel:\n"
FU = None
_certdir = None
SKIP = rtsb.docker_skip_reason(IMAGE)
if SKIP is None and shutil.which("openssl") is None:
    SKIP = "openssl is needed for the fake upstream's test CA"


def seams_built():
    try:
        with open(os.path.join(rtsb.BUILD, "buildconf.h")) as f:
            return "#define RTSANDBOX_TEST_SEAMS 1" in f.read()
    except OSError:
        return False


def setUpModule():
    global FU, _certdir
    if SKIP is not None:
        # the daemon's tests are skipped (Base); CompactionHook still runs
        rtsb.docker_cleanup()
        return
    _certdir = tempfile.mkdtemp(prefix="rtpy-certs-", dir="/tmp")
    os.chmod(_certdir, 0o755)
    FU = FakeUpstream(os.path.join(_certdir, "certs"))
    FU.start()


def tearDownModule():
    if FU is not None:
        FU.stop()
    if SKIP is None:
        names = [n for n in rtsb.docker("ps", "-a", "--format",
                                        "{{.Names}}").stdout.split()
                 if n.startswith(PREFIX_BASE)]
        if names:
            rtsb.docker("rm", "-f", *names)
    if _certdir is not None:
        shutil.rmtree(_certdir, ignore_errors=True)
    rtsb.docker_cleanup()


def model_requests():
    return [r for r in FU.requests() if r["path"] == "/v1/messages"]


def params(channel, text, turn_id="t1"):
    return {"channel": channel, "profile": "default", "turn_id": turn_id,
            "author": dict(AUTHOR), "text": text}


async def in_thread(fn, *args):
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


@unittest.skipIf(SKIP is not None, SKIP)
class Base(unittest.IsolatedAsyncioTestCase):
    counter = 0

    def setUp(self):
        FU.reset()

    def daemon(self, conf=None):
        Base.counter += 1
        prefix = "%s%d" % (PREFIX_BASE, Base.counter)

        def config(c):
            c["docker"] = {"container_prefix": prefix}
            c["upstream"]["url"] = FU.url
            c["upstream"]["ca_file"] = FU.ca_file
            c["tools"] = ["roll_dice", "fail_tool"]
            c["timeouts"] = {"start_ms": 60000, "turn_ms": 60000}
            if seams_built():
                c["test"] = {"loopback_public": True}
            if conf:
                conf(c)
        d = Daemon(config=config)
        d.prefix = prefix

        def done():
            try:
                d.stop()
            finally:
                for n in rtsb.prefixed_containers(prefix):
                    rtsb.docker("rm", "-f", n)
                d.cleanup()
        self.addCleanup(done)
        d.start()
        return d

    def container(self, d, key):
        return "%s-%s" % (d.prefix, key.replace(":", "_"))

    def assertOk(self, r):
        self.assertIs(r["ok"], True, r)

    def assertFailed(self, r, reason):
        self.assertIs(r["ok"], False, r)
        self.assertEqual(r["error"]["reason"], reason, r)
        self.assertIsInstance(r["error"]["message"], str)
        return r["error"]["message"]


class Turns(Base):
    async def test_tool_reply_file_and_progress(self):
        d = self.daemon()
        calls = []

        async def roll_dice(inp, ctx):
            calls.append((inp, {k: v for k, v in ctx.items()
                                if k != "done"}))
            return {"ok": True, "text": "4"}
        async with PiSandboxRuntime(socket=d.socket,
                                    tools={"roll_dice": roll_dice}) as rt:
            seen, everyone = [], []
            rt.on_progress(lambda p: everyone.append(p))
            content = "Hello, \u00fcn\u00efc\u00f6de \u2713"
            r = await rt.run_turn(
                **params("turn:1", 'roll [[tool:roll_dice {"sides":6}]] '
                         '[[file:hello.txt %s]]' % content),
                on_progress=lambda p: seen.append(p["phase"]))
            self.assertOk(r)
            body = content.encode()
            self.assertEqual(r["text"], "done: 4\nWrote hello.txt (%d bytes); "
                             "it goes with the reply." % len(body))
            self.assertEqual(r["files"], [{"name": "hello.txt",
                                           "data": body}])
            self.assertEqual(calls, [({"sides": 6}, {
                "channel": "turn:1", "profile": "default",
                "speaker": AUTHOR, "thinking": "low", "turnId": "t1"})])
            self.assertEqual(seen[:4], ["starting", "container", "ready",
                                        "delivered"])
            self.assertEqual(seen[-1], "result")
            self.assertIn("tool_call", seen)
            self.assertEqual([p["phase"] for p in everyone], seen)
            # images as bytes
            png = bytes.fromhex(
                "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db4000000"
                "0049454e44ae426082")
            r = await rt.run_turn(**params("turn:1", "look", "t2"),
                                  images=[{"data": png,
                                           "mimeType": "image/png"}])
            self.assertEqual(r["text"], "echo: Ann: look")

    async def test_memory_and_effort_adapters(self):
        d = self.daemon()
        memory_calls, judge_calls = [], []
        state = {"memory": "remember X", "levels": ["high", "medium"]}

        class Memory:
            async def prompt_block(self, request):
                memory_calls.append(request)
                return state["memory"]

        class Effort:
            def judge(self, request):
                judge_calls.append(request)
                return state["levels"].pop(0) if state["levels"] else "low"
        thinking = []
        rt = PiSandboxRuntime(socket=d.socket, memory=Memory(),
                              effort=Effort(), tools={
                                  "roll_dice": lambda i, c: (
                                      thinking.append(c["thinking"]) or
                                      {"ok": True, "text": "4"})})
        self.addAsyncCleanup(rt.close)
        key = "hooks:1"
        self.assertOk(await rt.run_turn(**params(
            key, "think [[tool:roll_dice {}]]")))
        self.assertEqual(memory_calls, [{"channel": key, "speaker": AUTHOR}])
        self.assertEqual(judge_calls, [{"text": "think [[tool:roll_dice {}]]"}])
        self.assertEqual(thinking, ["high"])
        self.assertTrue(model_requests()[0]["json"]["system"].endswith(
            MEMORY_INTRO + "remember X"))
        self.assertOk(await rt.run_turn(**params(key, "again", "t2")))
        self.assertEqual(judge_calls[-1], {"text": "again",
                                           "previous": "high"})
        # a memory block over 100 000 chars fails the turn
        state["memory"] = "m" * 100001
        n = len(model_requests())
        r = await rt.run_turn(**params(key, "too much", "t3"))
        self.assertEqual(self.assertFailed(r, "invalid"),
                         "Memory context too large")
        self.assertEqual(len(model_requests()), n)

    async def test_cancel_and_busy(self):
        d = self.daemon()
        rt = PiSandboxRuntime(socket=d.socket)
        self.addAsyncCleanup(rt.close)
        key = "cancel:1"
        FU.script({"kind": "stall", "seconds": 30, "match": "/v1/messages"})
        cancel = asyncio.Event()
        first = asyncio.ensure_future(rt.run_turn(**params(key, "slow"),
                                                  cancel=cancel))
        await in_thread(FU.wait_for, 1, 60, "/v1/messages")
        self.assertFailed(await rt.run_turn(**params(key, "second", "t2")),
                          "busy")
        self.assertTrue((await rt.status(key))["busy"])
        t0 = time.monotonic()
        cancel.set()
        self.assertFailed(await first, "cancelled")
        self.assertLess(time.monotonic() - t0, 15)
        # answered once the container is gone
        self.assertIsNone(rtsb.inspect_container(self.container(d, key)))
        self.assertFalse((await rt.status(key))["busy"])
        r = await rt.run_turn(**params(key, "after", "t3"))
        self.assertEqual(r["text"], "echo: Ann: after")

    async def test_failures_with_reasons(self):
        d = self.daemon()

        def broken(inp, ctx):
            raise RuntimeError("no dice today")
        rt = PiSandboxRuntime(socket=d.socket, tools={"roll_dice": broken})
        self.addAsyncCleanup(rt.close)
        key = "errors:1"
        self.assertIn("text", self.assertFailed(await rt.run_turn(
            **params(key, "x" * 100001)), "invalid"))
        self.assertIn("turnId", self.assertFailed(await rt.run_turn(
            **params(key, "hi", "../up")), "invalid"))
        with self.assertRaises(RtsandboxRpcError) as e:
            await rt.start(key, "nope")
        self.assertEqual(e.exception.code, -32602)
        self.assertEqual(e.exception.method, "channel.start")
        self.assertIn('unknown profile "nope"', str(e.exception))
        r = await rt.run_turn(**params(key, "[[tool:roll_dice {}]]", "t2"))
        self.assertEqual(r["text"], "done: no dice today")
        r = await rt.run_turn(**params(key, "[[tool:fail_tool {}]]", "t3"))
        self.assertEqual(r["text"], "done: Tool fail_tool is not available")
        st = await rt.status(key)
        self.assertEqual((st["state"], st["profile"], st["busy"]),
                         ("running", "default", False))
        self.assertEqual((await rt.start_fresh(key))["archived"], 0)
        await rt.stop(key)
        self.assertEqual((await rt.status(key))["state"], "missing")


class Connection(Base):
    async def test_daemon_restart_mid_session(self):
        d = self.daemon()
        events = []
        rt = PiSandboxRuntime(socket=d.socket, reconnect=(0.05, 0.5))
        self.addAsyncCleanup(rt.close)
        rt.on_connected(lambda info: events.append("connected"))
        rt.on_disconnected(lambda why: events.append("disconnected"))
        key = "restart:1"
        self.assertOk(await rt.run_turn(**params(key, "before")))
        FU.script({"kind": "stall", "seconds": 30, "match": "/v1/messages"})
        pending = asyncio.ensure_future(rt.run_turn(**params(
            key, "in flight", "t2")))
        await in_thread(FU.wait_for, 2, 60, "/v1/messages")
        self.assertEqual(await in_thread(d.stop), 0)
        r = await pending
        msg = self.assertFailed(r, "internal")
        self.assertIn("turn.run: the connection to rtsandboxd was lost", msg)
        self.assertIn(d.socket, msg)
        # a call made while the daemon is down waits for it
        waiting = asyncio.ensure_future(rt.status(key))
        await asyncio.sleep(0.3)
        await in_thread(d.start)
        self.assertEqual((await waiting)["state"], "running")
        self.assertEqual(events, ["connected", "disconnected", "connected"])
        FU.reset()
        r = await rt.run_turn(**params(key, "after the restart", "t3"))
        self.assertEqual(r["text"], "echo: Ann: after the restart")

    async def test_unreachable_socket(self):
        rt = PiSandboxRuntime(socket="/tmp/rtpy-nothing-here.sock",
                              connect_timeout=0.5)
        self.addAsyncCleanup(rt.close)
        with self.assertRaises(RtsandboxConnectionError) as e:
            await rt.start("x:1", "default")
        self.assertFalse(e.exception.sent)
        self.assertIn("cannot reach rtsandboxd within 0.5 s: ENOENT: is "
                      "rtsandboxd running", str(e.exception))
        self.assertIn("/tmp/rtpy-nothing-here.sock", str(e.exception))
        r = await rt.run_turn(**params("x:1", "hi"))
        self.assertFailed(r, "internal")


@unittest.skipUnless(seams_built(), "needs a build with -Dtest_seams=true")
class Precheck(Base):
    async def test_precheck(self):
        def conf(c):
            c["precheck"] = {"entrypoint": ["/rtsandbox-worker", "precheck"],
                             "timeout_ms": 20000}
        d = self.daemon(conf)
        async with PiSandboxRuntime(socket=d.socket) as rt:
            import datetime as dt
            fired = dt.datetime(2026, 12, 6, 7, 0, tzinfo=dt.timezone.utc)
            r = await rt.precheck("p:1", "default",
                                  "wake ${today} ${firedAt}\n", fired,
                                  "Asia/Taipei", "2026-12-06",
                                  {"id": 3, "title": "t"})
            self.assertEqual(r, {"ok": True, "result": {
                "wake": True,
                "context": "2026-12-06 2026-12-06T07:00:00.000Z"}})
            r = await rt.precheck("p:1", "default", "fail no\n", fired,
                                  "UTC", "2026-12-06", {"id": 3, "title": "t"})
            self.assertEqual(r["error"], {"reason": "script_failed",
                                          "message": "no"})
            r = await rt.precheck("p:1", "default", "return 1\n", fired,
                                  "UTC", "2026-12-06",
                                  {"id": 3, "title": "t"},
                                  servers=[{"name": "x", "tools": []}])
            self.assertEqual(r["error"]["reason"], "invalid")
            cancel = asyncio.Event()
            task = asyncio.get_running_loop().create_task(rt.precheck(
                "p:1", "default", "sleep 30000\n", fired, "UTC",
                "2026-12-06", {"id": 3, "title": "t"}, cancel=cancel))
            await asyncio.sleep(1)
            cancel.set()
            r = await task
            self.assertEqual(r["error"]["reason"], "cancelled")


class Research(Base):
    def setUp(self):
        super().setUp()
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                seen.append(self.path)
                ok = self.path == "/notes.txt"
                body = b"plain notes\n" if ok else b"no such page"
                self.send_response(200 if ok else 404)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        self.web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.web.serve_forever, daemon=True).start()
        self.addCleanup(self.web.server_close)
        self.addCleanup(self.web.shutdown)
        self.base = "http://127.0.0.1:%d" % self.web.server_address[1]

    async def test_research_and_attachments(self):
        d = self.daemon()
        queries = []

        async def search(query, ctx):
            queries.append((query, ctx["channel"]))
            return "1. Fastnet Rock - 54 m"
        worker = SandboxResearchWorker(socket=d.socket, search=search)
        self.addAsyncCleanup(worker.close)
        r = await worker.run("r:1", 'height? [[tool:web_search {"query": '
                             '"fastnet"}]] [[tool:fetch_content {"url": '
                             '"%s/notes.txt"}]]' % self.base, AUTHOR)
        self.assertIs(r["ok"], True, r)
        self.assertIn("Fastnet Rock - 54 m", r["report"])
        self.assertIn("plain notes", r["report"])
        self.assertEqual(queries, [("fastnet", "r:1")])
        r = await worker.run("r:1", "  ", AUTHOR)
        self.assertEqual(r["error"]["reason"], "invalid")
        rt = worker.runtime
        res = await rt.fetch_attachments(
            "a:1", "m1", [{"url": self.base + "/notes.txt",
                           "name": "notes.txt"}],
            reference=[{"url": self.base + "/missing", "name": "g"}])
        self.assertEqual(res["saved"], [{"index": 0, "reference": False,
                                         "name": "notes.txt",
                                         "file": "m1-0-notes.txt",
                                         "size": 12}])
        self.assertIn("404", res["failed"][0]["reason"])
        path = os.path.join((await rt.paths("a:1"))["attachments"],
                            "m1-0-notes.txt")
        with open(path) as f:
            self.assertEqual(f.read(), "plain notes\n")
        with self.assertRaises(RtsandboxRpcError) as e:
            await rt.fetch_attachments("a:1", "bad/id", [])
        self.assertEqual(e.exception.code, -32602)


class FakeControl:
    """The daemon's side of the control socket, as far as CompactionHook
    needs it: it answers initialize (refusing the hooks in refuse, as an
    older rtsandboxd refuses one it does not know) and asks the client's
    hooks with ids of its own kind."""

    def __init__(self, refuse=()):
        self.dir = tempfile.mkdtemp(prefix="rtpy-fake-")
        self.socket = os.path.join(self.dir, "control.sock")
        self.refuse = refuse
        self.inits = []
        self.writer = None
        self.connected = asyncio.Event()
        self.waiting = {}
        self.next = 1
        self.server = None

    async def start(self):
        self.server = await asyncio.start_unix_server(self._serve,
                                                      self.socket)

    async def _serve(self, reader, writer):
        while True:
            line = await reader.readline()
            if not line:
                return
            m = json.loads(line)
            if m.get("method") == "initialize":
                self.inits.append(m["params"])
                bad = [h for h in m["params"]["hooks"] if h in self.refuse]
                if bad:
                    self._send(writer, {"jsonrpc": "2.0", "id": m["id"],
                                        "error": {
                                            "code": -32602,
                                            "message": "Invalid params: "
                                            "unknown hook %s; known: "
                                            "tool.call" % bad[0]}})
                    continue
                self._send(writer, {"jsonrpc": "2.0", "id": m["id"],
                                    "result": {"version": "fake"}})
                self.writer = writer
                self.connected.set()
            elif "method" not in m and m.get("id") in self.waiting:
                self.waiting.pop(m["id"]).set_result(m)

    @staticmethod
    def _send(writer, msg):
        writer.write(json.dumps(msg).encode() + b"\n")

    async def ask(self, method, params):
        """The client's answer to the hook: {"result"} or {"error"}."""
        await self.connected.wait()
        rid = "rtsandbox-%d" % self.next
        self.next += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[rid] = fut
        self._send(self.writer, {"jsonrpc": "2.0", "id": rid,
                                 "method": method, "params": params})
        return await asyncio.wait_for(fut, 10)

    async def close(self):
        if self.writer is not None:
            self.writer.close()
        self.server.close()
        await self.server.wait_closed()
        shutil.rmtree(self.dir, ignore_errors=True)


def compact_request(**over):
    r = {"reason": "threshold", "tokensBefore": 150000,
         "firstKeptEntryId": "e42", "isSplitTurn": False,
         "messagesToSummarize": [{"role": "user", "content": "hello"}],
         "turnPrefixMessages": [],
         "keptMessages": [{"role": "assistant", "content": "hi"}],
         "readFiles": ["/workspace/a"], "modifiedFiles": []}
    r.update(over)
    return r


QUIET = logging.getLogger("rtpy-compaction-tests")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False

COMPACT_CONTEXT = {"channel": "discord:c1", "profile": "p",
                   "speaker": {"id": "u1", "name": "Ann"}, "turnId": "t1",
                   "engine": "host-compactor"}


def compact_params(**over):
    p = {"request": compact_request(), "context": dict(COMPACT_CONTEXT),
         "timeoutMs": 5000}
    p.update(over)
    return p


class CompactionHook(unittest.IsolatedAsyncioTestCase):
    async def served(self, compactor=None, refuse=()):
        fake = FakeControl(refuse)
        await fake.start()
        self.addAsyncCleanup(fake.close)
        rt = PiSandboxRuntime(socket=fake.socket, compactor=compactor,
                              reconnect=(0.01, 0.05), logger=QUIET)
        self.addAsyncCleanup(rt.close)
        await rt.connect()
        return fake

    async def test_declared_only_with_a_compactor(self):
        fake = await self.served()
        self.assertNotIn("compaction.compact", fake.inits[0]["hooks"])
        fake = await self.served(lambda r, c, t: None)
        self.assertIn("compaction.compact", fake.inits[0]["hooks"])
        # a daemon that lacks it: initialize again without it
        old = await self.served(lambda r, c, t: None,
                                refuse=("compaction.compact",))
        self.assertEqual(len(old.inits), 2)
        self.assertIn("compaction.compact", old.inits[0]["hooks"])
        self.assertNotIn("compaction.compact", old.inits[1]["hooks"])

    async def test_answers_declines_and_fails(self):
        calls = []
        state = {"answer": None}

        async def compactor(request, context, timeout_ms):
            calls.append((request, {k: v for k, v in context.items()
                                    if k != "done"}, timeout_ms))
            if isinstance(state["answer"], Exception):
                raise state["answer"]
            return state["answer"]
        fake = await self.served(compactor)
        r = await fake.ask("compaction.compact", compact_params())
        self.assertIn("result", r)
        self.assertIsNone(r["result"])
        self.assertEqual(calls, [(compact_request(), COMPACT_CONTEXT, 5000)])
        state["answer"] = {"summary": "S", "firstKeptEntryId": "e42",
                           "tokensBefore": 150000,
                           "estimatedTokensAfter": 900,
                           "details": {"a": 1}, "extra": "dropped"}
        r = await fake.ask("compaction.compact", compact_params())
        self.assertEqual(r["result"], {
            "summary": "S", "firstKeptEntryId": "e42",
            "tokensBefore": 150000, "estimatedTokensAfter": 900,
            "details": {"a": 1}})
        state["answer"] = RuntimeError("no summary today")
        r = await fake.ask("compaction.compact", compact_params())
        self.assertEqual(r["error"]["message"], "no summary today")
        for bad in ({"summary": "", "firstKeptEntryId": "e42",
                     "tokensBefore": 1},
                    {"summary": "S", "firstKeptEntryId": "x",
                     "tokensBefore": 1},
                    {"summary": "S", "firstKeptEntryId": "e42",
                     "tokensBefore": -1},
                    {"summary": "S", "firstKeptEntryId": "e42",
                     "tokensBefore": True},
                    {"summary": "S", "firstKeptEntryId": "e42",
                     "tokensBefore": 1, "details": ["x"]},
                    "summary"):
            with self.subTest(bad=bad):
                state["answer"] = bad
                r = await fake.ask("compaction.compact", compact_params())
                self.assertEqual(r["error"]["code"], -32000, r)
                self.assertIn("the compactor's result is invalid",
                              r["error"]["message"])
        r = await fake.ask("compaction.compact", compact_params(
            request=compact_request(reason="bored")))
        self.assertEqual(r["error"]["code"], -32602)

    async def test_timeout_ms_bounds_both_kinds(self):
        cancelled = asyncio.Event()

        async def slow(request, context, timeout_ms):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
        fake = await self.served(slow)
        t0 = time.monotonic()
        r = await fake.ask("compaction.compact",
                           compact_params(timeoutMs=200))
        self.assertGreaterEqual(time.monotonic() - t0, 0.19)
        self.assertEqual(r["error"]["message"],
                         "the compactor took over 200 ms")
        await asyncio.wait_for(cancelled.wait(), 5)
        # a plain function runs in the executor, the loop free meanwhile
        release = threading.Event()

        def blocking(request, context, timeout_ms):
            release.wait(10)
            return {"summary": "late", "firstKeptEntryId": "e42",
                    "tokensBefore": 1}
        fake = await self.served(blocking)
        t0 = time.monotonic()
        r = await fake.ask("compaction.compact",
                           compact_params(timeoutMs=200))
        release.set()
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(r["error"]["message"],
                         "the compactor took over 200 ms")
        fake = await self.served(
            lambda request, context, timeout_ms: {
                "summary": "quick", "firstKeptEntryId": "e42",
                "tokensBefore": 2})
        r = await fake.ask("compaction.compact", compact_params())
        self.assertEqual(r["result"]["summary"], "quick")


if __name__ == "__main__":
    unittest.main(verbosity=2)
