"""One connection to rtsandboxd's control socket: JSON-RPC 2.0, one object
per line, several requests in flight.  It connects on first use, sends
initialize with the hooks it serves, and reconnects with back-off when the
daemon goes away; a request in flight when the connection drops fails at
once, and one made while it is down waits for the next connection."""

import asyncio
import errno
import json
import logging
import re

from .errors import (INTERNAL_ERROR, INVALID_PARAMS, REQUEST_CANCELLED,
                     RtsandboxConnectionError, RtsandboxRpcError)

# Lines are at most 128 MiB each way.
LINE_MAX = 128 * 1024 * 1024

# What a hook returns to answer JSON null (None answers {}).
JSON_NULL = object()


def _describe(exc, socket):
    if isinstance(exc, OSError) and exc.errno in (errno.ENOENT,
                                                   errno.ECONNREFUSED):
        return "%s: is rtsandboxd running with control_socket %s?" % (
            errno.errorcode[exc.errno], socket)
    if isinstance(exc, OSError) and exc.errno == errno.EACCES:
        return ("EACCES: run as the service user or a member of "
                "control_group")
    return str(exc) or type(exc).__name__


class Call:
    """A request on its way; cancel() withdraws it before it is sent, or
    sends $/cancelRequest."""

    def __init__(self, conn, method, params):
        self.conn = conn
        self.method = method
        self.params = params
        self.id = None
        self.future = asyncio.get_running_loop().create_future()

    @property
    def sent(self):
        return self.id is not None

    def cancel(self):
        self.conn._cancel(self)

    def __await__(self):
        return self.future.__await__()


class Connection:
    def __init__(self, socket, client_name, hooks, on_request,
                 on_notification, logger=None, connect_timeout=30.0,
                 reconnect_initial=0.1, reconnect_max=5.0,
                 optional_hooks=()):
        self.socket = socket
        self.client_name = client_name
        self.hooks = list(hooks)
        # Hooks a daemon older than this client may not know: when
        # initialize is refused for one of them, it is dropped and
        # initialize sent again.
        self.optional_hooks = tuple(optional_hooks)
        self.on_request = on_request
        self.on_notification = on_notification
        self.log = logger or logging.getLogger("rtsandbox_client")
        self.connect_timeout = connect_timeout
        self.reconnect_initial = reconnect_initial
        self.reconnect_max = reconnect_max
        self.listeners = {"connected": [], "disconnected": []}
        self._ready = None
        self._writer = None
        self._task = None
        self._closed = False
        self._fatal = None
        self._last_error = None
        self._next_id = 1
        self._pending = {}
        self._lock = None
        self._hook_tasks = set()

    def _error(self, method, sent, why):
        return RtsandboxConnectionError(
            method, self.socket, sent,
            "%s: %s (rtsandboxd at %s)" % (method, why, self.socket))

    def _start(self):
        if self._task is None and not self._closed:
            self._ready = asyncio.Event()
            self._lock = asyncio.Lock()
            self._task = asyncio.get_running_loop().create_task(self._run())

    def is_ready(self):
        return self._ready is not None and self._ready.is_set()

    async def connect(self):
        """Returns once connected and initialized."""
        await self._wait_ready("initialize")

    async def _wait_ready(self, method):
        if self._closed:
            raise self._error(method, False, "the runtime was closed")
        if self._fatal is not None:
            raise self._fatal
        self._start()
        if self._ready.is_set():
            return
        try:
            await asyncio.wait_for(self._ready.wait(), self.connect_timeout)
        except asyncio.TimeoutError:
            why = ": " + self._last_error if self._last_error else ""
            raise self._error(method, False, "cannot reach rtsandboxd within "
                              "%g s%s" % (self.connect_timeout, why)) from None
        if self._fatal is not None:
            raise self._fatal
        if self._closed:
            raise self._error(method, False, "the runtime was closed")

    def call(self, method, params=None):
        """A Call to await; it waits for the connection when it is down."""
        c = Call(self, method, params)
        c.task = asyncio.get_running_loop().create_task(self._send(c))
        return c

    async def _send(self, c):
        try:
            await self._wait_ready(c.method)
        except Exception as e:  # noqa: BLE001 - handed to the caller
            if not c.future.done():
                c.future.set_exception(e)
            return
        if c.future.done():     # withdrawn while waiting
            return
        c.id = self._next_id
        self._next_id += 1
        self._pending[c.id] = c
        msg = {"jsonrpc": "2.0", "id": c.id, "method": c.method}
        if c.params is not None:
            msg["params"] = c.params
        if not await self._write(msg):
            self._pending.pop(c.id, None)
            if not c.future.done():
                c.future.set_exception(self._error(
                    c.method, False, "the connection is not open"))

    def _cancel(self, c):
        if c.future.done():
            return
        if c.id is None:
            c.future.set_exception(RtsandboxRpcError(
                c.method, REQUEST_CANCELLED,
                "Request cancelled before it was sent"))
            return
        # The daemon answers the request itself with -32800.
        asyncio.get_running_loop().create_task(self._write({
            "jsonrpc": "2.0", "method": "$/cancelRequest",
            "params": {"id": c.id}}))

    async def _write(self, msg):
        w = self._writer
        if w is None or w.is_closing():
            return False
        line = json.dumps(msg, ensure_ascii=False).encode() + b"\n"
        async with self._lock:
            try:
                w.write(line)
                await w.drain()
            except (ConnectionError, OSError) as e:
                self._last_error = _describe(e, self.socket)
                return False
        return True

    async def close(self):
        """Ends the connection for good; what is in flight fails."""
        self._closed = True
        self._fail_pending("the runtime was closed", sent=True)
        if self._ready is not None:
            self._ready.set()   # wakes the waiters, who see _closed
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for t in list(self._hook_tasks):
            t.cancel()

    def _fail_pending(self, why, sent, error=None):
        pending, self._pending = self._pending, {}
        for c in pending.values():
            if not c.future.done():
                c.future.set_exception(error or self._error(c.method, sent,
                                                            why))

    def _emit(self, event, arg):
        for fn in self.listeners[event]:
            try:
                fn(arg)
            except Exception:  # noqa: BLE001 - a listener's own bug
                self.log.exception("%s listener failed", event)

    async def _run(self):
        failures = 0
        while not self._closed and self._fatal is None:
            try:
                reader, writer = await asyncio.open_unix_connection(
                    self.socket, limit=LINE_MAX + 2)
            except OSError as e:
                self._last_error = _describe(e, self.socket)
            else:
                if await self._session(reader, writer):
                    failures = 0
            if self._closed or self._fatal is not None:
                break
            delay = min(self.reconnect_max,
                        self.reconnect_initial * 2 ** min(failures, 16))
            failures += 1
            await asyncio.sleep(delay)

    async def _session(self, reader, writer):
        """Serve one connection; whether it got as far as initialized."""
        self._writer = writer
        init_id = self._next_id
        self._next_id += 1
        initialized = False
        try:
            await self._write({"jsonrpc": "2.0", "id": init_id,
                               "method": "initialize",
                               "params": {"client": self.client_name,
                                          "hooks": self.hooks}})
            while True:
                try:
                    line = await reader.readline()
                except ValueError:
                    self._last_error = ("a line longer than %d bytes" %
                                        LINE_MAX)
                    break
                except (ConnectionError, OSError) as e:
                    self._last_error = _describe(e, self.socket)
                    break
                if not line:
                    break
                msg = self._parse(line)
                if msg is None:
                    continue
                if msg.get("id") == init_id and "method" not in msg:
                    hook = self._unknown_optional_hook(msg)
                    if hook is not None:
                        self.log.info("rtsandboxd does not know the hook %s; "
                                      "going on without it", hook)
                        self.hooks = [h for h in self.hooks if h != hook]
                        init_id = self._next_id
                        self._next_id += 1
                        await self._write({"jsonrpc": "2.0", "id": init_id,
                                           "method": "initialize",
                                           "params": {
                                               "client": self.client_name,
                                               "hooks": self.hooks}})
                        continue
                    if "error" in msg:
                        err = msg["error"] or {}
                        self._fatal = RtsandboxRpcError(
                            "initialize", err.get("code", INTERNAL_ERROR),
                            err.get("message", "refused"))
                        self.log.error("rtsandboxd refused initialize: %s",
                                       self._fatal)
                        self._ready.set()
                        break
                    initialized = True
                    self._last_error = None
                    self._ready.set()
                    self.log.debug("connected to rtsandboxd at %s",
                                   self.socket)
                    self._emit("connected", msg.get("result"))
                    continue
                self._dispatch(msg)
        finally:
            self._ready.clear()
            self._writer = None
            writer.close()
            why = ": " + self._last_error if self._last_error else ""
            self._fail_pending("the connection to rtsandboxd was lost%s; "
                               "the outcome is unknown" % why, sent=True,
                               error=self._fatal)
            if initialized and not self._closed:
                self.log.warning("lost the connection to rtsandboxd at %s",
                                 self.socket)
                self._emit("disconnected", self._last_error)
        return initialized

    def _unknown_optional_hook(self, msg):
        """The optional hook an initialize error says is unknown, or None."""
        err = msg.get("error")
        if not isinstance(err, dict) or err.get("code") != INVALID_PARAMS:
            return None
        m = re.search(r"unknown hook ([a-z.]+)", str(err.get("message", "")))
        if m is None or m.group(1) not in self.optional_hooks or \
                m.group(1) not in self.hooks:
            return None
        return m.group(1)

    def _parse(self, line):
        try:
            msg = json.loads(line)
        except ValueError:
            self.log.warning("rtsandboxd sent a line that is not JSON")
            return None
        return msg if isinstance(msg, dict) else None

    def _dispatch(self, msg):
        method = msg.get("method")
        if isinstance(method, str):
            if "id" in msg:
                t = asyncio.get_running_loop().create_task(
                    self._serve(msg["id"], method, msg.get("params")))
                self._hook_tasks.add(t)
                t.add_done_callback(self._hook_tasks.discard)
            else:
                self.on_notification(method, msg.get("params"))
            return
        c = self._pending.pop(msg.get("id"), None) \
            if isinstance(msg.get("id"), int) else None
        if c is None or c.future.done():
            return
        if "error" in msg:
            err = msg["error"] if isinstance(msg["error"], dict) else {}
            code = err.get("code")
            c.future.set_exception(RtsandboxRpcError(
                c.method, code if isinstance(code, int) else INTERNAL_ERROR,
                str(err.get("message", "error without a message"))))
        else:
            c.future.set_result(msg.get("result"))

    async def _serve(self, rid, method, params):
        writer = self._writer
        try:
            result = await self.on_request(method, params)
            if result is JSON_NULL:
                result = None
            elif result is None:
                result = {}
            answer = {"jsonrpc": "2.0", "id": rid, "result": result}
        except Exception as e:  # noqa: BLE001 - answered as an error
            code = getattr(e, "code", INTERNAL_ERROR)
            answer = {"jsonrpc": "2.0", "id": rid, "error": {
                "code": code if isinstance(code, int) else INTERNAL_ERROR,
                "message": str(e) or type(e).__name__}}
        # A hook of a connection that dropped is answered no more.
        if writer is not None and writer is self._writer:
            await self._write(answer)
