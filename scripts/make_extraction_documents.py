"""Write the synthetic source documents for the ordered-extraction task.

Realistic texts (a cargo manifest, a bibliography, an incident timeline, ...)
that each name unique IDs; `source` is the order they appear in, the answer
key a model must keep without tidying it. The documents make tidying
tempting: `source` is never sorted either way, some lists are a move or two
from sorted, numbers run past 9 or 99, and many hold look-alike IDs
(`INC-20931` and `INC-20913`). Every ID is one whole token, once.

The output is a pure function of `--seed` and `--count`; the packaged file is
the default output, and tests/test_generated_datasets.py checks both that
and every promise above.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SEED = 2026
DEFAULT_COUNT = 64
DEFAULT_OUT = (
    Path(__file__).resolve().parent.parent
    / "src"
    / "tracegrade"
    / "data"
    / "extraction_documents.jsonl"
)
MIN_IDS = 3
MAX_IDS = 40

HEX = "0123456789abcdef"

PEOPLE = [
    "R. Patel",
    "D. Okafor",
    "M. Lindqvist",
    "T. Haug",
    "A. Kim",
    "S. Moreau",
    "J. Castillo",
    "L. Brennan",
    "K. Tanaka",
    "F. Haddad",
    "E. Novak",
    "P. Ivanova",
]


@dataclass(frozen=True)
class Kind:
    """One kind of source document: what its IDs look like and how it reads."""

    name: str
    # What the IDs are called in the document, for a task prompt to name.
    target: str
    make_ids: Callable[[random.Random, int], list[str]]
    # Ordering styles this kind's text can carry believably.
    orders: tuple[str, ...]
    render: Callable[[random.Random, list[str]], str]


# --- look-alike variants -------------------------------------------------


def transpose_or_bump(rng: random.Random, identifier: str, alphabet: str) -> str:
    """Return a variant with two neighbours swapped or the last character changed.

    Both are the slips people make when they copy IDs by hand, which is
    exactly why a model must not treat such a pair as one ID.
    """
    positions = [
        i
        for i in range(len(identifier) - 1)
        if identifier[i] in alphabet
        and identifier[i + 1] in alphabet
        and identifier[i] != identifier[i + 1]
    ]
    if positions and rng.random() < 0.6:
        i = rng.choice(positions)
        return identifier[:i] + identifier[i + 1] + identifier[i] + identifier[i + 2 :]
    replacement = rng.choice([c for c in alphabet if c != identifier[-1]])
    return identifier[:-1] + replacement


def ids_with_look_alikes(
    rng: random.Random,
    count: int,
    fresh: Callable[[], str],
    variant: Callable[[str], str],
    look_alike_share: float,
) -> list[str]:
    """Draw `count` distinct IDs, about `look_alike_share` of them variants."""
    ids: list[str] = []
    seen: set[str] = set()
    while len(ids) < count:
        if ids and rng.random() < look_alike_share:
            candidate = variant(rng.choice(ids))
        else:
            candidate = fresh()
        if candidate not in seen:
            seen.add(candidate)
            ids.append(candidate)
    return ids


def look_alike_share(rng: random.Random) -> float:
    # About half the documents get look-alikes; the rest test plain order.
    return rng.choice([0.0, 0.0, 0.25, 0.4])


# --- ordering styles -----------------------------------------------------


def move_one(rng: random.Random, items: list[str]) -> None:
    """Move one element to a different position, in place."""
    start = rng.randrange(len(items))
    item = items.pop(start)
    end = rng.choice([i for i in range(len(items) + 1) if i != start])
    items.insert(end, item)


def displaced(rng: random.Random, ordered: Sequence[str]) -> list[str]:
    """Return `ordered` with one or two elements out of place."""
    items = list(ordered)
    moves = 1 if len(items) < 6 else rng.choice([1, 1, 2])
    for _ in range(moves):
        move_one(rng, items)
    return items


def look_alikes_swapped(rng: random.Random, ids: Sequence[str]) -> list[str]:
    """Shuffle, then put each look-alike pair side by side, later one first.

    A model that "fixes" the pair into sorted order changes the answer.
    """
    items = list(ids)
    rng.shuffle(items)
    for low, high in sorted(look_alike_pairs(items)):
        if low in items and high in items:
            items.remove(high)
            items.insert(items.index(low), high)
    return items


def apply_order(rng: random.Random, style: str, ids: list[str]) -> list[str]:
    if style == "natural":
        return list(ids)
    if style == "natural_displaced":
        return displaced(rng, ids)
    if style == "shuffled":
        items = list(ids)
        rng.shuffle(items)
        return items
    if style == "nearly_sorted":
        return displaced(rng, sorted(ids))
    if style == "nearly_reverse":
        return displaced(rng, sorted(ids, reverse=True))
    if style == "look_alikes_swapped":
        return look_alikes_swapped(rng, ids)
    raise ValueError(f"unknown ordering style {style!r}")


def is_sorted_either_way(items: Sequence[str]) -> bool:
    ordered = sorted(items)
    return list(items) == ordered or list(items) == ordered[::-1]


def look_alike_pairs(ids: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs of equal length that differ in one character or one adjacent swap."""
    pairs = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            if len(a) != len(b):
                continue
            diff = [k for k in range(len(a)) if a[k] != b[k]]
            one_char = len(diff) == 1
            swap = (
                len(diff) == 2
                and diff[1] == diff[0] + 1
                and a[diff[0]] == b[diff[1]]
                and a[diff[1]] == b[diff[0]]
            )
            if one_char or swap:
                pairs.append((min(a, b), max(a, b)))
    return pairs


# --- kinds ---------------------------------------------------------------

CONTAINER_OWNERS = ["MSKU", "TGHU", "CMAU", "TCLU", "HLXU", "OOLU", "SEGU", "TRHU"]
CARGO = [
    ("Frozen cod fillets", "40RH"),
    ("Chilled salmon, boxed", "40RH"),
    ("Flat-pack furniture", "40HC"),
    ("Bicycle frames, crated", "40HC"),
    ("Ceramic floor tiles", "20GP"),
    ("Canned tomatoes", "20GP"),
    ("Paper reels", "40GP"),
    ("Machine spare parts", "20GP"),
    ("Garden furniture", "45HC"),
    ("Wine in cartons", "20GP"),
    ("Steel fasteners", "20GP"),
    ("Sportswear, palletised", "40HC"),
]
VESSELS = ["Nordic Tern", "Maren Star", "Calder Bay", "Ostrava Spirit", "Hollin Gate"]
PORTS = [
    ("Rotterdam", "NLRTM"),
    ("Halifax", "CAHAL"),
    ("Gdansk", "PLGDN"),
    ("Valencia", "ESVLC"),
    ("Felixstowe", "GBFXT"),
    ("Antwerp", "BEANR"),
]


def container_ids(rng: random.Random, count: int) -> list[str]:
    owners = rng.sample(CONTAINER_OWNERS, rng.randint(1, 3))
    # Containers of one booking often have neighbouring serial numbers.
    base = rng.randint(1_000_000, 9_000_000)

    def fresh() -> str:
        serial = base + rng.randint(0, 9_999) if rng.random() < 0.7 else None
        if serial is None:
            serial = rng.randint(1_000_000, 9_999_999)
        return f"{rng.choice(owners)}-{serial:07d}"

    def variant(identifier: str) -> str:
        owner, serial = identifier.split("-")
        return f"{owner}-{transpose_or_bump(rng, serial, string.digits)}"

    return ids_with_look_alikes(rng, count, fresh, variant, look_alike_share(rng))


def render_manifest(rng: random.Random, ids: list[str]) -> str:
    vessel = rng.choice(VESSELS)
    voyage = f"{rng.randint(100, 399)}{rng.choice('EWNS')}"
    (load_port, load_code), (discharge_port, discharge_code) = rng.sample(PORTS, 2)
    day = rng.randint(1, 28)
    lines = [
        f"CARGO MANIFEST - MV {vessel}, voyage {voyage}",
        f"Port of loading: {load_port} ({load_code})    "
        f"Port of discharge: {discharge_port} ({discharge_code})",
        f"Date of issue: 2025-{rng.randint(1, 12):02d}-{day:02d}",
        "",
        "Line  Container      Type  Seal      Gross kg  Description",
    ]
    total = 0
    for line_number, container in enumerate(ids, start=1):
        cargo, container_type = rng.choice(CARGO)
        weight = rng.randint(4_000, 26_000)
        total += weight
        seal = f"SL{rng.randint(100_000, 999_999)}"
        lines.append(
            f"{line_number:>4}  {container}  {container_type}  {seal}  "
            f"{weight:>8,}  {cargo}"
        )
    lines += [
        "",
        f"Total containers: {len(ids)}    Total gross weight: {total:,} kg",
        f"Prepared by: {rng.choice(PEOPLE)}, export documentation",
    ]
    return "\n".join(lines)


SURNAMES = [
    "smith",
    "ortega",
    "nguyen",
    "kowalski",
    "haddad",
    "okafor",
    "lindqvist",
    "tanaka",
    "moreau",
    "brennan",
    "ivanova",
    "castillo",
    "achebe",
    "novak",
    "fischer",
    "rossi",
    "larsen",
    "dubois",
    "sato",
    "kim",
    "park",
    "chen",
    "garcia",
    "mueller",
    "petrov",
    "silva",
    "walsh",
    "yilmaz",
    "bauer",
    "hughes",
]
CO_AUTHORS = ["Ortega, L.", "Chen, Y.", "Walsh, P.", "Haddad, R.", "Sato, M."]
TITLE_TOPICS = [
    "cold-chain failures",
    "container dwell time",
    "last-mile delivery routing",
    "warehouse slotting",
    "port congestion",
    "demand forecasting",
    "pallet pooling",
    "driver scheduling",
    "returns handling",
    "inventory shrinkage",
]
TITLE_FRAMES = [
    "A field study of {topic}",
    "Measuring {topic} in regional networks",
    "What drives {topic}? Evidence from {n} firms",
    "Revisiting {topic}: a replication",
    "Simulation models of {topic}",
    "{Topic} under uncertainty",
]
JOURNALS = [
    "Journal of Maritime Logistics",
    "Transportation Research Letters",
    "International Journal of Warehouse Science",
    "Supply Chain Quarterly",
    "Operations and Freight Review",
]


def citation_keys(rng: random.Random, count: int) -> list[str]:
    """Keys like `smith2019a`; a letter suffix only when author and year repeat.

    A key without a suffix never shares author and year with another, so no
    key is a prefix of another in the same list.
    """
    keys: list[str] = []
    used: set[tuple[str, int]] = set()
    grouped = rng.random() < 0.6
    while len(keys) < count:
        surname = rng.choice(SURNAMES)
        year = rng.randint(2008, 2024)
        if (surname, year) in used:
            continue
        used.add((surname, year))
        room = count - len(keys)
        if grouped and room >= 2 and rng.random() < 0.35:
            size = min(room, rng.choice([2, 2, 3]))
            keys += [f"{surname}{year}{letter}" for letter in "abc"[:size]]
        else:
            keys.append(f"{surname}{year}")
    return keys


def render_citations(rng: random.Random, keys: list[str]) -> str:
    lines = [
        "References (numbered in order of first citation)",
        f'Manuscript: "Resilience in regional freight networks", draft '
        f"{rng.randint(2, 9)}, corresponding author {rng.choice(PEOPLE)}",
        "",
    ]
    for number, key in enumerate(keys, start=1):
        match = re.fullmatch(r"([a-z]+)(\d{4})([a-c]?)", key)
        if match is None:
            raise ValueError(f"citation key {key!r} does not parse")
        surname, year = match.group(1).capitalize(), match.group(2)
        authors = f"{surname}, {rng.choice('ABCDEFGHJKLMNPRST')}."
        if rng.random() < 0.5:
            authors += f" and {rng.choice(CO_AUTHORS)}"
        topic = rng.choice(TITLE_TOPICS)
        title = rng.choice(TITLE_FRAMES).format(
            topic=topic, Topic=topic.capitalize(), n=rng.randint(12, 400)
        )
        first_page = rng.randint(1, 300)
        lines.append(
            f"{number:>2}. [{key}] {authors} ({year}{match.group(3)}). {title}. "
            f"{rng.choice(JOURNALS)} {rng.randint(3, 40)}({rng.randint(1, 4)}), "
            f"{first_page}-{first_page + rng.randint(8, 30)}."
        )
    return "\n".join(lines)


SYMPTOMS = [
    "checkout p95 latency above 2 s",
    "payment provider webhooks timing out",
    "error rate on the cart API above 5%",
    "disk on db-replica-3 at 95%",
    "queue depth on orders-events growing",
    "CDN returning 503 in eu-west",
    "login failures for SSO users",
    "stale prices on product pages",
    "nightly invoice-export job did not run",
    "certificate expiry warning on api.internal",
    "label printer service unreachable at depot 2",
    "tracking page showing blank timeline",
]
TEAMS = ["payments", "platform", "storefront", "data", "warehouse systems", "SRE"]
CHANNELS = ["the support inbox", "a customer call", "the status page form", "Slack"]


def incident_ids(rng: random.Random, count: int) -> list[str]:
    """Ticket numbers from one busy day, in the order they were opened.

    Close numbers are realistic here, and swapped digits are how tickets get
    cited wrongly in chat, so look-alikes come naturally.
    """
    base = rng.randint(10_000, 89_000)
    span = max(60, count * 4)

    def fresh() -> str:
        return f"INC-{rng.randint(base, base + span):05d}"

    def variant(identifier: str) -> str:
        return "INC-" + transpose_or_bump(rng, identifier[4:], string.digits)

    ids = ids_with_look_alikes(rng, count, fresh, variant, look_alike_share(rng))
    # Equal-width numbers, so string order is opening order.
    return sorted(ids)


def render_incidents(rng: random.Random, ids: list[str]) -> str:
    day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    minute = rng.randint(0, 8 * 60)
    lines = [
        f"Incident review: degraded order processing on {day} (all times UTC)",
        f"Status: resolved. Postmortem owner: {rng.choice(PEOPLE)}",
        "",
    ]
    templates = [
        "{id} opened by monitoring: {symptom}",
        "{id} raised by {person} ({team}): {symptom}",
        "{id} escalated to sev{sev}; {team} on-call paged",
        "{id} reported via {channel}: {symptom}",
        "{id} mitigated: {team} rolled back the last deploy",
        "{id} closed as resolved after {minutes} minutes of stable metrics",
    ]
    for ticket in ids:
        minute += rng.randint(1, 11)
        clock = f"{(minute // 60) % 24:02d}:{minute % 60:02d}"
        event = rng.choice(templates).format(
            id=ticket,
            symptom=rng.choice(SYMPTOMS),
            person=rng.choice(PEOPLE),
            team=rng.choice(TEAMS),
            sev=rng.randint(1, 3),
            channel=rng.choice(CHANNELS),
            minutes=rng.randint(15, 90),
        )
        lines.append(f"{clock}  {event}")
    lines += ["", "Follow-up actions are tracked in the postmortem document."]
    return "\n".join(lines)


SERVICES = ["api-gw", "orders", "tracking", "billing", "auth"]
ENDPOINTS = [
    ("GET", "/v2/orders/{n}"),
    ("GET", "/v2/parcels/{n}/events"),
    ("POST", "/v2/orders"),
    ("PUT", "/v2/orders/{n}/address"),
    ("GET", "/v2/quotes?zone={n}"),
    ("POST", "/v2/labels"),
    ("DELETE", "/v2/orders/{n}/hold"),
    ("GET", "/healthz"),
]


def request_ids(rng: random.Random, count: int) -> list[str]:
    def fresh() -> str:
        return "req-" + "".join(rng.choice(HEX) for _ in range(6))

    def variant(identifier: str) -> str:
        return "req-" + transpose_or_bump(rng, identifier[4:], HEX)

    return ids_with_look_alikes(rng, count, fresh, variant, look_alike_share(rng))


def render_log(rng: random.Random, ids: list[str]) -> str:
    host = f"gw-{rng.choice(['eu', 'us', 'ap'])}-{rng.randint(1, 4)}"
    day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    millis = rng.randint(0, 20 * 3_600_000)
    lines = [f"# access log excerpt, host {host}, {day} (UTC)"]
    for request in ids:
        millis += rng.randint(3, 2_500)
        seconds, ms = divmod(millis, 1000)
        stamp = (
            f"{day}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:"
            f"{seconds % 60:02d}.{ms:03d}Z"
        )
        method, path = rng.choice(ENDPOINTS)
        status = rng.choice([200, 200, 200, 201, 204, 404, 409, 500, 503])
        level = "ERROR" if status >= 500 else "WARN " if status >= 400 else "INFO "
        lines.append(
            f"{stamp} {level} {rng.choice(SERVICES):<8} {request} {method:<6} "
            f"{path.format(n=rng.randint(1000, 99999))} {status} "
            f"{rng.randint(2, 1900)}ms"
        )
    return "\n".join(lines)


VENDORS = [
    "Halden Pallet Works",
    "Brightwater Fuels",
    "Coldspring Refrigeration",
    "Marlow Tyres Ltd",
    "Kestrel Office Supply",
    "Fenwick Security",
    "Aldous Cleaning Co",
    "Northgate Forklift Hire",
    "Pinecrest IT Services",
    "Orchard Catering",
]


def invoice_ids(rng: random.Random, count: int) -> list[str]:
    def fresh() -> str:
        return f"INV-{rng.randint(10_000, 99_999)}"

    def variant(identifier: str) -> str:
        return "INV-" + transpose_or_bump(rng, identifier[4:], string.digits)

    return ids_with_look_alikes(rng, count, fresh, variant, look_alike_share(rng))


def render_invoices(rng: random.Random, ids: list[str]) -> str:
    currency = rng.choice(["EUR", "GBP", "NOK"])
    month = rng.randint(1, 11)
    lines = [
        f"Accounts payable - payment run 2025-{month:02d}-28, "
        f"batch AP{rng.randint(100, 999)}",
        f"Approved by: {rng.choice(PEOPLE)}. Invoices listed by due date.",
        "",
    ]
    days = sorted(rng.randint(1, 28) for _ in ids)
    for invoice, day in zip(ids, days, strict=True):
        amount = rng.randint(12_000, 4_800_000) / 100
        lines.append(
            f"{invoice}  {rng.choice(VENDORS):<26} {currency} {amount:>12,.2f}  "
            f"due 2025-{month + 1:02d}-{day:02d}"
        )
    lines += ["", f"Invoices in run: {len(ids)}"]
    return "\n".join(lines)


MATRICES = ["groundwater", "surface water", "soil", "sediment", "effluent"]
ANALYSES = ["metals", "nitrate", "PFAS", "BTEX", "pH, conductivity", "coliforms"]
SITES = ["MW-{n} (well)", "Outfall {n}", "Borehole BH{n}", "Stream point {n}"]


def sample_ids(rng: random.Random, count: int) -> list[str]:
    """Sample numbers in collection order; some samples split into aliquots."""
    ids: list[str] = []
    number = rng.randint(100, 9_000)
    while len(ids) < count:
        aliquots = rng.choice([1, 1, 1, 2, 2, 3])
        for letter in "ABC"[: min(aliquots, count - len(ids))]:
            ids.append(f"S-{number:04d}-{letter}")
        number += rng.choice([1, 1, 1, 2])
    return ids


def render_samples(rng: random.Random, ids: list[str]) -> str:
    lines = [
        "CHAIN-OF-CUSTODY FORM - Ridgeway Environmental Laboratory",
        f"Project: {rng.choice(['Millbrook', 'Ashby Cross', 'Fennmouth'])} "
        f"monitoring round {rng.randint(1, 12)}    "
        f"Collected by: {rng.choice(PEOPLE)}",
        f"Date: 2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}    "
        "Samples listed in order of collection",
        "",
        "Sample ID   Matrix         Location             Time   Analyses",
    ]
    minute = rng.randint(7 * 60, 10 * 60)
    for sample in ids:
        minute += rng.randint(0, 25)
        site = rng.choice(SITES).format(n=rng.randint(1, 12))
        lines.append(
            f"{sample}    {rng.choice(MATRICES):<14} {site:<20} "
            f"{minute // 60:02d}:{minute % 60:02d}  {rng.choice(ANALYSES)}"
        )
    lines += ["", "Relinquished by sampler; received at lab cold room, 4 C."]
    return "\n".join(lines)


COMMIT_MESSAGES = [
    "fix: handle empty pallet list in allocation",
    "feat: add zone surcharge to quote endpoint",
    "refactor: split label printing from manifest export",
    "fix: retry webhook delivery on 429",
    "chore: bump postgres driver",
    "test: cover partial shipments in invoicing",
    "fix: round weights before volumetric check",
    "feat: expose dwell time on tracking page",
    "docs: describe depot cut-off times",
    "perf: cache route plans per depot",
    "fix: keep customs codes when splitting orders",
    "feat: allow returns without original box",
]
HANDLES = ["a.kim", "d.okafor", "t.haug", "s.moreau", "j.castillo", "k.tanaka"]


def commit_hashes(rng: random.Random, count: int) -> list[str]:
    def fresh() -> str:
        while True:
            short = "".join(rng.choice(HEX) for _ in range(7))
            # All-digit hashes read as numbers; real tools print them too,
            # but they would blur "is this an ID" in a small dataset.
            if any(c.isalpha() for c in short):
                return short

    def variant(identifier: str) -> str:
        return transpose_or_bump(rng, identifier, HEX)

    return ids_with_look_alikes(rng, count, fresh, variant, look_alike_share(rng))


def render_commits(rng: random.Random, ids: list[str]) -> str:
    service = rng.choice(["inventory-service", "tracking-api", "label-printer"])
    minor = rng.randint(2, 9)
    lines = [
        f"Release notes draft - {service} v3.{minor}.0",
        f"Commits since v3.{minor - 1}.{rng.randint(0, 4)}, oldest first:",
        "",
    ]
    for commit in ids:
        lines.append(f"{commit}  {rng.choice(COMMIT_MESSAGES)} ({rng.choice(HANDLES)})")
    return "\n".join(lines)


TEST_CASES = [
    "guest checkout with saved address",
    "login with expired token",
    "apply discount code twice",
    "change delivery slot after payment",
    "track parcel with unknown number",
    "download invoice as PDF",
    "cancel order before dispatch",
    "book collection for oversized item",
    "switch language on tracking page",
    "reset password from email link",
]


def test_case_ids(rng: random.Random, count: int) -> list[str]:
    """Numbered cases that run past 9 or 99, so a string sort reorders them."""
    boundary = rng.choice([10, 100])
    below = rng.randint(1, min(count - 1, boundary - 1))
    low = sorted(rng.sample(range(max(1, boundary - below - 3), boundary), below))
    high_count = count - below
    high = sorted(rng.sample(range(boundary, boundary + high_count + 4), high_count))
    return [f"TC-{n}" for n in low + high]


def render_test_run(rng: random.Random, ids: list[str]) -> str:
    lines = [
        f"Regression run {rng.randint(1000, 9999)} - suite checkout-web, "
        f"browser {rng.choice(['chromium', 'firefox', 'webkit'])}",
        "Cases in execution order:",
        "",
    ]
    for case in ids:
        outcome = rng.choice(["PASS", "PASS", "PASS", "FAIL", "SKIP"])
        lines.append(
            f"{case:<7} {outcome}  {rng.randint(2, 190) / 10:>5.1f} s  "
            f"{rng.choice(TEST_CASES)}"
        )
    return "\n".join(lines)


KINDS = [
    Kind(
        "shipping_manifest",
        "container numbers",
        container_ids,
        ("shuffled", "nearly_sorted", "look_alikes_swapped"),
        render_manifest,
    ),
    Kind(
        "citation_list",
        "citation keys",
        citation_keys,
        ("shuffled", "nearly_sorted", "nearly_reverse", "look_alikes_swapped"),
        render_citations,
    ),
    Kind(
        "incident_timeline",
        "incident ticket IDs",
        incident_ids,
        ("natural_displaced", "look_alikes_swapped"),
        render_incidents,
    ),
    Kind(
        "log_excerpt",
        "request IDs",
        request_ids,
        ("shuffled", "look_alikes_swapped"),
        render_log,
    ),
    Kind(
        "invoice_register",
        "invoice numbers",
        invoice_ids,
        ("shuffled", "nearly_sorted", "nearly_reverse", "look_alikes_swapped"),
        render_invoices,
    ),
    Kind(
        "lab_sample_sheet",
        "sample IDs",
        sample_ids,
        ("natural_displaced", "look_alikes_swapped"),
        render_samples,
    ),
    Kind(
        "commit_list",
        "commit hashes",
        commit_hashes,
        ("shuffled", "nearly_sorted", "look_alikes_swapped"),
        render_commits,
    ),
    Kind(
        "test_run_report",
        "test case IDs",
        test_case_ids,
        ("natural", "natural_displaced"),
        render_test_run,
    ),
]


# --- assembly ------------------------------------------------------------


def spread_lengths(rng: random.Random, count: int) -> list[int]:
    """ID-list lengths covering MIN_IDS..MAX_IDS evenly, both ends included."""
    if count < 2:
        raise ValueError(f"need at least 2 documents to cover both ends, got {count}")
    span = MAX_IDS - MIN_IDS
    lengths = [MIN_IDS + round(i * span / (count - 1)) for i in range(count)]
    rng.shuffle(lengths)
    return lengths


def make_document(
    rng: random.Random, kind: Kind, number: int, length: int
) -> dict[str, object]:
    ids = kind.make_ids(rng, length)
    style = rng.choice(kind.orders)
    source = apply_order(rng, style, ids)
    # A short list can land sorted by chance; nudge it until it is not.
    while is_sorted_either_way(source):
        move_one(rng, source)
    document: dict[str, object] = {
        "id": f"{kind.name}-{number:03d}",
        "kind": kind.name,
        "target": kind.target,
        "text": kind.render(rng, source),
        "source": source,
    }
    return document


def make_documents(seed: int, count: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    lengths = spread_lengths(rng, count)
    numbers = dict.fromkeys((kind.name for kind in KINDS), 0)
    documents = []
    for index, length in enumerate(lengths):
        kind = KINDS[index % len(KINDS)]
        numbers[kind.name] += 1
        documents.append(make_document(rng, kind, numbers[kind.name], length))
    return documents


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write the ordered-extraction source documents as JSON Lines."
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.count < 2:
        parser.error(f"--count must be at least 2 to cover both ends, got {args.count}")
    documents = make_documents(args.seed, args.count)
    with args.out.open("w", encoding="ascii", newline="\n") as handle:
        for document in documents:
            handle.write(json.dumps(document) + "\n")
    print(f"wrote {len(documents)} documents to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
