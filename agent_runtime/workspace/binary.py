"""Binary files of one workspace folder (screenshots/), versioned like the identity files.

A file of the folder is `workspace/<folder>/<name><suffix>`; each write of the same name is a new
version, kept as `versions/<folder>/<name>/<n><suffix>` with its line in that folder's
`index.jsonl` (author, time, size, reason, sha256), through the same recording code as
`versioned.Workspace`. Names are one short lowercase word, so a name can never leave the folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent_runtime.workspace.versioned import (
    FileVersion,
    RecordedAuthor,
    UnknownVersion,
    WorkspaceError,
    atomic_write_bytes,
    locked_versions,
    read_versions,
    record_version,
)
from agent_runtime.workspace.wire import WorkspaceWriteResult

SCREENSHOTS = "screenshots"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BINARY_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
NAME_RULE = "1 to 64 lowercase letters, digits, '-' or '_', starting with a letter or digit"


class BadBinaryName(WorkspaceError):
    def __init__(self, folder: str, name: str) -> None:
        super().__init__(f"{name[:80]!r} is not a name for a file of {folder}/: give {NAME_RULE}")


class BinaryTooLarge(WorkspaceError):
    """Over the per-file cap or the workspace quota; nothing was written."""


class VersionedBinaries:
    """The versioned binary files of `workspace/<folder>/` under an agent's data folder."""

    def __init__(self, data_dir: Path | str, folder: str = SCREENSHOTS, suffix: str = ".png") -> None:
        self.folder = folder
        self.suffix = suffix
        self.root = Path(data_dir) / "workspace" / folder
        self.versions_root = Path(data_dir) / "versions" / folder

    def name_of(self, name: str) -> str:
        """The bare name of `name`, `<name><suffix>` or `<folder>/<name><suffix>`; BadBinaryName
        for anything else (a path, `..`, upper case, another suffix)."""
        bare = name.removeprefix(f"{self.folder}/").removesuffix(self.suffix)
        if not BINARY_NAME.fullmatch(bare):
            raise BadBinaryName(self.folder, name)
        return bare

    def relative(self, name: str) -> str:
        """The file's path relative to the workspace folder."""
        return f"{self.folder}/{self.name_of(name)}{self.suffix}"

    def names(self) -> list[str]:
        """The bare names that have recorded versions, sorted."""
        if not self.versions_root.is_dir():
            return []
        return sorted(
            entry.name
            for entry in self.versions_root.iterdir()
            if BINARY_NAME.fullmatch(entry.name) and (entry / "index.jsonl").is_file()
        )

    def history(self, name: str) -> list[FileVersion]:
        return read_versions(self._version_dir(self.name_of(name)))

    def read(self, name: str) -> bytes | None:
        """The live file's bytes; None when there is none."""
        try:
            return self._live(self.name_of(name)).read_bytes()
        except FileNotFoundError:
            return None

    def read_version(self, name: str, version: int) -> bytes:
        bare = self.name_of(name)
        known = self.history(bare)
        if not any(v.version == version for v in known):
            raise UnknownVersion(self.relative(bare), version, known[-1].version if known else 0)
        return self._blob(bare, version).read_bytes()

    def usage(self) -> int:
        """Bytes the folder's live files and kept versions take."""
        total = 0
        for folder in (self.root, self.versions_root):
            if folder.is_dir():
                total += sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
        return total

    def write(
        self, name: str, data: bytes, author: RecordedAuthor, reason: str, *, cap: int, quota: int
    ) -> WorkspaceWriteResult:
        """Keep `data` as the newest version of `name`. BadBinaryName or BinaryTooLarge (over
        `cap`, or bringing the folder over `quota`) leave every file as it was."""
        bare = self.name_of(name)
        relative = self.relative(bare)
        if len(data) > cap:
            raise BinaryTooLarge(
                f"{relative} would be {len(data)} bytes, over its cap of {cap} bytes; nothing was saved"
            )
        with locked_versions(self.versions_root):  # the quota is the folder's: one writer at a time
            live = self.read(bare)
            needed = self.usage() - (len(live) if live is not None else 0) + 2 * len(data)
            if needed > quota:
                raise BinaryTooLarge(
                    f"saving {relative} ({len(data)} bytes) would bring {self.folder}/ to {needed} bytes, "
                    f"over the workspace quota of {quota} bytes; nothing was saved"
                )
            known = self.history(bare)
            number = (known[-1].version if known else 0) + 1
            record = record_version(
                self._version_dir(bare),
                self._blob(bare, number),
                self._live(bare),
                data,
                author,
                reason,
                number,
            )
        return WorkspaceWriteResult(name=relative, size=record.size, version=record.version)

    def mirror(self, name: str, data: bytes) -> None:
        """Replace the live file with bytes accepted elsewhere (no version recorded here)."""
        atomic_write_bytes(self._live(self.name_of(name)), data)

    def _live(self, bare: str) -> Path:
        return self.root / f"{bare}{self.suffix}"

    def _version_dir(self, bare: str) -> Path:
        return self.versions_root / bare

    def _blob(self, bare: str, version: int) -> Path:
        return self._version_dir(bare) / f"{version:06d}{self.suffix}"
