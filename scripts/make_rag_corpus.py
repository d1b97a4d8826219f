"""Write the small RAG corpus and its questions for the stage-diagnosis example.

The content is hand-written and held here as data; this script only checks it
and writes it out. It describes Brindlewick Logistics, a fictional company, so
a model can answer only from retrieved context, never from memory.

Each question lists the documents an answer needs (`required`) and, for each
of them, a quote that must appear verbatim in that document (`evidence`): the
script refuses to write a question whose quote is missing, so `required`
cannot drift away from the facts. Some questions need two or three documents,
and a few are worded unlike the documents ("holiday days ... roll over" for
"annual leave ... carried over") so that a lexical retriever such as BM25
will sometimes miss a required document, the retrieval failure the stage
diagnosis exists to report.

The output depends on nothing but this file: the packaged files are its
output, and the test suite checks that they still are.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

DATA_DIR = Path(__file__).resolve().parent.parent / "src" / "tracegrade" / "data"


class Document(NamedTuple):
    id: str
    title: str
    text: str


class Question(NamedTuple):
    id: str
    question: str
    # Required document ID -> a quote from it that the answer depends on.
    evidence: dict[str, str]
    answer: str


class InconsistentContent(ValueError):
    """The hand-written corpus contradicts itself; fix the data, not the check."""

    def __init__(self, item_id: str, problem: str) -> None:
        super().__init__(f"{item_id}: {problem}")
        self.item_id = item_id
        self.problem = problem


DOCUMENTS = [
    Document(
        "DOC-001",
        "Company overview",
        "Brindlewick Logistics was founded in 1987 in the town of Harwick by "
        "Maren Oakes. The company runs three sites: the Harwick head office, the "
        "Fennmouth port depot and the Greyloch cold store. It employs about 640 "
        'people. Its customer promise is "Counted, sealed, on time."',
    ),
    Document(
        "DOC-002",
        "Harwick head office",
        "The head office is at 14 Tanner's Row, Harwick, and is open from 08:00 "
        "to 18:00, Monday to Friday. Visitors sign in at the ground-floor "
        "reception and wear a red lanyard while on site. Meeting rooms are named "
        "after rivers; the largest, the Severn room, seats 24 people.",
    ),
    Document(
        "DOC-003",
        "Fennmouth port depot",
        "The Fennmouth depot unloads containers from the port and sorts freight "
        "for onward delivery. It has 42 loading bays and runs around the clock, "
        "except for a maintenance window from Sunday 22:00 to Monday 06:00. The "
        "depot manager is Idris Kaan.",
    ),
    Document(
        "DOC-004",
        "Greyloch cold store",
        "The Greyloch cold store holds 9,000 pallet positions in three chambers. "
        "The chilled chamber is kept between 2 and 8 degrees C, the frozen "
        "chamber at -18 degrees C and the deep-frozen chamber at -25 degrees C. "
        "The site manager is Saoirse Lindqvist.",
    ),
    Document(
        "DOC-005",
        "Kestrel Express service",
        "Kestrel Express is the next-day parcel service for bookings made before "
        "15:00. A single parcel may weigh up to 30 kg, with no side longer than "
        "120 cm. Tracking is updated at every scan.",
    ),
    Document(
        "DOC-006",
        "Heron Standard service",
        "Heron Standard is the economy parcel service, delivering in 2 to 4 "
        "working days. A single parcel may weigh up to 40 kg. It is the cheapest "
        "service Brindlewick sells.",
    ),
    Document(
        "DOC-007",
        "Osprey Freight service",
        "Osprey Freight carries palletised goods between business addresses. A "
        "pallet may weigh up to 1,000 kg including the pallet itself and may be "
        "at most 1.8 m high. Osprey Freight must be booked at least 48 hours "
        "before collection.",
    ),
    Document(
        "DOC-008",
        "FrostLine temperature-controlled service",
        "FrostLine is the temperature-controlled parcel service and is "
        "dispatched only from the Greyloch cold store. A FrostLine parcel may "
        "weigh up to 25 kg. Every FrostLine shipment carries a data logger that "
        "records the temperature every 5 minutes.",
    ),
    Document(
        "DOC-009",
        "Clinical and diagnostic specimens",
        "Clinical specimens, such as patient blood or tissue samples sent for "
        "diagnostic testing, may only be shipped with FrostLine. They must be "
        "packed to UN3373 Category B rules and labelled accordingly. Staff must "
        "refuse clinical specimens offered for any other service.",
    ),
    Document(
        "DOC-010",
        "Dangerous goods acceptance",
        "Only staff holding a valid dangerous goods (DG) certificate may accept "
        "hazardous consignments. The DG certificate must be renewed every 24 "
        "months. Lithium batteries are accepted only on Osprey Freight.",
    ),
    Document(
        "DOC-011",
        "Lift Card",
        "Driving a counterbalance forklift at any Brindlewick site requires an "
        "internal Lift Card. The Lift Card course lasts 3 days and is taught at "
        "the Fennmouth depot. A Lift Card is valid for 3 years and is renewed "
        "with a 1-day refresher.",
    ),
    Document(
        "DOC-012",
        "Annual leave",
        "Full-time employees receive 27 days of annual leave plus public "
        "holidays. Up to 5 unused days may be carried over into the next leave "
        "year. Carried-over days must be taken by 31 March, or they are lost.",
    ),
    Document(
        "DOC-013",
        "Reporting sickness",
        "If you are unwell, phone your line manager before your shift starts. "
        "You may self-certify absences of up to 7 calendar days. Longer absences "
        "need a fit note from a doctor.",
    ),
    Document(
        "DOC-014",
        "Overtime pay",
        "Warehouse staff are paid 1.5 times their hourly rate for hours worked "
        "beyond 40 in a week. Hours worked on a Sunday are paid at twice the "
        "hourly rate. Overtime must be approved in advance by the shift lead in "
        "the Shiftboard rota app.",
    ),
    Document(
        "DOC-015",
        "Travel expenses",
        "Business rail travel is booked in standard class. Using your own car on "
        "company business is reimbursed at 45p per mile. Hotel stays are "
        "reimbursed up to GBP 120 per night. Expense claims must be submitted in "
        "the Tally system within 60 days of the expense.",
    ),
    Document(
        "DOC-016",
        "Meal allowance when travelling",
        "When a business trip lasts more than 5 hours, you may claim up to GBP "
        "15 for a meal. For trips longer than 10 hours the limit rises to GBP "
        "30. Receipts are required, and alcohol is never reimbursed.",
    ),
    Document(
        "DOC-017",
        "Damage claims",
        "Customers must report damage within 7 days of delivery for Kestrel "
        "Express and Heron Standard, within 3 days for Osprey Freight, and "
        "within 2 days for FrostLine. Claims are handled by the claims desk at "
        "the Harwick head office. Without extended cover, compensation is capped "
        "at GBP 250 per parcel or pallet.",
    ),
    Document(
        "DOC-018",
        "Extended cover",
        "Extended cover is an optional add-on priced at 2% of the declared "
        "value. It raises the compensation limit to the declared value, up to "
        "GBP 5,000. Extended cover cannot be bought for FrostLine shipments.",
    ),
    Document(
        "DOC-019",
        "Boomerang returns",
        "Boomerang is the customer returns service. A Boomerang returns label "
        "is valid for 30 days after it is issued. Returned items are processed "
        "at the Fennmouth depot within 2 working days of arrival.",
    ),
    Document(
        "DOC-020",
        "Ledger warehouse system",
        "Ledger is the warehouse management system used at all three sites. "
        "Handheld scanners log in to Ledger with the user's staff number and "
        "password. Ledger passwords must be changed every 90 days.",
    ),
    Document(
        "DOC-021",
        "IT helpdesk",
        "The IT helpdesk is reached on internal extension 4400 between 07:00 and "
        "22:00. Outside those hours, urgent problems are raised as P1 tickets in "
        "Bellwether, which pages the on-call engineer.",
    ),
    Document(
        "DOC-022",
        "Bellwether ticket priorities",
        "Bellwether is the internal ticketing tool. A P1 ticket must receive a "
        "response within 15 minutes, a P2 within 1 hour and a P3 within 1 "
        "working day. P1 is reserved for outages that stop loading at a site.",
    ),
    Document(
        "DOC-023",
        "Security badges",
        "Every employee wears a photo security badge on site. A lost badge must "
        "be reported to Harwick reception within 24 hours. The first replacement "
        "is free; from the second loss onwards, each replacement costs GBP 10, "
        "deducted from pay.",
    ),
    Document(
        "DOC-024",
        "Vehicle fleet",
        "Brindlewick operates 58 rigid trucks and 21 articulated lorries. Twelve "
        "electric vans based at Harwick handle deliveries within the town. Each "
        "electric van has a range of about 180 km.",
    ),
    Document(
        "DOC-025",
        "Drivers' hours",
        "Drivers may drive for at most 9 hours in a day. A 45-minute break is "
        "required after 4.5 hours of driving. The transport office downloads "
        "tachograph data every 28 days.",
    ),
    Document(
        "DOC-026",
        "Temperature excursions",
        "If a FrostLine data logger shows a temperature outside the agreed range "
        "for more than 30 minutes, the shipment is treated as an excursion. It "
        "is returned to Greyloch and quarantined there, and the customer is "
        "notified within 2 hours.",
    ),
    Document(
        "DOC-027",
        "Accepted pallet types",
        "Brindlewick accepts EUR pallets (1200 x 800 mm) and UK standard pallets "
        "(1200 x 1000 mm). Other pallet types are rejected at collection. A "
        "damaged pallet is replaced for a charge of GBP 18.",
    ),
    Document(
        "DOC-028",
        "Collection and drop-off times",
        "Drivers collect from customers in the Harwick area until 17:30 on "
        "working days. Customers may drop off consignments at the Fennmouth "
        "depot until 20:00.",
    ),
    Document(
        "DOC-029",
        "Parking and cycling at Harwick",
        "The staff car park at Harwick has 60 spaces, allocated by permit, "
        "including 6 bays with electric vehicle chargers. Cyclists can use a "
        "secure bike shed and the showers on the first floor.",
    ),
    Document(
        "DOC-030",
        "Canteens and meal vouchers",
        "The Harwick canteen is open from 07:30 to 14:30. Greyloch has no "
        "canteen, so staff working there receive a daily meal voucher worth GBP "
        "6.",
    ),
    Document(
        "DOC-031",
        "Fire safety in the Harwick building",
        "The fire assembly point for the Harwick building is the north gate of "
        "the staff car park. Fire drills are held every 6 months. Fire wardens "
        "wear yellow vests and sweep each floor before reporting to the assembly "
        "point.",
    ),
    Document(
        "DOC-032",
        "First aid cover",
        "Each shift must have at least one trained first aider on site. First "
        "aid training takes 3 days and is renewed every 3 years. First aid kits "
        "are checked monthly by the shift lead.",
    ),
    Document(
        "DOC-033",
        "Protective equipment",
        "Safety boots are compulsory on every warehouse floor. In the Greyloch "
        "freezer chambers staff wear insulated suits. Nobody may work more than "
        "45 minutes at a time in the deep-frozen chamber, and each such spell "
        "must be followed by a 15-minute warm break.",
    ),
    Document(
        "DOC-034",
        "Raising concerns",
        "Concerns about wrongdoing can be raised confidentially with the ethics "
        "officer, Tomasz Ferrand. An external hotline run by ClearVoice is also "
        "available. Brindlewick does not tolerate retaliation against anyone who "
        "raises a concern in good faith.",
    ),
    Document(
        "DOC-035",
        "Customer account tiers",
        "Business customers are placed in the Bronze, Silver or Gold tier by "
        "annual spend. Gold customers spend more than GBP 250,000 a year. They "
        "receive a dedicated account manager and a 10% discount on Osprey "
        "Freight.",
    ),
    Document(
        "DOC-036",
        "Fuel surcharge",
        "A fuel surcharge is added to every shipment as a percentage of the base "
        "rate. It is reviewed on the first Monday of each month. The current "
        "rate is published on the Dockside customer portal.",
    ),
    Document(
        "DOC-037",
        "Dockside customer portal",
        "Dockside is the website where customers book shipments, track them and "
        "download invoices. Logging in requires two-factor authentication. "
        "Invoices remain available for download for 7 years.",
    ),
    Document(
        "DOC-038",
        "Invoicing and payment terms",
        "Customer invoices are issued on the 1st and the 15th of each month. "
        "Payment is due within 30 days of the invoice date. Late payments are "
        "charged interest of 1.5% per month.",
    ),
    Document(
        "DOC-039",
        "Sustainability targets",
        "Brindlewick aims to cut fleet emissions by 40% by 2030 compared with "
        "2019. All deliveries within Harwick are to be made by electric vehicles "
        "by 2027. Solar panels on the Fennmouth depot roof supply about 30% of "
        "the depot's electricity.",
    ),
    Document(
        "DOC-040",
        "Induction for new starters",
        "New starters spend their first day at the Harwick head office for "
        "induction, including a safety briefing and IT account setup. New "
        "warehouse staff then shadow an experienced buddy for their first two "
        "weeks.",
    ),
    Document(
        "DOC-041",
        "Probation",
        "Every new employee serves a 6-month probation period. The line manager "
        "holds review meetings at 3 months and at 6 months. During probation, "
        "the notice period on either side is 1 week.",
    ),
    Document(
        "DOC-042",
        "Personal training budget",
        "Each employee may request up to GBP 800 a year for external courses, "
        "subject to their manager's approval. Mandatory certifications, "
        "including the DG certificate and the Lift Card, are paid from a central "
        "budget and do not count against this allowance.",
    ),
    Document(
        "DOC-043",
        "Weekend deliveries",
        "Kestrel Express parcels can be delivered on Saturdays for a surcharge "
        "of GBP 8. FrostLine parcels are delivered on Saturdays at no extra "
        "charge. Heron Standard and Osprey Freight do not deliver on Saturdays, "
        "and no deliveries are made on Sundays.",
    ),
    Document(
        "DOC-044",
        "Lost parcels",
        "A parcel is declared lost when it has had no scan for 10 working days. "
        "A damage-and-loss claim is then opened automatically on the customer's "
        "behalf. In addition to any compensation, the customer is refunded the "
        "carriage charge.",
    ),
    Document(
        "DOC-045",
        "Peak season leave restrictions",
        "From 15 November to 31 December, warehouse staff may not take more than "
        "3 consecutive days of annual leave without the site manager's approval. "
        "This period is known internally as the peak freeze.",
    ),
    Document(
        "DOC-046",
        "Customs brokerage",
        "The customs team at Fennmouth prepares import declarations for "
        "customers who do not use their own broker. The service costs GBP 45 per "
        "declaration. Declarations are usually lodged within 4 working hours of "
        "the container's arrival.",
    ),
]

QUESTIONS = [
    Question(
        "Q-001",
        "At what temperature is the frozen chamber of the Greyloch cold store kept?",
        {"DOC-004": "frozen chamber at -18 degrees C"},
        "-18 degrees C.",
    ),
    Question(
        "Q-002",
        "How many days of annual leave does a full-time employee receive?",
        {"DOC-012": "27 days of annual leave plus public holidays"},
        "27 days, plus public holidays.",
    ),
    Question(
        "Q-003",
        "How many holiday days can I roll over to next year, and by when do I "
        "have to use them?",
        {
            "DOC-012": "Up to 5 unused days may be carried over into the next "
            "leave year. Carried-over days must be taken by 31 March"
        },
        "Up to 5 days, which must be taken by 31 March.",
    ),
    Question(
        "Q-004",
        "What is the heaviest single parcel a hospital may send blood samples "
        "for diagnostic testing in?",
        {
            "DOC-009": "may only be shipped with FrostLine",
            "DOC-008": "A FrostLine parcel may weigh up to 25 kg",
        },
        "25 kg: clinical specimens may only travel by FrostLine, whose parcel "
        "limit is 25 kg.",
    ),
    Question(
        "Q-005",
        "Who manages the site that FrostLine shipments are dispatched from?",
        {
            "DOC-008": "dispatched only from the Greyloch cold store",
            "DOC-004": "The site manager is Saoirse Lindqvist",
        },
        "Saoirse Lindqvist, the manager of the Greyloch cold store.",
    ),
    Question(
        "Q-006",
        "A Gold-tier customer wants to send palletised freight. What discount "
        "do they get, and how far ahead must they book?",
        {
            "DOC-035": "a 10% discount on Osprey Freight",
            "DOC-007": "booked at least 48 hours before collection",
        },
        "A 10% discount on Osprey Freight, booked at least 48 hours before collection.",
    ),
    Question(
        "Q-007",
        "A lab ships patient tissue samples and wants extended cover. Can it "
        "buy extended cover, and how long does it have to report damage?",
        {
            "DOC-009": "may only be shipped with FrostLine",
            "DOC-018": "Extended cover cannot be bought for FrostLine shipments",
            "DOC-017": "within 2 days for FrostLine",
        },
        "No: clinical specimens must go by FrostLine, for which extended cover "
        "is not sold, and damage must be reported within 2 days of delivery.",
    ),
    Question(
        "Q-008",
        "What is the response target for a P2 ticket in Bellwether?",
        {"DOC-022": "a P2 within 1 hour"},
        "1 hour.",
    ),
    Question(
        "Q-009",
        "How quickly must IT answer when a system failure has halted lorries "
        "being loaded at a depot?",
        {
            "DOC-022": "A P1 ticket must receive a response within 15 minutes"
            ", a P2 within 1 hour and a P3 within 1 working day. P1 is "
            "reserved for outages that stop loading at a site"
        },
        "Within 15 minutes: an outage that stops loading is a P1 ticket.",
    ),
    Question(
        "Q-010",
        "What mileage rate is paid for using your own car on company business?",
        {"DOC-015": "reimbursed at 45p per mile"},
        "45p per mile.",
    ),
    Question(
        "Q-011",
        "On a 12-hour business trip, what is the most I can claim for a meal, "
        "and how long do I have to submit the claim?",
        {
            "DOC-016": "For trips longer than 10 hours the limit rises to GBP 30",
            "DOC-015": "submitted in the Tally system within 60 days",
        },
        "Up to GBP 30, submitted in Tally within 60 days.",
    ),
    Question(
        "Q-012",
        "What happens if I misplace my ID card for the second time?",
        {
            "DOC-023": "reported to Harwick reception within 24 hours. The first "
            "replacement is free; from the second loss onwards, each replacement "
            "costs GBP 10, deducted from pay"
        },
        "Report it to Harwick reception within 24 hours; the replacement costs "
        "GBP 10, deducted from pay.",
    ),
    Question(
        "Q-013",
        "How long is the forklift course, and does it come out of my personal "
        "training budget?",
        {
            "DOC-011": "The Lift Card course lasts 3 days",
            "DOC-042": "including the DG certificate and the Lift Card, are paid "
            "from a central budget and do not count against this allowance",
        },
        "3 days; no, the Lift Card is paid centrally and does not count against "
        "the GBP 800 allowance.",
    ),
    Question(
        "Q-014",
        "Which pallet sizes does Brindlewick accept?",
        {
            "DOC-027": "EUR pallets (1200 x 800 mm) and UK standard pallets "
            "(1200 x 1000 mm)"
        },
        "EUR pallets (1200 x 800 mm) and UK standard pallets (1200 x 1000 mm).",
    ),
    Question(
        "Q-015",
        "What is the maximum weight for a pallet of lithium batteries?",
        {
            "DOC-010": "Lithium batteries are accepted only on Osprey Freight",
            "DOC-007": "A pallet may weigh up to 1,000 kg",
        },
        "1,000 kg including the pallet, since lithium batteries go only by "
        "Osprey Freight.",
    ),
    Question(
        "Q-016",
        "How far in advance must a Gold customer book a shipment of lithium "
        "batteries, and what discount applies?",
        {
            "DOC-010": "Lithium batteries are accepted only on Osprey Freight",
            "DOC-007": "booked at least 48 hours before collection",
            "DOC-035": "a 10% discount on Osprey Freight",
        },
        "At least 48 hours, with 10% off, because lithium batteries travel only "
        "by Osprey Freight.",
    ),
    Question(
        "Q-017",
        "Where is the muster point if we have to evacuate the Harwick building?",
        {"DOC-031": "the north gate of the staff car park"},
        "The north gate of the staff car park.",
    ),
    Question(
        "Q-018",
        "How long can someone work in the deep-frozen chamber before taking a break?",
        {
            "DOC-033": "Nobody may work more than 45 minutes at a time in the "
            "deep-frozen chamber, and each such spell must be followed by a "
            "15-minute warm break"
        },
        "45 minutes, followed by a 15-minute warm break.",
    ),
    Question(
        "Q-019",
        "A Heron Standard parcel without extended cover has had no scan for 10 "
        "working days. What does the customer get?",
        {
            "DOC-044": "declared lost when it has had no scan for 10 working "
            "days. A damage-and-loss claim is then opened automatically on the "
            "customer's behalf. In addition to any compensation, the customer is "
            "refunded the carriage charge",
            "DOC-017": "Without extended cover, compensation is capped at GBP "
            "250 per parcel or pallet",
        },
        "The parcel is declared lost and a claim is opened automatically: "
        "compensation of up to GBP 250 plus a refund of the carriage charge.",
    ),
    Question(
        "Q-020",
        "When is the fuel surcharge reviewed?",
        {"DOC-036": "reviewed on the first Monday of each month"},
        "On the first Monday of each month.",
    ),
    Question(
        "Q-021",
        "For how long can clients fetch old bills from the online portal?",
        {"DOC-037": "Invoices remain available for download for 7 years"},
        "7 years.",
    ),
    Question(
        "Q-022",
        "Until what time can customers drop off at the port depot, and how "
        "many loading bays does it have?",
        {
            "DOC-028": "drop off consignments at the Fennmouth depot until 20:00",
            "DOC-003": "It has 42 loading bays",
        },
        "Until 20:00; the Fennmouth port depot has 42 loading bays.",
    ),
    Question(
        "Q-023",
        "How long is the probation period, and when are the reviews held?",
        {
            "DOC-041": "a 6-month probation period. The line manager holds "
            "review meetings at 3 months and at 6 months"
        },
        "6 months, with reviews at 3 months and at 6 months.",
    ),
    Question(
        "Q-024",
        "A Greyloch warehouse worker wants five consecutive days off in early "
        "December. Whose approval do they need?",
        {
            "DOC-045": "From 15 November to 31 December, warehouse staff may not "
            "take more than 3 consecutive days of annual leave without the site "
            "manager's approval",
            "DOC-004": "The site manager is Saoirse Lindqvist",
        },
        "The Greyloch site manager's, Saoirse Lindqvist, because of the peak "
        "freeze from 15 November to 31 December.",
    ),
    Question(
        "Q-025",
        "Who can I speak to in confidence about fraud I have noticed?",
        {
            "DOC-034": "raised confidentially with the ethics officer, Tomasz "
            "Ferrand. An external hotline run by ClearVoice is also available"
        },
        "The ethics officer, Tomasz Ferrand, or the external ClearVoice hotline.",
    ),
    Question(
        "Q-026",
        "A FrostLine logger shows the temperature out of range for 40 minutes. "
        "Where is the shipment held, and who runs that site?",
        {
            "DOC-026": "returned to Greyloch and quarantined there",
            "DOC-004": "The site manager is Saoirse Lindqvist",
        },
        "It is quarantined at the Greyloch cold store, whose site manager is "
        "Saoirse Lindqvist.",
    ),
    Question(
        "Q-027",
        "Can a clinic's blood samples arrive on a Saturday, and at what extra cost?",
        {
            "DOC-009": "may only be shipped with FrostLine",
            "DOC-043": "FrostLine parcels are delivered on Saturdays at no extra "
            "charge",
        },
        "Yes, at no extra cost: they must go by FrostLine, which delivers on "
        "Saturdays without a surcharge.",
    ),
    Question(
        "Q-028",
        "How much does Brindlewick charge to prepare an import declaration?",
        {"DOC-046": "The service costs GBP 45 per declaration"},
        "GBP 45 per declaration.",
    ),
    Question(
        "Q-029",
        "How many electric vans does the company run, and by what year must "
        "all deliveries in Harwick be electric?",
        {
            "DOC-024": "Twelve electric vans",
            "DOC-039": "All deliveries within Harwick are to be made by electric "
            "vehicles by 2027",
        },
        "Twelve electric vans; all Harwick deliveries are to be electric by 2027.",
    ),
    Question(
        "Q-030",
        "What is the pay rate for working on a Sunday?",
        {"DOC-014": "Hours worked on a Sunday are paid at twice the hourly rate"},
        "Twice the hourly rate.",
    ),
]


def check_content(documents: Sequence[Document], questions: Sequence[Question]) -> None:
    """Raise InconsistentContent unless every reference and quote holds."""
    texts: dict[str, str] = {}
    for document in documents:
        if document.id in texts:
            raise InconsistentContent(document.id, "document ID is used twice")
        texts[document.id] = document.text
    seen: set[str] = set()
    for question in questions:
        if question.id in seen:
            raise InconsistentContent(question.id, "question ID is used twice")
        seen.add(question.id)
        if not question.evidence:
            raise InconsistentContent(question.id, "needs at least one document")
        for doc_id, quote in question.evidence.items():
            if doc_id not in texts:
                raise InconsistentContent(question.id, f"no document {doc_id!r}")
            if quote not in texts[doc_id]:
                raise InconsistentContent(
                    question.id, f"{doc_id} does not contain {quote!r}"
                )


def json_lines(rows: Sequence[Mapping[str, object]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def write(path: Path, text: str) -> None:
    with path.open("w", encoding="ascii", newline="\n") as handle:
        handle.write(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write the RAG corpus and questions as JSON Lines."
    )
    parser.add_argument(
        "--corpus-out", type=Path, default=DATA_DIR / "rag_corpus.jsonl"
    )
    parser.add_argument(
        "--questions-out", type=Path, default=DATA_DIR / "rag_questions.jsonl"
    )
    args = parser.parse_args(argv)
    check_content(DOCUMENTS, QUESTIONS)
    corpus = [{"id": d.id, "title": d.title, "text": d.text} for d in DOCUMENTS]
    questions = [
        {
            "id": q.id,
            "question": q.question,
            "required": list(q.evidence),
            "answer": q.answer,
            "evidence": q.evidence,
        }
        for q in QUESTIONS
    ]
    write(args.corpus_out, json_lines(corpus))
    write(args.questions_out, json_lines(questions))
    print(
        f"wrote {len(corpus)} documents to {args.corpus_out} and "
        f"{len(questions)} questions to {args.questions_out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
