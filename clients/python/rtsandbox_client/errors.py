"""The errors of the client and the JSON-RPC codes of rtsandboxd
(rtsandbox-protocol(7))."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800
# A valid operation that failed; the message says why.
APP_ERROR = -32000


class RtsandboxError(Exception):
    """Every error this package raises; method is the control method."""

    def __init__(self, method, message):
        super().__init__(message)
        self.method = method
        self.message = message


class RtsandboxRpcError(RtsandboxError):
    """The daemon answered the request with a JSON-RPC error."""

    def __init__(self, method, code, message):
        super().__init__(method, "%s: %s (%d)" % (method, message, code))
        self.code = code


class RtsandboxConnectionError(RtsandboxError):
    """No answer can come: the daemon could not be reached in time, or the
    connection dropped with the request in flight (sent is then True, and
    the daemon may have acted on it before it went away)."""

    def __init__(self, method, socket, sent, message):
        super().__init__(method, message)
        self.socket = socket
        self.sent = sent
