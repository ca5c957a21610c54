"""Standing orders in HEARTBEAT.md: a `## Rules` section of list items, each `<when>: <what>`.

    ## Rules
    - every 2h: check the build status
    - daily 09:00: write the standup note
    - weekdays 17:30 Europe/Paris: summarise the day
    - mon,thu 08:00: review open issues
    - cron "0 9 * * 1" UTC: plan the week

`<when>` is one of `every DURATION`, `hourly`, `daily HH:MM`, `weekdays HH:MM`, `weekends HH:MM`,
a comma-separated list of days (or a range such as `mon-fri`) followed by `HH:MM`, or
`cron "EXPR"`; the clock forms take an optional IANA time zone (default: the heartbeat's).
Parsing is deterministic and never raises on a bad line: each problem is returned as a
RuleError naming the line. docs/heartbeat.md is the user-facing description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from orchestrator.config.cron import cron_problem
from orchestrator.config.units import parse_duration
from orchestrator.scheduler.cadence import cron_next, cron_prev

RULES_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s*rules\s*#*\s*$", re.IGNORECASE)
OTHER_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+\S")
LIST_ITEM = re.compile(r"^(\s*)[-*+]\s+(.*)$")
FENCE = re.compile(r"^\s*(```|~~~)")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
SPLIT = re.compile(r"^(?P<when>.+?):(?:\s+(?P<what>.*))?$")
TIME = re.compile(r"^(?P<h>\d{1,2}):(?P<m>\d{2})$")
NOTIFY_TASK = re.compile(
    r"^notify\s+(?P<channel>[a-z][a-z0-9-]*)\s*:\s*(?P<text>\S.*)$", re.IGNORECASE | re.DOTALL
)
CRON = re.compile(r'^cron\s+"(?P<expr>[^"]*)"(?:\s+(?P<tz>\S+))?$', re.IGNORECASE)

DAYS = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
DAY_ALIASES = {
    "sunday": "sun",
    "monday": "mon",
    "tuesday": "tue",
    "tues": "tue",
    "wednesday": "wed",
    "thursday": "thu",
    "thur": "thu",
    "thurs": "thu",
    "friday": "fri",
    "saturday": "sat",
}
NAMED_DAYS = {"daily": "*", "weekdays": "1-5", "weekends": "0,6"}
SYNTAX_HINT = (
    'use "every 2h", "hourly", "daily 09:00", "weekdays 17:30 Europe/Paris", "mon,thu 08:00" '
    'or cron "0 9 * * 1"'
)


class RuleSyntaxError(ValueError):
    """One rule line could not be read; the message says what is wrong."""


@dataclass(frozen=True)
class Rule:
    """One parsed rule. `every_s` is set for interval rules, `cron` + `tz` for clock rules."""

    line: int
    when: str
    task: str
    every_s: float | None = None
    cron: str | None = None
    tz: str = "UTC"

    @property
    def notify(self) -> tuple[str, str] | None:
        """(channel, text) of a rule written `<when>: notify CHANNEL: TEXT`: the orchestrator sends
        the text itself when the rule is due, without waking the agent's model."""
        match = NOTIFY_TASK.match(self.task)
        return (match["channel"].lower(), match["text"].strip()) if match else None

    @property
    def key(self) -> str:
        """Identity for the rule's persisted last-done time; editing a rule makes it a new one."""
        return f"{' '.join(self.when.lower().split())}: {' '.join(self.task.split())}"

    def is_due(self, at: datetime, last_done: datetime | None, first_seen: datetime) -> bool:
        """Interval rules are due at once when new, then `every` after they were last done; clock
        rules are due when one of their times passed since they were last done (or first seen)."""
        if self.every_s is not None:
            return last_done is None or at >= last_done + timedelta(seconds=self.every_s)
        assert self.cron is not None
        baseline = last_done or first_seen
        return cron_prev(self.cron, ZoneInfo(self.tz), at) > baseline

    def next_due(self, at: datetime, last_done: datetime | None, first_seen: datetime) -> datetime:
        if self.is_due(at, last_done, first_seen):
            return at
        if self.every_s is not None:
            assert last_done is not None
            return last_done + timedelta(seconds=self.every_s)
        assert self.cron is not None
        return cron_next(self.cron, ZoneInfo(self.tz), at)


@dataclass(frozen=True)
class RuleError:
    line: int
    text: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "rule"
        return f"HEARTBEAT.md {where}: {self.text!r}: {self.message}"


@dataclass(frozen=True)
class ParsedRules:
    rules: list[Rule] = field(default_factory=list)
    errors: list[RuleError] = field(default_factory=list)
    has_section: bool = False


def _zone(name: str | None, default_tz: str) -> str:
    zone = name or default_tz
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise RuleSyntaxError(f"unknown time zone {zone!r}: use an IANA name such as Europe/Paris") from None
    return zone


def _time(text: str) -> tuple[int, int]:
    match = TIME.match(text)
    if not match:
        raise RuleSyntaxError(f"invalid time {text!r}: write HH:MM on a 24-hour clock, e.g. 09:00")
    hour, minute = int(match["h"]), int(match["m"])
    if hour > 23 or minute > 59:
        raise RuleSyntaxError(f"invalid time {text!r}: hours are 00-23 and minutes 00-59")
    return hour, minute


def _day(name: str) -> int:
    word = name.strip().lower()
    word = DAY_ALIASES.get(word, DAY_ALIASES.get(word.removesuffix("s"), word.removesuffix("s")))
    if word not in DAYS:
        raise RuleSyntaxError(f"unknown day {name!r}: use mon, tue, wed, thu, fri, sat or sun")
    return DAYS[word]


def _days(text: str) -> str:
    """'mon,thu' -> '1,4'; 'mon-fri' -> '1-5'; 'mondays' -> '1'."""
    parts = []
    for chunk in text.split(","):
        if "-" in chunk:
            first, _, last = chunk.partition("-")
            parts.append(f"{_day(first)}-{_day(last)}")
        else:
            parts.append(str(_day(chunk)))
    return ",".join(parts)


def _clock_rule(words: list[str], default_tz: str) -> tuple[str, str]:
    """`daily 09:00 [TZ]`, `weekdays 17:30 [TZ]`, `mon,thu 08:00 [TZ]` -> (cron, tz)."""
    if len(words) not in (2, 3):
        raise RuleSyntaxError(f"expected '<days> HH:MM [time zone]'; {SYNTAX_HINT}")
    days = NAMED_DAYS.get(words[0].lower()) or _days(words[0])
    hour, minute = _time(words[1])
    return f"{minute} {hour} * * {days}", _zone(words[2] if len(words) == 3 else None, default_tz)


def _schedule(when: str, default_tz: str) -> tuple[float | None, str | None, str]:
    """Parse the `<when>` part into (every_s, cron, tz)."""
    if when.lower().startswith("cron"):
        match = CRON.match(when)
        if not match:
            raise RuleSyntaxError('expected cron "MIN HOUR DAY MONTH WEEKDAY" [time zone], in double quotes')
        expr = match["expr"].strip()
        problem = cron_problem(expr)
        if problem:
            raise RuleSyntaxError(problem)
        return None, expr, _zone(match["tz"], default_tz)
    words = when.split()
    head = words[0].lower()
    if head == "every":
        if len(words) != 2:
            raise RuleSyntaxError("expected 'every DURATION', e.g. every 2h or every 30m")
        try:
            return parse_duration(words[1]), None, default_tz
        except ValueError as bad:
            raise RuleSyntaxError(str(bad)) from None
    if head == "hourly":
        if len(words) > 2:
            raise RuleSyntaxError("expected 'hourly' or 'hourly TIMEZONE'")
        return None, "0 * * * *", _zone(words[1] if len(words) == 2 else None, default_tz)
    try:
        cron, tz = _clock_rule(words, default_tz)
    except RuleSyntaxError as bad:
        if head in NAMED_DAYS or _looks_like_days(head):
            raise
        raise RuleSyntaxError(f"unknown schedule {when!r}: {SYNTAX_HINT}") from bad
    return None, cron, tz


def _looks_like_days(word: str) -> bool:
    try:
        _days(word)
    except RuleSyntaxError:
        return False
    return True


def parse_rule(text: str, default_tz: str = "UTC", line: int = 0) -> Rule:
    """Parse one rule (without its list marker). Raises RuleSyntaxError."""
    stripped = " ".join(text.split())
    match = SPLIT.match(stripped)
    if not match:
        raise RuleSyntaxError(f"expected '<when>: <what to do>'; {SYNTAX_HINT}")
    when, task = match["when"].strip(), (match["what"] or "").strip()
    if not task:
        raise RuleSyntaxError("the rule says when but not what to do: write '<when>: <what to do>'")
    every_s, cron, tz = _schedule(when, _zone(None, default_tz))
    return Rule(line=line, when=when, task=task, every_s=every_s, cron=cron, tz=tz)


def parse_rule_lines(lines: list[str], default_tz: str = "UTC") -> ParsedRules:
    """Parse rules given one per string (fleet.yaml `heartbeat.rules`)."""
    parsed = ParsedRules(has_section=True)
    for index, text in enumerate(lines, start=1):
        _collect(parsed, text.strip().removeprefix("- ").strip(), default_tz, index)
    return parsed


def _collect(parsed: ParsedRules, text: str, default_tz: str, line: int) -> None:
    try:
        parsed.rules.append(parse_rule(text, default_tz, line))
    except RuleSyntaxError as bad:
        parsed.errors.append(RuleError(line=line, text=text, message=str(bad)))


def _blank_comments(text: str) -> str:
    """Drop HTML comments but keep their line breaks, so line numbers stay true."""
    return COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _section_items(text: str) -> tuple[bool, list[tuple[int, str]]]:
    """The list items of the Rules section as (line number, text), continuation lines joined."""
    items: list[tuple[int, str]] = []
    in_section, in_fence, found = False, False, False
    section_level = 0
    for number, raw in enumerate(_blank_comments(text).splitlines(), start=1):
        if FENCE.match(raw):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        heading = RULES_HEADING.match(raw)
        if heading:
            in_section, found, section_level = True, True, len(heading.group(1))
            continue
        other = OTHER_HEADING.match(raw)
        if other and in_section and len(other.group(1)) <= section_level:
            in_section = False
        if not in_section:
            continue
        item = LIST_ITEM.match(raw)
        if item and len(item.group(1)) < 2:
            items.append((number, item.group(2)))
        elif raw.strip() and items and raw.startswith((" ", "\t")):
            line, previous = items[-1]
            items[-1] = (line, f"{previous} {raw.strip()}")
    return found, items


def parse_heartbeat_md(text: str, default_tz: str = "UTC") -> ParsedRules:
    """All rules of a HEARTBEAT.md, with one RuleError per bad line; never raises."""
    found, items = _section_items(text)
    parsed = ParsedRules(has_section=found)
    for line, item in items:
        _collect(parsed, item, default_tz, line)
    return parsed


RULES_HELP = """<!-- One rule per list item: "<when>: <what to do>". <when> is one of:
     every 2h | hourly | daily 09:00 | weekdays 17:30 Europe/Paris | weekends 10:00
     mon,thu 08:00 | mon-fri 12:00 | cron "0 9 * * 1"   (time zone optional; see docs/heartbeat.md) -->"""


def render_heartbeat_md(rules: list[str]) -> str:
    """A HEARTBEAT.md seeded with fleet.yaml's `heartbeat.rules` (written as given, even if bad:
    problems are reported by `flotilla heartbeat --check`, and the operator fixes them here)."""
    items = "".join(f"- {' '.join(rule.split()).removeprefix('- ')}\n" for rule in rules)
    return (
        "# Heartbeat\n\n"
        "Standing orders. On every heartbeat the orchestrator checks, without calling a model,\n"
        "whether a rule below is due, whether work waits in the inbox, whether someone else\n"
        "changed a workspace file and whether failed work waits for a retry. Only then are you\n"
        "woken with a heartbeat item that says what is due.\n\n"
        "## Rules\n\n"
        f"{RULES_HELP}\n\n"
        f"{items}"
    )
