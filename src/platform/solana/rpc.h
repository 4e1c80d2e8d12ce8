// A client of the Solana JSON-RPC API (https://solana.com/docs/rpc/http): the calls that
// paying out and checking top-ups need.
//
// Errors, the same for every method:
//   kUnavailable    the node could not be reached or answered in time, HTTP 429 or 5xx,
//                   or a JSON-RPC error that says to come back later (-32004 block not
//                   available, -32005 node unhealthy, -32014, -32016 min context slot not
//                   reached, -32603 internal error): retry, later or elsewhere;
//   kFailedPrecondition  a JSON-RPC error about the request's subject, e.g. -32002 "Transaction
//                   simulation failed: Blockhash not found" (sendTransaction's preflight:
//                   the transaction was not forwarded), -32015 a transaction version
//                   not supported, and codes not listed here; also HTTP statuses other than
//                   200, 429 and 5xx (a 401 or 403: the endpoint refuses our key);
//   kInvalidArgument  our request was refused as malformed (-32600, -32601, -32602,
//                   -32003 signature verification failure), or an argument was invalid
//                   before anything was sent (a commitment other than processed, confirmed,
//                   finalized; more than 256 signatures);
//   kNotFound       -32007 / -32009 the slot was skipped or is missing from storage;
//   kInternal       the answer is not the JSON-RPC response expected (not JSON, another id,
//                   a field missing or of the wrong type), or is larger than
//                   kMaxResponseBytes.
// A JSON-RPC error keeps the node's message in the Status's message and its code and the
// `data.err` of a failed transaction (serialized JSON, e.g. "\"BlockhashNotFound\"" or
// {"InstructionError":[1,{"Custom":1}]}) as the fields "rpc_code" and "rpc_err" of the
// Status (RpcErrorCode reads the first back). Messages never contain the endpoint's URL,
// which often carries an API key.
//
// Thread-safety: an Rpc may be called from any number of threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "platform/solana/address.h"
#include "platform/solana/transaction.h"

namespace gpunex::platform::solana {

// Commitment levels, weakest first.
inline constexpr std::string_view kProcessed = "processed";
inline constexpr std::string_view kConfirmed = "confirmed";
inline constexpr std::string_view kFinalized = "finalized";

inline constexpr size_t kMaxResponseBytes = 8 << 20;
// getSignatureStatuses takes at most this many signatures per call.
inline constexpr size_t kMaxSignaturesPerStatusCall = 256;

struct BlockhashInfo {
  Pubkey blockhash;
  // A transaction with this blockhash can be included up to this block height; once the
  // chain's block height (BlockHeight) is beyond it and the transaction is not found,
  // it never will be.
  uint64_t last_valid_block_height = 0;
  uint64_t slot = 0;  // the context slot of the answer
};

struct SignatureStatus {
  uint64_t slot = 0;
  std::optional<uint64_t> confirmations;  // nullopt once rooted (finalized)
  std::optional<std::string> err;         // the err JSON serialized; nullopt on success
  std::string confirmation_status;        // processed | confirmed | finalized
};

// Whether `status` is at `commitment` or beyond (finalized > confirmed > processed). A
// status without confirmation_status (old nodes) counts as finalized when its
// confirmations are null, as confirmed otherwise. A failed transaction reaches
// commitments too: check err.
bool Reached(const SignatureStatus& status, std::string_view commitment);

struct AccountInfo {
  uint64_t lamports = 0;
  Pubkey owner;  // the program that owns the account
  std::vector<uint8_t> data;
  bool executable = false;
};

struct SignatureInfo {
  std::string signature;
  uint64_t slot = 0;
  std::optional<std::string> err;     // serialized JSON; nullopt on success
  std::optional<int64_t> block_time;  // Unix seconds
  std::string confirmation_status;    // may be "" on old nodes
};

struct TokenBalance {
  uint8_t account_index = 0;  // into TransactionInfo::account_keys
  Pubkey mint;
  std::optional<Pubkey> owner;
  uint64_t amount = 0;  // base units (uiTokenAmount.amount)
  uint8_t decimals = 0;
};

struct TransactionInfo {
  uint64_t slot = 0;
  std::optional<int64_t> block_time;
  std::optional<std::string> err;  // serialized JSON; nullopt on success
  std::vector<std::string> signatures;
  MessageHeader header;
  // The message's static keys, then meta.loadedAddresses' writable and readonly ones (for
  // version 0 transactions with address lookup tables).
  std::vector<Pubkey> account_keys;
  std::vector<CompiledInstruction> instructions;  // top-level only
  std::vector<TokenBalance> pre_token_balances;
  std::vector<TokenBalance> post_token_balances;
};

class Rpc {
 public:
  virtual ~Rpc() = default;

  // getLatestBlockhash.
  virtual StatusOr<BlockhashInfo> LatestBlockhash(std::string_view commitment) = 0;
  // getBlockHeight.
  virtual StatusOr<uint64_t> BlockHeight(std::string_view commitment) = 0;
  // sendTransaction of a signed transaction in base64 (SignedTransaction::Base64()).
  // Returns the signature the node reports (base58, the first signature). Success means
  // the node accepted it, not that it will land: follow it with SignatureStatuses until its
  // blockhash expires.
  virtual StatusOr<std::string> SendTransaction(const std::string& base64, bool skip_preflight,
                                                std::string_view preflight_commitment) = 0;
  // getSignatureStatuses: one entry per signature, in order; nullopt for one the node does
  // not know (with search_history false, only recent ones are known).
  // REQUIRES (else kInvalidArgument): at most 256 signatures.
  virtual StatusOr<std::vector<std::optional<SignatureStatus>>> SignatureStatuses(
      const std::vector<std::string>& signatures, bool search_history) = 0;
  // getAccountInfo (base64 data); nullopt when the account does not exist.
  virtual StatusOr<std::optional<AccountInfo>> GetAccountInfo(const Pubkey& address,
                                                              std::string_view commitment) = 0;
  // getSignaturesForAddress: the newest first, up to `limit` (1..1000), starting before
  // the signature `before` when given. (Nodes refuse the "processed" commitment here.)
  virtual StatusOr<std::vector<SignatureInfo>> SignaturesForAddress(
      const Pubkey& address, int limit, std::optional<std::string> before,
      std::string_view commitment) = 0;
  // getTransaction (encoding "json", maxSupportedTransactionVersion 0); nullopt when the
  // node does not have it (not yet, or not at this commitment).
  virtual StatusOr<std::optional<TransactionInfo>> GetTransaction(const std::string& signature,
                                                                  std::string_view commitment) = 0;
};

// A client over HTTP(S) POSTs to `url` with libcurl; each call takes at most `timeout`
// (connection included). Connections are reused across calls. Redirects are not
// followed. Calls fail with kFailedPrecondition when `url` is not a valid http or https
// URL (ValidateRpcUrl).
std::unique_ptr<Rpc> HttpRpc(std::string url, std::chrono::milliseconds timeout);

// OK when `url` is an http:// or https:// URL with a host; otherwise kInvalidArgument (its
// message does not quote the URL).
Status ValidateRpcUrl(std::string_view url);

// The JSON-RPC error code carried by a Status from an Rpc, when it came from one.
std::optional<int64_t> RpcErrorCode(const Status& status);

}  // namespace gpunex::platform::solana
