// SPL Token account and mint layouts as the front reads and writes them in LiteSVM, and
// the token-amount shapes of the Solana JSON-RPC API (uiTokenAmount, jsonParsed).
//
// Addresses are base58 strings throughout; amounts are BigInt. Accounts are LiteSVM's
// kit-style records: {exists, address, lamports, data: Uint8Array, programAddress}.

import { AccountLayout, MintLayout, ACCOUNT_SIZE, MINT_SIZE } from "@solana/spl-token";
import { PublicKey } from "@solana/web3.js";

export const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
export const TOKEN_2022_PROGRAM = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
export const ATA_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
export const SYSTEM_PROGRAM = "11111111111111111111111111111111";
export const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";
// Memo v2 ("MemoSq...", what @solana/pay and most wallets use) and the older v1.
export const MEMO_PROGRAMS = new Set([
  "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
  "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo",
]);

// Token-2022 puts an account-type byte right after the base layout (165 bytes) when an
// account carries extensions: 1 for a mint, 2 for a token account.
const ACCOUNT_TYPE_OFFSET = ACCOUNT_SIZE;
const ACCOUNT_TYPE_MINT = 1;
const ACCOUNT_TYPE_ACCOUNT = 2;

function isTokenProgram(owner) {
  return owner === TOKEN_PROGRAM || owner === TOKEN_2022_PROGRAM;
}

/** The token account in `account`, or null when it is none (missing, other owner, wrong
 *  size, uninitialized). */
export function parseTokenAccount(account) {
  if (!account || account.exists === false || !isTokenProgram(account.programAddress)) return null;
  const data = Buffer.from(account.data);
  if (data.length < ACCOUNT_SIZE) return null;
  if (data.length > ACCOUNT_SIZE && data[ACCOUNT_TYPE_OFFSET] !== ACCOUNT_TYPE_ACCOUNT) return null;
  const a = AccountLayout.decode(data);
  if (a.state === 0) return null; // uninitialized
  return {
    programId: account.programAddress,
    mint: a.mint.toBase58(),
    owner: a.owner.toBase58(),
    amount: a.amount,
    delegate: a.delegateOption ? a.delegate.toBase58() : null,
    delegatedAmount: a.delegatedAmount,
    state: a.state === 2 ? "frozen" : "initialized",
    isNative: a.isNativeOption === 1,
    closeAuthority: a.closeAuthorityOption ? a.closeAuthority.toBase58() : null,
  };
}

/** The mint in `account`, or null when it is none. */
export function parseMint(account) {
  if (!account || account.exists === false || !isTokenProgram(account.programAddress)) return null;
  const data = Buffer.from(account.data);
  if (data.length < MINT_SIZE) return null;
  if (data.length > MINT_SIZE && (data.length <= ACCOUNT_SIZE || data[ACCOUNT_TYPE_OFFSET] !== ACCOUNT_TYPE_MINT)) {
    return null;
  }
  const m = MintLayout.decode(data);
  if (!m.isInitialized) return null;
  return {
    programId: account.programAddress,
    mintAuthority: m.mintAuthorityOption ? m.mintAuthority.toBase58() : null,
    supply: m.supply,
    decimals: m.decimals,
    freezeAuthority: m.freezeAuthorityOption ? m.freezeAuthority.toBase58() : null,
  };
}

/** The 82 bytes of an initialized SPL mint. */
export function encodeMint({ mintAuthority, supply = 0n, decimals, freezeAuthority = null }) {
  const data = Buffer.alloc(MINT_SIZE);
  MintLayout.encode(
    {
      mintAuthorityOption: mintAuthority ? 1 : 0,
      mintAuthority: new PublicKey(mintAuthority ?? SYSTEM_PROGRAM),
      supply: BigInt(supply),
      decimals,
      isInitialized: true,
      freezeAuthorityOption: freezeAuthority ? 1 : 0,
      freezeAuthority: new PublicKey(freezeAuthority ?? SYSTEM_PROGRAM),
    },
    data,
  );
  return data;
}

/** The 165 bytes of an initialized SPL token account with no delegate and no close
 *  authority. */
export function encodeTokenAccount({ mint, owner, amount }) {
  const data = Buffer.alloc(ACCOUNT_SIZE);
  const none = new PublicKey(SYSTEM_PROGRAM);
  AccountLayout.encode(
    {
      mint: new PublicKey(mint),
      owner: new PublicKey(owner),
      amount: BigInt(amount),
      delegateOption: 0,
      delegate: none,
      state: 1,
      isNativeOption: 0,
      isNative: 0n,
      delegatedAmount: 0n,
      closeAuthorityOption: 0,
      closeAuthority: none,
    },
    data,
  );
  return data;
}

/** `amount` base units with `decimals` as a decimal string without trailing zeros, the way
 *  the RPC's uiAmountString writes it: 1500000 with 6 decimals is "1.5", 0 is "0". */
export function uiAmountString(amount, decimals) {
  const s = BigInt(amount)
    .toString()
    .padStart(decimals + 1, "0");
  if (decimals === 0) return s;
  const whole = s.slice(0, s.length - decimals);
  const frac = s.slice(s.length - decimals).replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : whole;
}

/** The RPC's UiTokenAmount. */
export function uiTokenAmount(amount, decimals) {
  const str = uiAmountString(amount, decimals);
  return { amount: BigInt(amount).toString(), decimals, uiAmount: Number(str), uiAmountString: str };
}

/** The RPC's jsonParsed form of a token account or mint ({program, parsed, space}), or
 *  null when `account` is neither. `decimalsOf(mint)` gives a token account's decimals. */
export function jsonParsedTokenData(account, decimalsOf) {
  const space = account.data.length;
  const program = account.programAddress === TOKEN_2022_PROGRAM ? "spl-token-2022" : "spl-token";
  const t = parseTokenAccount(account);
  if (t) {
    const decimals = decimalsOf(t.mint) ?? 0;
    const info = {
      isNative: t.isNative,
      mint: t.mint,
      owner: t.owner,
      state: t.state,
      tokenAmount: uiTokenAmount(t.amount, decimals),
    };
    if (t.delegate) {
      info.delegate = t.delegate;
      info.delegatedAmount = uiTokenAmount(t.delegatedAmount, decimals);
    }
    if (t.closeAuthority) info.closeAuthority = t.closeAuthority;
    return { program, parsed: { info, type: "account" }, space };
  }
  const m = parseMint(account);
  if (m) {
    return {
      program,
      parsed: {
        info: {
          decimals: m.decimals,
          freezeAuthority: m.freezeAuthority,
          isInitialized: true,
          mintAuthority: m.mintAuthority,
          supply: m.supply.toString(),
        },
        type: "mint",
      },
      space,
    };
  }
  return null;
}
