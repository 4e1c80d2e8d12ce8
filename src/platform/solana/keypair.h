// Ed25519 keypairs that sign Solana transactions, and the Solana CLI's key file.
//
// A Keypair's 64-byte secret is libsodium's: the 32-byte seed followed by the 32-byte
// public key, which is also what `solana-keygen` writes: a JSON array of the 64 bytes as
// integers ("[12,201,...]"). The file must be readable by its owner only.
//
// Secrets are never logged, formatted or put in a Status: no function here prints one, and
// the errors about a key file name the file and the problem, never its contents.
//
// Thread-safety: pure functions over values; the file functions touch only their path.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "common/status.h"
#include "platform/solana/address.h"

namespace gpunex::platform::solana {

using Signature = std::array<uint8_t, 64>;

struct Keypair {
  std::array<uint8_t, 64> secret;  // seed ‖ public key; never print
  Pubkey public_key;
};

// Reads a Solana CLI key file.
// Fails with kFailedPrecondition naming the path when it cannot be opened or read, is not
// a regular file, or its mode is other than 0600 or 0400 (any access by group or others,
// or execute bits: the message names the mode); with kInvalidArgument naming the path
// when it is not a JSON array of exactly 64 integers 0..255 (the message never quotes the
// file), or when its last 32 bytes are not the public key of its first 32.
StatusOr<Keypair> LoadKeypairFile(const std::string& path);

// A new random keypair.
Keypair GenerateKeypair();
// The keypair of a 32-byte seed (RFC 8032; web3.js Keypair.fromSeed).
Keypair KeypairFromSeed(std::span<const uint8_t, 32> seed);

// Writes `keypair` in the CLI format to a new file of mode 0600.
// Fails with kAlreadyExists when `path` exists (it is never overwritten) and with
// kFailedPrecondition when it cannot be created or written (a partial file is removed).
Status WriteKeypairFile(const std::string& path, const Keypair& keypair);

// The detached ed25519 signature of `message`.
Signature Sign(const Keypair& keypair, std::span<const uint8_t> message);
// Whether `signature` is `key`'s signature of `message`.
bool Verify(const Pubkey& key, std::span<const uint8_t> message, const Signature& signature);

}  // namespace gpunex::platform::solana
