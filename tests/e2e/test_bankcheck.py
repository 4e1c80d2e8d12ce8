"""Self-check of bankcheck.py, the e2e tests' independent checkers of bank payout files.

Small files written by gpunex_bank (bench/bank_files_bench with LINES=3 ENTRIES=3) are
the fixtures: each must pass, and each tampered copy must fail with the rule it breaks.
No gpunexd is started. Needs /usr/bin/python3 with python3-stdnum and xmllint.
"""

import os
import tempfile
import unittest

import bankcheck

HERE = os.path.dirname(os.path.abspath(__file__))
XSD = os.path.join(os.environ.get("GPUNEX_SOURCE_DIR", os.path.join(HERE, "..", "..")),
                   "src", "platform", "bank", "pain.001.001.09.xsd")

NACHA = (
    "101 02100002111234567892612070800A094101JPMORGAN CHASE         GPUNEX OPERATIONS INC          \n"
    "5220GPUNEX                              1123456789PPDPAYOUT          261208   1021000020000001\n"
    "632026009593000001000037     0000012919PAY_01JB0000001RENE MULLER             0021000020000002\n"
    "622121000358000001000074     0000020838PAY_01JB0000002RENE MULLER             0021000020000003\n"
    "822000000200147009940000000000000000000337571123456789                         021000020000001\n"
    "5220GPUNEX                              1123456789CCDPAYOUT          261208   1021000020000002\n"
    "622011000015000001000000     0000005000PAY_01JB0000000ACME GPU FARMS LLC      0021000020000001\n"
    "822000000100011000010000000000000000000050001123456789                         021000020000002\n"
    "9000002000001000000030015800995000000000000000000038757                                       \n"
    "9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999\n"
)

PAIN001 = """<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.09">
  <CstmrCdtTrfInitn>
    <GrpHdr>
      <MsgId>gpx-bench-0001</MsgId>
      <CreDtTm>2026-12-07T08:00:00+00:00</CreDtTm>
      <NbOfTxs>3</NbOfTxs>
      <CtrlSum>387.57</CtrlSum>
      <InitgPty>
        <Nm>gpunex Operations GmbH</Nm>
      </InitgPty>
    </GrpHdr>
    <PmtInf>
      <PmtInfId>gpx-bench-0001</PmtInfId>
      <PmtMtd>TRF</PmtMtd>
      <NbOfTxs>3</NbOfTxs>
      <CtrlSum>387.57</CtrlSum>
      <PmtTpInf>
        <SvcLvl>
          <Cd>SEPA</Cd>
        </SvcLvl>
      </PmtTpInf>
      <ReqdExctnDt>
        <Dt>2026-12-08</Dt>
      </ReqdExctnDt>
      <Dbtr>
        <Nm>gpunex Operations GmbH</Nm>
      </Dbtr>
      <DbtrAcct>
        <Id>
          <IBAN>DE89370400440532013000</IBAN>
        </Id>
      </DbtrAcct>
      <DbtrAgt>
        <FinInstnId>
          <BICFI>COBADEFFXXX</BICFI>
        </FinInstnId>
      </DbtrAgt>
      <ChrgBr>SLEV</ChrgBr>
      <CdtTrfTxInf>
        <PmtId>
          <EndToEndId>pay-01JBENCH0000000000000000</EndToEndId>
        </PmtId>
        <Amt>
          <InstdAmt Ccy="EUR">50.00</InstdAmt>
        </Amt>
        <CdtrAgt>
          <FinInstnId>
            <BICFI>DEUTDEFF500</BICFI>
          </FinInstnId>
        </CdtrAgt>
        <Cdtr>
          <Nm>Rene Muller</Nm>
        </Cdtr>
        <CdtrAcct>
          <Id>
            <IBAN>DE68370400440000000000</IBAN>
          </Id>
        </CdtrAcct>
        <RmtInf>
          <Ustrd>gpunex payout pay-01JBENCH0000000000000000 earnings 2026-11</Ustrd>
        </RmtInf>
      </CdtTrfTxInf>
      <CdtTrfTxInf>
        <PmtId>
          <EndToEndId>pay-01JBENCH0000000000000001</EndToEndId>
        </PmtId>
        <Amt>
          <InstdAmt Ccy="EUR">129.19</InstdAmt>
        </Amt>
        <Cdtr>
          <Nm>Zoe Orsted</Nm>
        </Cdtr>
        <CdtrAcct>
          <Id>
            <IBAN>FR5120041010050000000000106</IBAN>
          </Id>
        </CdtrAcct>
        <RmtInf>
          <Ustrd>gpunex payout pay-01JBENCH0000000000000001 earnings 2026-11</Ustrd>
        </RmtInf>
      </CdtTrfTxInf>
      <CdtTrfTxInf>
        <PmtId>
          <EndToEndId>pay-01JBENCH0000000000000002</EndToEndId>
        </PmtId>
        <Amt>
          <InstdAmt Ccy="EUR">208.38</InstdAmt>
        </Amt>
        <Cdtr>
          <Nm>Lukasz Wisniewski</Nm>
        </Cdtr>
        <CdtrAcct>
          <Id>
            <IBAN>NL31ABNA0000000002</IBAN>
          </Id>
        </CdtrAcct>
        <RmtInf>
          <Ustrd>gpunex payout pay-01JBENCH0000000000000002 earnings 2026-11</Ustrd>
        </RmtInf>
      </CdtTrfTxInf>
    </PmtInf>
  </CstmrCdtTrfInitn>
</Document>
"""


class NachaTest(unittest.TestCase):
    def tamper(self, line, pos, text):
        lines = NACHA.split("\n")
        lines[line] = lines[line][:pos] + text + lines[line][pos + len(text):]
        return "\n".join(lines)

    def test_the_fixture_passes_with_its_figures(self):
        r = bankcheck.check_nacha(NACHA)
        self.assertEqual(r["batches"], 2)
        self.assertEqual(r["blocks"], 1)
        self.assertEqual(r["entries"], 3)
        self.assertEqual(r["total_credit_cents"], 12919 + 20838 + 5000)
        self.assertEqual(r["entry_hash"], 2600959 + 12100035 + 1100001)
        self.assertEqual(len(r["traces"]), 3)

    def test_tampering_is_caught(self):
        cases = {
            "amount": (2, 38, "0"),        # 12919 -> 12910
            "entry hash": (4, 19, "1"),
            "check digit": (2, 11, "4"),   # 026009593 -> 026009594
            "block count": (8, 12, "2"),
            "total credit": (8, 54, "1"),
        }
        for what, (line, pos, text) in cases.items():
            with self.subTest(what):
                with self.assertRaises(bankcheck.BankFileError):
                    bankcheck.check_nacha(self.tamper(line, pos, text))
        with self.assertRaises(bankcheck.BankFileError):
            bankcheck.check_nacha(NACHA.replace("RENE MULLER ", "RENE MULLER", 1))  # 93 chars
        with self.assertRaises(bankcheck.BankFileError):
            bankcheck.check_nacha(NACHA.rsplit("9" * 94, 1)[0])  # filler gone: 9 records


class Pain001Test(unittest.TestCase):
    def check(self, xml):
        with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
            f.write(xml)
        try:
            return bankcheck.check_pain001(f.name, XSD)
        finally:
            os.unlink(f.name)

    def test_the_fixture_passes_with_its_figures(self):
        r = self.check(PAIN001)
        self.assertEqual(r["transactions"], 3)
        self.assertEqual(r["ctrl_sum_cents"], 5000 + 12919 + 20838)
        self.assertEqual(r["lines"][0]["end_to_end_id"], "pay-01JBENCH0000000000000000")

    def test_tampering_is_caught(self):
        for what, old, new in [
            ("schema", "<ChrgBr>SLEV</ChrgBr>", "<ChrgBr>XXXX</ChrgBr>"),
            ("payment method", "<PmtMtd>TRF</PmtMtd>", "<PmtMtd>CHK</PmtMtd>"),
            ("amount vs CtrlSum", ">129.19<", ">129.18<"),
            ("IBAN check digits", "FR51", "FR52"),
            ("NbOfTxs", "<NbOfTxs>3</NbOfTxs>", "<NbOfTxs>4</NbOfTxs>"),
        ]:
            with self.subTest(what):
                self.assertIn(old, PAIN001)
                with self.assertRaises(bankcheck.BankFileError):
                    self.check(PAIN001.replace(old, new, 1))


if __name__ == "__main__":
    unittest.main()
