"""One error hierarchy. The CLI turns every PerfkitError into a one-line message and an exit code."""

from __future__ import annotations


class PerfkitError(Exception):
    """Every error perfkit raises on purpose. Messages never contain secrets."""


class ConfigError(PerfkitError):
    """A config file, threshold file or option value is invalid."""


class ParseError(PerfkitError):
    """A capture could not be read. Names the parser kind, the file and the line."""

    def __init__(self, kind: str, path: str | None, line_no: int, line: str, reason: str):
        self.kind, self.path, self.line_no, self.line, self.reason = kind, path, line_no, line, reason
        where = f"{path or '<text>'}:{line_no}" if line_no else (path or "<text>")
        shown = f": {line[:120]!r}" if line else ""
        super().__init__(f"{kind}: {where}: {reason}{shown}")


class ArchiveError(PerfkitError):
    """An archive cannot be opened: missing, corrupt, or an unknown manifest version."""


class UnsafeArchive(ArchiveError):
    """An archive member would escape the extraction directory or break a size cap; names the member."""


class AnalysisError(PerfkitError):
    """The inputs hold nothing that can be analysed."""


class CollectError(PerfkitError):
    """Collection on one host failed. Names the host (and the phase, for connection failures)."""

    def __init__(self, host: str, message: str):
        self.host = host
        super().__init__(f"{host}: {message}")


class HostUnreachable(CollectError):
    """Refused, DNS failure, no route, or a connect/banner timeout."""


class AuthFailed(CollectError):
    """The host answered but would not let us in (bad key, wrong user, no agent)."""


class HostKeyError(CollectError):
    """The host key is unknown (with its fingerprint and how to trust it) or has changed."""


class CommandTimeout(CollectError):
    """A command did not finish within its local deadline."""
