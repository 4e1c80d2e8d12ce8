// Solana transactions in the legacy wire format, the instructions gpunex sends (SPL Token
// TransferChecked, associated token account creation, Memo), and the layout of a token
// account.
//
// A transaction is its signatures followed by the message they sign:
//   compact-u16 n, n × 64-byte ed25519 signatures, message
//   message: header (num_required_signatures, num_readonly_signed, num_readonly_unsigned),
//            compact-u16 array of 32-byte account keys, 32-byte recent blockhash,
//            compact-u16 array of instructions (u8 program id index, compact-u16 array of
//            u8 account indices, compact-u16 array of data bytes).
// The account keys are ordered: writable signers (the fee payer first), readonly signers,
// writable non-signers, readonly non-signers. compact-u16 is 1 to 3 bytes of 7 bits each,
// low bits first, with the high bit set on all but the last; only the shortest encoding
// of a value is accepted when decoding, as the runtime does.
//
// Within each class the keys keep the order in which the instructions first name them,
// an instruction's program before its accounts: the order of @solana/web3.js's
// TransactionMessage.compileToLegacyMessage (and VersionedTransaction), so the bytes here
// match what it makes. (web3.js's older Transaction class sorts within a class by base58
// text; solana-sdk's Message::new by key bytes. Every such order is valid.)
//
// Thread-safety: pure functions over values.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "platform/solana/address.h"
#include "platform/solana/keypair.h"

namespace gpunex::platform::solana {

// The most a transaction may take on the wire (signatures and message together): an IPv6
// packet's 1280 bytes less 48 of headers.
inline constexpr size_t kPacketDataSize = 1232;

struct AccountMeta {
  Pubkey key;
  bool is_signer = false;
  bool is_writable = false;
};

struct Instruction {
  Pubkey program;
  std::vector<AccountMeta> accounts;
  std::vector<uint8_t> data;
};

// SPL Token TransferChecked (instruction 12): data [12, amount as u64 little-endian,
// decimals]; accounts: source (writable), mint, destination (writable), owner (signer).
// `amount` is in the mint's base units (micro-USDC for USDC); the program fails the
// transaction when `decimals` is not the mint's.
Instruction TransferChecked(const Pubkey& source, const Pubkey& mint, const Pubkey& destination,
                            const Pubkey& owner, uint64_t amount, uint8_t decimals,
                            const Pubkey& token_program = TokenProgram());

// Associated token account program, CreateIdempotent (data [1]): creates `associated`
// (= AssociatedTokenAddress(wallet, mint, token_program)) paid by `payer`, and succeeds
// without effect when it exists already. Accounts: payer (writable, signer), associated
// (writable), wallet, mint, system program, token program.
Instruction CreateAssociatedTokenAccountIdempotent(const Pubkey& payer, const Pubkey& associated,
                                                   const Pubkey& wallet, const Pubkey& mint,
                                                   const Pubkey& token_program = TokenProgram());

// Memo v2: data is the text's bytes; each of `signers` must sign the transaction.
// REQUIRES: `utf8` is valid UTF-8 (the program fails the transaction otherwise).
Instruction Memo(std::string_view utf8, const std::vector<Pubkey>& signers = {});

struct MessageHeader {
  uint8_t num_required_signatures = 0;
  uint8_t num_readonly_signed = 0;
  uint8_t num_readonly_unsigned = 0;
};

struct CompiledInstruction {
  uint8_t program_id_index = 0;
  std::vector<uint8_t> accounts;  // indices into the account keys
  std::vector<uint8_t> data;
};

struct Message {
  MessageHeader header;
  std::vector<Pubkey> account_keys;
  Pubkey recent_blockhash{};
  std::vector<CompiledInstruction> instructions;

  bool IsSigner(size_t index) const;
  bool IsWritable(size_t index) const;
};

// The message of `instructions` paid by `fee_payer` (see the top for the key order;
// duplicate keys are merged, their signer and writable flags OR-ed).
// Fails with kInvalidArgument when it would have more than 256 keys or when the signed
// transaction (its signatures and the message) would exceed kPacketDataSize bytes.
StatusOr<Message> BuildMessage(const Pubkey& fee_payer,
                               const std::vector<Instruction>& instructions,
                               const Pubkey& recent_blockhash);
// The wire bytes of a message (no checks beyond what the format can hold).
std::vector<uint8_t> SerializeMessage(const Message& message);
// BuildMessage then SerializeMessage: the bytes the signers sign.
StatusOr<std::vector<uint8_t>> CompileMessage(const Pubkey& fee_payer,
                                              const std::vector<Instruction>& instructions,
                                              const Pubkey& recent_blockhash);
// Parses exactly one legacy message filling all of `bytes`. Fails with kInvalidArgument
// for a versioned message (its first byte has the high bit set), a truncated or
// overlong buffer, a non-minimal compact-u16, an inconsistent header, or an index beyond
// the account keys. Never reads past `bytes`.
StatusOr<Message> DecodeMessage(std::span<const uint8_t> bytes);

struct SignedTransaction {
  std::string signature;      // base58 of the first signature: the transaction's id
  std::vector<uint8_t> wire;  // what sendTransaction takes
  std::string Base64() const;
};

// Signs a message from CompileMessage with the keypairs of its signer keys (the first
// num_required_signatures account keys). `signers` are matched to those keys by their
// public keys, in any order.
// Fails with kInvalidArgument when `message` does not decode, when a required signer has
// no keypair in `signers` (naming its address), when a keypair signs for no signer key,
// or when the transaction would exceed kPacketDataSize bytes.
// REQUIRES: no null pointer in `signers`.
StatusOr<SignedTransaction> SignTransaction(const std::vector<uint8_t>& message,
                                            const std::vector<const Keypair*>& signers);

struct DecodedTransaction {
  std::vector<Signature> signatures;
  Message message;
  std::vector<uint8_t> message_bytes;  // what the signatures sign
};

// Parses a legacy transaction that fills all of `wire`. Fails with kInvalidArgument as
// DecodeMessage does, and when the number of signatures is not the header's
// num_required_signatures. Signatures are not verified (VerifySignatures).
StatusOr<DecodedTransaction> DecodeTransaction(std::span<const uint8_t> wire);
// Whether every signature is its key's signature of the message.
bool VerifySignatures(const DecodedTransaction& tx);

// RFC 4648 base64 with padding (what the JSON-RPC API uses).
std::string Base64(std::span<const uint8_t> bytes);
// nullopt when `s` is not padded base64.
std::optional<std::vector<uint8_t>> DecodeBase64(std::string_view s);

// --- SPL Token accounts: 165 bytes (Token-2022 accounts with extensions are longer and
// have the account type 2 at byte 165): mint [0,32), owner [32,64), amount u64 LE
// [64,72), delegate, state at byte 108, is_native, delegated amount, close authority.
enum class TokenAccountState : uint8_t { kInitialized = 1, kFrozen = 2 };

struct TokenAccount {
  Pubkey mint;
  Pubkey owner;
  uint64_t amount = 0;  // in the mint's base units
  TokenAccountState state = TokenAccountState::kInitialized;
};

inline constexpr size_t kTokenAccountSize = 165;

// nullopt when `data` is not an initialized or frozen token account (wrong size or
// account type, uninitialized, an unknown state). The caller checks that the account's
// owner program is the token program.
std::optional<TokenAccount> ParseTokenAccount(std::span<const uint8_t> data);

}  // namespace gpunex::platform::solana
