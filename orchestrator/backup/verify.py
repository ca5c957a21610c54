"""Checking a backup archive without restoring it: the manifest, every member's size and
SHA-256, SQLite's integrity check of every database, and that each agent's part is complete.

Each problem is named; the kind of the worst one gives the exit code of `flotilla verify`.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from orchestrator.backup.manifest import FORMAT_VERSION, MANIFEST_NAME, FormatOnly, Manifest
from orchestrator.backup.snapshot import safe_relative

MAX_MANIFEST_BYTES = 64 * 1024 * 1024
READ_BLOCK = 1024 * 1024


class Verdict(IntEnum):
    """Exit codes of `flotilla verify`, worst last."""

    OK = 0
    INCOMPLETE = 4  # an agent's part is missing or was incomplete when taken
    DAMAGED = 5  # a member's sum or size is wrong, a database fails its integrity check
    UNREADABLE = 6  # not a backup archive, or of a newer format


class Problem(BaseModel):
    verdict: Verdict
    message: str


class VerifyReport(BaseModel):
    archive: str
    manifest: Manifest | None = None
    problems: list[Problem] = []
    checked_files: int = 0
    checked_databases: int = 0

    @property
    def verdict(self) -> Verdict:
        return max((p.verdict for p in self.problems), default=Verdict.OK)

    def add(self, verdict: Verdict, message: str) -> None:
        self.problems.append(Problem(verdict=verdict, message=message))


class ArchiveUnreadable(Exception):
    """Not a backup archive that this release can read; the message says why."""


def read_manifest(tar: tarfile.TarFile) -> Manifest:
    first = tar.next()
    if first is None or first.name != MANIFEST_NAME or not first.isfile():
        raise ArchiveUnreadable(f"its first member is not {MANIFEST_NAME}: not a flotilla backup")
    if first.size > MAX_MANIFEST_BYTES:
        raise ArchiveUnreadable(f"{MANIFEST_NAME} is larger than {MAX_MANIFEST_BYTES} bytes")
    handle = tar.extractfile(first)
    if handle is None:
        raise ArchiveUnreadable(f"{MANIFEST_NAME} cannot be read")
    raw = handle.read()
    try:
        format_version = FormatOnly.model_validate_json(raw).format_version
        if format_version > FORMAT_VERSION:
            raise ArchiveUnreadable(
                f"the archive has format {format_version}, written by a newer release; "
                f"this release reads format {FORMAT_VERSION} at most"
            )
        manifest = Manifest.model_validate_json(raw)
    except ValidationError as bad:
        raise ArchiveUnreadable(
            f"{MANIFEST_NAME} is not valid: {bad.error_count()} problem(s): {bad}"
        ) from None
    for entry in manifest.entries:
        try:
            safe_relative(entry.path)
        except ValueError as bad:
            raise ArchiveUnreadable(f"{MANIFEST_NAME} lists a member outside the archive: {bad}") from None
    return manifest


@contextmanager
def open_archive(archive: Path) -> Iterator[tarfile.TarFile]:
    try:
        tar = tarfile.open(archive, mode="r:")  # noqa: SIM115 (closed below, after the yield)
    except FileNotFoundError:
        raise ArchiveUnreadable(f"{archive} does not exist") from None
    except (tarfile.TarError, OSError) as failed:
        raise ArchiveUnreadable(f"{archive} is not a tar archive: {failed}") from None
    try:
        yield tar
    finally:
        tar.close()


def integrity(database: Path) -> str:
    """'ok', or what SQLite's integrity check found."""
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        try:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as failed:
        return str(failed)
    found = "; ".join(str(row[0]) for row in rows[:5])
    return found


def copy_and_sum(source: IO[bytes], out: IO[bytes]) -> tuple[Any, int]:
    """Copies source to out; the SHA-256 object and the size."""
    digest, size = hashlib.sha256(), 0
    for block in iter(lambda: source.read(READ_BLOCK), b""):
        digest.update(block)
        size += len(block)
        out.write(block)
    return digest, size


def verify_archive(archive: Path) -> VerifyReport:
    report = VerifyReport(archive=str(archive))
    try:
        with open_archive(archive) as tar:
            report.manifest = read_manifest(tar)
            _check_members(tar, report.manifest, report)
    except ArchiveUnreadable as unreadable:
        report.add(Verdict.UNREADABLE, str(unreadable))
        return report
    except (tarfile.TarError, OSError, EOFError) as failed:
        report.add(Verdict.UNREADABLE, f"the archive is truncated or damaged: {failed}")
        return report
    _check_agents(report.manifest, report)
    return report


def _check_members(tar: tarfile.TarFile, manifest: Manifest, report: VerifyReport) -> None:
    expected = {entry.path: entry for entry in manifest.entries}
    seen: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="flotilla-verify-") as scratch:
        for member in tar:
            if member.name == MANIFEST_NAME:
                continue
            entry = expected.get(member.name)
            if entry is None or not member.isfile():
                report.add(Verdict.DAMAGED, f"{member.name}: in the archive but not in the manifest")
                continue
            seen.add(member.name)
            handle = tar.extractfile(member)
            if handle is None:
                report.add(Verdict.DAMAGED, f"{member.name}: cannot be read")
                continue
            is_db = member.name.endswith(".db")
            copy = Path(scratch) / "check.db"
            with copy.open("wb") if is_db else open(os.devnull, "wb") as out:
                digest, size = copy_and_sum(handle, out)
            report.checked_files += 1
            if size != entry.size or digest.hexdigest() != entry.sha256:
                report.add(Verdict.DAMAGED, f"{member.name}: its SHA-256 or size does not match the manifest")
                continue
            if is_db:
                report.checked_databases += 1
                if (found := integrity(copy)) != "ok":
                    report.add(Verdict.DAMAGED, f"{member.name}: SQLite integrity check: {found}")
    for missing in sorted(set(expected) - seen):
        report.add(Verdict.DAMAGED, f"{missing}: in the manifest but missing from the archive")


def _check_agents(manifest: Manifest, report: VerifyReport) -> None:
    for part in manifest.agents:
        if not part.complete:
            report.add(Verdict.INCOMPLETE, f"agent {part.name}: its own files are missing: {part.problem}")
            continue
        names = {e.path for e in manifest.entries if e.agent == part.name}
        if part.has_memory and f"agents/{part.name}/own/memory.db" not in names:
            report.add(Verdict.INCOMPLETE, f"agent {part.name}: memory.db is not in the archive")
        if not any(e.kind == "operator" for e in manifest.entries if e.agent == part.name):
            report.add(
                Verdict.INCOMPLETE, f"agent {part.name}: the operator's copy of its workspace is missing"
            )
