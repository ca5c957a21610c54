"""Sentence pairs labelled by hand, to measure the semantic contradiction rule.

contradicting: both cannot hold at once. compatible: a restatement, or one adds detail to the
other. unrelated: different subjects that share some wording.
"""

from __future__ import annotations

from typing import Literal

Label = Literal["contradicting", "compatible", "unrelated"]

PAIRS: list[tuple[str, str, Label]] = [
    # contradicting
    ("The user's flight leaves at 7:15", "The user's flight departs at 9:40", "contradicting"),
    ("The user lives in Berlin", "The user lives in Paris", "contradicting"),
    ("The user's daughter is 7 years old", "The user's daughter is 9 years old", "contradicting"),
    ("The user is allergic to peanuts", "The user is not allergic to peanuts", "contradicting"),
    (
        "The dentist appointment is on Tuesday at 3pm",
        "The dentist appointment is on Thursday at 3pm",
        "contradicting",
    ),
    ("The user works at Siemens as an engineer", "The user works at Bosch as an engineer", "contradicting"),
    (
        "The team meeting starts at 10:00 every Monday",
        "The team meeting starts at 11:30 every Monday",
        "contradicting",
    ),
    ("The user drinks coffee every morning", "The user never drinks coffee", "contradicting"),
    ("The user's wife is called Anna", "The user's wife is called Maria", "contradicting"),
    ("The user's rent is 1200 euros a month", "The user pays 950 euros rent per month", "contradicting"),
    ("The project deadline is 14 March", "The project deadline is 2 April", "contradicting"),
    ("The user's preferred airline is Lufthansa", "The user prefers to fly with KLM", "contradicting"),
    ("The user has two cats", "The user has three cats", "contradicting"),
    ("The user speaks Spanish fluently", "The user does not speak Spanish", "contradicting"),
    ("The user's next holiday is in Porto", "The user's next holiday is in Lisbon", "contradicting"),
    (
        "The user's gym class is on Wednesday evenings",
        "The user's gym class is on Friday evenings",
        "contradicting",
    ),
    # compatible
    ("The user's flight leaves at 7:15", "The user's flight departs at 7:15 from Terminal 2", "compatible"),
    ("The user lives in Berlin", "The user lives in Berlin with two roommates", "compatible"),
    ("The user is vegetarian", "The user does not eat meat", "compatible"),
    ("The user's daughter is 7 years old", "The user has a daughter who is 7", "compatible"),
    (
        "The user works at Siemens as an engineer",
        "The user is an engineer at Siemens in Munich",
        "compatible",
    ),
    ("The team meeting starts at 10:00 every Monday", "Every Monday the team meets at 10:00", "compatible"),
    ("The user prefers short answers", "The user likes brief, concise replies", "compatible"),
    ("The user's wife is called Anna", "Anna is the user's wife", "compatible"),
    ("The project deadline is 14 March", "The project must be finished by 14 March", "compatible"),
    ("The user drinks coffee every morning", "The user has a coffee each morning before work", "compatible"),
    ("The user has two cats", "The user has two cats named Miso and Tofu", "compatible"),
    (
        "The user's next holiday is in Porto",
        "The user is planning a holiday in Porto next month",
        "compatible",
    ),
    # unrelated
    ("The user's flight leaves at 7:15", "The user's favourite colour is green", "unrelated"),
    ("The user lives in Berlin", "The user is learning to play the piano", "unrelated"),
    ("The user is allergic to peanuts", "The user's car is a blue Volkswagen", "unrelated"),
    ("The dentist appointment is on Tuesday at 3pm", "The user's sister lives in Madrid", "unrelated"),
    ("The user works at Siemens as an engineer", "The user's son plays football on Saturdays", "unrelated"),
    ("The user's rent is 1200 euros a month", "The user reads science fiction novels", "unrelated"),
    ("The user has two cats", "The user's laptop runs Linux", "unrelated"),
    ("The team meeting starts at 10:00 every Monday", "The user's bike was repaired last week", "unrelated"),
    ("The user's daughter is 7 years old", "The user's train to Hamburg leaves at 8:05", "unrelated"),
    ("The user's gym class is on Wednesday evenings", "The user's passport expires in 2029", "unrelated"),
    # unrelated, in the same words: both can hold
    ("The user's flight leaves at 7:15", "The user's train leaves at 9:40", "unrelated"),
    ("The user's sister lives in Madrid", "The user's brother lives in Rome", "unrelated"),
    ("The user's daughter is 7 years old", "The user's son is 10 years old", "unrelated"),
    ("The dentist appointment is on Tuesday at 3pm", "The car service is on Thursday at 9am", "unrelated"),
    ("The user has two cats", "The user has three brothers", "unrelated"),
    ("The user's wife is called Anna", "The user's dog is called Max", "unrelated"),
    (
        "Anna's flight to Rome leaves on Monday at 7:15",
        "Tom's flight to Oslo leaves on Friday at 9:00",
        "unrelated",
    ),
    ("The user met Lena in Vienna on 3 May", "The user met Omar in Prague on 9 June", "unrelated"),
]
