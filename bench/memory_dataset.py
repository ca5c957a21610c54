# ruff: noqa: RUF001 - the Chinese and Japanese sentences end with full-width question marks.
"""The labelled memory set: fact pairs and paraphrase queries, generated from a fixed seed.

Where each part comes from: every sentence is produced here by `generate(seed)` from templates
and word lists written by hand for this set (no public data set, nothing taken from the memory
rules' own examples). The label of a pair is the template family that produced it, fixed before
any sentence is drawn:
- updated: one thing (same person, ticket, project ...) with a single-valued attribute whose
  value changes ("Ticket OPS-41 is assigned to Anna." -> "... to Omar.");
- distinct: two things told apart by an identifier (an id, a ref, a number, a person, the
  date of another event) in otherwise similar wording, or a set-valued attribute gaining a
  second value ("Anna speaks German." / "Anna speaks Italian.");
- contradiction: a person's statement (user_stated) then a lower-ranked guess (inferred) that
  gives the same attribute of the same thing another value, or negates it;
- unrelated: two facts of different families about different things.
Paraphrase queries are written per family with none of the fact's content words where the
language allows it; the target of a query is the fact its family produced in the same store.

`half` splits the set in two by position: "dev" (even) and "held_out" (odd). Rules are only
ever looked at on dev; the benchmark reports both.

    python -m bench.memory_dataset            # counts
    python -m bench.memory_dataset --dump F   # the whole set as JSON
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

SEED = 40
Label = Literal["updated", "distinct", "contradiction", "unrelated"]
Half = Literal["dev", "held_out"]

PEOPLE = ["Anna", "Omar", "Lena", "Ravi", "Chen", "Sofia", "Jonas", "Ines", "Marek", "Yuki", "Paulo", "Greta"]
CITIES = ["Berlin", "Lisbon", "Porto", "Madrid", "Oslo", "Vienna", "Prague", "Munich", "Lyon", "Turin"]
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne"]
LANGUAGES = ["French", "English", "German", "Spanish", "Italian", "Dutch", "Polish"]
PROJECTS = ["Apollo", "Borealis", "Cobalt", "Delta", "Ember", "Fjord", "Gemini", "Helix"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "September", "October"]
SERVICES = ["billing", "search", "checkout", "login", "payments", "reporting"]
FOODS = ["peanuts", "shellfish", "gluten", "lactose", "eggs", "sesame"]
HABITS = [("drinks", "coffee every morning"), ("eats", "meat"), ("takes", "the train to work")]
TEAMS = ["platform", "design", "sales", "data", "support"]
REFS = ["MARK", "OBS", "LOG", "NOTE"]


class Pair(BaseModel):
    """Two facts saved one after the other, in one category."""

    family: str
    label: Label
    first: str
    second: str
    first_source: str
    second_source: str
    half: Half


class Query(BaseModel):
    """A question put to a store that holds `target` among other facts: a paraphrase, or one
    of the fact's own words (`keyword`, for keyword-only search)."""

    kind: Literal["paraphrase", "keyword"]
    family: str
    language: str
    store: str
    query: str
    target: str
    half: Half


class StoreFact(BaseModel):
    store: str
    text: str


class Dataset(BaseModel):
    seed: int
    pairs: list[Pair]
    queries: list[Query]
    facts: list[StoreFact]


def _time(rng: random.Random) -> str:
    return f"{rng.randrange(7, 19)}:{rng.choice(['00', '15', '30', '45'])}"


def _date(rng: random.Random) -> str:
    return f"{rng.randrange(1, 29)} {rng.choice(MONTHS)}"


def _two(rng: random.Random, pool: list[str]) -> tuple[str, str]:
    first, second = rng.sample(pool, 2)
    return first, second


def _phone(rng: random.Random) -> str:
    return f"555-{rng.randrange(1000, 9999)}"


def _ticket(rng: random.Random) -> str:
    return f"{rng.choice(['OPS', 'WEB', 'SEC'])}-{rng.randrange(10, 999)}"


# Each maker returns (first, second) for one pair of its family.
PairMaker = Callable[[random.Random], tuple[str, str]]


def _updated_makers() -> dict[str, PairMaker]:
    def home(rng: random.Random) -> tuple[str, str]:
        who, (a, b) = rng.choice(PEOPLE), _two(rng, CITIES)
        return f"{who}'s home city is {a}.", f"{who}'s home city is {b}."

    def meeting(rng: random.Random) -> tuple[str, str]:
        team = rng.choice(TEAMS)
        a, b = _time(rng), _time(rng)
        while b == a:
            b = _time(rng)
        return f"The {team} standup starts at {a}.", f"The {team} standup starts at {b}."

    def phone(rng: random.Random) -> tuple[str, str]:
        who = rng.choice(PEOPLE)
        return f"{who}'s phone number is {_phone(rng)}.", f"{who}'s phone number is {_phone(rng)}."

    def language(rng: random.Random) -> tuple[str, str]:
        who, (a, b) = rng.choice(PEOPLE), _two(rng, LANGUAGES)
        return f"{who} wants replies in {a}.", f"{who} wants replies in {b}."

    def deadline(rng: random.Random) -> tuple[str, str]:
        project = rng.choice(PROJECTS)
        a, b = _date(rng), _date(rng)
        while b == a:
            b = _date(rng)
        return f"The {project} deadline is {a}.", f"The {project} deadline is {b}."

    def employer(rng: random.Random) -> tuple[str, str]:
        who, (a, b) = rng.choice(PEOPLE), _two(rng, COMPANIES)
        return f"{who} works at {a}.", f"{who} works at {b}."

    def assignee(rng: random.Random) -> tuple[str, str]:
        ticket, (a, b) = _ticket(rng), _two(rng, PEOPLE)
        return f"Ticket {ticket} is assigned to {a}.", f"Ticket {ticket} is assigned to {b}."

    def due(rng: random.Random) -> tuple[str, str]:
        number, company = rng.randrange(1000, 9999), rng.choice(COMPANIES)
        a, b = _date(rng), _date(rng)
        while b == a:
            b = _date(rng)
        return (
            f"Invoice {number} for {company} is due on {a}.",
            f"Invoice {number} for {company} is due on {b}.",
        )

    def version(rng: random.Random) -> tuple[str, str]:
        host = f"{rng.choice(['db', 'web', 'cache'])}{rng.randrange(1, 20)}"
        major = rng.randrange(1, 9)
        a, b = f"{major}.{rng.randrange(0, 5)}", f"{major}.{rng.randrange(5, 10)}"
        return f"Server {host} runs version {a}.", f"Server {host} runs version {b}."

    def budget(rng: random.Random) -> tuple[str, str]:
        project = rng.choice(PROJECTS)
        a, b = rng.randrange(10, 90) * 1000, rng.randrange(91, 200) * 1000
        return (
            f"The budget of project {project} is {a} euros.",
            f"The budget of project {project} is {b} euros.",
        )

    return {
        "home_city": home,
        "standup_time": meeting,
        "phone": phone,
        "reply_language": language,
        "deadline": deadline,
        "employer": employer,
        "ticket_assignee": assignee,
        "invoice_due": due,
        "server_version": version,
        "project_budget": budget,
    }


def _distinct_makers() -> dict[str, PairMaker]:
    def invoices(rng: random.Random) -> tuple[str, str]:
        number, company = rng.randrange(1000, 9000), rng.choice(COMPANIES)
        return (
            f"Invoice {number} for {company} was paid on {_date(rng)}.",
            f"Invoice {number + rng.randrange(1, 9)} for {company} was paid on {_date(rng)}.",
        )

    def observations(rng: random.Random) -> tuple[str, str]:
        ref, day = rng.choice(REFS), rng.randrange(1, 400)
        later = day + rng.randrange(1, 30)
        (a, b), thing = (
            _two(rng, PEOPLE),
            rng.choice(["the boiler", "the pump", "the backup job", "the door"]),
        )
        return (
            f"On day {day}, {a} noted that {thing} was checked (ref: {ref}-{day:03d}).",
            f"On day {later}, {b} noted that {thing} was checked (ref: {ref}-{later:03d}).",
        )

    def same_person_observations(rng: random.Random) -> tuple[str, str]:
        ref, day = rng.choice(REFS), rng.randrange(1, 400)
        later, who = day + rng.randrange(1, 30), rng.choice(PEOPLE)
        return (
            f"On day {day}, {who} noted the gauge read {rng.randrange(10, 99)} (ref: {ref}-{day:03d}).",
            f"On day {later}, {who} noted the gauge read {rng.randrange(10, 99)} (ref: {ref}-{later:03d}).",
        )

    def tickets(rng: random.Random) -> tuple[str, str]:
        who = rng.choice(PEOPLE)
        first, second = _ticket(rng), _ticket(rng)
        while second == first:
            second = _ticket(rng)
        return f"Ticket {first} is assigned to {who}.", f"Ticket {second} is assigned to {who}."

    def people_cities(rng: random.Random) -> tuple[str, str]:
        (a, b), city = _two(rng, PEOPLE), rng.choice(CITIES)
        return f"{a}'s home city is {city}.", f"{b}'s home city is {rng.choice(CITIES)}."

    def flights(rng: random.Random) -> tuple[str, str]:
        (a, b) = _two(rng, PEOPLE)
        return f"{a}'s flight leaves at {_time(rng)}.", f"{b}'s flight leaves at {_time(rng)}."

    def incidents(rng: random.Random) -> tuple[str, str]:
        number, service = rng.randrange(100, 900), rng.choice(SERVICES)
        return (
            f"Incident INC-{number} on {_date(rng)}: {service} was down for {rng.randrange(5, 90)} minutes.",
            f"Incident INC-{number + rng.randrange(1, 50)} on {_date(rng)}: {service} was down for "
            f"{rng.randrange(5, 90)} minutes.",
        )

    def readings(rng: random.Random) -> tuple[str, str]:
        meter, month = rng.randrange(1, 40), rng.choice(MONTHS)
        day = rng.randrange(1, 27)
        return (
            f"On {day} {month} meter M{meter} read {rng.randrange(100, 999)} kWh.",
            f"On {day + 1} {month} meter M{meter} read {rng.randrange(100, 999)} kWh.",
        )

    def orders(rng: random.Random) -> tuple[str, str]:
        number = rng.randrange(10000, 99999)
        return (
            f"Order #{number} ships to {rng.choice(CITIES)}.",
            f"Order #{number + rng.randrange(1, 99)} ships to {rng.choice(CITIES)}.",
        )

    def speaks(rng: random.Random) -> tuple[str, str]:
        who, (a, b) = rng.choice(PEOPLE), _two(rng, LANGUAGES)
        return f"{who} speaks {a}.", f"{who} speaks {b}."

    def visited(rng: random.Random) -> tuple[str, str]:
        who, (a, b) = rng.choice(PEOPLE), _two(rng, CITIES)
        return f"{who} has visited {a}.", f"{who} has visited {b}."

    return {
        "invoices_paid": invoices,
        "observations": observations,
        "observations_same_person": same_person_observations,
        "tickets": tickets,
        "people_cities": people_cities,
        "people_flights": flights,
        "incidents": incidents,
        "meter_readings": readings,
        "orders": orders,
        "speaks": speaks,
        "visited": visited,
    }


def _contradiction_makers() -> dict[str, PairMaker]:
    updated = _updated_makers()

    def allergy(rng: random.Random) -> tuple[str, str]:
        food = rng.choice(FOODS)
        return f"The user is allergic to {food}.", f"The user is not allergic to {food}."

    def habit(rng: random.Random) -> tuple[str, str]:
        verb, thing = rng.choice(HABITS)
        return f"The user {verb} {thing}.", f"The user never {verb} {thing}."

    return {
        "reply_language": updated["reply_language"],
        "home_city": updated["home_city"],
        "standup_time": updated["standup_time"],
        "employer": updated["employer"],
        "deadline": updated["deadline"],
        "allergy": allergy,
        "habit": habit,
    }


def _pairs(rng: random.Random) -> list[Pair]:
    plan: list[tuple[Label, dict[str, PairMaker], int]] = [
        ("updated", _updated_makers(), 150),
        ("distinct", _distinct_makers(), 220),
        ("contradiction", _contradiction_makers(), 100),
    ]
    pairs: list[Pair] = []
    for label, makers, count in plan:
        names = sorted(makers)
        for index in range(count):
            family = names[index % len(names)]
            first, second = makers[family](rng)
            sources = _sources(label, rng)
            pairs.append(Pair(family=family, label=label, first=first, second=second, half="dev", **sources))
    everything = [*_updated_makers().items(), *_distinct_makers().items()]
    for _ in range(100):
        (family_a, make_a), (family_b, make_b) = rng.sample(everything, 2)
        sources = _sources("unrelated", rng)
        pairs.append(
            Pair(
                family=f"{family_a}+{family_b}",
                label="unrelated",
                first=make_a(rng)[0],
                second=make_b(rng)[1],
                half="dev",
                **sources,
            )
        )
    rng.shuffle(pairs)
    for position, pair in enumerate(pairs):
        pair.half = "dev" if position % 2 == 0 else "held_out"
    return pairs


def _sources(label: Label, rng: random.Random) -> dict[str, str]:
    if label == "contradiction":
        return {"first_source": "user_stated", "second_source": "inferred"}
    if label == "updated":
        same = rng.choice(["agent", "user_stated"])
        return {"first_source": same, "second_source": same}
    # Half of the other pairs cross ranks, so a contradiction rule that fires on them shows.
    if rng.random() < 0.5:
        return {"first_source": "user_stated", "second_source": "inferred"}
    return {"first_source": "agent", "second_source": "agent"}


# Paraphrase families: (family, fact template, query templates). Slots: {person}, {city},
# {company}, {project}, {lang}, {food}, {time}, {number}.
ENGLISH: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "approver",
        "Invoices are approved by {person} in finance.",
        ("who signs off on bills?", "whose OK do payments need?"),
    ),
    (
        "diet",
        "The user is pescatarian.",
        ("What are my current dietary restrictions?", "what should I avoid cooking for them?"),
    ),
    ("home", "The user lives in {city}.", ("where is my place of residence?", "which town is home?")),
    (
        "employer",
        "The user works at {company} as an engineer.",
        ("who is my employer?", "what firm do I have a job with?"),
    ),
    (
        "birthday",
        "The user's birthday is on 14 {month}.",
        ("when was I born?", "what day should we celebrate my anniversary of birth?"),
    ),
    (
        "allergy",
        "The user is allergic to {food}.",
        ("what can give me a reaction?", "which ingredient makes me ill?"),
    ),
    ("car", "The user drives a red Volvo.", ("what vehicle do I own?", "which automobile is mine?")),
    (
        "pet",
        "The user has a dog called Biscuit.",
        ("do I have any animals at home?", "what is the name of my puppy?"),
    ),
    (
        "standup",
        "The daily team meeting starts at {time}.",
        ("when is our morning sync?", "what hour is the everyday huddle?"),
    ),
    ("manager", "{person} is the user's boss.", ("who do I report to?", "who is my supervisor?")),
    (
        "gym",
        "The user goes running on Tuesday evenings.",
        ("when do I exercise?", "what is my workout schedule?"),
    ),
    (
        "coffee",
        "The user takes coffee black without sugar.",
        ("how do I like my morning drink?", "how should my espresso be served?"),
    ),
    ("spouse", "The user's wife is called {person}.", ("who am I married to?", "what is my partner's name?")),
    ("kids", "The user has two daughters.", ("how many children do I have?", "do I have kids?")),
    (
        "language",
        "The user wants replies in {lang}.",
        ("which language should you answer me in?", "what tongue do I prefer for messages?"),
    ),
    (
        "budget",
        "The marketing budget for this year is {number} euros.",
        ("how much money can we spend on advertising?", "what is the promotion spend limit?"),
    ),
    (
        "deploy",
        "Deployments to production happen only on Thursdays.",
        ("when can we ship releases to live servers?", "which weekday are rollouts allowed?"),
    ),
    (
        "vpn",
        "The office network needs the WireGuard client to connect remotely.",
        ("how do I get access from home?", "what do I install to work off-site?"),
    ),
    ("doctor", "The user's physician is Dr. {person}.", ("who is my GP?", "which medic treats me?")),
    (
        "music",
        "The user enjoys listening to jazz.",
        ("what kind of songs do I like?", "which genre should the playlist be?"),
    ),
    (
        "flight",
        "The user's flight to {city} leaves at {time}.",
        ("when does my plane depart?", "what time is takeoff for my trip?"),
    ),
    (
        "rent",
        "The user pays {number} euros rent per month.",
        ("how much does my apartment cost?", "what is my monthly housing payment?"),
    ),
    (
        "hotel",
        "The user booked the Grand Hotel for the conference.",
        ("where am I staying for the event?", "which accommodation did I reserve?"),
    ),
    (
        "editor",
        "The user writes code in Neovim.",
        ("what text editor do I program with?", "which IDE do I use?"),
    ),
    (
        "backup",
        "Backups of the database run every night at 2:00.",
        ("when are the data snapshots taken?", "how often is the DB copied?"),
    ),
]

# The last item is one word of the fact, for the keyword-only queries.
OTHER_LANGUAGES: dict[str, list[tuple[str, str, tuple[str, ...], str]]] = {
    "de": [
        (
            "approver",
            "Rechnungen werden von {person} in der Buchhaltung freigegeben.",
            ("Wer genehmigt die Zahlungen?",),
            "Rechnungen",
        ),
        (
            "diet",
            "Der Nutzer isst kein Fleisch, aber Fisch.",
            ("Welche Ernährungseinschränkungen habe ich?",),
            "Fleisch",
        ),
        ("home", "Der Nutzer wohnt in {city}.", ("Wo ist mein Zuhause?",), "wohnt"),
        ("employer", "Der Nutzer arbeitet bei {company}.", ("Für welche Firma bin ich tätig?",), "arbeitet"),
        ("pet", "Der Nutzer hat einen Hund namens Bello.", ("Habe ich ein Haustier?",), "Hund"),
        (
            "standup",
            "Das tägliche Teamtreffen beginnt um {time}.",
            ("Wann ist unsere Morgenbesprechung?",),
            "Teamtreffen",
        ),
        (
            "allergy",
            "Der Nutzer ist allergisch gegen Nüsse.",
            ("Was verträgt mein Körper nicht?",),
            "allergisch",
        ),
        ("car", "Der Nutzer fährt einen roten Volvo.", ("Welches Auto besitze ich?",), "Volvo"),
        (
            "deploy",
            "Veröffentlichungen auf Produktion nur donnerstags.",
            ("An welchem Wochentag dürfen wir ausrollen?",),
            "donnerstags",
        ),
        ("music", "Der Nutzer hört gerne Jazz.", ("Welche Musikrichtung mag ich?",), "Jazz"),
    ],
    "es": [
        (
            "approver",
            "Las facturas las aprueba {person} en contabilidad.",
            ("¿Quién autoriza los pagos?",),
            "facturas",
        ),
        ("diet", "El usuario es pescetariano.", ("¿Qué restricciones alimentarias tengo?",), "pescetariano"),
        ("home", "El usuario vive en {city}.", ("¿Dónde está mi casa?",), "vive"),
        ("employer", "El usuario trabaja en {company}.", ("¿Para qué empresa trabajo?",), "trabaja"),
        ("pet", "El usuario tiene un perro llamado Toby.", ("¿Tengo mascota?",), "perro"),
        (
            "standup",
            "La reunión diaria del equipo empieza a las {time}.",
            ("¿A qué hora es nuestra junta de la mañana?",),
            "reunión",
        ),
        (
            "allergy",
            "El usuario es alérgico a los cacahuetes.",
            ("¿Qué alimento me hace daño?",),
            "cacahuetes",
        ),
        ("car", "El usuario conduce un Volvo rojo.", ("¿Qué coche tengo?",), "Volvo"),
        (
            "deploy",
            "Los despliegues a producción solo se hacen los jueves.",
            ("¿Qué día podemos publicar versiones?",),
            "jueves",
        ),
        ("music", "Al usuario le gusta escuchar jazz.", ("¿Qué género musical prefiero?",), "jazz"),
    ],
    "zh": [
        ("approver", "发票由财务部的{person}审批。", ("谁负责批准付款？",), "发票"),
        ("diet", "用户只吃鱼不吃肉。", ("我有什么饮食限制？",), "吃鱼"),
        ("home", "用户住在{city}。", ("我的家在哪里？",), "住在"),
        ("employer", "用户在{company}公司工作。", ("我在哪家企业上班？",), "工作"),
        ("pet", "用户养了一只叫旺财的狗。", ("我有宠物吗？",), "狗"),
        ("standup", "团队每日例会在{time}开始。", ("我们早上的会议几点？",), "例会"),
        ("allergy", "用户对花生过敏。", ("我不能吃什么食物？",), "花生"),
        ("car", "用户开一辆红色的沃尔沃。", ("我的汽车是什么牌子？",), "沃尔沃"),
        ("deploy", "生产环境只在星期四发布。", ("哪天可以上线新版本？",), "星期四"),
        ("music", "用户喜欢听爵士乐。", ("我喜欢什么类型的音乐？",), "爵士乐"),
    ],
    "ja": [
        (
            "approver",
            "請求書は経理の{person}さんが承認します。",
            ("支払いの許可は誰が出しますか？",),
            "請求書",
        ),
        ("diet", "ユーザーは肉を食べませんが魚は食べます。", ("私の食事制限は何ですか？",), "魚"),
        ("home", "ユーザーは{city}に住んでいます。", ("私の自宅はどこですか？",), "住んで"),
        ("employer", "ユーザーは{company}で働いています。", ("私の勤務先はどこですか？",), "働いて"),
        ("pet", "ユーザーはポチという犬を飼っています。", ("私はペットを飼っていますか？",), "犬"),
        ("standup", "チームの朝会は毎日{time}に始まります。", ("毎朝のミーティングは何時ですか？",), "朝会"),
        ("allergy", "ユーザーはピーナッツアレルギーです。", ("私が食べてはいけないものは？",), "ピーナッツ"),
        ("car", "ユーザーは赤いボルボに乗っています。", ("私の車は何ですか？",), "ボルボ"),
        ("deploy", "本番環境へのリリースは木曜日だけです。", ("新しいバージョンを出せる曜日は？",), "木曜日"),
        ("music", "ユーザーはジャズを聴くのが好きです。", ("私の好きな音楽のジャンルは？",), "ジャズ"),
    ],
}
ENGLISH_STORES = 5


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        person=rng.choice(PEOPLE),
        city=rng.choice(CITIES),
        company=rng.choice(COMPANIES),
        project=rng.choice(PROJECTS),
        lang=rng.choice(LANGUAGES),
        food=rng.choice(FOODS),
        time=_time(rng),
        number=rng.randrange(2, 90) * 100,
        month=rng.choice(MONTHS),
    )


def _longest_word(text: str) -> str:
    """An English fact's keyword: its longest word (ties: the first)."""
    return str(max(re.findall(r"[A-Za-z]+", text), key=len))


def _queries(rng: random.Random) -> tuple[list[Query], list[StoreFact]]:
    queries: list[Query] = []
    facts: list[StoreFact] = []
    stores: list[tuple[str, str, list[tuple[str, str, tuple[str, ...], str]]]] = [
        (f"en-{number}", "en", [(*family, "") for family in ENGLISH]) for number in range(ENGLISH_STORES)
    ]
    stores += [(language, language, families) for language, families in OTHER_LANGUAGES.items()]
    for store, language, families in stores:
        for family, template, questions, keyword in families:
            text = _fill(template, rng)
            facts.append(StoreFact(store=store, text=text))
            # English stores ask one of the family's two questions in turn, so that five stores
            # ask each question more than once with different facts around it.
            question = questions[len(queries) % len(questions)]
            common = {"family": family, "language": language, "store": store, "target": text, "half": "dev"}
            queries.append(Query(kind="paraphrase", query=question, **common))
            queries.append(Query(kind="keyword", query=keyword or _longest_word(text), **common))
    for position, query in enumerate(queries):
        # Both queries of one fact fall in the same half.
        query.half = "dev" if (position // 2) % 2 == 0 else "held_out"
    return queries, facts


def generate(seed: int = SEED) -> Dataset:
    rng = random.Random(seed)
    pairs = _pairs(rng)
    queries, facts = _queries(rng)
    return Dataset(seed=seed, pairs=pairs, queries=queries, facts=facts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", help="write the whole set as JSON to this file")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    dataset = generate(args.seed)
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as out:
            out.write(dataset.model_dump_json(indent=1))
    print(
        json.dumps(
            {
                "pairs": dict(Counter(pair.label for pair in dataset.pairs)),
                "queries": dict(Counter(f"{query.kind} {query.language}" for query in dataset.queries)),
            }
        )
    )


if __name__ == "__main__":
    main()
