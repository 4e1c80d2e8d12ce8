#!/usr/bin/env node
// Pays a Solana Pay transfer request the way a wallet does, with the reference client
// (@solana/pay's parseURL and createTransfer, web3.js), against an RPC node (the front).
//
//   node pay.mjs --rpc URL --url "solana:<recipient>?amount=..&spl-token=..&reference=.."
//                --payer-secret '[64 numbers]'
//                [--mint-override B58] [--amount-override 1.5] [--recipient-override B58]
//                [--skip-preflight]
//
// The overrides tamper with the parsed request before the transfer is built: another mint,
// another amount (a decimal in the token's units), another recipient; the reference keys and
// memo stay. Prints {"signature":"<base58>"} and exits 0 once the node accepted the
// transaction (it does not wait for confirmation). On failure prints
// {"error":"<message>","kind":"<error class>","logs":[...]|null} and exits 1: kind
// CreateTransferError is @solana/pay refusing (e.g. "insufficient funds"),
// TokenAccountNotFoundError a missing token account, SendTransactionError the node refusing.

import { parseArgs } from "node:util";
import { Connection, Keypair, PublicKey } from "@solana/web3.js";
import { createTransfer, parseURL } from "@solana/pay";
import BigNumber from "bignumber.js";

function fail(e) {
  process.stdout.write(
    JSON.stringify({
      error: e.message || e.name || String(e),
      kind: e.name ?? e.constructor?.name ?? "Error",
      logs: e.logs ?? e.transactionLogs ?? null,
    }) + "\n",
  );
  process.exit(1);
}

async function main() {
  const { values: a } = parseArgs({
    options: {
      rpc: { type: "string" },
      url: { type: "string" },
      "payer-secret": { type: "string" },
      "mint-override": { type: "string" },
      "amount-override": { type: "string" },
      "recipient-override": { type: "string" },
      "skip-preflight": { type: "boolean", default: false },
    },
  });
  for (const name of ["rpc", "url", "payer-secret"]) {
    if (!a[name]) throw new Error(`--${name} is required`);
  }
  const payer = Keypair.fromSecretKey(Uint8Array.from(JSON.parse(a["payer-secret"])));
  const fields = parseURL(a.url);
  if (!fields.recipient) throw new Error("not a transfer request URL (it has no recipient)");
  if (a["mint-override"]) fields.splToken = new PublicKey(a["mint-override"]);
  if (a["amount-override"]) fields.amount = new BigNumber(a["amount-override"]);
  if (a["recipient-override"]) fields.recipient = new PublicKey(a["recipient-override"]);

  // No WebSocket: nothing here subscribes (confirmTransaction would).
  const connection = new Connection(a.rpc, { commitment: "confirmed", disableRetryOnRateLimit: true });
  const tx = await createTransfer(connection, payer.publicKey, fields, { commitment: "confirmed" });
  tx.sign(payer);
  const signature = await connection.sendRawTransaction(tx.serialize(), {
    skipPreflight: a["skip-preflight"],
    preflightCommitment: "confirmed",
  });
  process.stdout.write(JSON.stringify({ signature }) + "\n");
  // web3.js keeps HTTP connections alive; do not wait for them to time out.
  process.exit(0);
}

main().catch(fail);
