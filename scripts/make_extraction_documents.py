"""Write the synthetic source documents for the ordered-extraction task.

Realistic texts (a cargo manifest, a bibliography, an incident timeline, ...)
each naming unique IDs; `source` is their order of appearance, the answer key
a model must keep without tidying it. Tidying is made tempting: `source` is
never sorted either way, some lists are a move or two from sorted, numbers
run past 9 or 99, many hold look-alike IDs (`INC-20931`, `INC-20913`). Every
ID is one whole token, once. The output is a pure function of `--seed` and
`--count`; tests/test_generated_datasets.py checks the packaged file is the
default output, and every promise above.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "src" / "tracegrade" / "data"
MIN_IDS, MAX_IDS = 3, 40
HEX = "0123456789abcdef"
Rng = random.Random

# fmt: off
PEOPLE = ["R. Patel", "D. Okafor", "M. Lindqvist", "T. Haug", "A. Kim", "S. Moreau",
          "J. Castillo", "L. Brennan", "K. Tanaka", "F. Haddad", "E. Novak",
          "P. Ivanova"]
# fmt: on


def transpose_or_bump(rng: Rng, identifier: str, alphabet: str) -> str:
    """Two neighbours swapped or the last character changed: the slips of
    copying IDs by hand, so a model must not take such a pair for one ID."""
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
    return identifier[:-1] + rng.choice([c for c in alphabet if c != identifier[-1]])


def ids_with_look_alikes(
    rng: Rng, count: int, fresh: Callable[[], str], variant: Callable[[str], str]
) -> list[str]:
    """`count` distinct IDs; in about half the documents some are variants."""
    share = rng.choice([0.0, 0.0, 0.25, 0.4])
    ids: list[str] = []
    while len(ids) < count:
        candidate = (
            variant(rng.choice(ids)) if ids and rng.random() < share else fresh()
        )
        if candidate not in ids:
            ids.append(candidate)
    return ids


def look_alikes_of(
    rng: Rng, count: int, prefix: str, fresh: Callable[[], str], alphabet: str
) -> list[str]:
    """IDs `prefix` + a body, look-alikes varying the body."""

    def variant(identifier: str) -> str:
        body = identifier[len(prefix) :]
        return prefix + transpose_or_bump(rng, body, alphabet)

    return ids_with_look_alikes(rng, count, lambda: prefix + fresh(), variant)


# --- ordering styles -----------------------------------------------------


def move_one(rng: Rng, items: list[str]) -> None:
    """Move one element to a different position, in place."""
    start = rng.randrange(len(items))
    item = items.pop(start)
    items.insert(rng.choice([i for i in range(len(items) + 1) if i != start]), item)


def displaced(rng: Rng, ordered: Sequence[str]) -> list[str]:
    """`ordered` with one or two elements out of place."""
    items = list(ordered)
    for _ in range(1 if len(items) < 6 else rng.choice([1, 1, 2])):
        move_one(rng, items)
    return items


def look_alike_pairs(ids: Sequence[str]) -> list[tuple[str, str]]:
    """Pairs of equal length that differ in one character or one adjacent swap."""
    pairs = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            diff = [k for k in range(len(a)) if len(a) == len(b) and a[k] != b[k]]
            swap = len(diff) == 2 and diff[1] == diff[0] + 1
            if len(diff) == 1 or (
                swap and (a[diff[0]], a[diff[1]]) == (b[diff[1]], b[diff[0]])
            ):
                pairs.append((min(a, b), max(a, b)))
    return pairs


def apply_order(rng: Rng, style: str, ids: list[str]) -> list[str]:
    items = list(ids)
    if style in ("shuffled", "look_alikes_swapped"):
        rng.shuffle(items)
    if style == "look_alikes_swapped":
        # Each look-alike pair side by side, the later one first: a model that
        # "fixes" the pair into sorted order changes the answer.
        for low, high in sorted(look_alike_pairs(items)):
            if low in items and high in items:
                items.remove(high)
                items.insert(items.index(low), high)
    elif style != "natural" and style != "shuffled":
        start = {
            "nearly_sorted": sorted(ids),
            "nearly_reverse": sorted(ids, reverse=True),
        }
        return displaced(rng, start.get(style, ids))
    return items


# --- kinds: each makes its IDs and renders its text ----------------------

# fmt: off
CONTAINER_OWNERS = ["MSKU", "TGHU", "CMAU", "TCLU", "HLXU", "OOLU", "SEGU", "TRHU"]
CARGO = [("Frozen cod fillets", "40RH"), ("Chilled salmon, boxed", "40RH"),
         ("Flat-pack furniture", "40HC"), ("Bicycle frames, crated", "40HC"),
         ("Ceramic floor tiles", "20GP"), ("Canned tomatoes", "20GP"),
         ("Paper reels", "40GP"), ("Machine spare parts", "20GP"),
         ("Garden furniture", "45HC"), ("Wine in cartons", "20GP"),
         ("Steel fasteners", "20GP"), ("Sportswear, palletised", "40HC")]
VESSELS = ["Nordic Tern", "Maren Star", "Calder Bay", "Ostrava Spirit", "Hollin Gate"]
PORTS = [("Rotterdam", "NLRTM"), ("Halifax", "CAHAL"), ("Gdansk", "PLGDN"),
         ("Valencia", "ESVLC"), ("Felixstowe", "GBFXT"), ("Antwerp", "BEANR")]
# fmt: on


def container_ids(rng: Rng, count: int) -> list[str]:
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

    return ids_with_look_alikes(rng, count, fresh, variant)


def render_manifest(rng: Rng, ids: list[str]) -> str:
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


# fmt: off
SURNAMES = ["smith", "ortega", "nguyen", "kowalski", "haddad", "okafor", "lindqvist",
            "tanaka", "moreau", "brennan", "ivanova", "castillo", "achebe", "novak",
            "fischer", "rossi", "larsen", "dubois", "sato", "kim", "park", "chen",
            "garcia", "mueller", "petrov", "silva", "walsh", "yilmaz", "bauer",
            "hughes"]
CO_AUTHORS = ["Ortega, L.", "Chen, Y.", "Walsh, P.", "Haddad, R.", "Sato, M."]
TITLE_TOPICS = ["cold-chain failures", "container dwell time",
                "last-mile delivery routing", "warehouse slotting", "port congestion",
                "demand forecasting", "pallet pooling", "driver scheduling",
                "returns handling", "inventory shrinkage"]
TITLE_FRAMES = ["A field study of {topic}", "Measuring {topic} in regional networks",
                "What drives {topic}? Evidence from {n} firms",
                "Revisiting {topic}: a replication", "Simulation models of {topic}",
                "{Topic} under uncertainty"]
JOURNALS = ["Journal of Maritime Logistics", "Transportation Research Letters",
            "International Journal of Warehouse Science", "Supply Chain Quarterly",
            "Operations and Freight Review"]
# fmt: on


def citation_keys(rng: Rng, count: int) -> list[str]:
    """Keys like `smith2019a`; a letter suffix only when author and year
    repeat, so no key is a prefix of another in the same list."""
    keys: list[str] = []
    used: set[tuple[str, int]] = set()
    grouped = rng.random() < 0.6
    while len(keys) < count:
        surname, year = rng.choice(SURNAMES), rng.randint(2008, 2024)
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


def render_citations(rng: Rng, keys: list[str]) -> str:
    lines = [
        "References (numbered in order of first citation)",
        f'Manuscript: "Resilience in regional freight networks", draft '
        f"{rng.randint(2, 9)}, corresponding author {rng.choice(PEOPLE)}",
        "",
    ]
    for number, key in enumerate(keys, start=1):
        surname, year, letter = re.findall(r"^([a-z]+)(\d{4})([a-c]?)$", key)[0]
        authors = f"{surname.capitalize()}, {rng.choice('ABCDEFGHJKLMNPRST')}."
        if rng.random() < 0.5:
            authors += f" and {rng.choice(CO_AUTHORS)}"
        topic = rng.choice(TITLE_TOPICS)
        title = rng.choice(TITLE_FRAMES).format(
            topic=topic, Topic=topic.capitalize(), n=rng.randint(12, 400)
        )
        first_page = rng.randint(1, 300)
        lines.append(
            f"{number:>2}. [{key}] {authors} ({year}{letter}). {title}. "
            f"{rng.choice(JOURNALS)} {rng.randint(3, 40)}({rng.randint(1, 4)}), "
            f"{first_page}-{first_page + rng.randint(8, 30)}."
        )
    return "\n".join(lines)


# fmt: off
SYMPTOMS = ["checkout p95 latency above 2 s", "payment provider webhooks timing out",
            "error rate on the cart API above 5%", "disk on db-replica-3 at 95%",
            "queue depth on orders-events growing", "CDN returning 503 in eu-west",
            "login failures for SSO users", "stale prices on product pages",
            "nightly invoice-export job did not run",
            "certificate expiry warning on api.internal",
            "label printer service unreachable at depot 2",
            "tracking page showing blank timeline"]
TEAMS = ["payments", "platform", "storefront", "data", "warehouse systems", "SRE"]
CHANNELS = ["the support inbox", "a customer call", "the status page form", "Slack"]
INCIDENT_EVENTS = ["{id} opened by monitoring: {symptom}",
                   "{id} raised by {person} ({team}): {symptom}",
                   "{id} escalated to sev{sev}; {team} on-call paged",
                   "{id} reported via {channel}: {symptom}",
                   "{id} mitigated: {team} rolled back the last deploy",
                   "{id} closed as resolved after {minutes} minutes of stable metrics"]
# fmt: on


def incident_ids(rng: Rng, count: int) -> list[str]:
    """Ticket numbers from one busy day in opening order: close numbers, and
    swapped digits are how tickets get cited wrongly in chat."""
    base = rng.randint(10_000, 89_000)
    span = max(60, count * 4)

    def fresh() -> str:
        return f"{rng.randint(base, base + span):05d}"

    # Equal-width numbers, so string order is opening order.
    return sorted(look_alikes_of(rng, count, "INC-", fresh, string.digits))


def render_incidents(rng: Rng, ids: list[str]) -> str:
    day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    minute = rng.randint(0, 8 * 60)
    lines = [
        f"Incident review: degraded order processing on {day} (all times UTC)",
        f"Status: resolved. Postmortem owner: {rng.choice(PEOPLE)}",
        "",
    ]
    for ticket in ids:
        minute += rng.randint(1, 11)
        clock = f"{(minute // 60) % 24:02d}:{minute % 60:02d}"
        event = rng.choice(INCIDENT_EVENTS).format(
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


# fmt: off
SERVICES = ["api-gw", "orders", "tracking", "billing", "auth"]
ENDPOINTS = [("GET", "/v2/orders/{n}"), ("GET", "/v2/parcels/{n}/events"),
             ("POST", "/v2/orders"), ("PUT", "/v2/orders/{n}/address"),
             ("GET", "/v2/quotes?zone={n}"), ("POST", "/v2/labels"),
             ("DELETE", "/v2/orders/{n}/hold"), ("GET", "/healthz")]
# fmt: on


def request_ids(rng: Rng, count: int) -> list[str]:
    def fresh() -> str:
        return "".join(rng.choice(HEX) for _ in range(6))

    return look_alikes_of(rng, count, "req-", fresh, HEX)


def render_log(rng: Rng, ids: list[str]) -> str:
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


# fmt: off
VENDORS = ["Halden Pallet Works", "Brightwater Fuels", "Coldspring Refrigeration",
           "Marlow Tyres Ltd", "Kestrel Office Supply", "Fenwick Security",
           "Aldous Cleaning Co", "Northgate Forklift Hire", "Pinecrest IT Services",
           "Orchard Catering"]
# fmt: on


def invoice_ids(rng: Rng, count: int) -> list[str]:
    def fresh() -> str:
        return str(rng.randint(10_000, 99_999))

    return look_alikes_of(rng, count, "INV-", fresh, string.digits)


def render_invoices(rng: Rng, ids: list[str]) -> str:
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


def sample_ids(rng: Rng, count: int) -> list[str]:
    """Sample numbers in collection order; some samples split into aliquots."""
    ids: list[str] = []
    number = rng.randint(100, 9_000)
    while len(ids) < count:
        aliquots = rng.choice([1, 1, 1, 2, 2, 3])
        for letter in "ABC"[: min(aliquots, count - len(ids))]:
            ids.append(f"S-{number:04d}-{letter}")
        number += rng.choice([1, 1, 1, 2])
    return ids


def render_samples(rng: Rng, ids: list[str]) -> str:
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


# fmt: off
COMMIT_MESSAGES = [
    "fix: handle empty pallet list in allocation",
    "feat: add zone surcharge to quote endpoint",
    "refactor: split label printing from manifest export",
    "fix: retry webhook delivery on 429", "chore: bump postgres driver",
    "test: cover partial shipments in invoicing",
    "fix: round weights before volumetric check",
    "feat: expose dwell time on tracking page",
    "docs: describe depot cut-off times", "perf: cache route plans per depot",
    "fix: keep customs codes when splitting orders",
    "feat: allow returns without original box",
]
HANDLES = ["a.kim", "d.okafor", "t.haug", "s.moreau", "j.castillo", "k.tanaka"]
# fmt: on


def commit_hashes(rng: Rng, count: int) -> list[str]:
    def fresh() -> str:
        while True:
            short = "".join(rng.choice(HEX) for _ in range(7))
            # All-digit hashes read as numbers: they would blur "is this an ID".
            if any(c.isalpha() for c in short):
                return short

    return look_alikes_of(rng, count, "", fresh, HEX)


def render_commits(rng: Rng, ids: list[str]) -> str:
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


# fmt: off
TEST_CASES = ["guest checkout with saved address", "login with expired token",
              "apply discount code twice", "change delivery slot after payment",
              "track parcel with unknown number", "download invoice as PDF",
              "cancel order before dispatch", "book collection for oversized item",
              "switch language on tracking page", "reset password from email link"]
# fmt: on


def test_case_ids(rng: Rng, count: int) -> list[str]:
    """Numbered cases that run past 9 or 99, so a string sort reorders them."""
    boundary = rng.choice([10, 100])
    below = rng.randint(1, min(count - 1, boundary - 1))
    low = sorted(rng.sample(range(max(1, boundary - below - 3), boundary), below))
    high_count = count - below
    high = sorted(rng.sample(range(boundary, boundary + high_count + 4), high_count))
    return [f"TC-{n}" for n in low + high]


def render_test_run(rng: Rng, ids: list[str]) -> str:
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


# Each kind: its name, what its IDs are called (for a task prompt), how it
# makes them, the orders its text carries believably, and its text.
# fmt: off
KINDS = [
    ("shipping_manifest", "container numbers", container_ids,
     ("shuffled", "nearly_sorted", "look_alikes_swapped"), render_manifest),
    ("citation_list", "citation keys", citation_keys,
     ("shuffled", "nearly_sorted", "nearly_reverse", "look_alikes_swapped"),
     render_citations),
    ("incident_timeline", "incident ticket IDs", incident_ids,
     ("natural_displaced", "look_alikes_swapped"), render_incidents),
    ("log_excerpt", "request IDs", request_ids,
     ("shuffled", "look_alikes_swapped"), render_log),
    ("invoice_register", "invoice numbers", invoice_ids,
     ("shuffled", "nearly_sorted", "nearly_reverse", "look_alikes_swapped"),
     render_invoices),
    ("lab_sample_sheet", "sample IDs", sample_ids,
     ("natural_displaced", "look_alikes_swapped"), render_samples),
    ("commit_list", "commit hashes", commit_hashes,
     ("shuffled", "nearly_sorted", "look_alikes_swapped"), render_commits),
    ("test_run_report", "test case IDs", test_case_ids,
     ("natural", "natural_displaced"), render_test_run),
]
# fmt: on


def make_documents(seed: int, count: int) -> list[dict[str, object]]:
    """`count` documents, the kinds in turn, whose ID-list lengths cover
    MIN_IDS..MAX_IDS evenly, both ends included."""
    rng = Rng(seed)
    span = MAX_IDS - MIN_IDS
    lengths = [MIN_IDS + round(i * span / (count - 1)) for i in range(count)]
    rng.shuffle(lengths)
    numbers = dict.fromkeys((kind[0] for kind in KINDS), 0)
    documents: list[dict[str, object]] = []
    for index, length in enumerate(lengths):
        name, target, make_ids, orders, render = KINDS[index % len(KINDS)]
        numbers[name] += 1
        ids = make_ids(rng, length)
        source = apply_order(rng, rng.choice(orders), ids)
        # A short list can land sorted by chance; nudge it until it is not.
        while source in (sorted(source), sorted(source, reverse=True)):
            move_one(rng, source)
        documents.append(
            {
                "id": f"{name}-{numbers[name]:03d}",
                "kind": name,
                "target": target,
                "text": render(rng, source),
                "source": source,
            }
        )
    return documents


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write the ordered-extraction source documents as JSON Lines."
    )
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--count", type=int, default=64)
    parser.add_argument("--out", type=Path, default=DATA / "extraction_documents.jsonl")
    args = parser.parse_args(argv)
    if args.count < 2:
        parser.error(f"--count must be at least 2 to cover both ends, got {args.count}")
    documents = make_documents(args.seed, args.count)
    with args.out.open("w", encoding="ascii", newline="\n") as handle:
        handle.writelines(json.dumps(document) + "\n" for document in documents)
    print(f"wrote {len(documents)} documents to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
