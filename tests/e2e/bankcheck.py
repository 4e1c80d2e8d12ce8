"""Independent checkers of the bank payout files gpunexd writes (PAY-4), for e2e tests.

They share no code with the C++ writers (src/platform/bank): each rule is read from the
file's bytes again, here, with the standard library, Debian's python3-stdnum (routing
numbers, IBANs) and xmllint (libxml2-utils, for the XML schema). Run with /usr/bin/python3.

check_nacha(text) -> dict
    A NACHA ACH file: every record 94 characters, the record order, blocking factor 10,
    counts, entry hashes, totals, routing check digits and trace numbers, per batch and
    for the file. Raises BankFileError saying which line is wrong.

check_pain001(path, xsd_path) -> dict
    An ISO 20022 pain.001.001.09 file: valid against the schema (xmllint --noout
    --schema), NbOfTxs and CtrlSum of the group header and of each payment information
    block agree with the transactions, every amount in EUR with at most two decimals,
    every IBAN valid (ISO 13616 check digits). Raises BankFileError.
"""

import decimal
import subprocess
import xml.etree.ElementTree as ET

from stdnum import iban as stdnum_iban
from stdnum.us import rtn as stdnum_rtn

__all__ = ["BankFileError", "check_nacha", "check_pain001"]


class BankFileError(AssertionError):
    """A payment file breaks a rule of its format."""


# --- NACHA

_RECORD = 94
_BLOCK = 10
_CREDIT_CODES = {"22", "23", "32", "33"}
_DEBIT_CODES = {"27", "28", "37", "38"}
_PRENOTE_CODES = {"23", "28", "33", "38"}


def _field(rec, start, end):
    """Positions as NACHA numbers them: 1-based, inclusive."""
    return rec[start - 1:end]


def _num(rec, start, end, what, lineno):
    s = _field(rec, start, end)
    if not s.isdigit() or not s.isascii():
        raise BankFileError(f"line {lineno}: {what} (positions {start}-{end}) is not digits: {s!r}")
    return int(s)


def _routing_ok(nine):
    return len(nine) == 9 and nine.isdigit() and stdnum_rtn.is_valid(nine)


def check_nacha(text):
    """Re-checks a NACHA file; returns its figures.

    Returns {"batches", "blocks", "entries" (entry details and addenda), "entry_hash",
    "total_debit_cents", "total_credit_cents", "traces": [trace numbers in file order],
    "entry_list": [{"trace", "routing", "account", "amount_cents", "code", "sec",
    "name", "id"}]}.
    """
    if isinstance(text, bytes):
        text = text.decode("ascii")
    if not text:
        raise BankFileError("the file is empty")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    for n, ln in enumerate(lines, 1):
        if len(ln) != _RECORD:
            raise BankFileError(f"line {n}: {len(ln)} characters, not {_RECORD}")
        if any(not (0x20 <= ord(c) <= 0x7E) for c in ln):
            raise BankFileError(f"line {n}: a character outside printable ASCII")
    if len(lines) % _BLOCK:
        raise BankFileError(f"{len(lines)} records: not a multiple of {_BLOCK}")

    types = "".join(ln[0] for ln in lines)
    # The filler: trailing records of 94 nines, fewer than a block.
    body_end = len(lines)
    while body_end > 0 and lines[body_end - 1] == "9" * _RECORD:
        body_end -= 1
    filler = len(lines) - body_end
    if filler >= _BLOCK:
        raise BankFileError(f"{filler} filler records: a whole block of filler")
    if body_end < 4 or types[0] != "1" or types[body_end - 1] != "9":
        raise BankFileError("the file must begin with a file header (1) and end with a file "
                            "control (9) before its filler")

    head = lines[0]
    if _field(head, 2, 3) != "01":
        raise BankFileError("line 1: the priority code is not 01")
    dest = _field(head, 4, 13)
    if dest[0] != " " or not _routing_ok(dest[1:]):
        raise BankFileError(f"line 1: the immediate destination {dest!r} is not a space and a "
                            "valid routing number")
    if _field(head, 35, 37) != "094" or _field(head, 38, 39) != "10" or _field(head, 40, 40) != "1":
        raise BankFileError("line 1: record size, blocking factor or format code is wrong")
    if not _field(head, 34, 34).isalnum() or _field(head, 34, 34).islower():
        raise BankFileError("line 1: the file id modifier is not A-Z or 0-9")

    batches = 0
    entries_total = 0
    hash_total = 0
    debit_total = 0
    credit_total = 0
    traces = []
    entry_list = []
    last_batch_number = 0
    i = 1
    while i < body_end - 1:
        hdr = lines[i]
        if hdr[0] != "5":
            raise BankFileError(f"line {i + 1}: a batch header (5) was expected, not {hdr[0]!r}")
        service = _field(hdr, 2, 4)
        if service not in ("200", "220", "225"):
            raise BankFileError(f"line {i + 1}: service class {service}")
        sec = _field(hdr, 51, 53)
        if sec not in ("PPD", "CCD"):
            raise BankFileError(f"line {i + 1}: SEC code {sec!r}")
        odfi = _field(hdr, 80, 87)
        if not odfi.isdigit():
            raise BankFileError(f"line {i + 1}: the originating DFI {odfi!r} is not 8 digits")
        batch_number = _num(hdr, 88, 94, "the batch number", i + 1)
        if batch_number <= last_batch_number:
            raise BankFileError(f"line {i + 1}: batch number {batch_number} does not ascend")
        last_batch_number = batch_number
        batches += 1
        count = 0
        bhash = 0
        bdebit = 0
        bcredit = 0
        last_seq = -1
        i += 1
        while i < body_end - 1 and lines[i][0] in "67":
            ent = lines[i]
            n = i + 1
            if ent[0] == "7":
                raise BankFileError(f"line {n}: an addenda record without its entry")
            code = _field(ent, 2, 3)
            if code not in _CREDIT_CODES | _DEBIT_CODES:
                raise BankFileError(f"line {n}: transaction code {code}")
            if service == "220" and code not in _CREDIT_CODES:
                raise BankFileError(f"line {n}: a debit in a credits-only batch")
            if service == "225" and code not in _DEBIT_CODES:
                raise BankFileError(f"line {n}: a credit in a debits-only batch")
            routing = _field(ent, 4, 12)
            if not _routing_ok(routing):
                raise BankFileError(f"line {n}: routing {routing} fails its check digit")
            amount = _num(ent, 30, 39, "the amount", n)
            if code in _PRENOTE_CODES and amount != 0:
                raise BankFileError(f"line {n}: a prenote with an amount")
            if code not in _PRENOTE_CODES and amount <= 0:
                raise BankFileError(f"line {n}: an amount of 0")
            account = _field(ent, 13, 29)
            if not account.strip() or account[0] == " ":
                raise BankFileError(f"line {n}: the account number is blank or not left-justified")
            trace = _field(ent, 80, 94)
            if not trace.isdigit() or trace[:8] != odfi:
                raise BankFileError(f"line {n}: trace {trace!r} does not start with ODFI {odfi}")
            seq = int(trace[8:])
            if seq <= last_seq:
                raise BankFileError(f"line {n}: trace {trace} does not ascend in its batch")
            last_seq = seq
            if trace in traces:
                raise BankFileError(f"line {n}: trace {trace} repeats")
            traces.append(trace)
            entry_list.append({
                "trace": trace, "routing": routing, "account": account.rstrip(),
                "amount_cents": amount, "code": code, "sec": sec,
                "id": _field(ent, 40, 54).rstrip(), "name": _field(ent, 55, 76).rstrip(),
            })
            count += 1
            bhash += int(routing[:8])
            if code in _CREDIT_CODES:
                bcredit += amount
            else:
                bdebit += amount
            indicator = _field(ent, 79, 79)
            i += 1
            if indicator == "1":
                if i >= body_end - 1 or lines[i][0] != "7":
                    raise BankFileError(f"line {n}: addenda indicator 1 without an addenda record")
                add = lines[i]
                if _field(add, 2, 3) != "05" or _field(add, 88, 94) != trace[8:]:
                    raise BankFileError(f"line {i + 1}: the addenda record does not match its entry")
                count += 1
                i += 1
            elif indicator != "0":
                raise BankFileError(f"line {n}: addenda indicator {indicator!r}")
        if count == 0:
            raise BankFileError(f"line {i}: a batch without entries")
        if i >= body_end - 1 or lines[i][0] != "8":
            raise BankFileError(f"line {i + 1}: a batch control (8) was expected")
        ctl = lines[i]
        n = i + 1
        if _field(ctl, 2, 4) != service:
            raise BankFileError(f"line {n}: service class differs from the batch header")
        for (start, end, what), want in {
            (5, 10, "the entry/addenda count"): count,
            (11, 20, "the entry hash"): bhash % 10**10,
            (21, 32, "the total debit"): bdebit,
            (33, 44, "the total credit"): bcredit,
        }.items():
            got = _num(ctl, start, end, what, n)
            if got != want:
                raise BankFileError(f"line {n}: {what} is {got}, the batch's entries give {want}")
        if _field(ctl, 45, 54) != _field(hdr, 41, 50):
            raise BankFileError(f"line {n}: company identification differs from the header")
        if _field(ctl, 80, 87) != odfi or _field(ctl, 88, 94) != _field(hdr, 88, 94):
            raise BankFileError(f"line {n}: ODFI or batch number differs from the header")
        entries_total += count
        hash_total += bhash
        debit_total += bdebit
        credit_total += bcredit
        i += 1
    if batches == 0:
        raise BankFileError("the file has no batches")

    fc = lines[body_end - 1]
    n = body_end
    blocks = len(lines) // _BLOCK
    expect = {
        (2, 7, "the batch count"): batches,
        (8, 13, "the block count"): blocks,
        (14, 21, "the entry/addenda count"): entries_total,
        (22, 31, "the entry hash"): hash_total % 10**10,
        (32, 43, "the total debit"): debit_total,
        (44, 55, "the total credit"): credit_total,
    }
    for (start, end, what), want in expect.items():
        got = _num(fc, start, end, what, n)
        if got != want:
            raise BankFileError(f"line {n}: {what} is {got}, the file has {want}")
    if _field(fc, 56, 94).strip():
        raise BankFileError(f"line {n}: the reserved field is not blank")

    return {
        "batches": batches,
        "blocks": blocks,
        "entries": entries_total,
        "entry_hash": hash_total % 10**10,
        "total_debit_cents": debit_total,
        "total_credit_cents": credit_total,
        "traces": traces,
        "entry_list": entry_list,
    }


# --- pain.001

_NS = {"p": "urn:iso:std:iso:20022:tech:xsd:pain.001.001.09"}


def _cents(text, where):
    try:
        d = decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise BankFileError(f"{where}: {text!r} is not a decimal") from None
    if d.as_tuple().exponent < -2:
        raise BankFileError(f"{where}: {text} has more than two decimals")
    return int(d * 100)


def check_pain001(path, xsd_path):
    """Re-checks a pain.001.001.09 file; returns its figures.

    Returns {"message_id", "transactions", "ctrl_sum_cents", "lines": [{"end_to_end_id",
    "iban", "amount_cents", "name"}]}.
    """
    res = subprocess.run(["xmllint", "--noout", "--nonet", "--schema", str(xsd_path), str(path)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise BankFileError(f"xmllint: {res.stderr.strip()}")

    root = ET.parse(path).getroot()
    if root.tag != "{%s}Document" % _NS["p"]:
        raise BankFileError(f"the root element is {root.tag}")
    hdr = root.find("p:CstmrCdtTrfInitn/p:GrpHdr", _NS)
    pmts = root.findall("p:CstmrCdtTrfInitn/p:PmtInf", _NS)
    all_lines = []
    for k, pmt in enumerate(pmts):
        where = f"PmtInf[{k}]"
        if pmt.findtext("p:PmtMtd", namespaces=_NS) != "TRF":
            raise BankFileError(f"{where}: PmtMtd is not TRF")
        svc = pmt.findtext("p:PmtTpInf/p:SvcLvl/p:Cd", namespaces=_NS)
        if svc != "SEPA":
            raise BankFileError(f"{where}: the service level is {svc!r}, not SEPA")
        debtor_iban = pmt.findtext("p:DbtrAcct/p:Id/p:IBAN", namespaces=_NS)
        try:
            stdnum_iban.validate(debtor_iban or "", check_country=False)
        except Exception as e:  # stdnum raises ValidationError subclasses
            raise BankFileError(f"{where}: the debtor IBAN {debtor_iban!r} is invalid: {e}") from None
        txs = pmt.findall("p:CdtTrfTxInf", _NS)
        block_sum = 0
        for j, tx in enumerate(txs):
            twhere = f"{where}.CdtTrfTxInf[{j}]"
            amt = tx.find("p:Amt/p:InstdAmt", _NS)
            if amt is None or amt.get("Ccy") != "EUR":
                raise BankFileError(f"{twhere}: the amount is not in EUR")
            cents = _cents(amt.text, twhere)
            if cents <= 0:
                raise BankFileError(f"{twhere}: the amount is not positive")
            iban = tx.findtext("p:CdtrAcct/p:Id/p:IBAN", namespaces=_NS) or ""
            try:
                stdnum_iban.validate(iban, check_country=False)
            except Exception as e:
                raise BankFileError(f"{twhere}: the IBAN {iban!r} is invalid: {e}") from None
            block_sum += cents
            all_lines.append({
                "end_to_end_id": tx.findtext("p:PmtId/p:EndToEndId", namespaces=_NS),
                "iban": iban,
                "amount_cents": cents,
                "name": tx.findtext("p:Cdtr/p:Nm", namespaces=_NS),
            })
        nb = pmt.findtext("p:NbOfTxs", namespaces=_NS)
        if nb is not None and int(nb) != len(txs):
            raise BankFileError(f"{where}: NbOfTxs is {nb}, the block has {len(txs)}")
        cs = pmt.findtext("p:CtrlSum", namespaces=_NS)
        if cs is not None and _cents(cs, where + ".CtrlSum") != block_sum:
            raise BankFileError(f"{where}: CtrlSum is {cs}, the block adds up to {block_sum} cents")

    total = sum(line["amount_cents"] for line in all_lines)
    nb = hdr.findtext("p:NbOfTxs", namespaces=_NS)
    if int(nb) != len(all_lines):
        raise BankFileError(f"GrpHdr: NbOfTxs is {nb}, the file has {len(all_lines)}")
    cs = hdr.findtext("p:CtrlSum", namespaces=_NS)
    if cs is not None and _cents(cs, "GrpHdr.CtrlSum") != total:
        raise BankFileError(f"GrpHdr: CtrlSum is {cs}, the file adds up to {total} cents")
    ids = [line["end_to_end_id"] for line in all_lines]
    if len(set(ids)) != len(ids):
        raise BankFileError("an EndToEndId repeats")

    return {
        "message_id": hdr.findtext("p:MsgId", namespaces=_NS),
        "transactions": len(all_lines),
        "ctrl_sum_cents": total,
        "lines": all_lines,
    }
