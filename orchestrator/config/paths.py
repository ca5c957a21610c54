"""Files that fleet.yaml names: resolved inside the fleet folder, or refused.

A value is read as a path when it is one line that looks like one (it names a .md/.yaml file,
starts with '/', './', '../' or '~', or has a '/' and no space); anything else is inline text.
Symbolic links are followed before the check, so a link out of the folder is refused too.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.config.safe_yaml import YamlRefused, read_text_file

FILE_SUFFIXES = (".md", ".markdown", ".yaml", ".yml", ".txt", ".json")
PATH_PREFIXES = ("/", "./", "../", "~", ".\\", "..\\")
MAX_NAMED_FILE_BYTES = 256 * 1024


def looks_like_path(value: str) -> bool:
    text = value.strip()
    if not text or "\n" in text:
        return False
    if text.startswith(PATH_PREFIXES) or text.lower().endswith(FILE_SUFFIXES):
        return True
    return ("/" in text or "\\" in text) and not any(ch.isspace() for ch in text)


class FleetFolder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._resolved_root = root.resolve()

    def resolve(self, value: str) -> Path:
        """The file a path in fleet.yaml names; ValueError when it leaves the folder."""
        text = value.strip()
        if text.startswith("~"):
            raise ValueError(
                f"path {text!r} points into a home folder: refused; name a file inside {self.root}"
            )
        target = (self.root / text).resolve()
        if not target.is_relative_to(self._resolved_root):
            raise ValueError(f"path {text!r} escapes the fleet folder {self.root}: refused")
        return target

    def read(self, target: Path, shown: str) -> str:
        try:
            return read_text_file(target, MAX_NAMED_FILE_BYTES)
        except YamlRefused as refused:
            problem = refused.problems[0]
            where = f" (line {problem.line})" if problem.line else ""
            raise ValueError(f"file {shown!r}{where}: {problem.message}") from None

    def text_or_path(self, value: str) -> str:
        """Inline text as is; a path read from inside the folder."""
        if not looks_like_path(value):
            return value
        target = self.resolve(value)
        if not target.is_file():
            raise ValueError(f"file {value.strip()!r} not found in {self.root}")
        return self.read(target, value.strip())

    def optional_file(self, name: str) -> str | None:
        """A file the folder may hold (PROJECT.md); a link out of the folder is refused."""
        path = self.root / name
        if not path.exists() and not path.is_symlink():
            return None
        target = self.resolve(name)
        if not target.is_file():
            raise ValueError(f"{name} is not a regular file")
        return self.read(target, name)
