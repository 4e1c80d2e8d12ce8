// Transactions in their wire form: decoding with web3.js, the signed message bytes, and
// ed25519 signature checks with Node's own crypto (no dependency beyond Node).

import crypto from "node:crypto";
import { PublicKey, VersionedTransaction } from "@solana/web3.js";
import { getBase58Decoder, getBase58Encoder } from "@solana/kit";

const b58Decoder = getBase58Decoder(); // bytes -> base58 text
const b58Encoder = getBase58Encoder(); // base58 text -> bytes

export function toBase58(bytes) {
  return b58Decoder.decode(bytes);
}

export function fromBase58(text) {
  return Buffer.from(b58Encoder.encode(text));
}

/** The length and size of the compact-u16 ("shortvec") at `bytes[offset]`. */
function readCompactU16(bytes, offset) {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    if (offset + i >= bytes.length) throw new Error("truncated compact-u16");
    const b = bytes[offset + i];
    value |= (b & 0x7f) << (7 * i);
    if ((b & 0x80) === 0) return { value, size: i + 1 };
  }
  throw new Error("compact-u16 longer than 3 bytes");
}

/**
 * Decodes a wire transaction (legacy or v0). Throws on bytes that are not one.
 * Returns {tx: VersionedTransaction, messageBytes: the signed bytes, signatures: base58[],
 * signers: base58[] (the keys that must sign, in signature order), version: "legacy" | 0}.
 */
export function decodeWireTransaction(raw) {
  const bytes = Buffer.from(raw);
  const tx = VersionedTransaction.deserialize(bytes);
  const { value: count, size } = readCompactU16(bytes, 0);
  const messageBytes = bytes.subarray(size + 64 * count);
  const header = tx.message.header;
  if (count !== header.numRequiredSignatures) {
    throw new Error(`${count} signatures for ${header.numRequiredSignatures} required signers`);
  }
  const signers = tx.message.staticAccountKeys.slice(0, count).map((k) => k.toBase58());
  return {
    tx,
    messageBytes,
    signatures: tx.signatures.map((s) => toBase58(s)),
    signers,
    version: tx.message.version,
  };
}

// An ed25519 public key as DER SubjectPublicKeyInfo is this prefix and the 32 key bytes.
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** Whether `signature` (64 bytes) is `pubkey`'s (base58) ed25519 signature of `message`. */
export function verifyEd25519(pubkey, message, signature) {
  const key = crypto.createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, new PublicKey(pubkey).toBuffer()]),
    format: "der",
    type: "spki",
  });
  return crypto.verify(null, message, key, Buffer.from(signature));
}

/** For each required signer: {pubkey, signature (base58), valid}. An all-zero signature
 *  (a signer that has not signed) is never valid. */
export function checkSignatures(decoded) {
  return decoded.signers.map((pubkey, i) => {
    const sig = decoded.tx.signatures[i];
    const signed = sig.some((b) => b !== 0);
    return {
      pubkey,
      signature: toBase58(sig),
      valid: signed && verifyEd25519(pubkey, decoded.messageBytes, sig),
    };
  });
}
