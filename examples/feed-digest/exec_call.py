"""Print the `exec` call a model following instructions.md makes once it has the feed:
`flotilla send digest "$(python3 exec_call.py)"` drives it with the built-in `test` model.

The script is the one in instructions.md, with the feed that serve_feed.py serves pasted in, as
a model pastes the text its http_request returned (the sandbox has no network to fetch it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from serve_feed import FEED

HERE = Path(__file__).resolve().parent


def script() -> str:
    """The Python block of instructions.md, with FEED filled in."""
    text = (HERE / "instructions.md").read_text()
    found = re.search(r"```python\n(.*?)```", text, re.S)
    if found is None:
        raise SystemExit("instructions.md has no ```python block")
    return found.group(1).replace("PASTE THE FEED HERE", FEED.strip())


def main() -> None:
    arguments = {"python": script(), "files": ["MEMORY.md"], "outputs": ["MEMORY.md"]}
    print(f"call exec {json.dumps(arguments)}")


if __name__ == "__main__":
    main()
