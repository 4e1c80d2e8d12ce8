// The chain the front serves: one LiteSVM (the real SPL Token, Associated Token Account
// and Memo programs, signature and blockhash checks on) plus what LiteSVM does not keep: a
// slot and block-height clock, the landed transactions with their balances, an index of
// them by account, every send received, and the fault switches of the test_ methods.
//
// The block model. LiteSVM accepts exactly one blockhash, its latest, so the front issues
// only that one: a blockhash issued at block height h is valid while the height is at most
// h + 150 (its lastValidBlockHeight, as on a real cluster); when the height passes that, the
// front expires it in LiteSVM and issues the next at the current height. Each landed
// transaction is one block: slot and height both advance by 1. Slot and height start
// apart (as on a real cluster, where skipped slots make the slot the larger) so that a
// client that mixes them up is caught.
//
// Not modelled: commitment levels of account state (every read sees the latest state), forks,
// fee markets (priority fees are charged as LiteSVM charges them), rent collection.
//
// Single-threaded: Node runs one request at a time, so each method sees and leaves a
// consistent state.

import { LiteSVM, FailedTransactionMetadata } from "litesvm";
import { address, getTransactionDecoder } from "@solana/kit";
import { Keypair, PublicKey } from "@solana/web3.js";
import { getAssociatedTokenAddressSync } from "@solana/spl-token";

import {
  RpcError,
  INVALID_PARAMS,
  SEND_TRANSACTION_PREFLIGHT_FAILURE,
  SIGNATURE_VERIFICATION_FAILURE,
  txErrorJson,
  txErrorText,
} from "./errors.mjs";
import {
  COMPUTE_BUDGET_PROGRAM,
  MEMO_PROGRAMS,
  SYSTEM_PROGRAM,
  TOKEN_PROGRAM,
  TOKEN_2022_PROGRAM,
  encodeMint,
  encodeTokenAccount,
  parseMint,
  parseTokenAccount,
  uiTokenAmount,
} from "./spl.mjs";
import { checkSignatures, decodeWireTransaction, toBase58 } from "./wire.mjs";

/** Blocks a blockhash stays valid after the block it was issued at (agave's
 *  MAX_PROCESSING_AGE). */
export const MAX_PROCESSING_AGE = 150;
/** getSignatureStatuses without searchTransactionHistory finds only transactions of the last
 *  this many slots (a node's status cache). */
export const STATUS_CACHE_SLOTS = 300;
const FIRST_SLOT = 350_000_000;
const FIRST_BLOCK_HEIGHT = 330_000_000;
const LAMPORTS_PER_SIGNATURE = 5000n;
const LAMPORTS_PER_SOL = 1_000_000_000n;
// Byte offsets in the SPL layouts for the two fields the test methods change in place.
const MINT_SUPPLY_OFFSET = 36;
const TOKEN_AMOUNT_OFFSET = 64;
// The programs agave budgets 3000 compute units an instruction for by default.
const BUILTIN_PROGRAMS = new Set([
  SYSTEM_PROGRAM,
  COMPUTE_BUDGET_PROGRAM,
  "Vote111111111111111111111111111111111111111",
  "Stake11111111111111111111111111111111111111",
  "Config1111111111111111111111111111111111111",
  "BPFLoader1111111111111111111111111111111111",
  "BPFLoader2111111111111111111111111111111111",
  "BPFLoaderUpgradeab1e11111111111111111111111",
  "LoaderV411111111111111111111111111111111111",
  "AddressLookupTab1e1111111111111111111111111",
  "Ed25519SigVerify111111111111111111111111111",
  "KeccakSecp256k11111111111111111111111111111",
  "Secp256r1SigVerify1111111111111111111111111",
]);
// Address lookup table accounts: a 56-byte header, then the addresses.
const LOOKUP_TABLE_HEADER = 56;

const kitTransactionDecoder = getTransactionDecoder();

function nowSeconds() {
  return Math.floor(Date.now() / 1000);
}

export class Chain {
  /** `usdcMint`: base58 address of the mint created at start (6 decimals). */
  constructor({ usdcMint }) {
    this.svm = new LiteSVM().withSigverify(true).withBlockhashCheck(true);
    // The mint authority of every mint the front creates.
    this.authority = Keypair.generate();
    this.slot = FIRST_SLOT;
    this.blockHeight = FIRST_BLOCK_HEIGHT;
    this.blockhashHeight = this.blockHeight; // the height the current blockhash was issued at
    this.records = []; // landed transactions, oldest first
    this.bySignature = new Map(); // signature -> record
    this.byAddress = new Map(); // base58 address -> [record], oldest first
    this.sends = []; // [{signature, outcome}] of every sendTransaction
    this.dropNextSends = 0;
    this.failNextSends = 0;
    this.holdConfirmations = false;
    this.syncClock();
    this.usdcMint = usdcMint;
    this.createMint(6, usdcMint);
  }

  // ------------------------------------------------------------------ blocks and blockhash

  /** The blockhash clients may use now and the last block height it is valid at. */
  latestBlockhash() {
    return {
      blockhash: this.svm.latestBlockhash(),
      lastValidBlockHeight: this.blockhashHeight + MAX_PROCESSING_AGE,
    };
  }

  isBlockhashValid(blockhash) {
    return blockhash === this.svm.latestBlockhash() && this.blockHeight <= this.blockhashHeight + MAX_PROCESSING_AGE;
  }

  /** Advances slot and block height by `n` blocks; past its last valid height the blockhash
   *  is expired and the next issued at the new height. */
  advance(n) {
    this.slot += n;
    this.blockHeight += n;
    if (this.blockHeight > this.blockhashHeight + MAX_PROCESSING_AGE) {
      this.svm.expireBlockhash();
      this.blockhashHeight = this.blockHeight;
    }
    this.syncClock();
  }

  /** Moves so far that every blockhash issued so far is past its lastValidBlockHeight. */
  expireBlockhash() {
    this.advance(MAX_PROCESSING_AGE + 1);
  }

  // The Clock sysvar the programs see follows the front's slot and the wall clock.
  syncClock() {
    const clock = this.svm.getClock();
    clock.slot = BigInt(this.slot);
    clock.unixTimestamp = BigInt(nowSeconds());
    this.svm.setClock(clock);
  }

  // ------------------------------------------------------------------ accounts

  /** LiteSVM's account record for a base58 address ({exists: false} when missing). */
  account(addr) {
    return this.svm.getAccount(address(addr));
  }

  setAccount(addr, { lamports, data = new Uint8Array(), owner = SYSTEM_PROGRAM, executable = false }) {
    this.svm.setAccount({
      address: address(addr),
      lamports: BigInt(lamports),
      data: Uint8Array.from(data),
      programAddress: address(owner),
      executable,
    });
  }

  lamports(addr) {
    const a = this.account(addr);
    return a.exists ? BigInt(a.lamports) : 0n;
  }

  rentExempt(size) {
    return this.svm.minimumBalanceForRentExemption(BigInt(size));
  }

  /** Decimals of a mint, or null when `mint` is not one. */
  decimalsOf(mint) {
    return parseMint(this.account(mint))?.decimals ?? null;
  }

  /** Adds lamports to an account outside any transaction (a system account when missing). */
  airdrop(addr, lamports) {
    const a = this.account(addr);
    if (a.exists) {
      this.setAccount(addr, {
        lamports: BigInt(a.lamports) + lamports,
        data: a.data,
        owner: a.programAddress,
        executable: a.executable,
      });
    } else {
      this.setAccount(addr, { lamports });
    }
    return this.lamports(addr);
  }

  /** A fresh keypair holding 1 SOL. */
  newWallet() {
    const kp = Keypair.generate();
    this.airdrop(kp.publicKey.toBase58(), LAMPORTS_PER_SOL);
    return kp;
  }

  /** Creates an SPL Token mint whose mint authority is the front's key; at `mintAddress`
   *  when given, else at a fresh address. Returns the address. */
  createMint(decimals, mintAddress = Keypair.generate().publicKey.toBase58()) {
    this.setAccount(mintAddress, {
      lamports: this.rentExempt(82),
      data: encodeMint({ mintAuthority: this.authority.publicKey.toBase58(), decimals }),
      owner: TOKEN_PROGRAM,
    });
    return mintAddress;
  }

  /** Mints `amount` base units of `mint` into `owner`'s associated token account, creating
   *  it when missing, and raises the mint's supply to match. Outside any transaction.
   *  Returns the token account's address. */
  mintTo(mint, owner, amount) {
    const m = parseMint(this.account(mint));
    if (!m) throw new RpcError(INVALID_PARAMS, `Invalid param: ${mint} is not a mint`);
    const ata = getAssociatedTokenAddressSync(
      new PublicKey(mint),
      new PublicKey(owner),
      true,
      new PublicKey(m.programId),
    ).toBase58();
    const acc = this.account(ata);
    const existing = parseTokenAccount(acc);
    if (acc.exists && !existing) {
      throw new RpcError(INVALID_PARAMS, `Invalid param: ${ata} exists and is not a token account`);
    }
    if (existing) {
      const data = Buffer.from(acc.data);
      data.writeBigUInt64LE(existing.amount + amount, TOKEN_AMOUNT_OFFSET);
      this.setAccount(ata, { lamports: acc.lamports, data, owner: acc.programAddress });
    } else {
      this.setAccount(ata, {
        lamports: this.rentExempt(165),
        data: encodeTokenAccount({ mint, owner, amount }),
        owner: m.programId,
      });
    }
    const mintAccount = this.account(mint);
    const mintData = Buffer.from(mintAccount.data);
    mintData.writeBigUInt64LE(m.supply + amount, MINT_SUPPLY_OFFSET);
    this.setAccount(mint, { lamports: mintAccount.lamports, data: mintData, owner: mintAccount.programAddress });
    return ata;
  }

  /** The token balance of a token account (of `mint` when given), or the sum over all
   *  token accounts that `owner` holds of `mint` (USDC by default). 0n when there is none. */
  tokenBalance(ownerOrAccount, mint = null) {
    const direct = parseTokenAccount(this.account(ownerOrAccount));
    if (direct) return !mint || direct.mint === mint ? direct.amount : 0n;
    const wanted = mint ?? this.usdcMint;
    let total = 0n;
    for (const program of [TOKEN_PROGRAM, TOKEN_2022_PROGRAM]) {
      for (const acc of this.svm.getProgramAccounts(address(program))) {
        const t = parseTokenAccount(acc);
        if (t && t.owner === ownerOrAccount && t.mint === wanted) total += t.amount;
      }
    }
    return total;
  }

  /** All token accounts (Token and Token-2022) with their addresses. */
  tokenAccounts() {
    const out = [];
    for (const program of [TOKEN_PROGRAM, TOKEN_2022_PROGRAM]) {
      for (const acc of this.svm.getProgramAccounts(address(program))) {
        const t = parseTokenAccount(acc);
        if (t) out.push({ address: acc.address, account: acc, token: t });
      }
    }
    return out;
  }

  // ------------------------------------------------------------------ transactions

  /**
   * What sendTransaction does with the wire bytes `raw`: returns the signature, or throws an
   * RpcError as a node would. README.md has the rules; in short: dropped (the test
   * switch) and duplicate sends answer the signature and change nothing; a bad signature is
   * -32003; a blockhash that is not the valid one is -32002; with preflight a failing
   * transaction is -32002 with {err, logs}; without it, one that fails after paying its fee
   * lands with its err, one that fails before (no fee) silently never lands.
   */
  submit(raw, { skipPreflight = false } = {}) {
    let decoded;
    try {
      decoded = decodeWireTransaction(raw);
    } catch (e) {
      this.sends.push({ signature: null, outcome: "undecodable" });
      throw new RpcError(INVALID_PARAMS, `failed to deserialize transaction: ${e.message}`);
    }
    const signature = decoded.signatures[0];
    const send = { signature, outcome: "" };
    this.sends.push(send);

    if (this.dropNextSends > 0) {
      this.dropNextSends--;
      send.outcome = "dropped";
      return signature;
    }
    if (this.bySignature.has(signature)) {
      send.outcome = "duplicate";
      return signature;
    }
    send.outcome = "rejected";
    if (!checkSignatures(decoded).every((s) => s.valid)) {
      throw new RpcError(SIGNATURE_VERIFICATION_FAILURE, "Transaction signature verification failure");
    }
    if (!this.isBlockhashValid(decoded.tx.message.recentBlockhash)) {
      throw new RpcError(SEND_TRANSACTION_PREFLIGHT_FAILURE, "Transaction simulation failed: Blockhash not found", {
        err: "BlockhashNotFound",
        logs: [],
        accounts: null,
        unitsConsumed: 0,
        returnData: null,
      });
    }
    const kitTx = kitTransactionDecoder.decode(raw);
    if (!skipPreflight) {
      const sim = this.svm.simulateTransaction(kitTx);
      if (sim instanceof FailedTransactionMetadata) {
        const err = txErrorJson(sim.err());
        throw new RpcError(SEND_TRANSACTION_PREFLIGHT_FAILURE, `Transaction simulation failed: ${txErrorText(err)}`, {
          err,
          logs: sim.meta().logs(),
          accounts: null,
          unitsConsumed: Number(sim.meta().computeUnitsConsumed()),
          returnData: null,
        });
      }
    }

    const keys = this.accountKeysOf(decoded);
    const pre = this.snapshot(keys.all);
    const result = this.svm.sendTransaction(kitTx);
    const failed = result instanceof FailedTransactionMetadata;
    if (failed && this.svm.getTransaction(signature) === null) {
      // Failed before paying its fee (LiteSVM keeps no trace): never lands, as on a cluster.
      send.outcome = "not_landed";
      return signature;
    }
    const meta = failed ? result.meta() : result;
    const post = this.snapshot(keys.all);
    this.advance(1);
    this.record({
      signature,
      decoded,
      raw: Buffer.from(raw),
      keys,
      err: failed ? txErrorJson(result.err()) : null,
      fee: Number(this.feeOf(decoded)),
      pre,
      post,
      logs: meta.logs(),
      computeUnits: Number(meta.computeUnitsConsumed()),
      innerInstructions: meta
        .innerInstructions()
        .map((list, index) => ({
          index,
          instructions: list.map((inner) => {
            const ci = inner.instruction();
            return {
              programIdIndex: ci.programIdIndex(),
              accounts: Array.from(ci.accounts()),
              data: toBase58(ci.data()),
              stackHeight: inner.stackHeight(),
            };
          }),
        }))
        .filter((entry) => entry.instructions.length > 0),
    });
    send.outcome = failed ? "landed_with_error" : "landed";
    return signature;
  }

  /** What simulateTransaction answers: {err, logs, unitsConsumed}. `sigVerify` false skips
   *  the signature check; `replaceRecentBlockhash` runs it with the current blockhash. */
  simulate(raw, { sigVerify = false, replaceRecentBlockhash = false } = {}) {
    let decoded;
    try {
      decoded = decodeWireTransaction(raw);
    } catch (e) {
      throw new RpcError(INVALID_PARAMS, `failed to deserialize transaction: ${e.message}`);
    }
    if (sigVerify && replaceRecentBlockhash) {
      throw new RpcError(INVALID_PARAMS, "sigVerify may not be used with replaceRecentBlockhash");
    }
    if (sigVerify && !checkSignatures(decoded).every((s) => s.valid)) {
      throw new RpcError(SIGNATURE_VERIFICATION_FAILURE, "Transaction signature verification failure");
    }
    let bytes = Buffer.from(raw);
    if (replaceRecentBlockhash) {
      decoded.tx.message.recentBlockhash = this.svm.latestBlockhash();
      bytes = Buffer.from(decoded.tx.serialize());
    } else if (!this.isBlockhashValid(decoded.tx.message.recentBlockhash)) {
      return { err: "BlockhashNotFound", logs: [], unitsConsumed: 0 };
    }
    // LiteSVM checks signatures in simulation too; the RPC's default is not to.
    this.svm.withSigverify(false);
    try {
      const sim = this.svm.simulateTransaction(kitTransactionDecoder.decode(bytes));
      const failed = sim instanceof FailedTransactionMetadata;
      return {
        err: failed ? txErrorJson(sim.err()) : null,
        logs: sim.meta().logs(),
        unitsConsumed: Number(sim.meta().computeUnitsConsumed()),
      };
    } finally {
      this.svm.withSigverify(true);
    }
  }

  /** The fee LiteSVM charges: 5000 lamports a signature plus the priority fee, the
   *  compute-unit price times the compute-unit limit (micro-lamports, rounded up). Without a
   *  SetComputeUnitLimit the limit is agave's default: 3000 units for each instruction of a
   *  builtin program, 200000 for each other, 1.4 million at most. */
  feeOf(decoded) {
    const message = decoded.tx.message;
    const keys = message.staticAccountKeys.map((k) => k.toBase58());
    let price = 0n;
    let limit = null;
    let defaultLimit = 0n;
    for (const ix of message.compiledInstructions) {
      const program = keys[ix.programIdIndex];
      const data = Buffer.from(ix.data);
      defaultLimit += BUILTIN_PROGRAMS.has(program) ? 3_000n : 200_000n;
      if (program !== COMPUTE_BUDGET_PROGRAM) continue;
      if (data[0] === 2 && data.length >= 5) limit = BigInt(data.readUInt32LE(1));
      if (data[0] === 3 && data.length >= 9) price = data.readBigUInt64LE(1);
    }
    const units = limit ?? (defaultLimit < 1_400_000n ? defaultLimit : 1_400_000n);
    const priority = (price * units + 999_999n) / 1_000_000n;
    return LAMPORTS_PER_SIGNATURE * BigInt(message.header.numRequiredSignatures) + priority;
  }

  /** The account keys a transaction touches: {static, writable, readonly, all}, the last two
   *  loaded from its address lookup tables (v0). */
  accountKeysOf(decoded) {
    const message = decoded.tx.message;
    const statics = message.staticAccountKeys.map((k) => k.toBase58());
    const writable = [];
    const readonly = [];
    for (const lookup of message.addressTableLookups ?? []) {
      const table = this.account(lookup.accountKey.toBase58());
      const data = table.exists ? Buffer.from(table.data) : Buffer.alloc(0);
      const at = (i) => {
        const start = LOOKUP_TABLE_HEADER + 32 * i;
        return start + 32 <= data.length ? toBase58(data.subarray(start, start + 32)) : null;
      };
      for (const i of lookup.writableIndexes) writable.push(at(i));
      for (const i of lookup.readonlyIndexes) readonly.push(at(i));
    }
    const loadedW = writable.filter(Boolean);
    const loadedR = readonly.filter(Boolean);
    return { static: statics, writable: loadedW, readonly: loadedR, all: [...statics, ...loadedW, ...loadedR] };
  }

  /** Lamports and token balances of `keys` now: {lamports: [number], tokens: [entry]} with
   *  an entry only for keys that are token accounts at this point. */
  snapshot(keys) {
    const lamports = [];
    const tokens = [];
    keys.forEach((key, accountIndex) => {
      const acc = this.account(key);
      lamports.push(acc.exists ? Number(acc.lamports) : 0);
      const t = parseTokenAccount(acc);
      if (t) {
        tokens.push({
          accountIndex,
          mint: t.mint,
          owner: t.owner,
          programId: t.programId,
          uiTokenAmount: uiTokenAmount(t.amount, this.decimalsOf(t.mint) ?? 0),
        });
      }
    });
    return { lamports, tokens };
  }

  record(fields) {
    const message = fields.decoded.tx.message;
    const memos = [];
    for (const ix of message.compiledInstructions) {
      if (MEMO_PROGRAMS.has(fields.keys.all[ix.programIdIndex])) {
        memos.push(Buffer.from(ix.data).toString("utf8"));
      }
    }
    const rec = {
      ...fields,
      slot: this.slot,
      blockTime: nowSeconds(),
      memoText: memos.length ? memos.join("; ") : null,
      // The RPC's memo field: "[<bytes>] <text>" per memo instruction, joined with "; ".
      memo: memos.length ? memos.map((m) => `[${Buffer.byteLength(m)}] ${m}`).join("; ") : null,
      held: this.holdConfirmations,
    };
    this.records.push(rec);
    this.bySignature.set(rec.signature, rec);
    for (const key of new Set(rec.keys.all)) {
      if (!this.byAddress.has(key)) this.byAddress.set(key, []);
      this.byAddress.get(key).push(rec);
    }
  }

  /** "processed" while held by test_holdConfirmations, else "finalized". */
  confirmationStatus(rec) {
    return rec.held ? "processed" : "finalized";
  }

  setHoldConfirmations(hold) {
    this.holdConfirmations = hold;
    if (!hold) for (const rec of this.records) rec.held = false;
  }
}
