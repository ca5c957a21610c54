"""HEARTBEAT.md rule syntax, rule due-ness, and heartbeat cadences (cron with time zones, jitter)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.config.models import HeartbeatConfig
from orchestrator.scheduler.cadence import Cadence, jitter_offset
from orchestrator.scheduler.rules import (
    RuleSyntaxError,
    parse_heartbeat_md,
    parse_rule,
    parse_rule_lines,
    render_heartbeat_md,
)

MONDAY = datetime(2025, 1, 6, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "every_s", "cron", "tz"),
    [
        ("every 2h: check the build status", 7200.0, None, "UTC"),
        ("every 30m: look at the queue", 1800.0, None, "UTC"),
        ("hourly: rotate the scratch file", None, "0 * * * *", "UTC"),
        ("daily 09:00: write the standup note", None, "0 9 * * *", "UTC"),
        ("weekdays 17:30 Europe/Paris: summarise the day", None, "30 17 * * 1-5", "Europe/Paris"),
        ("weekends 10:05: water the plants", None, "5 10 * * 0,6", "UTC"),
        ("mon,thu 08:00: review open issues", None, "0 8 * * 1,4", "UTC"),
        ("Mondays 7:15: plan the week", None, "15 7 * * 1", "UTC"),
        ("mon-fri 12:00 America/New_York: lunch report", None, "0 12 * * 1-5", "America/New_York"),
        ('cron "0 9 * * 1": plan the week: carefully', None, "0 9 * * 1", "UTC"),
        ('cron "*/10 * * * *" Asia/Tokyo: poll', None, "*/10 * * * *", "Asia/Tokyo"),
    ],
)
def test_rule_forms(text: str, every_s: float | None, cron: str | None, tz: str) -> None:
    rule = parse_rule(text)
    assert (rule.every_s, rule.cron, rule.tz) == (every_s, cron, tz)
    assert rule.task


def test_task_keeps_its_own_colons() -> None:
    assert parse_rule("daily 09:00: note: short").task == "note: short"
    assert parse_rule('cron "0 9 * * 1": plan the week: carefully').task == "plan the week: carefully"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("every 2x: nonsense", "invalid duration '2x'"),
        ("daily 25:00: too late", "invalid time '25:00'"),
        ("daily 9am: what", "invalid time '9am'"),
        ("weekdays 17:30 Mars/Olympus: far", "unknown time zone 'Mars/Olympus'"),
        ('cron "61 * * * *": bad', "invalid cron expression"),
        ("cron 0 9 * * 1: unquoted", "in double quotes"),
        ("sometimes: maybe", "unknown schedule 'sometimes'"),
        ("funday 09:00: fun", "unknown schedule"),
        ("daily 09:00:", "says when but not what"),
        ("just some words", "expected '<when>: <what to do>'"),
    ],
)
def test_bad_rules_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(RuleSyntaxError, match=message.replace("*", r"\*")):
        parse_rule(text)


def test_heartbeat_md_rules_section_with_line_numbers_and_errors() -> None:
    text = """# Heartbeat

Some prose, and a list outside the section that is not a rule:
- every 1m: not a rule

## Rules

<!-- a comment
- every 1m: commented out -->
- every 2h: check the build status
- daily 09:00: write the standup
  note and send it to the lead
- every soon: broken

```
- every 1m: an example in a code fence
```

## Notes
- every 1m: not a rule either
"""
    parsed = parse_heartbeat_md(text, "Europe/Paris")
    assert parsed.has_section
    assert [(r.line, r.when, r.task) for r in parsed.rules] == [
        (10, "every 2h", "check the build status"),
        (11, "daily 09:00", "write the standup note and send it to the lead"),
    ]
    assert parsed.rules[1].tz == "Europe/Paris"
    assert len(parsed.errors) == 1
    assert parsed.errors[0].line == 13
    assert str(parsed.errors[0]) == (
        "HEARTBEAT.md line 13: 'every soon: broken': invalid duration 'soon': "
        "use a number and a unit, e.g. 30s, 15m, 2h, 1d"
    )


def test_render_seeds_rules_that_parse_back() -> None:
    rules = ["every 2h: check the build status", "- weekdays 17:30 Europe/Paris: summarise"]
    text = render_heartbeat_md(rules)
    parsed = parse_heartbeat_md(text)
    assert [r.key for r in parsed.rules] == [
        "every 2h: check the build status",
        "weekdays 17:30 europe/paris: summarise",
    ]
    assert parsed.errors == []
    assert parse_heartbeat_md(render_heartbeat_md([])).rules == []
    assert parse_rule_lines(["every nope: x"]).errors[0].line == 1


def test_interval_rule_is_due_when_new_then_every_interval() -> None:
    rule = parse_rule("every 2h: x")
    assert rule.is_due(MONDAY, None, MONDAY)
    assert not rule.is_due(MONDAY + timedelta(hours=1, minutes=59), MONDAY, MONDAY)
    assert rule.is_due(MONDAY + timedelta(hours=2), MONDAY, MONDAY)
    assert rule.next_due(MONDAY + timedelta(hours=1), MONDAY, MONDAY) == MONDAY + timedelta(hours=2)


def test_clock_rule_is_due_after_its_time_passes_once() -> None:
    rule = parse_rule("daily 09:00 Europe/Paris: standup")  # 08:00 UTC in January
    seen = MONDAY  # first seen at midnight
    assert not rule.is_due(MONDAY + timedelta(hours=7, minutes=59), None, seen)
    assert rule.is_due(MONDAY + timedelta(hours=8), None, seen)
    done = MONDAY + timedelta(hours=8, minutes=15)
    assert not rule.is_due(MONDAY + timedelta(hours=23), done, seen)
    assert rule.is_due(MONDAY + timedelta(days=1, hours=8), done, seen)
    assert rule.next_due(done, done, seen) == datetime(2025, 1, 7, 8, 0, tzinfo=UTC)
    # A clock rule added after its time today waits for tomorrow.
    assert not parse_rule("daily 09:00: x").is_due(
        MONDAY + timedelta(hours=10), None, MONDAY + timedelta(hours=10)
    )


def test_cron_heartbeat_in_a_time_zone_follows_local_time_and_dst() -> None:
    config = HeartbeatConfig(cron="0 9 * * 1-5", tz="Europe/Paris")
    cadence = Cadence.of(config, "fleet", "agent")
    winter = cadence.first_slot(MONDAY)
    assert winter == datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
    friday = datetime(2025, 1, 10, 8, 0, tzinfo=UTC)
    assert cadence.after(friday) == datetime(2025, 1, 13, 8, 0, tzinfo=UTC)  # weekend skipped
    summer = cadence.first_slot(datetime(2025, 7, 7, 0, 0, tzinfo=UTC))
    assert summer == datetime(2025, 7, 7, 7, 0, tzinfo=UTC)
    # Across the spring change (30 March 2025) the local hour stays 09:00.
    assert cadence.after(datetime(2025, 3, 28, 8, 0, tzinfo=UTC)) == datetime(2025, 3, 31, 7, 0, tzinfo=UTC)


def test_catch_up_counts_missed_slots() -> None:
    every = Cadence.of(HeartbeatConfig(every="15m"), "f", "a")
    slot = MONDAY + timedelta(hours=6)
    catch_up = every.catch_up(slot, MONDAY + timedelta(hours=8, minutes=5))
    assert (catch_up.count, catch_up.latest, catch_up.next_slot) == (
        9,
        MONDAY + timedelta(hours=8),
        MONDAY + timedelta(hours=8, minutes=15),
    )
    cron = Cadence.of(HeartbeatConfig(cron="0 * * * *"), "f", "a")
    catch_up = cron.catch_up(MONDAY, MONDAY + timedelta(hours=3, minutes=30))
    assert (catch_up.count, catch_up.latest) == (4, MONDAY + timedelta(hours=3))
    assert Cadence.grace_s(catch_up) == 60.0


def test_jitter_is_stable_per_agent_and_bounded() -> None:
    offsets = {jitter_offset("fleet", f"agent-{n}", 300.0) for n in range(50)}
    assert all(0 <= offset < 300 for offset in offsets)
    assert len(offsets) == 50
    assert jitter_offset("fleet", "agent-1", 300.0) == jitter_offset("fleet", "agent-1", 300.0)
    cadence = Cadence.of(HeartbeatConfig(every="10m", jitter="5m"), "fleet", "agent-1")
    assert cadence.first_slot(MONDAY) == MONDAY + timedelta(seconds=cadence.offset_s)
    assert cadence.offset_s == jitter_offset("fleet", "agent-1", 300.0)


def test_schedule_without_every_or_cron_defaults_to_15_minutes() -> None:
    cadence = Cadence.of(HeartbeatConfig(rules=["every 2h: x"]), "f", "a")
    assert cadence.every_s == 900.0
