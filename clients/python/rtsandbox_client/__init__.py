"""rtsandboxd's control protocol for asyncio bots, with the surface of
pi-roundtable-sandbox 0.7.3's PiSandboxRuntime (see rtsandbox-protocol(7))."""

from .errors import (APP_ERROR, INTERNAL_ERROR, INVALID_PARAMS,
                     INVALID_REQUEST, METHOD_NOT_FOUND, NOT_INITIALIZED,
                     PARSE_ERROR, REQUEST_CANCELLED, RtsandboxConnectionError,
                     RtsandboxError, RtsandboxRpcError)
from .runtime import (DEFAULT_SOCKET, THINKING_LEVELS, PiSandboxRuntime,
                      SandboxResearchWorker)

__all__ = [
    "APP_ERROR", "DEFAULT_SOCKET", "INTERNAL_ERROR", "INVALID_PARAMS",
    "INVALID_REQUEST", "METHOD_NOT_FOUND", "NOT_INITIALIZED", "PARSE_ERROR",
    "REQUEST_CANCELLED", "THINKING_LEVELS", "PiSandboxRuntime",
    "RtsandboxConnectionError", "RtsandboxError", "RtsandboxRpcError",
    "SandboxResearchWorker",
]
__version__ = "0.1.0"
