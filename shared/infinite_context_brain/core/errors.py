"""One error tree for the whole core; every adapter maps it in exactly one place.

::

    InfiniteContextError            base: ``message`` says what happened, ``fix`` what to do
    ├── InvalidInput                a caller's argument is wrong; ``field`` names it
    ├── NotFound                    a version / item / session that does not exist
    ├── ConfigError                 a setting that cannot work (bad URL, unknown provider)
    ├── StorageError                the store could not do what was asked
    │   ├── StorageUnavailable      cannot open / reach the store (path, permissions, server down)
    │   ├── CorruptState            a stored row does not parse; history can still recover it
    │   └── ConflictError           another writer kept winning the compare-and-set
    └── MergeError                  a merger could not produce a valid state

Adapters turn these into their protocol's error (MCP tool error, JSON-RPC error with
``code``, CLI exit status, IPython ``UsageError``); anything else escaping the core is a bug
and is logged with its traceback.
"""

from __future__ import annotations


class InfiniteContextError(Exception):
    """Base of every error the core raises on purpose."""

    #: JSON-RPC error code used by the language server (application range -32000..-32099).
    code: int = -32000
    #: process exit status used by the CLI.
    exit_code: int = 1

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message} Fix: {self.fix}" if self.fix else self.message

    def to_dict(self) -> dict[str, str | int | None]:
        return {"error": type(self).__name__, "message": self.message, "fix": self.fix, "code": self.code}


class InvalidInput(InfiniteContextError):
    """A caller passed a bad argument; ``field`` names it so the message can say which."""

    code = -32602  # JSON-RPC "invalid params"
    exit_code = 2

    def __init__(self, field: str, message: str, *, fix: str | None = None) -> None:
        super().__init__(f"{field}: {message}", fix=fix)
        self.field = field


class NotFound(InfiniteContextError):
    code = -32001
    exit_code = 3


class ConfigError(InfiniteContextError):
    code = -32002
    exit_code = 2


class StorageError(InfiniteContextError):
    code = -32010
    exit_code = 4


class StorageUnavailable(StorageError):
    code = -32011


class CorruptState(StorageError):
    code = -32012


class ConflictError(StorageError):
    code = -32013


class MergeError(InfiniteContextError):
    code = -32020
