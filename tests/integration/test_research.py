"""research.run and attachments.fetch (DESIGN.md 9, PROTOCOL.md 8) against
the real rtsandboxd, run as an unprivileged user: the research job is a real
rtsandbox-research process, its model calls reach the fake upstream of
tests/fixtures over HTTPS through egress, and its fetches and the attachment
downloads go through egress's controlled fetch to a web server on loopback.

Loopback counts as public only through the test seam of a build configured
with -Dtest_seams=true (the configuration's "test" object); without it these
tests skip, and the unit suites show that a release build does not know the
field.

The fake model's rules (tests/fixtures/fake_upstream.py): [[tool:NAME {json}]]
in the last user text becomes a tool_use block; after tool results it answers
"done: <the result texts>", which becomes the job's report."""

import base64
import http.server
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import rtsb  # noqa: E402
from rtsb import Client, Daemon, RpcError, wait_until  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

MIB = 1024 * 1024
AUTHOR = {"id": "u1", "name": "Ann"}
PAGE = (b"<html><head><title>Lighthouse facts</title>"
        b"<script>var secret = 'not text';</script>"
        b"<style>p { color: red }</style></head>"
        b"<body><h1>Lighthouses</h1><p>The Fastnet light is "
        b"<b>49 m</b> tall &amp; made of granite.</p></body></html>")


def seams_built():
    try:
        with open(os.path.join(rtsb.BUILD, "buildconf.h")) as f:
            return "#define RTSANDBOX_TEST_SEAMS 1" in f.read()
    except OSError:
        return False


SKIP = None
if not seams_built():
    SKIP = "needs a build with -Dtest_seams=true"
elif shutil.which("openssl") is None:
    SKIP = "openssl is needed for the fake upstream's test CA"

FU = None
WEB = None
_certdir = None


class Web:
    """A plain HTTP server on 127.0.0.1 with fixed routes; it records the
    paths asked for."""

    def __init__(self):
        self.seen = []
        self.routes = {}
        web = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                web.seen.append(self.path)
                route = web.routes.get(self.path.split("?")[0])
                if route is None:
                    status, ctype, body = 404, "text/plain", b"no such page"
                else:
                    status, ctype, body = route
                    if callable(body):
                        body = body()
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def setUpModule():
    global FU, WEB, _certdir
    if SKIP is not None:
        raise unittest.SkipTest(SKIP)
    _certdir = tempfile.mkdtemp(prefix="rtsb-certs-", dir="/tmp")
    os.chmod(_certdir, 0o755)
    FU = FakeUpstream(os.path.join(_certdir, "certs"))
    FU.start()
    WEB = Web()
    WEB.routes["/page.html"] = (200, "text/html; charset=utf-8", PAGE)
    WEB.routes["/notes.txt"] = (200, "text/plain", b"plain notes\n")
    WEB.routes["/a.bin"] = (200, "application/octet-stream",
                            bytes(range(256)) * 4)
    WEB.routes["/big"] = (200, "application/octet-stream",
                          lambda: b"x" * (20 * MIB))


def tearDownModule():
    if FU is not None:
        FU.stop()
    if WEB is not None:
        WEB.stop()
    if _certdir is not None:
        shutil.rmtree(_certdir, ignore_errors=True)
    rtsb.docker_cleanup()


def model_requests():
    return [r for r in FU.requests() if r["path"] == "/v1/messages"]


class Base(unittest.TestCase):
    def setUp(self):
        FU.reset()
        WEB.seen.clear()

    def daemon(self, conf=None):
        def config(c):
            c["upstream"]["url"] = FU.url
            c["upstream"]["ca_file"] = FU.ca_file
            c["test"] = {"loopback_public": True}
            if conf:
                conf(c)
        d = Daemon(config=config)
        self.addCleanup(d.cleanup)
        self.addCleanup(d.stop)
        d.start()
        return d

    def client(self, d, hooks=()):
        c = Client(d.socket, hooks=hooks)
        c.sock.settimeout(120)
        self.addCleanup(c.close)
        return c

    def research(self, c, task, search=None, **extra):
        """research.run, answering search.query with search(params);
        returns (result or None, error or None, the queries seen)."""
        params = {"channel": "r:1", "author": dict(AUTHOR), "task": task}
        params.update(extra)
        rid = c.request("research.run", params)
        queries = []
        while True:
            m = c.read_message()
            if m.get("method") == "search.query":
                queries.append(m["params"])
                ans = {"jsonrpc": "2.0", "id": m["id"],
                       "result": search(m["params"])}
                c.send_raw(json.dumps(ans).encode() + b"\n")
                continue
            if m.get("id") != rid:
                c.pending.append(m)
                continue
            return m.get("result"), m.get("error"), queries

    def research_jobs(self, d):
        with Client(d.socket) as c:
            return [p for p in c.call("daemon.stats")["processes"]
                    if p["role"] == "research"]


class ResearchTest(Base):
    def test_report_from_fetch_search_and_an_unknown_tool(self):
        d = self.daemon()
        c = self.client(d, hooks=("search.query",))
        task = ('Find the height. [[tool:fetch_content {"url": "%s"}]] '
                '[[tool:web_search {"query": "fastnet height"}]] '
                '[[tool:run_shell {"cmd": "id"}]]' % WEB.url(
                    "/page.html#frag"))
        res, err, queries = self.research(
            c, task, lambda p: {"text": "1. Fastnet Rock - 54 m"})
        self.assertIsNone(err)
        self.assertTrue(res["ok"], res)
        report = res["report"]
        self.assertIn("49 m", report)
        self.assertIn("granite", report)
        self.assertNotIn("not text", report)	# the script is dropped
        self.assertNotIn("color: red", report)
        self.assertIn("1. Fastnet Rock - 54 m", report)
        self.assertIn("Tool run_shell not found", report)
        self.assertEqual(queries, [{"channel": "r:1",
                                    "query": "fastnet height"}])
        # the fragment never leaves the host
        self.assertEqual(WEB.seen, ["/page.html"])
        reqs = model_requests()
        self.assertEqual(len(reqs), 2)
        body = reqs[0]["json"]
        self.assertEqual(reqs[0]["token"], "sk-test-real-token")
        self.assertEqual(body["model"], "claude-test")
        self.assertEqual(sorted(t["name"] for t in body["tools"]),
                         ["fetch_content", "web_search"])
        self.assertIn("source", json.dumps(body["system"]).lower())
        # the job's process is gone once it reported
        self.assertTrue(wait_until(lambda: not self.research_jobs(d), 10))

    def test_web_search_without_the_hook(self):
        d = self.daemon()
        c = self.client(d)
        res, err, _ = self.research(
            c, '[[tool:web_search {"query": "anything"}]]')
        self.assertTrue(res["ok"], res)
        self.assertIn("web_search is not available", res["report"])

    def test_a_non_public_address_is_refused_before_connecting(self):
        d = self.daemon()
        c = self.client(d)
        for url, why in (
                ("http://10.0.0.1/", "not public"),
                ("http://[::1]:%d/" % WEB.port, "not public"),
                ("http://0x7f000001:%d/" % (WEB.port + 1), "refused"),
                ("http://user:pw@127.0.0.1:%d/" % WEB.port, "user name"),
                ("file:///etc/passwd", "scheme")):
            FU.reset()
            res, err, _ = self.research(
                c, '[[tool:fetch_content {"url": "%s"}]]' % url)
            self.assertTrue(res["ok"], res)
            self.assertIn(why, res["report"], url)
        self.assertEqual(WEB.seen, [])

    def test_the_model_service_failing_fails_the_job(self):
        d = self.daemon()
        c = self.client(d)
        FU.script({"kind": "status", "status": 429, "match": "/v1/messages",
                   "headers": {"retry-after": "3"}})
        res, err, _ = self.research(c, "what is the time")
        self.assertIs(res["ok"], False, res)
        self.assertEqual(res["reason"], "failed")
        self.assertIn("429", res["message"])

    def test_inputs_are_checked(self):
        d = self.daemon()
        c = self.client(d)
        for params, why in (
                ({"task": "x" * 4001}, "task"),
                ({"task": "   \n "}, "task"),
                ({"task": 7}, "task"),
                ({"thinking": "huge"}, "thinking"),
                ({"author": {"id": "u1"}}, "author"),
                ({"channel": ""}, "channel")):
            p = {"channel": "r:1", "author": dict(AUTHOR), "task": "t"}
            p.update(params)
            res = c.call("research.run", p)
            self.assertEqual(res["reason"], "invalid", (params, res))
            self.assertIn(why, res["message"])
        with self.assertRaises(RpcError) as e:
            c.call("research.run", {"channel": "r:1", "author": AUTHOR,
                                    "task": "t", "profile": "default"})
        self.assertEqual(e.exception.code, -32602)
        # 4 000 chars after trimming are accepted
        res, err, _ = self.research(c, "  " + "y" * 4000 + "\n")
        self.assertTrue(res["ok"], res)
        self.assertEqual(model_requests()[0]["json"]["messages"][0]
                         ["content"].count("y"), 4000)
        self.assertEqual(WEB.seen, [])

    def test_jobs_per_channel_deadline_and_cancel(self):
        d = self.daemon(lambda c: c.update(
            research={"max_jobs": 1, "deadline_ms": 3000}))
        c = self.client(d)
        FU.script({"kind": "stall", "seconds": 30, "before_headers": True,
                   "match": "/v1/messages", "repeat": 3})
        slow = c.request("research.run", {"channel": "r:1",
                                          "author": AUTHOR, "task": "slow"})
        FU.wait_for(1, path="/v1/messages")
        res = c.call("research.run", {"channel": "r:1", "author": AUTHOR,
                                      "task": "second"})
        self.assertEqual(res["reason"], "busy", res)
        # another channel has its own count
        other = c.request("research.run", {"channel": "r:2",
                                           "author": AUTHOR, "task": "x"})
        FU.wait_for(2, path="/v1/messages")
        self.assertEqual(c.call("research.cancel", {"channel": "r:2"}),
                         {"cancelled": 1})
        r2 = c.wait(other)
        self.assertEqual(r2["reason"], "cancelled", r2)
        t0 = time.monotonic()
        r1 = c.wait(slow)
        self.assertEqual(r1, {"ok": False, "reason": "timeout",
                              "message": "the worker ran out of time"})
        self.assertLess(time.monotonic() - t0, 10)
        self.assertTrue(wait_until(lambda: not self.research_jobs(d), 10))

    def test_a_client_that_leaves_cancels_its_job(self):
        d = self.daemon()
        c = Client(d.socket)
        FU.script({"kind": "stall", "seconds": 30, "before_headers": True,
                   "match": "/v1/messages"})
        c.request("research.run", {"channel": "r:1", "author": AUTHOR,
                                   "task": "slow"})
        FU.wait_for(1, path="/v1/messages")
        self.assertEqual(len(self.research_jobs(d)), 1)
        c.close()
        self.assertTrue(wait_until(lambda: not self.research_jobs(d), 10))

    def test_cancel_request_stops_the_job(self):
        d = self.daemon()
        c = self.client(d)
        FU.script({"kind": "stall", "seconds": 30, "before_headers": True,
                   "match": "/v1/messages"})
        rid = c.request("research.run", {"channel": "r:1", "author": AUTHOR,
                                         "task": "slow"})
        FU.wait_for(1, path="/v1/messages")
        self.assertEqual(len(self.research_jobs(d)), 1)
        c.request("$/cancelRequest", {"id": rid})
        with self.assertRaises(RpcError) as e:
            c.wait(rid)
        self.assertEqual(e.exception.code, -32800)
        self.assertTrue(wait_until(lambda: not self.research_jobs(d), 10))
        # the channel may start another at once
        res, err, _ = self.research(c, "again")
        self.assertTrue(res["ok"], res)

    def test_a_job_asked_for_while_egress_dies(self):
        """Egress's pipe is closed (the process killed) but the supervisor
        has not yet reaped it when a job is asked for: the job's pipe waits
        for the egress started next, and the supervisor sends nothing to the
        one it let go (it crashed doing so).  The supervisor is stopped
        while egress dies and the request arrives; whether it then reads
        the pipe's end or the request first is epoll's order, so this
        repeats until the log shows the first (the job waited), each round
        answered and the daemon alive.  When it reads the request first,
        the job is attached to the egress that is dying and fails."""
        d = self.daemon()
        c = self.client(d)
        for n in range(10):
            egress = wait_until(lambda: [
                p["pid"] for p in c.call("daemon.stats")["processes"]
                if p["role"] == "egress" and p["state"] == "ready"], 10)
            self.assertTrue(egress, "egress did not come back")
            egress = egress[0]
            before = d.read_log().count("egress is not ready yet")
            os.kill(d.proc.pid, signal.SIGSTOP)
            try:
                os.kill(egress, signal.SIGKILL)
                # a zombie: its descriptors, the pipe among them, are closed
                self.assertTrue(wait_until(
                    lambda: not rtsb.pid_alive(egress), 5))
                rid = c.request("research.run", {
                    "channel": "r:1", "author": AUTHOR,
                    "task": "during %d" % n})
                time.sleep(0.1)
            finally:
                os.kill(d.proc.pid, signal.SIGCONT)
            res = c.wait(rid)
            log = d.read_log()
            self.assertIsNone(d.proc.poll(), log[-3000:])
            if log.count("egress is not ready yet") > before:
                self.assertTrue(res["ok"], res)
                break
            self.assertEqual(res, {"ok": False, "reason": "failed",
                                   "message": "the connection to egress "
                                   "was lost"})
        else:
            self.fail("the pipe's end was never read first")
        # and the next job, on the egress started last
        res, err, _ = self.research(c, "after")
        self.assertTrue(res["ok"], res)

    def test_configuration_bounds(self):
        for field, value in (("max_jobs", 0), ("max_jobs", 11),
                             ("deadline_ms", 999),
                             ("deadline_ms", 1200001)):
            d = Daemon(config=lambda c: c.update(research={field: value}))
            self.addCleanup(d.cleanup)
            r = d.start(wait=False)
            r.proc.wait(10)
            self.assertNotEqual(r.proc.returncode, 0)
            self.assertIn("research.%s" % field, d.read_log())


class AttachTest(Base):
    def setUp(self):
        super().setUp()
        self.d = self.daemon()
        self.c = self.client(self.d)
        self.dir = self.c.call("channel.paths",
                               {"channel": "a:1"})["attachments"]

    def fetch(self, attachments, mid="m1", **extra):
        p = {"channel": "a:1", "messageId": mid, "attachments": attachments}
        p.update(extra)
        return self.c.call("attachments.fetch", p)

    def test_saved_with_safe_names(self):
        res = self.fetch([{"url": WEB.url("/notes.txt"),
                           "name": "../../e\u0301t\u00e9/notes.txt"},
                          {"url": WEB.url("/a.bin"), "name": "..hidden",
                           "size": 1024, "contentType": "x/y"},
                          {"url": WEB.url("/notes.txt"), "name": ""}],
                         reference={"attachments": [
                             {"url": WEB.url("/notes.txt"),
                              "name": "r\u00e9f.txt"}]})
        self.assertEqual(res["failed"], [])
        files = [e["file"] for e in res["saved"]]
        self.assertEqual(files, ["m1-0-__.._\u00e9t\u00e9_notes.txt",
                                 "m1-1-_hidden", "m1-2-file",
                                 "m1-ref-0-r\u00e9f.txt"])
        with open(os.path.join(self.dir, files[1]), "rb") as f:
            self.assertEqual(f.read(), bytes(range(256)) * 4)
        self.assertEqual(res["saved"][1]["size"], 1024)
        # the same names again: the write is exclusive
        res = self.fetch([{"url": WEB.url("/notes.txt"),
                           "name": "../../e\u0301t\u00e9/notes.txt"}])
        self.assertEqual(res["saved"], [])
        self.assertEqual(len(res["failed"]), 1)

    def test_failures_with_reasons(self):
        res = self.fetch([
            {"url": WEB.url("/missing"), "name": "a"},
            {"url": "http://10.1.2.3/x", "name": "b"},
            {"url": WEB.url("/notes.txt"), "name": "c",
             "size": 25 * MIB + 1},
            {"url": WEB.url("/notes.txt"), "name": "d", "size": 25 * MIB},
        ])
        why = [e["reason"] for e in res["failed"]]
        self.assertEqual([e["index"] for e in res["failed"]], [0, 1, 2])
        self.assertIn("404", why[0])
        self.assertIn("public", why[1])
        self.assertIn("declared size", why[2])
        # the declared 25 MiB is within the bound: downloaded (12 bytes)
        self.assertEqual([e["file"] for e in res["saved"]], ["m1-3-d"])
        self.assertEqual(WEB.seen, ["/missing", "/notes.txt"])

    def test_fifty_mib_in_all(self):
        res = self.fetch([
            {"url": WEB.url("/big"), "name": "one"},
            {"url": WEB.url("/big"), "name": "two"},
            {"url": WEB.url("/big"), "name": "three", "size": 20 * MIB},
            {"url": WEB.url("/big"), "name": "four"}])
        self.assertEqual([e["file"] for e in res["saved"]],
                         ["m1-0-one", "m1-1-two"])
        self.assertEqual([e["index"] for e in res["failed"]], [2, 3])
        self.assertIn("declared size", res["failed"][0]["reason"])
        # the fourth was cut at the 10 MiB left
        self.assertEqual(WEB.seen, ["/big", "/big", "/big"])

    def test_bounds_of_the_request(self):
        one = {"url": WEB.url("/notes.txt"), "name": "n"}
        for params in ({"attachments": [one] * 21},
                       {"attachments": [one] * 11,
                        "reference": {"attachments": [one] * 10}},
                       {"messageId": "m" * 101, "attachments": [one]},
                       {"messageId": "a/b", "attachments": [one]},
                       {"attachments": [dict(one, size=-1)]},
                       {"attachments": [dict(one, extra=1)]},
                       {"attachments": [dict(one, url="")]},
                       {"attachments": "x"}):
            p = {"channel": "a:1", "messageId": "m1"}
            p.update(params)
            with self.assertRaises(RpcError) as e:
                self.c.call("attachments.fetch", p)
            self.assertEqual(e.exception.code, -32602, params)
        # 20 in all and a 100-char message id are accepted
        res = self.fetch([one] * 10, mid="m" * 100,
                         reference={"attachments": [one] * 10})
        self.assertEqual(len(res["saved"]), 20, res)
        self.assertEqual(WEB.seen, ["/notes.txt"] * 20)


class FullDisk(Base):
    """A state directory on a file system that fills up (RTSB_SMALL_FS, a
    small tmpfs scripts/test mounts for the service user): an attachment
    that does not fit fails with the reason, nothing already there is lost
    or truncated, no partial file is left, and it works again once there
    is room."""

    def setUp(self):
        super().setUp()
        small = os.environ.get("RTSB_SMALL_FS")
        if not small or not os.path.isdir(small):
            self.skipTest("no small file system (RTSB_SMALL_FS)")
        self.small = small
        state = tempfile.mkdtemp(prefix="state-", dir=small)
        os.chmod(state, 0o700)
        self.addCleanup(shutil.rmtree, state, True)
        self.filler = os.path.join(small, "filler-%d" % os.getpid())
        self.addCleanup(self.free)
        self.d = self.daemon(lambda c: c.update(state_dir=state))
        self.c = self.client(self.d)
        self.dir = self.c.call("channel.paths",
                               {"channel": "disk:1"})["attachments"]

    def free(self):
        if os.path.exists(self.filler):
            os.unlink(self.filler)

    def fill(self, leave):
        """Fill the file system but for about leave bytes."""
        self.free()
        st = os.statvfs(self.small)
        room = st.f_bavail * st.f_frsize - leave
        with open(self.filler, "wb") as f:
            while room > 0:
                n = min(room, MIB)
                f.write(b"\0" * n)
                room -= n

    def fetch(self, mid, path, name):
        return self.c.call("attachments.fetch", {
            "channel": "disk:1", "messageId": mid,
            "attachments": [{"url": WEB.url(path), "name": name}]})

    def test_attachment_that_does_not_fit(self):
        res = self.fetch("m1", "/notes.txt", "notes.txt")
        self.assertEqual([e["file"] for e in res["saved"]],
                         ["m1-0-notes.txt"])
        self.fill(256 * 1024)
        res = self.fetch("m2", "/big", "big.bin")
        self.assertEqual(res["saved"], [])
        self.assertIn("No space left on device", res["failed"][0]["reason"])
        # nothing half-written, nothing lost
        self.assertEqual(sorted(os.listdir(self.dir)), ["m1-0-notes.txt"])
        with open(os.path.join(self.dir, "m1-0-notes.txt"), "rb") as f:
            self.assertEqual(f.read(), b"plain notes\n")
        # the channel works again once there is room
        self.free()
        res = self.fetch("m3", "/big", "big.bin")
        self.assertEqual([e["file"] for e in res["saved"]],
                         ["m3-0-big.bin"])
        self.assertEqual(os.path.getsize(os.path.join(self.dir,
                                                      "m3-0-big.bin")),
                         res["saved"][0]["size"])


class FetchGetTest(Base):
    """fetch.get and fetch.check: a bot's safeFetch and assertPublicUrl,
    served by egress's controlled fetch (rtsandbox-protocol(7))."""

    def setUp(self):
        super().setUp()
        self.d = self.daemon()
        self.c = self.client(self.d)

    def get(self, path, **extra):
        p = {"url": WEB.url(path)}
        p.update(extra)
        return self.c.call("fetch.get", p)

    def test_a_page(self):
        r = self.get("/page.html")
        self.assertTrue(r["ok"], r)
        self.assertEqual(r["status"], 200)
        self.assertEqual(r["url"], WEB.url("/page.html"))
        self.assertEqual(r["contentType"], "text/html; charset=utf-8")
        self.assertEqual(r["contentLength"], len(PAGE))
        self.assertEqual(base64.b64decode(r["data"]), PAGE)
        r = self.get("/nothing")
        self.assertTrue(r["ok"], r)
        self.assertEqual(r["status"], 404)

    def test_max_bytes_at_the_limit_and_past(self):
        n = len(b"plain notes\n")
        r = self.get("/notes.txt", maxBytes=n)
        self.assertTrue(r["ok"], r)
        r = self.get("/notes.txt", maxBytes=n - 1)
        self.assertFalse(r["ok"], r)
        self.assertEqual(r["kind"], "too_large", r)

    def test_bounds_of_the_parameters(self):
        ok = [{"timeoutMs": 1}, {"timeoutMs": 120000}, {"maxBytes": 1},
              {"maxBytes": 32 * MIB}, {"maxRedirects": 0},
              {"maxRedirects": 10}, {"followRedirects": False}]
        for extra in ok:
            r = self.get("/notes.txt", **extra)
            self.assertIn("ok", r, extra)
        bad = [{"timeoutMs": 0}, {"timeoutMs": 120001}, {"maxBytes": 0},
               {"maxBytes": 32 * MIB + 1}, {"maxRedirects": -1},
               {"maxRedirects": 11}, {"maxRedirects": 1.5},
               {"followRedirects": "no"}, {"headers": {}}]
        for extra in bad:
            with self.assertRaises(RpcError, msg=extra) as cm:
                self.get("/notes.txt", **extra)
            self.assertEqual(cm.exception.code, -32602, extra)
        for p in ({}, {"url": ""}, {"url": 5},
                  {"url": "http://x/" + "a" * 8192}):
            with self.assertRaises(RpcError, msg=p):
                self.c.call("fetch.get", p)

    def test_private_and_bad_urls_refused(self):
        for url in ("http://10.0.0.1/", "http://192.168.1.1/x",
                    "ftp://example.org/", "http://u:p@127.0.0.1/"):
            r = self.c.call("fetch.get", {"url": url})
            self.assertFalse(r["ok"], (url, r))
            self.assertEqual(r["kind"], "unsafe", (url, r))

    def test_check_connects_nowhere(self):
        r = self.c.call("fetch.check", {"url": WEB.url("/page.html")})
        self.assertEqual(r, {"ok": True, "url": WEB.url("/page.html")})
        self.assertEqual(WEB.seen, [])
        r = self.c.call("fetch.check", {"url": "http://10.1.2.3/"})
        self.assertFalse(r["ok"], r)
        self.assertEqual(r["kind"], "unsafe", r)
        with self.assertRaises(RpcError):
            self.c.call("fetch.check", {"url": WEB.url("/"),
                                        "maxBytes": 1})


if __name__ == "__main__":
    unittest.main(verbosity=2)
