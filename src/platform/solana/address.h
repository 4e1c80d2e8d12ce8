// Solana addresses: 32-byte public keys, written in base58 (the Bitcoin alphabet).
//
// An address is either an ed25519 public key, which its holder signs for, or a
// program-derived address (PDA): a SHA-256 hash of seeds and a program id that is not a
// point of the curve, so that no private key exists for it and only the program can "sign"
// for it. A token account of a wallet for a mint is the PDA of the associated token
// account program over (wallet, token program, mint).
//
// "On the curve" follows the Solana runtime exactly (curve25519-dalek's
// CompressedEdwardsY::decompress, which PDA derivation uses): the low 255 bits, reduced
// mod p = 2^255 - 19 (non-canonical encodings accepted), are the y of a point when
// (y^2 - 1) / (d y^2 + 1) is a square mod p; the sign bit is ignored. libsodium's
// crypto_core_ed25519_is_valid_point answers a different question (canonical, not of
// small order, in the prime-order subgroup): it rejects about 7 in 8 of the addresses the
// runtime counts as on the curve, so a PDA search with it would pick wrong bumps. The
// check is therefore written here with OpenSSL's BIGNUM (address.cc); libsodium's
// field arithmetic is not exposed. @solana/web3.js (noble-curves, RFC 8032 rules) differs
// from the runtime only for encodings that hashes practically never produce (y >= p, or
// x = 0 with the sign bit set); the runtime's answer is the one implemented.
//
// Thread-safety: pure functions; the program ids are immutable after first use.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gpunex::platform::solana {

using Pubkey = std::array<uint8_t, 32>;

// Base58 with the Bitcoin alphabet; each leading zero byte is a leading '1'.
std::string Base58(std::span<const uint8_t> bytes);
// nullopt when `s` holds a character outside the alphabet. Quadratic in the length: callers
// bound what they pass (an address is at most 44 characters, a signature 88).
std::optional<std::vector<uint8_t>> DecodeBase58(std::string_view s);
std::string ToBase58(const Pubkey& key);

// The longest base58 text of 32 bytes.
inline constexpr size_t kMaxPubkeyChars = 44;

// An address typed by a person or read from a request. Fails with kValidationFailed and
// one field error under `field` (common/status.h FieldError) when `s` is empty, longer
// than 44 characters, holds a character outside base58 (the message says which and
// where), or does not decode to 32 bytes.
StatusOr<Pubkey> ParsePubkey(std::string_view s, std::string_view field);

// Whether `key` decompresses to a point of the curve, as the Solana runtime decides it
// (see the top of this file). PDAs are off the curve; every ed25519 public key is on it.
bool IsOnCurve(const Pubkey& key);

// Whether `key` is one of the 8 points of small order (their y is 0, 1, -1 or ±y0, in
// any encoding), e.g. 32 zero bytes (the system program's id). Such points are on the
// curve but no private key signs for them: the runtime's signature check (dalek's
// verify_strict) refuses them as "weak" keys.
bool HasSmallOrder(const Pubkey& key);

// An address money can be sent to and that its holder can sign for: ParsePubkey, then
// on the curve and not of small order. Fails with kValidationFailed under `field`
// otherwise, saying that it is not an ed25519 public key (a program-derived address or
// another address nobody can sign for).
StatusOr<Pubkey> ParseWallet(std::string_view s, std::string_view field);

inline constexpr size_t kMaxSeeds = 16;
inline constexpr size_t kMaxSeedBytes = 32;

// The bytes of a text seed ("payout").
inline std::span<const uint8_t> SeedBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// sha256(seeds... ‖ program ‖ "ProgramDerivedAddress"). Fails with kInvalidArgument for
// more than 16 seeds or a seed longer than 32 bytes, and with kFailedPrecondition when the
// hash lies on the curve (then it is no PDA; another bump seed is needed).
StatusOr<Pubkey> CreateProgramAddress(const std::vector<std::span<const uint8_t>>& seeds,
                                      const Pubkey& program);

// The PDA of `seeds` plus one bump byte, trying bumps 255, 254, ... 0, with the first that
// is off the curve (solana_program::Pubkey::find_program_address).
// REQUIRES: at most 15 seeds (the bump is the 16th), each at most 32 bytes; a violation is
// a programming error and aborts, as does the case that no bump fits (probability 2^-256),
// which Solana's implementation panics on too.
std::pair<Pubkey, uint8_t> FindProgramAddress(const std::vector<std::span<const uint8_t>>& seeds,
                                              const Pubkey& program);

// The program ids.
const Pubkey& SystemProgram();           // 11111111111111111111111111111111
const Pubkey& TokenProgram();            // TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA
const Pubkey& Token2022Program();        // TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb
const Pubkey& AssociatedTokenProgram();  // ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL
const Pubkey& MemoProgram();             // MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr (v2)

// The name of a well-known address that is no wallet: a native or SPL program (System,
// Token, Token-2022, Associated Token Account, Memo v1 and v2, Compute Budget, the BPF
// loaders, Stake, Vote, ...), a sysvar, or the incinerator (whatever is sent there is
// burnt). nullopt for any other address. Money sent "to" one of these, as a payout
// recipient, reaches nobody who can spend it.
std::optional<std::string_view> WellKnownAddress(const Pubkey& key);

// USDC on mainnet-beta (6 decimals).
inline constexpr std::string_view kMainnetUsdcMint = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
inline constexpr uint8_t kUsdcDecimals = 6;

// The associated token account of `wallet` for `mint`:
// FindProgramAddress([wallet, token_program, mint], AssociatedTokenProgram()).first.
Pubkey AssociatedTokenAddress(const Pubkey& wallet, const Pubkey& mint,
                              const Pubkey& token_program = TokenProgram());

}  // namespace gpunex::platform::solana
