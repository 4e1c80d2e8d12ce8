// Self-test of the RPC front, with the reference clients (web3.js, spl-token, @solana/pay)
// as its clients: `node --test tests/solana/` (after tests/solana/setup.sh).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import path from "node:path";

import {
  ComputeBudgetProgram,
  Connection,
  Keypair,
  PublicKey,
  SystemProgram,
  Transaction,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from "@solana/web3.js";
import {
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
  getMint,
} from "@solana/spl-token";
import { createTransfer, encodeURL, findReference, parseURL, validateTransfer } from "@solana/pay";
import BigNumber from "bignumber.js";

import { toBase58 as bs58 } from "./lib/wire.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const MEMO_PROGRAM = new PublicKey("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");

let front; // the child process
let ready; // its ready line
let url;
let connection;

async function rpc(method, ...params) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  if (res.status !== 200) return { httpStatus: res.status };
  const body = await res.json();
  if (body.error) {
    const e = new Error(`${method}: ${body.error.code} ${body.error.message}`);
    Object.assign(e, body.error);
    throw e;
  }
  return body.result;
}

async function newWallet() {
  const w = await rpc("test_newWallet");
  return Keypair.fromSecretKey(Uint8Array.from(w.secret_key));
}

/** A signed TransferChecked of `amount` USDC base units from `payer` to `recipient`'s ATA
 *  (created idempotently), with `reference` as an extra read-only key and a memo. */
async function usdcTransfer(payer, recipient, amount, { reference, memo, blockhash } = {}) {
  const mint = new PublicKey(ready.mint);
  const source = getAssociatedTokenAddressSync(mint, payer.publicKey);
  const destination = getAssociatedTokenAddressSync(mint, recipient);
  const transfer = createTransferCheckedInstruction(source, mint, destination, payer.publicKey, amount, 6);
  if (reference) transfer.keys.push({ pubkey: reference, isSigner: false, isWritable: false });
  const tx = new Transaction({
    feePayer: payer.publicKey,
    recentBlockhash: blockhash ?? (await connection.getLatestBlockhash()).blockhash,
  });
  tx.add(createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, destination, recipient, mint));
  tx.add(transfer);
  if (memo) tx.add(new TransactionInstruction({ programId: MEMO_PROGRAM, keys: [], data: Buffer.from(memo) }));
  tx.sign(payer);
  return tx.serialize();
}

function sendRaw(raw, config = {}) {
  return rpc("sendTransaction", Buffer.from(raw).toString("base64"), { encoding: "base64", ...config });
}

async function status(signature) {
  const r = await rpc("getSignatureStatuses", [signature], { searchTransactionHistory: true });
  return r.value[0];
}

before(async () => {
  front = spawn(process.execPath, [path.join(here, "rpc-front.mjs"), "--port", "0"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines = createInterface({ input: front.stdout });
  ready = await new Promise((resolve, reject) => {
    lines.once("line", (line) => resolve(JSON.parse(line)));
    front.once("exit", (code) => reject(new Error(`rpc-front exited with ${code} before it was ready`)));
  });
  url = `http://127.0.0.1:${ready.port}`;
  connection = new Connection(url, "confirmed");
});

after(() => {
  front?.kill("SIGTERM");
});

describe("rpc-front", () => {
  test("creates the USDC mint with its own authority", async () => {
    assert.equal(ready.mint, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
    const mint = await getMint(connection, new PublicKey(ready.mint));
    assert.equal(mint.decimals, 6);
    assert.equal(mint.mintAuthority.toBase58(), ready.mint_authority);
    assert.equal(await rpc("getHealth"), "ok");
    assert.equal((await rpc("nope").catch((e) => e)).code, -32601);
    assert.equal((await rpc("getBalance", "not-a-key").catch((e) => e)).code, -32602);
  });

  test("answers batches", async () => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "getSlot" },
        { jsonrpc: "2.0", id: 2, method: "getBlockHeight" },
        { jsonrpc: "2.0", id: 3, method: "noSuchMethod" },
      ]),
    });
    const body = await res.json();
    assert.equal(body.length, 3);
    assert.ok(body[0].result > body[1].result, "slot is ahead of block height");
    assert.equal(body[2].error.code, -32601);
  });

  test("lands a TransferChecked with ATA creation and a memo, with its balances", async () => {
    const payer = await newWallet();
    const recipient = Keypair.generate().publicKey;
    const reference = Keypair.generate().publicKey;
    const minted = await rpc("test_mintUsdc", payer.publicKey.toBase58(), "5000000");
    const mint = new PublicKey(ready.mint);
    assert.equal(minted.token_account, getAssociatedTokenAddressSync(mint, payer.publicKey).toBase58());

    const raw = await usdcTransfer(payer, recipient, 1_500_000n, { reference, memo: "invoice 42" });
    const signature = await connection.sendRawTransaction(raw);

    const st = await status(signature);
    assert.equal(st.err, null);
    assert.equal(st.confirmationStatus, "finalized");

    const tx = await rpc("getTransaction", signature, {
      encoding: "json",
      commitment: "confirmed",
      maxSupportedTransactionVersion: 0,
    });
    assert.equal(tx.version, "legacy");
    assert.equal(tx.meta.err, null);
    assert.equal(tx.meta.fee, 5000);
    const keys = tx.transaction.message.accountKeys;
    const source = getAssociatedTokenAddressSync(mint, payer.publicKey).toBase58();
    const destination = getAssociatedTokenAddressSync(mint, recipient).toBase58();
    const balance = (list, account) => list.find((b) => keys[b.accountIndex] === account);
    // The recipient's token account did not exist before: a node lists it only after.
    assert.equal(tx.meta.preTokenBalances.length, 1);
    assert.equal(balance(tx.meta.preTokenBalances, source).uiTokenAmount.amount, "5000000");
    assert.equal(balance(tx.meta.postTokenBalances, source).uiTokenAmount.amount, "3500000");
    const after = balance(tx.meta.postTokenBalances, destination);
    assert.equal(after.uiTokenAmount.amount, "1500000");
    assert.equal(after.uiTokenAmount.uiAmountString, "1.5");
    assert.equal(after.owner, recipient.toBase58());
    assert.equal(after.mint, ready.mint);
    assert.ok(tx.meta.innerInstructions.length > 0, "the ATA program's CPIs are listed");
    assert.equal(tx.meta.preBalances.length, keys.length);

    // web3.js's own parser accepts the shape.
    const parsed = await connection.getTransaction(signature, { maxSupportedTransactionVersion: 0 });
    assert.equal(parsed.meta.postTokenBalances.length, 2);

    const found = await rpc("getSignaturesForAddress", reference.toBase58(), { limit: 10 });
    assert.deepEqual(
      found.map((s) => s.signature),
      [signature],
    );
    assert.equal(found[0].memo, "[10] invoice 42");
    assert.equal(await rpc("test_tokenBalance", recipient.toBase58()), "1500000");
    assert.equal(await rpc("test_tokenBalance", destination), "1500000");
    const tb = await rpc("getTokenAccountBalance", destination);
    assert.deepEqual(tb.value, { amount: "1500000", decimals: 6, uiAmount: 1.5, uiAmountString: "1.5" });

    // A second send of the same transaction changes nothing.
    const count = (await rpc("test_transactions")).length;
    assert.equal(await sendRaw(raw), signature);
    assert.equal((await rpc("test_transactions")).length, count);
    assert.equal(await rpc("test_tokenBalance", recipient.toBase58()), "1500000");
    assert.equal((await rpc("test_transactions")).at(-1).memo, "invoice 42");
  });

  test("refuses a transaction whose blockhash expired", async () => {
    const payer = await newWallet();
    await rpc("test_mintUsdc", payer.publicKey.toBase58(), 1_000_000);
    const recipient = Keypair.generate().publicKey;
    const issued = await connection.getLatestBlockhash();
    const stale = await usdcTransfer(payer, recipient, 1n, { blockhash: issued.blockhash });
    const expired = await rpc("test_expireBlockhash");
    assert.ok(expired.blockHeight > issued.lastValidBlockHeight);
    assert.notEqual(expired.blockhash, issued.blockhash);
    assert.equal((await rpc("isBlockhashValid", issued.blockhash)).value, false);

    const e = await sendRaw(stale).catch((err) => err);
    assert.equal(e.code, -32002);
    assert.match(e.message, /Blockhash not found/);
    const e2 = await sendRaw(stale, { skipPreflight: true }).catch((err) => err);
    assert.equal(e2.code, -32002);
    const staleSig = (await rpc("test_sends")).signatures.at(-1);
    assert.equal(await status(staleSig), null);

    const fresh = await usdcTransfer(payer, recipient, 1n);
    const signature = await sendRaw(fresh);
    assert.equal((await status(signature)).err, null);

    // advanceBlocks: the blockhash stays valid up to its lastValidBlockHeight, then expires.
    const now = await connection.getLatestBlockhash();
    const height = await rpc("getBlockHeight");
    const moved = await rpc("test_advanceBlocks", now.lastValidBlockHeight - height);
    assert.equal(moved.blockhash, now.blockhash);
    assert.equal((await rpc("isBlockhashValid", now.blockhash)).value, true);
    const past = await rpc("test_advanceBlocks", 1);
    assert.notEqual(past.blockhash, now.blockhash);
  });

  test("a dropped send answers its signature and never lands; a resend lands", async () => {
    const payer = await newWallet();
    await rpc("test_mintUsdc", payer.publicKey.toBase58(), 1_000_000);
    const raw = await usdcTransfer(payer, Keypair.generate().publicKey, 10n);
    await rpc("test_dropNextSends", 1);
    const signature = await sendRaw(raw);
    assert.equal(await status(signature), null);
    const sends = await rpc("test_sends");
    assert.equal(sends.signatures.at(-1), signature);
    assert.equal(sends.sends.at(-1).outcome, "dropped");
    assert.equal(await sendRaw(raw), signature);
    assert.equal((await status(signature)).confirmationStatus, "finalized");
  });

  test("held confirmations report processed until released", async () => {
    const payer = await newWallet();
    await rpc("test_mintUsdc", payer.publicKey.toBase58(), 1_000_000);
    const reference = Keypair.generate().publicKey;
    await rpc("test_holdConfirmations", true);
    const signature = await sendRaw(await usdcTransfer(payer, Keypair.generate().publicKey, 10n, { reference }));
    const held = await status(signature);
    assert.equal(held.confirmationStatus, "processed");
    assert.equal(held.confirmations, 0);
    assert.equal(await rpc("getTransaction", signature, { commitment: "confirmed" }), null);
    assert.deepEqual(await rpc("getSignaturesForAddress", reference.toBase58()), []);
    await rpc("test_holdConfirmations", false);
    const released = await status(signature);
    assert.equal(released.confirmationStatus, "finalized");
    assert.equal(released.confirmations, null);
    assert.notEqual(await rpc("getTransaction", signature, { commitment: "finalized" }), null);
    assert.equal((await rpc("getSignaturesForAddress", reference.toBase58())).length, 1);
  });

  test("a failing transaction is refused by preflight, and lands with its error without", async () => {
    const payer = await newWallet();
    await rpc("test_mintUsdc", payer.publicKey.toBase58(), 100);
    const raw = await usdcTransfer(payer, Keypair.generate().publicKey, 101n);
    const e = await sendRaw(raw).catch((err) => err);
    assert.equal(e.code, -32002);
    assert.match(
      e.message,
      /^Transaction simulation failed: Error processing Instruction 1: custom program error: 0x1$/,
    );
    assert.deepEqual(e.data.err, { InstructionError: [1, { Custom: 1 }] });
    assert.ok(
      e.data.logs.some((l) => /insufficient funds/i.test(l)),
      e.data.logs.join("\n"),
    );
    const before = await rpc("test_lamports", payer.publicKey.toBase58());

    const signature = await sendRaw(raw, { skipPreflight: true });
    const st = await status(signature);
    assert.deepEqual(st.err, { InstructionError: [1, { Custom: 1 }] });
    assert.deepEqual(st.status, { Err: st.err });
    const tx = await rpc("getTransaction", signature, { maxSupportedTransactionVersion: 0 });
    assert.deepEqual(tx.meta.err, st.err);
    assert.equal(await rpc("test_lamports", payer.publicKey.toBase58()), before - 5000, "the fee is paid");
    assert.equal(await rpc("test_tokenBalance", payer.publicKey.toBase58()), "100");
  });

  test("test_failSends answers HTTP 503 and the retry lands", async () => {
    const payer = await newWallet();
    const tx = new Transaction({
      feePayer: payer.publicKey,
      recentBlockhash: (await connection.getLatestBlockhash()).blockhash,
    });
    tx.add(
      SystemProgram.transfer({
        fromPubkey: payer.publicKey,
        toPubkey: Keypair.generate().publicKey,
        lamports: 1_000_000,
      }),
    );
    tx.sign(payer);
    await rpc("test_failSends", 1);
    assert.deepEqual(await sendRaw(tx.serialize()), { httpStatus: 503 });
    const signature = await sendRaw(tx.serialize());
    assert.equal((await status(signature)).err, null);
    const sends = (await rpc("test_sends")).sends.slice(-2);
    assert.deepEqual(
      sends.map((s) => s.outcome),
      ["http_503", "landed"],
    );
  });

  test("a @solana/pay transfer is found by its reference and validates", async () => {
    const merchant = Keypair.generate().publicKey;
    await rpc("test_airdrop", merchant.toBase58(), 1_000_000_000);
    await rpc("test_mintUsdc", merchant.toBase58(), 0); // its token account must exist
    const payer = await newWallet();
    await rpc("test_mintUsdc", payer.publicKey.toBase58(), 10_000_000);
    const reference = Keypair.generate().publicKey;
    const request = encodeURL({
      recipient: merchant,
      amount: new BigNumber("2.5"),
      splToken: new PublicKey(ready.mint),
      reference,
      label: "gpunex",
      message: "Top-up",
      memo: "topup-7",
    });

    const fields = parseURL(request.toString());
    const tx = await createTransfer(connection, payer.publicKey, fields);
    tx.sign(payer);
    const signature = await connection.sendRawTransaction(tx.serialize());
    const found = await findReference(connection, reference, { finality: "confirmed" });
    assert.equal(found.signature, signature);
    assert.equal(found.memo, "[7] topup-7");
    await validateTransfer(
      connection,
      signature,
      {
        recipient: merchant,
        amount: new BigNumber("2.5"),
        splToken: new PublicKey(ready.mint),
        reference,
        memo: "topup-7",
      },
      { commitment: "confirmed", maxSupportedTransactionVersion: 0 },
    );
    assert.equal(await rpc("test_tokenBalance", merchant.toBase58()), "2500000");

    // pay.mjs does the same from the command line, here paying too little.
    const cli = spawnSync(
      process.execPath,
      [
        path.join(here, "pay.mjs"),
        "--rpc",
        url,
        "--url",
        request.toString(),
        "--payer-secret",
        JSON.stringify(Array.from(payer.secretKey)),
        "--amount-override",
        "0.25",
      ],
      { encoding: "utf8" },
    );
    assert.equal(cli.status, 0, cli.stdout + cli.stderr);
    const paid = JSON.parse(cli.stdout);
    assert.equal((await status(paid.signature)).err, null);
    assert.equal(await rpc("test_tokenBalance", merchant.toBase58()), "2750000");

    // A wrong mint: the payer holds none of it, so the reference client refuses.
    const other = await rpc("test_createMint", 6);
    const wrong = spawnSync(
      process.execPath,
      [
        path.join(here, "pay.mjs"),
        "--rpc",
        url,
        "--url",
        request.toString(),
        "--payer-secret",
        JSON.stringify(Array.from(payer.secretKey)),
        "--mint-override",
        other.mint,
      ],
      { encoding: "utf8" },
    );
    assert.equal(wrong.status, 1);
    assert.equal(JSON.parse(wrong.stdout).kind, "TokenAccountNotFoundError");
  });

  test("a v0 transaction with a priority fee: meta.fee is what was charged", async () => {
    const payer = await newWallet();
    const to = Keypair.generate().publicKey;
    const message = new TransactionMessage({
      payerKey: payer.publicKey,
      recentBlockhash: (await connection.getLatestBlockhash()).blockhash,
      instructions: [
        ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 250_000 }),
        SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 2_000_000 }),
      ],
    }).compileToV0Message();
    const tx = new VersionedTransaction(message);
    tx.sign([payer]);
    const before = await rpc("test_lamports", payer.publicKey.toBase58());
    // No encoding: base58, a node's default.
    const signature = await rpc("sendTransaction", bs58(tx.serialize()));
    const charged = before - (await rpc("test_lamports", payer.publicKey.toBase58())) - 2_000_000;
    const e = await rpc("getTransaction", signature).catch((err) => err);
    assert.equal(e.code, -32015, "a v0 transaction needs maxSupportedTransactionVersion");
    const got = await rpc("getTransaction", signature, { maxSupportedTransactionVersion: 0 });
    assert.equal(got.version, 0);
    // 5000 a signature + ceil(250000 micro-lamports × 2 builtin instructions × 3000 units / 10^6)
    assert.equal(charged, 6500);
    assert.equal(got.meta.fee, charged);
    assert.deepEqual(got.meta.loadedAddresses, { writable: [], readonly: [] });
  });

  test("decode-tx.mjs decodes and verifies a transfer", async () => {
    const payer = await newWallet();
    const recipient = Keypair.generate().publicKey;
    const raw = await usdcTransfer(payer, recipient, 1_234_567n, { memo: "payout 9" });
    const run = spawnSync(process.execPath, [path.join(here, "decode-tx.mjs")], {
      input: Buffer.from(raw).toString("base64"),
      encoding: "utf8",
    });
    assert.equal(run.status, 0, run.stderr);
    const d = JSON.parse(run.stdout);
    const mint = new PublicKey(ready.mint);
    assert.equal(d.feePayer, payer.publicKey.toBase58());
    assert.equal(d.signaturesValid, true);
    const [ata, transfer, memo] = d.instructions;
    assert.equal(ata.decoded.type, "CreateIdempotent");
    assert.equal(ata.decoded.associatedTokenMatches, true);
    assert.equal(ata.decoded.owner, recipient.toBase58());
    assert.equal(transfer.decoded.type, "TransferChecked");
    assert.equal(transfer.decoded.amount, "1234567");
    assert.equal(transfer.decoded.decimals, 6);
    assert.equal(transfer.decoded.mint, mint.toBase58());
    assert.equal(transfer.decoded.destination, getAssociatedTokenAddressSync(mint, recipient).toBase58());
    assert.equal(transfer.decoded.owner, payer.publicKey.toBase58());
    assert.deepEqual(memo.decoded, { type: "Memo", text: "payout 9" });

    // A flipped bit in the message breaks the signature.
    const bad = Buffer.from(raw);
    bad[bad.length - 1] ^= 1;
    const run2 = spawnSync(process.execPath, [path.join(here, "decode-tx.mjs")], {
      input: bad.toString("base64"),
      encoding: "utf8",
    });
    assert.equal(JSON.parse(run2.stdout).signaturesValid, false);
    const e = await sendRaw(bad).catch((err) => err);
    assert.equal(e.code, -32003);
  });
});
