#!/usr/bin/env node
// Decodes a wire transaction with the reference clients, so that tests can check what
// another implementation (gpunexd) signs.
//
//   echo <base64 transaction> | node decode-tx.mjs
//
// Prints one JSON object:
//   {version: "legacy" | 0, feePayer, recentBlockhash, header, accountKeys: [base58],
//    signatures: [{pubkey, signature, valid}], signaturesValid: bool,
//    addressTableLookups: [...] (v0 only),
//    instructions: [{programId, program, keys: [{pubkey, isSigner, isWritable}], data (hex),
//                    decoded: {...} | null}]}
// `valid` is an ed25519 check of each required signer's signature over the message bytes.
// `program` names the known programs: system, compute-budget, spl-token, spl-token-2022,
// spl-associated-token-account, spl-memo, else "unknown". `decoded` by program:
//   spl-token(-2022): @solana/spl-token's decodeInstruction, e.g. {type: "TransferChecked",
//     amount: "1500000", decimals: 6, source, mint, destination, owner, multiSigners: []}
//     (amounts as decimal strings, accounts base58);
//   spl-associated-token-account: {type: "Create" | "CreateIdempotent" | "RecoverNested",
//     payer, associatedToken, owner, mint, systemProgram, tokenProgram,
//     associatedTokenMatches: whether associatedToken is owner's ATA for mint};
//   spl-memo: {type: "Memo", text (utf-8)};  system: {type, ...fields} (Transfer: fromPubkey,
//   toPubkey, lamports);  compute-budget: {type, ...fields};
//   undecodable data: {type: "unknown", error}.
// Keys loaded from address lookup tables cannot be named here: pubkey null.
// Exits 1 with a message on stderr when stdin is not a transaction.

import { ComputeBudgetInstruction, PublicKey, SystemInstruction, TransactionInstruction } from "@solana/web3.js";
import { TokenInstruction, decodeInstruction, getAssociatedTokenAddressSync } from "@solana/spl-token";

import {
  ATA_PROGRAM,
  COMPUTE_BUDGET_PROGRAM,
  MEMO_PROGRAMS,
  SYSTEM_PROGRAM,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
} from "./lib/spl.mjs";
import { checkSignatures, decodeWireTransaction } from "./lib/wire.mjs";

function programName(id) {
  if (id === SYSTEM_PROGRAM) return "system";
  if (id === COMPUTE_BUDGET_PROGRAM) return "compute-budget";
  if (id === TOKEN_PROGRAM) return "spl-token";
  if (id === TOKEN_2022_PROGRAM) return "spl-token-2022";
  if (id === ATA_PROGRAM) return "spl-associated-token-account";
  if (MEMO_PROGRAMS.has(id)) return "spl-memo";
  return "unknown";
}

/** bigint -> decimal string, PublicKey -> base58, recursively. */
function plain(value) {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof PublicKey) return value.toBase58();
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return Buffer.from(value).toString("hex");
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

function decodeToken(ix) {
  const d = decodeInstruction(ix, ix.programId);
  const out = { type: TokenInstruction[d.data.instruction] ?? String(d.data.instruction) };
  for (const [k, v] of Object.entries(d.data)) if (k !== "instruction") out[k] = plain(v);
  for (const [k, v] of Object.entries(d.keys)) {
    out[k] = Array.isArray(v) ? v.map((m) => m.pubkey.toBase58()) : v ? v.pubkey.toBase58() : null;
  }
  return out;
}

function decodeAta(ix) {
  const kind = ix.data.length === 0 ? 0 : ix.data[0];
  const type = ["Create", "CreateIdempotent", "RecoverNested"][kind] ?? `unknown(${kind})`;
  if (kind > 1) return { type, accounts: ix.keys.map((k) => k.pubkey.toBase58()) };
  const names = ["payer", "associatedToken", "owner", "mint", "systemProgram", "tokenProgram"];
  const out = { type };
  names.forEach((n, i) => {
    out[n] = ix.keys[i]?.pubkey.toBase58() ?? null;
  });
  if (out.owner && out.mint && out.tokenProgram) {
    const expected = getAssociatedTokenAddressSync(
      new PublicKey(out.mint),
      new PublicKey(out.owner),
      true,
      new PublicKey(out.tokenProgram),
    );
    out.associatedTokenMatches = expected.toBase58() === out.associatedToken;
  }
  return out;
}

function decodeSystem(ix) {
  const type = SystemInstruction.decodeInstructionType(ix);
  const decoder = {
    Transfer: "decodeTransfer",
    Create: "decodeCreateAccount",
    Assign: "decodeAssign",
    TransferWithSeed: "decodeTransferWithSeed",
    CreateWithSeed: "decodeCreateWithSeed",
  }[type];
  return { type, ...(decoder ? plain(SystemInstruction[decoder](ix)) : {}) };
}

function decodeComputeBudget(ix) {
  const type = ComputeBudgetInstruction.decodeInstructionType(ix);
  const decoder = {
    SetComputeUnitLimit: "decodeSetComputeUnitLimit",
    SetComputeUnitPrice: "decodeSetComputeUnitPrice",
    RequestHeapFrame: "decodeRequestHeapFrame",
    RequestUnits: "decodeRequestUnits",
  }[type];
  return { type, ...(decoder ? plain(ComputeBudgetInstruction[decoder](ix)) : {}) };
}

function decodeKnown(program, ix) {
  switch (program) {
    case "spl-token":
    case "spl-token-2022":
      return decodeToken(ix);
    case "spl-associated-token-account":
      return decodeAta(ix);
    case "spl-memo":
      return { type: "Memo", text: ix.data.toString("utf8") };
    case "system":
      return decodeSystem(ix);
    case "compute-budget":
      return decodeComputeBudget(ix);
    default:
      return null;
  }
}

function describe(raw) {
  const decoded = decodeWireTransaction(raw);
  const message = decoded.tx.message;
  const statics = message.staticAccountKeys.map((k) => k.toBase58());
  const loadedWritable = (message.addressTableLookups ?? []).reduce((n, l) => n + l.writableIndexes.length, 0);
  const meta = (i) =>
    i < statics.length
      ? { pubkey: statics[i], isSigner: message.isAccountSigner(i), isWritable: message.isAccountWritable(i) }
      : { pubkey: null, isSigner: false, isWritable: i - statics.length < loadedWritable };

  const signatures = checkSignatures(decoded);
  const out = {
    version: decoded.version,
    feePayer: statics[0],
    recentBlockhash: message.recentBlockhash,
    header: { ...message.header },
    accountKeys: statics,
    signatures,
    signaturesValid: signatures.every((s) => s.valid),
    instructions: message.compiledInstructions.map((c) => {
      const programId = meta(c.programIdIndex).pubkey;
      const keys = Array.from(c.accountKeyIndexes).map(meta);
      const data = Buffer.from(c.data);
      const program = programName(programId);
      let decodedIx = null;
      if (program !== "unknown") {
        try {
          if (keys.some((k) => k.pubkey === null)) throw new Error("accounts from a lookup table");
          const ix = new TransactionInstruction({
            programId: new PublicKey(programId),
            keys: keys.map((k) => ({ ...k, pubkey: new PublicKey(k.pubkey) })),
            data,
          });
          decodedIx = decodeKnown(program, ix);
        } catch (e) {
          decodedIx = { type: "unknown", error: e.message ?? String(e) };
        }
      }
      return { programId, program, keys, data: data.toString("hex"), decoded: decodedIx };
    }),
  };
  if (decoded.version === 0) {
    out.addressTableLookups = message.addressTableLookups.map((l) => ({
      accountKey: l.accountKey.toBase58(),
      writableIndexes: Array.from(l.writableIndexes),
      readonlyIndexes: Array.from(l.readonlyIndexes),
    }));
  }
  return out;
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const text = Buffer.concat(chunks).toString("utf8").trim();
try {
  process.stdout.write(JSON.stringify(describe(Buffer.from(text, "base64"))) + "\n");
} catch (e) {
  process.stderr.write(`decode-tx: not a transaction: ${e.message}\n`);
  process.exit(1);
}
