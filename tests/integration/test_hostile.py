"""A broker and a research job taken over (DESIGN.md 1, invariants 6 to
10), against the real rtsandboxd, egress, file guard and Docker.

rtsandboxd runs with a helper directory (-x) whose rtsandbox-broker and
rtsandbox-research are tests/tools/hostile.c: for a channel "hostile:<case>"
it plays attack <case> on the pipes the real broker would hold, sending
egress and the supervisor each frame a taken-over broker could (another
profile's MCP server, a refused MCP method or tool, model calls with no turn,
another model, max_tokens or thinking over the ceiling, more calls than the
budget or in flight, oversize frames, a descriptor too many, garbage, a host
tool not configured, tool call ids twice, a result over its bounds).  For
every other channel it execs the real helper, so other channels work.

For each attack: the fake upstream and its MCP servers see nothing that the
policy refuses, the control client's hooks see nothing, egress and the
supervisor stay up (same pids) and count the violation under its rule in
daemon.stats, and a turn on another channel, with the real broker and the
reference worker, still succeeds."""

import os
import shutil
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
from rtsb import Client, Daemon, wait_until  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

WORKER_IMAGE = "rtsandbox-worker:latest"
HOSTILE = os.environ.get("RTSANDBOX_HOSTILE", os.path.join(
    rtsb.BUILD, "tests", "rtsandbox-hostile"))
PREFIX = "rtsbh%d" % os.getpid()
MCP_TOKEN = "sk-test-mcp-token"
MAX_CALLS = 6


class HookClient(Client):
    """A control client that implements tool.call and records every hook
    call it gets, answering each at once."""

    def __init__(self, path, hold_tools=False):
        super().__init__(path, hooks=("tool.call", "memory.block",
                                      "effort.judge"))
        self.hook_calls = []
        self.progress = []
        self.hold_tools = hold_tools
        self.lock = threading.Lock()

    def call_turn(self, params, timeout=60):
        self.sock.settimeout(timeout)
        rid = self.request("turn.run", params)
        while True:
            m = self.read_message()
            if m.get("id") == rid and "method" not in m:
                if "error" in m:
                    raise AssertionError(m["error"])
                return m["result"]
            if m.get("method") == "turn.progress":
                self.progress.append(m["params"]["phase"])
            if "method" in m and "id" in m:
                with self.lock:
                    self.hook_calls.append(m["method"])
                if m["method"] == "tool.call":
                    # held: the calls stay in flight until the turn ends
                    if self.hold_tools:
                        continue
                    res = {"ok": True, "text": "4"}
                elif m["method"] == "memory.block":
                    res = {"text": ""}
                else:
                    res = {"level": "low"}
                self.reply(m["id"], res)

    def reply(self, rid, result):
        import json
        self.send_raw((json.dumps({"jsonrpc": "2.0", "id": rid,
                                   "result": result}) + "\n").encode())


class Hostile(unittest.TestCase):
    """One daemon with the hostile helpers for every case."""

    @classmethod
    def setUpClass(cls):
        reason = rtsb.docker_skip_reason(WORKER_IMAGE)
        if reason:
            raise unittest.SkipTest(reason)
        if not os.path.exists(HOSTILE):
            raise unittest.SkipTest("no %s (a -Dtest_seams=true build)" %
                                    HOSTILE)
        cls.certdir = tempfile.mkdtemp(prefix="rtsb-certs-", dir="/tmp")
        cls.helpers = tempfile.mkdtemp(prefix="rtsb-hx-", dir="/tmp")
        for role, path in rtsb.HELPERS.items():
            name = os.path.basename(path)
            if role in ("broker", "research"):
                shutil.copy(path, os.path.join(cls.helpers, name + "-real"))
                shutil.copy(HOSTILE, os.path.join(cls.helpers, name))
            else:
                shutil.copy(path, os.path.join(cls.helpers, name))
        cls.fu = FakeUpstream(cls.certdir, default_delay_ms=5)
        cls.fu.start()
        fu = cls.fu

        def conf(c):
            root = os.path.dirname(c["state_dir"])
            mcpcred = os.path.join(root, "mcp-credential")
            with open(mcpcred, "w") as f:
                f.write(MCP_TOKEN + "\n")
            os.chmod(mcpcred, 0o600)
            c["image"] = WORKER_IMAGE
            c["docker"] = {"container_prefix": PREFIX}
            c["upstream"]["url"] = fu.url
            c["upstream"]["ca_file"] = fu.ca_file
            c["mcp"] = {"servers": [
                {"name": "alpha", "url": fu.mcp_url("alpha"),
                 "tools": ["search"]},
                {"name": "beta", "url": fu.mcp_url("beta"),
                 "tools": ["secret"]}],
                "credential_file": mcpcred, "allow_http": False}
            c["profiles"] = {
                "default": {"model": "claude-test", "mcp": ["alpha"]},
                "other": {"model": "other-model", "mcp": ["beta"]}}
            c["tools"] = ["roll_dice"]
            c["timeouts"] = {"start_ms": 20000, "turn_ms": 30000}
            c["budgets"] = {"max_calls": MAX_CALLS}
        # as under systemd: every line carries its priority, the children's
        # too, so that a forged "<2>" would be taken for one
        cls.d = Daemon(config=conf, helper_dir=cls.helpers,
                       env={"JOURNAL_STREAM": "8:12345"})
        try:
            cls.d.start()
            cls.ctl = Client(cls.d.socket)
            cls.ctl.sock.settimeout(60)
            cls.pids = cls.process_pids()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        c = getattr(cls, "ctl", None)
        if c is not None:
            c.close()
        d = getattr(cls, "d", None)
        if d is not None:
            if os.environ.get("RTSB_LOG_TAIL"):
                sys.stderr.write(d.read_log()[
                    -int(os.environ["RTSB_LOG_TAIL"]):])
            try:
                d.stop()
            finally:
                rtsb.remove_containers(PREFIX)
                d.cleanup()
        cls.fu.stop()
        shutil.rmtree(cls.helpers, ignore_errors=True)
        shutil.rmtree(cls.certdir, ignore_errors=True)

    @classmethod
    def process_pids(cls):
        st = cls.ctl.call("daemon.stats")
        return {p["role"]: p.get("pid") for p in st["processes"]
                if p["role"] in ("supervisor", "fsguard", "docker",
                                 "egress")}

    def setUp(self):
        self.fu.reset()
        self.before = self.rules()

    def rules(self):
        return self.ctl.call("daemon.stats")["counters"]["violations_by_rule"]

    def assertCounted(self, rule, n=1):
        """The violation is counted under its rule, and nothing else is."""
        def counted():
            return self.rules()[rule] >= self.before[rule] + n
        self.assertTrue(wait_until(counted, 15), (rule, self.rules()))
        after = self.rules()
        for k, v in after.items():
            if k != rule:
                self.assertEqual(v, self.before[k], (k, after))
        self.assertEqual(self.process_pids(), self.pids)

    def assertUpstreamSaw(self, n=0, path=None, wait=0.5):
        time.sleep(wait)
        reqs = self.fu.requests(path=path)
        self.assertEqual(len(reqs), n, [r["path"] for r in reqs])

    def start(self, case, profile="default"):
        """channel.start, then a knock on the broker's socket: the hostile
        broker attacks with no turn bound."""
        key = "hostile:" + case
        self.assertEqual(self.ctl.call("channel.start", {
            "channel": key, "profile": profile}), {})
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(os.path.join(self.d.config["state_dir"], "hostile_" + case,
                               "run", "broker.sock"))
        s.sendall(b"knock")
        s.close()
        return key

    def turn(self, case, client=None, hold_tools=False):
        """A turn on channel hostile:turn_<case>: the hostile broker attacks
        once the turn is bound."""
        key = "hostile:turn_" + case
        c = client or HookClient(self.d.socket, hold_tools)
        self.addCleanup(c.close)
        params = {"channel": key, "profile": "default",
                  "turnId": "t-" + case, "author": {"id": "u1", "name": "A"},
                  "text": "hello", "images": [], "memory": "",
                  "thinking": "low"}
        return c, c.call_turn(params)

    def assertTurnStopped(self, res, rule):
        self.assertFalse(res["ok"], res)
        self.assertEqual(res["reason"], "worker_failed", res)
        self.assertIn("broke a rule (%s)" % rule, res["message"])

    # -- egress, with no turn bound

    def test_mcp_server_of_another_profile(self):
        self.start("mcp_server")
        self.assertCounted("mcp_server")
        self.assertUpstreamSaw(0)

    def test_mcp_method_outside_the_allow_list(self):
        self.start("mcp_method")
        self.assertCounted("mcp_method")
        self.assertUpstreamSaw(0)

    def test_mcp_tools_call_outside_a_turn(self):
        self.start("mcp_window_call")
        self.assertCounted("mcp_method")
        self.assertUpstreamSaw(0)

    def test_model_call_outside_a_turn(self):
        self.start("no_turn")
        self.assertCounted("no_turn")
        self.assertUpstreamSaw(0)

    def test_model_call_for_a_turn_never_bound(self):
        self.start("stray_turn")
        self.assertCounted("no_turn")
        self.assertUpstreamSaw(0)

    def test_oversize_frame_to_egress(self):
        self.start("oversize")
        self.assertCounted("frame")
        self.assertUpstreamSaw(0)

    def test_descriptor_to_egress(self):
        self.start("descriptor")
        self.assertCounted("frame")
        self.assertUpstreamSaw(0)

    def test_garbage_to_egress(self):
        self.start("garbage")
        self.assertCounted("frame")
        self.assertUpstreamSaw(0)

    def test_oversize_frame_to_supervisor(self):
        self.start("sup_oversize")
        self.assertCounted("frame")

    def test_garbage_to_supervisor(self):
        self.start("sup_garbage")
        self.assertCounted("frame")

    # -- egress, within a bound turn

    def test_mcp_tool_not_allowed(self):
        c, res = self.turn("mcp_tool")
        self.assertTurnStopped(res, "mcp_tool")
        self.assertCounted("mcp_tool")
        self.assertUpstreamSaw(0)
        self.assertEqual(c.hook_calls, [])

    def test_another_model(self):
        c, res = self.turn("model")
        self.assertTurnStopped(res, "model")
        self.assertCounted("model")
        self.assertUpstreamSaw(0)

    def test_max_tokens_over_the_ceiling(self):
        c, res = self.turn("max_tokens")
        self.assertTurnStopped(res, "max_tokens")
        self.assertCounted("max_tokens")
        self.assertUpstreamSaw(0)

    def test_thinking_over_the_ceiling(self):
        c, res = self.turn("thinking")
        self.assertTurnStopped(res, "thinking")
        self.assertCounted("thinking")
        self.assertUpstreamSaw(0)

    def test_effort_over_the_ceiling(self):
        c, res = self.turn("effort")
        self.assertTurnStopped(res, "effort")
        self.assertCounted("effort")
        self.assertUpstreamSaw(0)

    def test_field_the_rebuild_never_sends(self):
        c, res = self.turn("field")
        self.assertTurnStopped(res, "field")
        self.assertCounted("field")
        self.assertUpstreamSaw(0)

    # -- egress: bodies the rebuild never writes, within a bound turn (low)

    def test_adaptive_thinking_without_effort_at_low(self):
        """Adaptive thinking with no effort would think at upstream's
        default, high: at low the rebuild always sets the ceiling's."""
        c, res = self.turn("adaptive")
        self.assertTurnStopped(res, "effort")
        self.assertCounted("effort")
        self.assertUpstreamSaw(0)

    def test_image_of_a_url_source(self):
        """Upstream would fetch the attacker's URL with the credential."""
        c, res = self.turn("url_image")
        self.assertTurnStopped(res, "field")
        self.assertCounted("field")
        self.assertUpstreamSaw(0)

    def test_image_of_a_file_source(self):
        c, res = self.turn("file_source")
        self.assertTurnStopped(res, "field")
        self.assertCounted("field")
        self.assertUpstreamSaw(0)

    def test_server_tool_use_block(self):
        c, res = self.turn("server_tool")
        self.assertTurnStopped(res, "field")
        self.assertCounted("field")
        self.assertUpstreamSaw(0)

    def test_path_of_no_model_route(self):
        c, res = self.turn("kind")
        self.assertTurnStopped(res, "kind")
        self.assertCounted("kind")
        self.assertUpstreamSaw(0)

    def test_more_calls_than_the_budget(self):
        c, res = self.turn("budget")
        self.assertTurnStopped(res, "budget")
        self.assertCounted("budget")
        self.assertUpstreamSaw(MAX_CALLS, path="/v1/messages")

    def test_more_calls_in_flight_than_four(self):
        self.fu.script({"match": "/v1/messages", "kind": "stall",
                        "seconds": 20, "repeat": -1})
        c, res = self.turn("in_flight")
        self.assertTurnStopped(res, "in_flight")
        self.assertCounted("in_flight")
        time.sleep(0.5)
        self.assertLessEqual(len(self.fu.requests()), 4)
        self.fu.reset()

    # -- the supervisor, within a bound turn

    def test_host_tool_not_configured(self):
        c, res = self.turn("host_tool")
        self.assertTurnStopped(res, "host_tool")
        self.assertCounted("host_tool")
        self.assertEqual(c.hook_calls, [])

    def test_tool_call_id_twice(self):
        c, res = self.turn("tool_dup", hold_tools=True)
        self.assertTurnStopped(res, "tool_call")
        self.assertCounted("tool_call")
        self.assertLessEqual(c.hook_calls.count("tool.call"), 1)

    def test_more_tool_calls_in_flight_than_four(self):
        c, res = self.turn("tool_flood", hold_tools=True)
        self.assertTurnStopped(res, "tool_call")
        self.assertCounted("tool_call")
        self.assertLessEqual(c.hook_calls.count("tool.call"), 4)

    def test_more_calls_told_than_the_budget(self):
        """A broker that tells of more calls than the turn's budget is
        stopped, and the client hears of no more than the budget; a turn
        taken three times over is delivered once."""
        c, res = self.turn("events")
        self.assertTurnStopped(res, "budget")
        self.assertCounted("budget")
        self.assertEqual(c.progress.count("model_call"), MAX_CALLS,
                         c.progress)
        self.assertEqual(c.progress.count("delivered"), 1, c.progress)
        self.assertUpstreamSaw(0)

    def test_more_calls_told_in_a_batch_than_the_budget(self):
        """Calls told a batch at a time count one by one: two told alone
        and a batch of five are one past the budget of six, and the client
        hears of six."""
        c, res = self.turn("events_batch")
        self.assertTurnStopped(res, "budget")
        self.assertCounted("budget")
        self.assertEqual(c.progress.count("model_call"), MAX_CALLS,
                         c.progress)
        self.assertUpstreamSaw(0)

    def test_batch_of_the_largest_count(self):
        """A batch of 1 000 calls, the most one may tell, is read and
        counted: past the budget of six, the turn is stopped under budget
        and the client hears of six.  The batch is of MCP calls, the other
        kind a count may be of; the client hears of every call as
        model_call progress."""
        c, res = self.turn("events_count_max")
        self.assertTurnStopped(res, "budget")
        self.assertCounted("budget")
        self.assertEqual(c.progress.count("model_call"), MAX_CALLS,
                         c.progress)

    def test_batch_counts_out_of_bounds(self):
        """A batch is of 2 to 1 000 calls (a single call has no count) and
        of model or MCP calls only: any other count is a broken frame."""
        cases = ("events_count_one", "events_count_huge", "events_count_kind")
        for case in cases:
            with self.subTest(case=case):
                c, res = self.turn(case)
                self.assertTurnStopped(res, "frame")
                self.assertEqual(c.progress.count("model_call"), 0,
                                 c.progress)
        self.assertCounted("frame", len(cases))

    def test_more_tool_calls_than_the_budget(self):
        """Host tool calls count in the same budget as the calls egress
        sees: after three model calls, the fourth tool call is one too
        many, and the client's tool.call hook is never asked for it."""
        c, res = self.turn("tool_budget")
        self.assertTurnStopped(res, "budget")
        self.assertCounted("budget")
        self.assertEqual(c.hook_calls.count("tool.call"), MAX_CALLS - 3,
                         c.hook_calls)

    def test_tool_input_not_an_object(self):
        c, res = self.turn("tool_input")
        self.assertTurnStopped(res, "tool_call")
        self.assertCounted("tool_call")
        self.assertEqual(c.hook_calls, [])

    def test_result_text_over_100000_chars(self):
        c, res = self.turn("result_text")
        self.assertTurnStopped(res, "result")
        self.assertCounted("result")

    def test_result_error_over_10000_chars(self):
        c, res = self.turn("result_error")
        self.assertTurnStopped(res, "result")
        self.assertCounted("result")

    def test_result_file_name_not_safe(self):
        c, res = self.turn("result_files")
        self.assertTurnStopped(res, "result")
        self.assertCounted("result")

    # -- a research job taken over

    def research(self, case):
        r = self.ctl.call("research.run", {"channel": "hostile:" + case,
                                           "task": "find out",
                                           "author": {"id": "u1",
                                                      "name": "A"}})
        self.assertFalse(r["ok"], r)
        return r

    def test_research_job_searches_past_every_step(self):
        """24 steps of 16 calls: the 385th web_search stops the job."""
        r = self.research("research_searches")
        self.assertIn("broke a rule (budget)", r["message"])
        self.assertCounted("budget")

    def test_research_job_fetches_past_every_step(self):
        r = self.research("research_fetches")
        self.assertIn("broke a rule (budget)", r["message"])
        self.assertCounted("budget")

    def test_research_job_searches_in_flight(self):
        """A client that holds its search.query answers is asked at most
        16 times at once: the 17th search stops the job."""
        c = Client(self.d.socket, hooks=("search.query",))
        self.addCleanup(c.close)
        c.sock.settimeout(60)
        rid = c.request("research.run", {
            "channel": "hostile:research_search_flight", "task": "find out",
            "author": {"id": "u1", "name": "A"}})
        asked = 0
        while True:
            m = c.read_message()
            if m.get("method") == "search.query":
                asked += 1      # held: never answered
            elif m.get("id") == rid:
                break
        self.assertFalse(m["result"]["ok"], m)
        self.assertIn("broke a rule (in_flight)", m["result"]["message"])
        self.assertCounted("in_flight")
        self.assertLessEqual(asked, 16)

    def test_research_job_another_model(self):
        self.research("research_model")
        self.assertCounted("model")
        self.assertUpstreamSaw(0)

    def test_research_job_mcp_call(self):
        self.research("research_mcp")
        self.assertCounted("kind")
        self.assertUpstreamSaw(0)

    def test_research_job_adaptive_thinking_without_effort(self):
        """A job at level low is held to low's effort, as a broker is."""
        r = self.ctl.call("research.run", {
            "channel": "hostile:research_adaptive", "task": "find out",
            "author": {"id": "u1", "name": "A"}, "thinking": "low"})
        self.assertFalse(r["ok"], r)
        self.assertIn("broke a rule (effort)", r["message"])
        self.assertCounted("effort")
        self.assertUpstreamSaw(0)

    def test_research_job_without_a_level_does_not_think(self):
        r = self.research("research_adaptive_none")
        self.assertIn("broke a rule (thinking)", r["message"])
        self.assertCounted("thinking")
        self.assertUpstreamSaw(0)

    # -- floods, stops and memory (DESIGN.md 1, invariant 7)

    def process(self, role, name=None):
        """The process of that role (and name) in daemon.stats, or None."""
        for p in self.ctl.call("daemon.stats")["processes"]:
            if p["role"] == role and p.get("name") == name and \
                    p.get("pid"):
                return p
        return None

    def vm_kib(self, role, field="VmData"):
        """A field of /proc/PID/status of that role's process, in KiB."""
        with open("/proc/%d/status" % self.process(role)["pid"]) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise AssertionError("no %s" % field)

    def upstream_calls(self, client=None):
        return (client or self.ctl).call("daemon.stats")["counters"][
            "upstream_calls"]

    def other_turn(self, key="normal:1"):
        """A turn on another channel, with the real broker and the
        reference worker: it reaches the upstream and answers, and
        daemon.stats counts the calls egress made for it."""
        c = HookClient(self.d.socket)
        stats = Client(self.d.socket)   # a thread of its own may run this
        try:
            calls0 = self.upstream_calls(stats)
            seen0 = len(self.fu.requests(path="/v1/messages"))
            res = c.call_turn({"channel": key, "profile": "default",
                               "turnId": "t-" + key.replace(":", "-"),
                               "author": {"id": "u1", "name": "A"},
                               "text": "hello", "images": [], "memory": "",
                               "thinking": "low"}, timeout=90)
            self.assertTrue(res["ok"], res)
            seen = len(self.fu.requests(path="/v1/messages")) - seen0
            self.assertGreaterEqual(seen, 1)
            self.assertTrue(wait_until(
                lambda: self.upstream_calls(stats) - calls0 >= seen, 10),
                (self.upstream_calls(stats), calls0, seen))
        finally:
            c.close()
            stats.close()

    def during(self, fn):
        """fn in a thread, joined by the cleanup; its failure fails the
        test."""
        box = {}

        def run():
            try:
                fn()
            except BaseException as e:   # noqa: B902 - reported below
                box["e"] = e
        t = threading.Thread(target=run)
        t.start()

        def join():
            t.join(120)
            if "e" in box:
                raise box["e"]
        return join

    def assertGone(self, name, timeout=15):
        self.assertTrue(wait_until(
            lambda: self.process("broker", name) is None, timeout),
            self.process("broker", name))

    def test_tool_call_flood_without_reading(self):
        """brk_tool_call of no turn in a loop, the answers never read: each
        is a refusal, and past 64 in a second the broker is stopped under
        its rule.  Meanwhile the supervisor stops reading it, holds little
        more than before, logs one line for the lot, answers daemon.stats,
        and another channel's turn succeeds."""
        self.other_turn("normal:warm-sup")
        data0 = self.vm_kib("supervisor")
        log0 = len(self.d.read_log())
        join = self.during(lambda: self.other_turn("normal:warm-sup"))
        self.start("sup_flood")
        self.assertCounted("tool_call")
        self.assertGone("hostile_sup_flood")
        t0 = time.monotonic()
        self.ctl.call("daemon.stats")
        self.assertLess(time.monotonic() - t0, 1)
        self.assertLess(self.vm_kib("supervisor") - data0, 64 * 1024)
        join()
        log = self.d.read_log()[log0:]
        self.assertLessEqual(log.count("a tool call of no submitted turn "
                                       "refused"), 1, log[-3000:])
        self.assertIn("more than 64 refused frames", log)

    def test_ended_turn_flood_without_reading(self):
        """A turn answered and unbound, then model calls for it in a loop,
        egress's answers never read: each 410 is a refusal, and past 64 in
        a second the broker is stopped under no_turn.  None reaches the
        upstream; egress holds little more than before, logs one line for
        the lot and goes on serving another channel."""
        self.other_turn("normal:warm-egr")
        self.fu.reset()
        data0 = self.vm_kib("egress")
        log0 = len(self.d.read_log())
        c, res = self.turn("ended_flood")
        self.assertTrue(res["ok"], res)
        self.assertCounted("no_turn")
        self.assertGone("hostile_turn_ended_flood")
        self.assertUpstreamSaw(0, path="/v1/messages")
        self.assertLess(self.vm_kib("egress") - data0, 64 * 1024)
        log = self.d.read_log()[log0:]
        self.assertLessEqual(log.count("a call for a turn that has ended "
                                       "refused"), 1, log[-3000:])
        self.other_turn("normal:warm-egr")

    def test_broker_deaf_to_sigterm(self):
        """A broker that ignores SIGTERM and the end of its pipe and keeps
        making MCP calls: channel.stop has egress drop its edge first, then
        SIGTERM, then SIGKILL; it answers once the process is gone, and no
        call reaches the upstream after."""
        key = self.start("sigterm")
        self.assertTrue(wait_until(lambda: len(self.fu.requests()) >= 2, 15),
                        self.fu.requests())
        pid = self.process("broker", "hostile_sigterm")["pid"]
        t0 = time.monotonic()
        self.assertEqual(self.ctl.call("channel.stop", {"channel": key}), {})
        took = time.monotonic() - t0
        self.assertFalse(rtsb.pid_alive(pid))
        self.assertLess(took, 10)
        seen = len(self.fu.requests())
        time.sleep(1.5)
        self.assertEqual(len(self.fu.requests()), seen)
        self.assertIn("did not exit on SIGTERM", self.d.read_log())
        self.assertEqual(self.process_pids(), self.pids)

    def test_big_headers_from_fifty_brokers(self):
        """Fifty brokers each send the supervisor and egress the header of
        a 100 MiB frame and 64 KiB of it: read buffers grow with what
        arrived, so neither holds more than a few MiB for them, both go on
        answering, and another channel's turn succeeds."""
        data0 = {r: self.vm_kib(r) for r in ("supervisor", "egress")}
        keys = []
        try:
            for i in range(50):
                keys.append(self.start("big_header_%d" % i))
            time.sleep(1)
            t0 = time.monotonic()
            self.ctl.call("daemon.stats")
            self.assertLess(time.monotonic() - t0, 1)
            for r in ("supervisor", "egress"):
                self.assertLess(self.vm_kib(r) - data0[r], 64 * 1024, r)
            self.other_turn("normal:headers")
        finally:
            for k in keys:
                self.ctl.call("channel.stop", {"channel": k})
        self.assertEqual(self.process_pids(), self.pids)

    def test_upstream_calls_are_egress_count(self):
        """A broker that says it made calls it never made does not move
        daemon.stats's upstream_calls: that is egress's own count."""
        calls0 = self.upstream_calls()
        c, res = self.turn("events")
        self.assertTurnStopped(res, "budget")
        time.sleep(1.5)
        self.assertEqual(self.upstream_calls(), calls0)

    # -- strings that reach the log (log.c escapes every line)

    def assertNoForgedLine(self, what, logged_by=None, escaped=True):
        """The string sent, "x\\n<2>FORGED <what>\\r\\x1b[2J\\u0085", never
        starts a line or puts a control character in the log; where it is
        logged (by logged_by, with its priority), it is there escaped (or
        was made printable before, escaped=False)."""
        marker = "FORGED " + what
        form = "x\\x0a<2>" + marker + "\\x0d\\x1b[2J\\xc2\\x85"
        if logged_by:
            self.assertTrue(wait_until(lambda: marker in self.d.read_log(),
                                       10), marker)
        else:
            time.sleep(0.5)
        log = self.d.read_log()
        lines = [line for line in log.split("\n") if marker in line]
        for line in lines:
            self.assertFalse(line.startswith("<2>FORGED"), line)
            self.assertFalse(line.startswith("FORGED"), line)
            if escaped:
                self.assertIn(form, line)
        if logged_by:
            self.assertTrue(any(line.startswith(logged_by) for line in lines),
                            lines)
        else:
            self.assertEqual(lines, [])
        for c in ("\r", "\x1b", "\u0085"):
            self.assertNotIn(c, log)

    def test_log_forgery_mcp_server(self):
        self.start("forge_mcp_server")
        self.assertCounted("mcp_server")
        self.assertNoForgedLine("mcp server", "<4>egress: broker[hostile:"
                                "forge_mcp_server] violation (mcp_server): "
                                "MCP server alphax\\x0a")
        self.assertUpstreamSaw(0)

    def test_log_forgery_turn_id(self):
        """A call for a turn never bound: refused without its id in the
        log."""
        self.start("forge_stray_turn")
        self.assertCounted("no_turn")
        self.assertNoForgedLine("stray turn")

    def test_log_forgery_message_type(self):
        self.start("forge_type")
        self.assertCounted("frame")
        # msg.c makes the type printable before it names it
        self.assertNoForgedLine("type", "<4>supervisor: violation (frame) by "
                                "broker[hostile_forge_type]: unknown message "
                                "type \"x?<2>FORGED type", escaped=False)

    def test_log_forgery_field_name(self):
        self.start("forge_key")
        self.assertCounted("frame")
        self.assertNoForgedLine("key", "<4>supervisor: violation (frame) by "
                                "broker[hostile_forge_key]: field \"x?<2>"
                                "FORGED key", escaped=False)

    def test_log_forgery_refusal(self):
        """A broker that refuses to start, saying why."""
        with self.assertRaises(rtsb.RpcError):
            self.ctl.call("channel.start", {"channel": "hostile:forge_refused",
                                            "profile": "default"})
        self.assertCounted("frame")
        self.assertNoForgedLine("refused", "<4>supervisor: "
                                "broker[hostile_forge_refused] refused to "
                                "start: x\\x0a")

    def test_log_forgery_mcp_tool(self):
        c, res = self.turn("forge_mcp_tool")
        self.assertTurnStopped(res, "mcp_tool")
        self.assertCounted("mcp_tool")
        # egress's JSON reader makes the name printable before it names it
        self.assertNoForgedLine("mcp tool", "<4>egress: broker[hostile:turn_"
                                "forge_mcp_tool] violation (mcp_tool): tool",
                                escaped=False)
        self.assertUpstreamSaw(0)

    def test_log_forgery_model_field(self):
        c, res = self.turn("forge_field")
        self.assertTurnStopped(res, "field")
        self.assertCounted("field")
        self.assertNoForgedLine("field", "<4>egress: broker[hostile:turn_"
                                "forge_field] violation (field)", escaped=False)
        self.assertUpstreamSaw(0)

    def test_log_forgery_host_tool(self):
        c, res = self.turn("forge_tool")
        self.assertTurnStopped(res, "host_tool")
        self.assertCounted("host_tool")
        self.assertNoForgedLine("tool")
        self.assertEqual(c.hook_calls, [])

    def test_log_forgery_research_error(self):
        """A research job's error text, which the log keeps."""
        self.research("research_forge_error")
        self.assertNoForgedLine("research error", "<4>supervisor: channel "
                                "hostile:research_forge_error: research job")

    # -- and everyone else goes on

    def test_zz_other_channels_still_work(self):
        """After every attack, a turn on another channel with the real
        broker and the reference worker reaches the upstream and answers."""
        c = HookClient(self.d.socket)
        self.addCleanup(c.close)
        res = c.call_turn({"channel": "normal:1", "profile": "default",
                           "turnId": "t-normal", "author": {"id": "u1",
                                                            "name": "A"},
                           "text": "hello", "images": [], "memory": "",
                           "thinking": "low"}, timeout=90)
        self.assertTrue(res["ok"], res)
        self.assertGreaterEqual(len(self.fu.requests(path="/v1/messages")),
                                1)
        self.assertEqual(self.process_pids(), self.pids)


if __name__ == "__main__":
    unittest.main(verbosity=2)
