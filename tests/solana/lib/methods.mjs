// The JSON-RPC methods of the front: the Solana ones a payment client uses, with the
// shapes of a real node's answers, and the test_ control methods. Each method takes the
// positional params array and returns the `result`, or throws an RpcError.

import { PublicKey, VersionedMessage } from "@solana/web3.js";

import { RpcError, INVALID_PARAMS, UNSUPPORTED_TRANSACTION_VERSION } from "./errors.mjs";
import { jsonParsedTokenData, parseTokenAccount, uiTokenAmount } from "./spl.mjs";
import { STATUS_CACHE_SLOTS } from "./chain.mjs";
import { fromBase58, toBase58 } from "./wire.mjs";

/** JSON.stringify cannot write 2^64-1 exactly; the server swaps this string for it. */
export const U64_MAX_MARK = "__gpunex_u64_max__";
const MAX_SIGNATURE_STATUSES = 256;
const MAX_SIGNATURES_FOR_ADDRESS = 1000;
const MAX_BASE58_ACCOUNT_BYTES = 128;

// ------------------------------------------------------------------ parameter checks

function invalid(what) {
  return new RpcError(INVALID_PARAMS, `Invalid params: ${what}`);
}

function pubkeyParam(value, name) {
  if (typeof value !== "string") throw invalid(`${name} must be a base58 public key`);
  try {
    return new PublicKey(value).toBase58();
  } catch {
    throw new RpcError(INVALID_PARAMS, `Invalid param: Invalid ${name} ${JSON.stringify(value)}`);
  }
}

function signatureParam(value, name = "signature") {
  if (typeof value !== "string") throw invalid(`${name} must be a base58 signature`);
  let bytes;
  try {
    bytes = fromBase58(value);
  } catch {
    bytes = null;
  }
  if (!bytes || bytes.length !== 64) {
    throw new RpcError(INVALID_PARAMS, `Invalid param: Invalid ${name} ${JSON.stringify(value)}`);
  }
  return value;
}

function configParam(value) {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) throw invalid("configuration must be an object");
  return value;
}

/** A non-negative integer given as a JSON number or a decimal string, as BigInt. */
function amountParam(value, name) {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === "string" && /^[0-9]+$/.test(value)) return BigInt(value);
  throw invalid(`${name} must be a non-negative integer (number or decimal string)`);
}

function countParam(value, name) {
  if (!Number.isSafeInteger(value) || value < 0) throw invalid(`${name} must be a non-negative integer`);
  return value;
}

function wireBytes(text, encoding) {
  if (typeof text !== "string") throw invalid("transaction must be a string");
  if (encoding === "base64") return Buffer.from(text, "base64");
  if (encoding === "base58") {
    try {
      return fromBase58(text);
    } catch {
      throw invalid("transaction is not base58");
    }
  }
  throw invalid(`unsupported encoding ${JSON.stringify(encoding)}`);
}

// ------------------------------------------------------------------ answer shapes

/** The methods, bound to `chain`. The HTTP-level fault (test_failSends) is the server's
 *  (rpc-front.mjs): it answers 503 before any method runs. */
export function makeMethods(chain) {
  const withContext = (value) => ({ context: { apiVersion: "2.2.1", slot: chain.slot }, value });

  function encodeAccount(acc, encoding, dataSlice) {
    if (!acc.exists) return null;
    const full = Buffer.from(acc.data);
    let encoded = null;
    if (encoding === "jsonParsed") {
      // Token accounts and mints parsed; anything else falls back to base64, as on a node.
      encoded = jsonParsedTokenData(acc, (mint) => chain.decimalsOf(mint)) ?? [full.toString("base64"), "base64"];
    } else {
      let data = full;
      if (dataSlice) {
        const offset = countParam(dataSlice.offset, "dataSlice.offset");
        data = full.subarray(offset, offset + countParam(dataSlice.length, "dataSlice.length"));
      }
      if (encoding === "base64") {
        encoded = [data.toString("base64"), "base64"];
      } else if (encoding === "base58" || encoding === "binary" || encoding === undefined) {
        if (data.length > MAX_BASE58_ACCOUNT_BYTES) {
          throw new RpcError(
            -32600,
            "Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.",
          );
        }
        // No encoding means the legacy "binary": a bare base58 string.
        encoded = encoding === "base58" ? [toBase58(data), "base58"] : toBase58(data);
      } else {
        throw invalid(`unsupported encoding ${JSON.stringify(encoding)}`);
      }
    }
    return {
      data: encoded,
      executable: acc.executable,
      lamports: Number(acc.lamports),
      owner: acc.programAddress,
      // Accounts that are rent exempt carry rentEpoch u64::MAX on current clusters.
      rentEpoch: U64_MAX_MARK,
      space: full.length,
    };
  }

  function statusOf(rec) {
    return {
      slot: rec.slot,
      confirmations: rec.held ? 0 : null,
      err: rec.err,
      status: rec.err ? { Err: rec.err } : { Ok: null },
      confirmationStatus: chain.confirmationStatus(rec),
    };
  }

  function rejectProcessed(config) {
    if (config.commitment === "processed") {
      throw new RpcError(INVALID_PARAMS, "Method does not support commitment below `confirmed`");
    }
  }

  function transactionJson(rec, encoding) {
    const message = rec.decoded.tx.message;
    if (encoding === "base64") return [rec.raw.toString("base64"), "base64"];
    if (encoding === "base58") return [toBase58(rec.raw), "base58"];
    const json = {
      signatures: rec.decoded.signatures,
      message: {
        accountKeys: rec.keys.static,
        header: { ...message.header },
        recentBlockhash: message.recentBlockhash,
        instructions: message.compiledInstructions.map((ix) => ({
          programIdIndex: ix.programIdIndex,
          accounts: Array.from(ix.accountKeyIndexes),
          data: toBase58(ix.data),
          stackHeight: null,
        })),
      },
    };
    if (rec.decoded.version === 0) {
      json.message.addressTableLookups = message.addressTableLookups.map((l) => ({
        accountKey: l.accountKey.toBase58(),
        writableIndexes: Array.from(l.writableIndexes),
        readonlyIndexes: Array.from(l.readonlyIndexes),
      }));
    }
    return json;
  }

  function epochInfo() {
    const slotsInEpoch = 432_000;
    return {
      absoluteSlot: chain.slot,
      blockHeight: chain.blockHeight,
      epoch: Math.floor(chain.slot / slotsInEpoch),
      slotIndex: chain.slot % slotsInEpoch,
      slotsInEpoch,
      transactionCount: chain.records.length,
    };
  }

  function blockInfo() {
    return { ...chain.latestBlockhash(), blockHeight: chain.blockHeight, slot: chain.slot };
  }

  return {
    // ------------------------------------------------------------ cluster
    getHealth: () => "ok",
    getVersion: () => ({ "solana-core": "2.2.1", "feature-set": 3294202862 }),
    getSlot: () => chain.slot,
    getBlockHeight: () => chain.blockHeight,
    getEpochInfo: () => epochInfo(),
    getLatestBlockhash: () => withContext(chain.latestBlockhash()),
    isBlockhashValid: ([blockhash]) => {
      if (typeof blockhash !== "string") throw invalid("blockhash must be a string");
      return withContext(chain.isBlockhashValid(blockhash));
    },
    getMinimumBalanceForRentExemption: ([size]) => Number(chain.rentExempt(countParam(size, "data length"))),
    getFeeForMessage: ([message]) => {
      let decoded;
      try {
        decoded = { tx: { message: VersionedMessage.deserialize(Buffer.from(String(message), "base64")) } };
      } catch (e) {
        throw invalid(`message: ${e.message}`);
      }
      const valid = chain.isBlockhashValid(decoded.tx.message.recentBlockhash);
      return withContext(valid ? Number(chain.feeOf(decoded)) : null);
    },
    getRecentPrioritizationFees: () => [{ slot: chain.slot, prioritizationFee: 0 }],

    // ------------------------------------------------------------ accounts
    getAccountInfo: ([pubkey, config]) => {
      const c = configParam(config);
      return withContext(encodeAccount(chain.account(pubkeyParam(pubkey, "pubkey")), c.encoding, c.dataSlice));
    },
    getMultipleAccounts: ([pubkeys, config]) => {
      if (!Array.isArray(pubkeys)) throw invalid("pubkeys must be an array");
      const c = configParam(config);
      return withContext(
        pubkeys.map((p) => encodeAccount(chain.account(pubkeyParam(p, "pubkey")), c.encoding, c.dataSlice)),
      );
    },
    getBalance: ([pubkey]) => withContext(Number(chain.lamports(pubkeyParam(pubkey, "pubkey")))),
    getTokenAccountBalance: ([pubkey]) => {
      const acc = chain.account(pubkeyParam(pubkey, "pubkey"));
      if (!acc.exists) throw new RpcError(INVALID_PARAMS, "Invalid param: could not find account");
      const t = parseTokenAccount(acc);
      if (!t) throw new RpcError(INVALID_PARAMS, "Invalid param: not a Token account");
      return withContext(uiTokenAmount(t.amount, chain.decimalsOf(t.mint) ?? 0));
    },
    getTokenAccountsByOwner: ([owner, filter, config]) => {
      const o = pubkeyParam(owner, "owner");
      const f = configParam(filter);
      const mint = f.mint !== undefined ? pubkeyParam(f.mint, "mint") : null;
      const programId = f.programId !== undefined ? pubkeyParam(f.programId, "programId") : null;
      if (!mint === !programId) throw invalid("filter must name exactly one of mint, programId");
      const c = configParam(config);
      return withContext(
        chain
          .tokenAccounts()
          .filter(({ token }) => token.owner === o && (mint ? token.mint === mint : token.programId === programId))
          .map(({ address, account }) => ({
            pubkey: address,
            account: encodeAccount({ ...account, exists: true }, c.encoding, c.dataSlice),
          })),
      );
    },

    // ------------------------------------------------------------ transactions
    sendTransaction: ([tx, config]) => {
      const c = configParam(config);
      // A node's default encoding is base58 (web3.js always says base64).
      return chain.submit(wireBytes(tx, c.encoding ?? "base58"), { skipPreflight: c.skipPreflight === true });
    },
    simulateTransaction: ([tx, config]) => {
      const c = configParam(config);
      const sim = chain.simulate(wireBytes(tx, c.encoding ?? "base58"), {
        sigVerify: c.sigVerify === true,
        replaceRecentBlockhash: c.replaceRecentBlockhash === true,
      });
      const value = {
        err: sim.err,
        logs: sim.logs,
        accounts: null,
        unitsConsumed: sim.unitsConsumed,
        returnData: null,
      };
      if (c.replaceRecentBlockhash === true) value.replacementBlockhash = chain.latestBlockhash();
      return withContext(value);
    },
    getSignatureStatuses: ([signatures, config]) => {
      if (!Array.isArray(signatures)) throw invalid("signatures must be an array");
      if (signatures.length > MAX_SIGNATURE_STATUSES) {
        throw new RpcError(INVALID_PARAMS, `Too many inputs provided; max ${MAX_SIGNATURE_STATUSES}`);
      }
      const c = configParam(config);
      const searchHistory = c.searchTransactionHistory === true;
      return withContext(
        signatures.map((s) => {
          const rec = chain.bySignature.get(signatureParam(s));
          if (!rec) return null;
          // Without the history search a node answers only from its recent status cache.
          if (!searchHistory && rec.slot < chain.slot - STATUS_CACHE_SLOTS) return null;
          return statusOf(rec);
        }),
      );
    },
    getSignaturesForAddress: ([addr, config]) => {
      const a = pubkeyParam(addr, "address");
      const c = configParam(config);
      rejectProcessed(c);
      const limit = c.limit ?? MAX_SIGNATURES_FOR_ADDRESS;
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SIGNATURES_FOR_ADDRESS) {
        throw new RpcError(INVALID_PARAMS, `Invalid limit; max ${MAX_SIGNATURES_FOR_ADDRESS}`);
      }
      const before = c.before != null ? signatureParam(c.before, "before") : null;
      const until = c.until != null ? signatureParam(c.until, "until") : null;
      const list = chain.byAddress.get(a) ?? [];
      let i = list.length - 1;
      if (before) {
        const at = list.findIndex((r) => r.signature === before);
        if (at < 0) return [];
        i = at - 1;
      }
      const out = [];
      for (; i >= 0 && out.length < limit; i--) {
        const rec = list[i];
        if (rec.signature === until) break;
        if (rec.held) continue; // only "processed": not visible at confirmed or finalized
        out.push({
          signature: rec.signature,
          slot: rec.slot,
          err: rec.err,
          memo: rec.memo,
          blockTime: rec.blockTime,
          confirmationStatus: chain.confirmationStatus(rec),
        });
      }
      return out;
    },
    getTransaction: ([sig, config]) => {
      const s = signatureParam(sig);
      // A node also takes the encoding as a bare string in place of the config (the old form).
      const c = typeof config === "string" ? { encoding: config } : configParam(config);
      rejectProcessed(c);
      const encoding = c.encoding ?? "json";
      if (!["json", "base64", "base58"].includes(encoding)) {
        throw invalid(`unsupported encoding ${JSON.stringify(encoding)} (json, base64, base58)`);
      }
      const rec = chain.bySignature.get(s);
      if (!rec || rec.held) return null;
      const maxVersion = c.maxSupportedTransactionVersion;
      if (rec.decoded.version !== "legacy" && (maxVersion === undefined || maxVersion < rec.decoded.version)) {
        throw new RpcError(
          UNSUPPORTED_TRANSACTION_VERSION,
          `Transaction version (${rec.decoded.version}) is not supported by the requesting client. ` +
            "Please try the request again with the following configuration parameter: " +
            '"maxSupportedTransactionVersion": 0',
        );
      }
      const answer = {
        slot: rec.slot,
        blockTime: rec.blockTime,
        transaction: transactionJson(rec, encoding),
        meta: {
          err: rec.err,
          status: rec.err ? { Err: rec.err } : { Ok: null },
          fee: rec.fee,
          preBalances: rec.pre.lamports,
          postBalances: rec.post.lamports,
          innerInstructions: rec.innerInstructions,
          logMessages: rec.logs,
          preTokenBalances: rec.pre.tokens,
          postTokenBalances: rec.post.tokens,
          rewards: [],
          loadedAddresses: { writable: rec.keys.writable, readonly: rec.keys.readonly },
          computeUnitsConsumed: rec.computeUnits,
        },
      };
      // A node names the version only to a client that said which versions it reads.
      if (maxVersion !== undefined) answer.version = rec.decoded.version;
      return answer;
    },

    // ------------------------------------------------------------ test control
    test_info: () => ({
      mint: chain.usdcMint,
      mint_authority: chain.authority.publicKey.toBase58(),
      ...blockInfo(),
    }),
    test_airdrop: ([pubkey, lamports]) => ({
      lamports: Number(chain.airdrop(pubkeyParam(pubkey, "pubkey"), amountParam(lamports, "lamports"))),
    }),
    test_newWallet: () => {
      const kp = chain.newWallet();
      return { public_key: kp.publicKey.toBase58(), secret_key: Array.from(kp.secretKey) };
    },
    test_createMint: ([decimals = 6]) => {
      if (!Number.isInteger(decimals) || decimals < 0 || decimals > 255) throw invalid("decimals must be 0..255");
      return { mint: chain.createMint(decimals) };
    },
    test_mintUsdc: ([owner, amount]) => ({
      token_account: chain.mintTo(chain.usdcMint, pubkeyParam(owner, "owner"), amountParam(amount, "amount")),
    }),
    test_mintTo: ([mint, owner, amount]) => ({
      token_account: chain.mintTo(
        pubkeyParam(mint, "mint"),
        pubkeyParam(owner, "owner"),
        amountParam(amount, "amount"),
      ),
    }),
    test_tokenBalance: ([ownerOrAccount, mint]) =>
      chain
        .tokenBalance(pubkeyParam(ownerOrAccount, "owner"), mint == null ? null : pubkeyParam(mint, "mint"))
        .toString(),
    test_lamports: ([pubkey]) => Number(chain.lamports(pubkeyParam(pubkey, "pubkey"))),
    test_dropNextSends: ([n]) => {
      chain.dropNextSends = countParam(n, "n");
      return { pending: chain.dropNextSends };
    },
    test_failSends: ([n]) => {
      chain.failNextSends = countParam(n, "n");
      return { pending: chain.failNextSends };
    },
    test_expireBlockhash: () => {
      chain.expireBlockhash();
      return blockInfo();
    },
    test_advanceBlocks: ([n]) => {
      chain.advance(countParam(n, "n"));
      return blockInfo();
    },
    test_holdConfirmations: ([hold]) => {
      if (typeof hold !== "boolean") throw invalid("hold must be true or false");
      chain.setHoldConfirmations(hold);
      return { held: hold };
    },
    test_sends: () => ({
      count: chain.sends.length,
      signatures: chain.sends.map((s) => s.signature),
      sends: chain.sends.map((s) => ({ ...s })),
    }),
    test_transactions: () =>
      chain.records.map((rec) => ({
        signature: rec.signature,
        slot: rec.slot,
        blockTime: rec.blockTime,
        err: rec.err,
        memo: rec.memoText,
        confirmationStatus: chain.confirmationStatus(rec),
      })),
  };
}
