"""Secret values on the orchestrator's side: read from their declared source, put into what the
orchestrator sends at the moment it sends, and taken out again from whatever comes back.

Nothing but the outgoing request ever holds a value: records, events, logs, the agent's answers
and backups carry the handle `{{secret:NAME}}`. An agent may name only the secrets declared for
it; the operator's own settings (channels, MCP headers) may name any declared secret.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from orchestrator.config.secrets import SECRET_HANDLE, SecretSource, handle
from orchestrator.state.redaction import Redaction

MAX_SECRET_BYTES = 64 * 1024


def _nothing() -> None:
    return None


class SecretError(Exception):
    """A handle that cannot be filled in; the message names the secret and why, never a value."""


class SecretNotAllowed(SecretError):
    pass


class SecretUnavailable(SecretError):
    pass


class SecretStore:
    """The fleet's declared secrets. Values are read when first needed and kept in memory only."""

    def __init__(
        self,
        sources: Mapping[str, SecretSource],
        root: Path,
        environ: Mapping[str, str] | None = None,
        *,
        state_dir: Path | None = None,
    ) -> None:
        self._sources = dict(sources)
        self._root = root
        self._environ = os.environ if environ is None else environ
        self._state_dir = (state_dir or root / ".flotilla").resolve()
        self._values: dict[str, str] = {}
        self._redaction: Redaction | None = None
        self.on_new_value: Callable[[], None] = _nothing
        """Called once a value is read for the first time: `redaction` has changed."""

    @property
    def names(self) -> list[str]:
        return sorted(self._sources)

    def source(self, name: str) -> SecretSource | None:
        """Where a declared secret comes from and where it may go; None when undeclared."""
        return self._sources.get(name)

    def value(self, name: str) -> str:
        """The value of a declared secret; SecretUnavailable when it is undeclared or unreadable."""
        if name in self._values:
            return self._values[name]
        source = self._sources.get(name)
        if source is None:
            declared = ", ".join(self.names) or "none"
            raise SecretUnavailable(f"secret {name!r} is not declared under secrets: (declared: {declared})")
        value = self._read(name, source)
        self._values[name] = value
        self._redaction = None
        self.on_new_value()
        return value

    def problem(self, name: str) -> str | None:
        """Why a declared secret cannot be read now, or None (for `validate` and `up`)."""
        try:
            self.value(name)
        except SecretUnavailable as unavailable:
            return str(unavailable)
        return None

    def substitute(self, text: str, allowed: Collection[str] | None = None) -> str:
        """The text with each {{secret:NAME}} replaced by its value. `allowed` is the set of names
        the sender may use (None: the operator's own settings, any declared secret)."""

        def fill(match: object) -> str:
            name = match.group(1)  # type: ignore[attr-defined]
            if allowed is not None and name not in allowed:
                granted = ", ".join(sorted(allowed)) or "none"
                raise SecretNotAllowed(f"secret {name!r} is not granted to this agent (granted: {granted})")
            return self.value(name)

        return SECRET_HANDLE.sub(fill, text)

    @property
    def redaction(self) -> Redaction:
        """The values read so far, in every form redaction looks for."""
        if self._redaction is None:
            self._redaction = Redaction((handle(name), value) for name, value in self._values.items())
        return self._redaction

    def redact(self, text: str) -> str:
        """The text with every known secret value (and its common encodings) replaced by its handle."""
        return self.redaction.redact(text)

    def redact_bytes(self, data: bytes) -> bytes:
        # surrogateescape keeps bytes that are not UTF-8 as they were.
        return self.redact(data.decode(errors="surrogateescape")).encode(errors="surrogateescape")

    def cut(self, text: str, limit: int) -> str:
        """At most `limit` characters of the text, redacted before the cut (`Redaction.cut`)."""
        return self.redaction.cut(text, limit)

    def load_all(self) -> None:
        """Reads every declared secret now, so that redaction knows them all from the start."""
        for name in self._sources:
            try:
                self.value(name)
            except SecretUnavailable:
                continue

    def _read(self, name: str, source: SecretSource) -> str:
        if source.env is not None:
            value = self._environ.get(source.env)
            if value is None:
                raise SecretUnavailable(
                    f"secret {name!r}: the environment variable {source.env} is not set on the orchestrator host"
                )
            return value
        assert source.file is not None
        return self._read_file(name, source.file)

    def _read_file(self, name: str, file: str) -> str:
        path = Path(file).expanduser()
        target = (path if path.is_absolute() else self._root / path).resolve()
        if target.is_relative_to(self._state_dir):
            raise SecretUnavailable(
                f"secret {name!r}: file {file} is under the fleet's state folder, which backups and "
                "agents' data reach; keep secrets elsewhere"
            )
        try:
            with target.open("rb") as handle_file:
                data = handle_file.read(MAX_SECRET_BYTES + 1)
        except OSError as error:
            raise SecretUnavailable(f"secret {name!r}: cannot read file {file}: {error.strerror}") from None
        if len(data) > MAX_SECRET_BYTES:
            raise SecretUnavailable(f"secret {name!r}: file {file} is over {MAX_SECRET_BYTES} bytes")
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise SecretUnavailable(f"secret {name!r}: file {file} is not UTF-8 text") from None
        return text.removesuffix("\n").removesuffix("\r")


Redactor = Callable[[str], str]
