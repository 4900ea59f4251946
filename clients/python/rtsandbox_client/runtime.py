"""PiSandboxRuntime over rtsandboxd for asyncio bots: the surface of
pi-roundtable-sandbox 0.7.3's runtime, with the container, broker and turn
state held by the daemon.  The memory, effort, tool and compactor callbacks
are served as the daemon's hooks on the runtime's one connection; each may
be a plain function or a coroutine function."""

import asyncio
import datetime
import base64
import inspect
import logging
import os

from .connection import JSON_NULL, Connection
from .errors import (APP_ERROR, INVALID_PARAMS, INVALID_REQUEST,
                     METHOD_NOT_FOUND, REQUEST_CANCELLED,
                     RtsandboxConnectionError, RtsandboxError,
                     RtsandboxRpcError)

DEFAULT_SOCKET = "/run/rtsandbox/control.sock"
THINKING_LEVELS = ("low", "medium", "high", "xhigh")
TURN_REASONS = ("busy", "invalid", "start_failed", "timeout", "cancelled",
                "worker_failed", "stale_image", "internal")
# The longest tool error the daemon passes on (PROTOCOL.md 3.3).
TOOL_ERROR_MAX = 10000
# compaction.timeout_ms's default, for a request that gives no timeoutMs.
COMPACT_TIMEOUT_MS = 120000
COMPACT_REASONS = ("manual", "threshold", "overflow")
TOKENS_MAX = 2 ** 53 - 1


class HookError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


async def _maybe_await(value):
    if inspect.isawaitable(value):
        return await value
    return value


def _b64(data):
    if isinstance(data, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(data)).decode("ascii")
    return data


def _image(image):
    return {"data": _b64(image["data"]), "mimeType": image["mimeType"]}


def _is_async(fn):
    return inspect.iscoroutinefunction(fn) or \
        inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def _is_tokens(n):
    """An integer from 0 to 2^53 - 1, as JSON has it."""
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return False
    return (isinstance(n, int) or n.is_integer()) and 0 <= n <= TOKENS_MAX


def _is_messages(v):
    return isinstance(v, list) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in v)


def _is_strings(v):
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_compact_request(r):
    return (isinstance(r, dict) and r.get("reason") in COMPACT_REASONS and
            _is_tokens(r.get("tokensBefore")) and
            isinstance(r.get("firstKeptEntryId"), str) and
            1 <= len(r["firstKeptEntryId"]) <= 256 and
            isinstance(r.get("isSplitTurn"), bool) and
            all(_is_messages(r.get(k)) for k in (
                "messagesToSummarize", "turnPrefixMessages",
                "keptMessages")) and
            all(isinstance(r.get(k, ""), str) for k in (
                "previousSummary", "customInstructions")) and
            _is_strings(r.get("readFiles")) and
            _is_strings(r.get("modifiedFiles")))


def _compaction_problem(c, first_kept):
    """What the daemon would refuse in the compaction c, or None."""
    if not isinstance(c, dict):
        return "it is not a dict"
    if not isinstance(c.get("summary"), str) or not c["summary"]:
        return "summary is not a non-empty string"
    if c.get("firstKeptEntryId") != first_kept:
        return "firstKeptEntryId is not the request's"
    if not _is_tokens(c.get("tokensBefore")):
        return "tokensBefore is not an integer from 0 to 2^53 - 1"
    if c.get("estimatedTokensAfter") is not None and \
            not _is_tokens(c["estimatedTokensAfter"]):
        return "estimatedTokensAfter is not an integer from 0 to 2^53 - 1"
    if c.get("details") is not None and not isinstance(c["details"], dict):
        return "details is not a dict"
    return None


def _cancelled(message):
    return {"ok": False, "error": {"reason": "cancelled", "message": message}}


def _turn_from_wire(r):
    if isinstance(r, dict) and r.get("ok") is True and \
            isinstance(r.get("text"), str) and isinstance(r.get("files"), list):
        return {"ok": True, "text": r["text"], "files": [
            {"name": f.get("name"), "data": base64.b64decode(f.get("data", ""))}
            for f in r["files"] if isinstance(f, dict)]}
    if isinstance(r, dict) and r.get("ok") is False:
        reason = r.get("reason")
        error = {"reason": reason if reason in TURN_REASONS else "internal",
                 "message": r.get("message") if isinstance(r.get("message"),
                                                           str)
                 else "the turn failed"}
        if isinstance(r.get("workerError"), str):
            error["workerError"] = r["workerError"]
        return {"ok": False, "error": error}
    return {"ok": False, "error": {
        "reason": "internal",
        "message": "turn.run: an answer of no known shape"}}


class _Turn:
    def __init__(self, on_progress):
        self.on_progress = on_progress
        self.done = asyncio.Event()


class _Job:
    def __init__(self, search):
        self.search = search
        self.done = asyncio.Event()


class PiSandboxRuntime:
    """runtime = PiSandboxRuntime(socket=..., memory=..., effort=...,
    tools={"name": handler}, logger=...)

    memory has prompt_block({"channel", "speaker": {"id", "name"}}) -> str;
    effort has judge({"text", "previous"?}) -> level; a tool handler is
    handler(input, context) -> {"ok", "text"?, "error"?, "image"?,
    "privateTo"?} with
    context {"channel", "profile", "speaker", "thinking", "turnId",
    "done": asyncio.Event set when the turn settles}.

    compactor(request, context, timeout_ms) serves compaction.compact,
    which the daemon asks when rtsandboxd.json has "compaction": request is
    the worker's {"reason", "tokensBefore", "firstKeptEntryId",
    "isSplitTurn", "messagesToSummarize", "turnPrefixMessages",
    "keptMessages", "previousSummary"?, "customInstructions"?, "readFiles",
    "modifiedFiles"}, context {"channel", "profile", "speaker", "turnId",
    "engine", "done"}; it returns {"summary", "firstKeptEntryId",
    "tokensBefore", "estimatedTokensAfter"?, "details"?}, or None to leave
    it to Pi's own summary.  After timeout_ms (or once the turn settles) it
    is cancelled, a plain function (run in the loop's default executor)
    left to finish unheard, and the worker falls back to Pi's summary, as
    it does when the compactor raises."""

    def __init__(self, socket=None, memory=None, effort=None, tools=None,
                 search=None, logger=None, client_name="pi-sandbox-runtime",
                 connect_timeout=30.0, reconnect=(0.1, 5.0), compactor=None):
        self.socket = socket or os.environ.get("RTSANDBOX_CONTROL_SOCKET",
                                               DEFAULT_SOCKET)
        self.memory = memory
        self.effort = effort
        self.tools = dict(tools or {})
        self.search = search
        self.compactor = compactor
        self.log = logger or logging.getLogger("rtsandbox_client")
        self._turns = {}
        self._jobs = {}
        self._progress = []
        hooks = ["tool.call", "search.query"]
        if memory is not None:
            hooks.append("memory.block")
        if effort is not None:
            hooks.append("effort.judge")
        if compactor is not None:
            hooks.append("compaction.compact")
        # An older daemon refuses compaction.compact; its workers then
        # compact with Pi's summary alone.
        self._conn = Connection(
            self.socket, client_name, hooks, self._serve_hook,
            self._notified, self.log, connect_timeout, reconnect[0],
            reconnect[1], optional_hooks=("compaction.compact",))

    # -- events

    def on_progress(self, fn):
        """fn({"channel", "turnId", "phase"}) for every turn's progress."""
        self._progress.append(fn)

    def on_connected(self, fn):
        self._conn.listeners["connected"].append(fn)

    def on_disconnected(self, fn):
        self._conn.listeners["disconnected"].append(fn)

    # -- the daemon as a whole

    async def connect(self):
        """Connect now rather than on the first call."""
        await self._conn.connect()

    async def close(self):
        """Close the connection; calls in flight fail."""
        for t in self._turns.values():
            t.done.set()
        await self._conn.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def _call(self, method, params=None):
        return await self._conn.call(method, params)

    async def stop_brokers(self):
        """Cancel every turn, stop every broker; containers stay.  Returns
        how many stopped."""
        return (await self._call("daemon.stop_brokers"))["stopped"]

    async def stats(self):
        return await self._call("daemon.stats")

    # -- channels

    async def start(self, channel, profile):
        """Start the container and broker; returns once the worker is
        ready."""
        await self._call("channel.start", {"channel": channel,
                                           "profile": profile})

    async def stop(self, channel):
        """Cancel its turn, remove the container, stop the broker, forget
        the judged level."""
        await self._call("channel.stop", {"channel": channel})

    async def status(self, channel):
        return await self._call("channel.status", {"channel": channel})

    async def start_fresh(self, channel):
        """Stop, then archive the sessions: {"archived", "folder"?}."""
        return await self._call("channel.fresh", {"channel": channel})

    async def paths(self, channel):
        return await self._call("channel.paths", {"channel": channel})

    async def cancel_turn(self, channel):
        """Cancel the channel's running turn, whoever started it."""
        return (await self._call("turn.cancel",
                                 {"channel": channel}))["cancelled"]

    # -- turns

    async def run_turn(self, channel, profile, turn_id, author, text,
                       images=(), cancel=None, memory=None, thinking=None,
                       on_progress=None, memory_visibility=None):
        """Run one turn: {"ok": True, "text", "files": [{"name", "data":
        bytes}]} or {"ok": False, "error": {"reason", "message",
        "workerError"?}}.  Setting the asyncio.Event cancel cancels it; the
        answer then comes once the container is gone.  The daemon's and the
        connection's failures come as ok False, never raised.
        author may carry "principalId"; memory_visibility is "shared" or
        "private" (what the daemon assumes when it is not given)."""
        if cancel is not None and cancel.is_set():
            return _cancelled("The turn was cancelled before it started")
        params = {"channel": channel, "profile": profile, "turnId": turn_id,
                  "author": {"id": author.get("id"),
                             "name": author.get("name")},
                  "text": text, "images": [_image(i) for i in images]}
        if author.get("principalId") is not None:
            params["author"]["principalId"] = author["principalId"]
        if memory is not None:
            params["memory"] = memory
        if memory_visibility is not None:
            params["memoryVisibility"] = memory_visibility
        if thinking is not None:
            params["thinking"] = thinking
        key = (channel, turn_id)
        turn = _Turn(on_progress)
        mine = key not in self._turns
        if mine:
            self._turns[key] = turn
        call = self._conn.call("turn.run", params)
        watcher = None
        if cancel is not None:
            async def watch():
                await cancel.wait()
                call.cancel()
            watcher = asyncio.get_running_loop().create_task(watch())
        try:
            return _turn_from_wire(await call)
        except RtsandboxRpcError as e:
            if e.code == REQUEST_CANCELLED:
                if call.sent:
                    # The daemon answers a cancelled request at once and
                    # removes the container in the channel's queue of
                    # operations: channel.paths, queued after it, returns
                    # once it is gone.
                    try:
                        await self._call("channel.paths",
                                         {"channel": channel})
                    except RtsandboxError:
                        pass
                return _cancelled("The turn was cancelled")
            reason = "invalid" if e.code in (INVALID_PARAMS,
                                             INVALID_REQUEST) else "internal"
            return {"ok": False, "error": {"reason": reason,
                                           "message": e.message}}
        except RtsandboxConnectionError as e:
            self.log.warning("channel %s: turn failed with the connection: "
                             "%s", channel, e)
            return {"ok": False, "error": {"reason": "internal",
                                           "message": e.message}}
        except asyncio.CancelledError:
            call.cancel()
            raise
        finally:
            if watcher is not None:
                watcher.cancel()
            turn.done.set()
            if mine:
                del self._turns[key]

    # -- research and attachments

    async def research(self, channel, task, author, search=None,
                       cancel=None, thinking=None):
        """Run a research job: {"ok": True, "report"} or {"ok": False,
        "error": {"reason", "message"}}.  search(query, context) serves its
        web_search, else the runtime's search."""
        if cancel is not None and cancel.is_set():
            return {"ok": False, "error": {
                "reason": "cancelled",
                "message": "the research job was cancelled"}}
        params = {"channel": channel, "author": {"id": author.get("id"),
                                                 "name": author.get("name")},
                  "task": task}
        if thinking is not None:
            params["thinking"] = thinking
        job = _Job(search)
        self._jobs.setdefault(channel, []).append(job)
        try:
            return await self._job_call(
                "research.run", params, cancel, "the research job",
                "failed", lambda r: {"ok": True, "report": r["report"]})
        finally:
            job.done.set()
            jobs = [j for j in self._jobs.get(channel, []) if j is not job]
            if jobs:
                self._jobs[channel] = jobs
            else:
                self._jobs.pop(channel, None)

    async def _job_call(self, method, params, cancel, what, reason, ok):
        """A job's call (research.run, precheck.run), ended early when the
        cancel event is set: ok(r) of an ok answer, or {"ok": False,
        "error": {"reason", "message"}} with reason as the default."""
        call = self._conn.call(method, params)
        watcher = None
        if cancel is not None:
            async def watch():
                await cancel.wait()
                call.cancel()
            watcher = asyncio.get_running_loop().create_task(watch())
        try:
            r = await call
            if isinstance(r, dict) and r.get("ok") is True:
                return ok(r)
            if isinstance(r, dict) and r.get("ok") is False:
                return {"ok": False, "error": {
                    "reason": r.get("reason", reason),
                    "message": r.get("message", what + " failed")}}
            return {"ok": False, "error": {
                "reason": "internal",
                "message": method + ": an answer of no known shape"}}
        except RtsandboxRpcError as e:
            if e.code == REQUEST_CANCELLED:
                return {"ok": False, "error": {
                    "reason": "cancelled",
                    "message": what + " was cancelled"}}
            return {"ok": False, "error": {"reason": "internal",
                                           "message": e.message}}
        except RtsandboxConnectionError as e:
            return {"ok": False, "error": {"reason": "internal",
                                           "message": e.message}}
        except asyncio.CancelledError:
            call.cancel()
            raise
        finally:
            if watcher is not None:
                watcher.cancel()

    async def precheck(self, channel, profile, script, fired_at, time_zone,
                       today, schedule, servers=(), cancel=None):
        """Run a schedule's precheck script in a sealed container of the
        daemon's (precheck.run): {"ok": True, "result"} or {"ok": False,
        "error": {"reason", "message"}}.  servers grants MCP servers of the
        profile and tools of each: [{"name", "tools": [...]}]; fired_at is
        an aware datetime or an ISO 8601 string, schedule {"id", "title"}."""
        if cancel is not None and cancel.is_set():
            return {"ok": False, "error": {
                "reason": "cancelled",
                "message": "the precheck run was cancelled"}}
        if not isinstance(fired_at, str):
            fired_at = fired_at.astimezone(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (
                fired_at.microsecond // 1000)
        params = {"channel": channel, "profile": profile, "script": script,
                  "firedAt": fired_at, "timeZone": time_zone,
                  "today": today,
                  "schedule": {"id": schedule["id"],
                               "title": schedule["title"]},
                  "servers": [{"name": s["name"], "tools": list(s["tools"])}
                              for s in servers]}
        return await self._job_call(
            "precheck.run", params, cancel, "the precheck run",
            "worker_failed", lambda r: {"ok": True, "result": r.get("result")})

    async def cancel_research(self, channel):
        return (await self._call("research.cancel",
                                 {"channel": channel}))["cancelled"]

    async def fetch_attachments(self, channel, message_id, attachments,
                                reference=None):
        """Download a chat message's files (and reference's, those of the
        message it answers) into the channel's attachments/: {"saved",
        "failed"}.  A refused request raises RtsandboxRpcError."""
        params = {"channel": channel, "messageId": message_id,
                  "attachments": list(attachments)}
        if reference is not None:
            params["reference"] = {"attachments": list(reference)}
        return await self._call("attachments.fetch", params)

    # -- the daemon's requests and notifications

    def _notified(self, method, params):
        if method != "turn.progress" or not isinstance(params, dict):
            return
        t = self._turns.get((params.get("channel"), params.get("turnId")))
        fns = ([t.on_progress] if t is not None and t.on_progress else []) \
            + self._progress
        for fn in fns:
            try:
                fn(params)
            except Exception:  # noqa: BLE001 - the listener's own bug
                self.log.exception("a progress listener failed")

    async def _serve_hook(self, method, params):
        if not isinstance(params, dict):
            raise HookError(INVALID_PARAMS,
                            "%s: params must be an object" % method)
        if method == "tool.call":
            return await self._tool_call(params)
        if method == "memory.block":
            return await self._memory_block(params)
        if method == "effort.judge":
            return await self._effort_judge(params)
        if method == "search.query":
            return await self._search_query(params)
        if method == "compaction.compact":
            return await self._compact(params)
        raise HookError(METHOD_NOT_FOUND, "no hook %s" % method)

    async def _tool_call(self, params):
        name = str(params.get("name"))
        ctx = params.get("context") if isinstance(params.get("context"),
                                                  dict) else {}
        channel, turn_id = ctx.get("channel"), ctx.get("turnId")
        handler = self.tools.get(name)
        if handler is None:
            self.log.warning("channel %s: a call of tool %s, which this "
                             "runtime does not serve", channel, name)
            return {"ok": False, "error": "Tool %s is not available" % name}
        turn = self._turns.get((channel, turn_id))
        context = dict(ctx)
        context["done"] = turn.done if turn is not None else asyncio.Event()
        inp = params.get("input") if isinstance(params.get("input"),
                                                dict) else {}
        try:
            result = await _maybe_await(handler(inp, context))
        except Exception as e:  # noqa: BLE001 - the model sees the error
            self.log.warning("channel %s: tool %s failed: %s", channel, name,
                             e)
            return {"ok": False, "error": (str(e) or type(e).__name__)[
                :TOOL_ERROR_MAX]}
        if not isinstance(result, dict) or not isinstance(result.get("ok"),
                                                          bool):
            self.log.warning("channel %s: tool %s answered without a "
                             "boolean ok", channel, name)
            return {"ok": False,
                    "error": "Tool %s answered nothing usable" % name}
        out = {"ok": result["ok"]}
        if result.get("text") is not None:
            out["text"] = result["text"]
        if result.get("error") is not None:
            out["error"] = str(result["error"])[:TOOL_ERROR_MAX]
        if result.get("image") is not None:
            out["image"] = _image(result["image"])
        if result.get("privateTo") is not None:
            out["privateTo"] = result["privateTo"]
        return out

    async def _memory_block(self, params):
        if self.memory is None:
            raise HookError(METHOD_NOT_FOUND, "no memory adapter")
        request = {"channel": params.get("channel"),
                   "speaker": {"id": params.get("id"),
                               "name": params.get("name")}}
        try:
            text = await _maybe_await(self.memory.prompt_block(request))
        except Exception as e:
            # The daemon then runs the turn without memory.
            self.log.warning("channel %s: memory prompt_block failed: %s",
                             request["channel"], e)
            raise
        return {"text": text or ""}

    async def _effort_judge(self, params):
        if self.effort is None:
            raise HookError(METHOD_NOT_FOUND, "no effort judge")
        request = {"text": params.get("text")}
        if isinstance(params.get("previous"), str):
            request["previous"] = params["previous"]
        try:
            level = await _maybe_await(self.effort.judge(request))
        except Exception as e:
            # The daemon then keeps the previous level or its default.
            self.log.warning("effort judge failed: %s", e)
            raise
        if level not in THINKING_LEVELS:
            self.log.warning("effort judge answered %r, which the daemon "
                             "does not know", level)
        return {"level": level}

    async def _search_query(self, params):
        channel = params.get("channel")
        job = next((j for j in self._jobs.get(channel, [])
                    if j.search is not None), None)
        search = job.search if job is not None else self.search
        if search is None:
            raise HookError(METHOD_NOT_FOUND, "web_search is not available")
        context = {"channel": channel,
                   "done": job.done if job is not None else asyncio.Event()}
        text = await _maybe_await(search(str(params.get("query")), context))
        return {"text": str(text)}

    async def _compact(self, params):
        if self.compactor is None:
            raise HookError(METHOD_NOT_FOUND, "no compactor")
        ctx = params.get("context") if isinstance(params.get("context"),
                                                  dict) else {}
        channel, turn_id = ctx.get("channel"), ctx.get("turnId")
        request = params.get("request")
        if not _is_compact_request(request):
            self.log.warning("channel %s: rtsandboxd sent a compact request "
                             "of no known shape", channel)
            raise HookError(INVALID_PARAMS,
                            "compaction.compact: invalid request")
        timeout_ms = params.get("timeoutMs")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) \
                or timeout_ms <= 0:
            timeout_ms = COMPACT_TIMEOUT_MS
        turn = self._turns.get((channel, turn_id))
        context = dict(ctx)
        context["done"] = turn.done if turn is not None else asyncio.Event()
        fn = self.compactor

        async def run():
            if _is_async(fn):
                return await fn(request, context, timeout_ms)
            value = await asyncio.get_running_loop().run_in_executor(
                None, fn, request, context, timeout_ms)
            return await _maybe_await(value)
        task = asyncio.ensure_future(run())
        ended = asyncio.ensure_future(context["done"].wait())
        try:
            done, _ = await asyncio.wait(
                {task, ended}, timeout=timeout_ms / 1000,
                return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not task.done():
                task.cancel()
        if task not in done:
            why = ("the compactor took over %d ms" % timeout_ms
                   if ended not in done else
                   "the compaction was aborted: its turn ended")
            # The daemon then falls back to Pi's own summary.
            self.log.warning("channel %s: turn %s: %s", channel, turn_id,
                             why)
            raise HookError(APP_ERROR, why)
        try:
            result = task.result()
        except Exception as e:
            self.log.warning("channel %s: turn %s: the compactor failed: "
                             "%s", channel, turn_id, e)
            raise
        if result is None:
            return JSON_NULL
        problem = _compaction_problem(result, request["firstKeptEntryId"])
        if problem is not None:
            self.log.warning("channel %s: turn %s: the compactor answered a "
                             "compaction the daemon refuses: %s", channel,
                             turn_id, problem)
            raise HookError(APP_ERROR, "the compactor's result is invalid: "
                            + problem)
        out = {k: result[k] for k in ("summary", "firstKeptEntryId",
                                      "tokensBefore")}
        for k in ("estimatedTokensAfter", "details"):
            if result.get(k) is not None:
                out[k] = result[k]
        return out


class SandboxResearchWorker:
    """Each run is a research job in a sandboxed process of the daemon's,
    with web_search answered here.  Shares runtime's connection when given,
    else opens its own on socket."""

    def __init__(self, runtime=None, socket=None, search=None, logger=None):
        self._own = runtime is None
        self.runtime = runtime or PiSandboxRuntime(
            socket=socket, logger=logger, client_name="sandbox-research-worker")
        self.search = search

    async def run(self, channel, task, author, search=None, cancel=None,
                  thinking=None):
        return await self.runtime.research(channel, task, author,
                                           search=search or self.search,
                                           cancel=cancel, thinking=thinking)

    async def close(self):
        if self._own:
            await self.runtime.close()
