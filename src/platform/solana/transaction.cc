#include "platform/solana/transaction.h"

#include <sodium.h>

#include <algorithm>
#include <map>

namespace gpunex::platform::solana {
namespace {

void PutCompactU16(std::vector<uint8_t>* out, uint16_t v) {
  while (true) {
    auto b = static_cast<uint8_t>(v & 0x7f);
    v = static_cast<uint16_t>(v >> 7);
    if (v == 0) {
      out->push_back(b);
      return;
    }
    out->push_back(b | 0x80);
  }
}

size_t CompactU16Size(size_t v) { return v < 0x80 ? 1 : v < 0x4000 ? 2 : 3; }

void PutBytes(std::vector<uint8_t>* out, std::span<const uint8_t> b) {
  out->insert(out->end(), b.begin(), b.end());
}

// A bounds-checked cursor over the wire bytes.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}

  bool U8(uint8_t* v) {
    if (pos_ >= b_.size()) return false;
    *v = b_[pos_++];
    return true;
  }
  // The shortest encoding only (the runtime rejects aliases such as 0x80 0x00).
  bool CompactU16(uint16_t* v) {
    uint32_t value = 0;
    for (int i = 0; i < 3; ++i) {
      uint8_t b;
      if (!U8(&b)) return false;
      if (i == 2 && b > 0x03) return false;  // beyond 16 bits
      value |= static_cast<uint32_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        if (i > 0 && b == 0) return false;  // non-minimal
        *v = static_cast<uint16_t>(value);
        return true;
      }
    }
    return false;
  }
  bool Bytes(size_t n, std::span<const uint8_t>* out) {
    if (b_.size() - pos_ < n) return false;
    *out = b_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  template <size_t N>
  bool Array(std::array<uint8_t, N>* out) {
    std::span<const uint8_t> s;
    if (!Bytes(N, &s)) return false;
    std::copy(s.begin(), s.end(), out->begin());
    return true;
  }
  size_t pos() const { return pos_; }
  bool done() const { return pos_ == b_.size(); }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

Status Malformed(const std::string& what, size_t at) {
  return InvalidArgument("malformed Solana " + what + " at byte " + std::to_string(at));
}

// Parses a message from `r`, leaving it after the message.
StatusOr<Message> ReadMessage(Reader& r) {
  Message m;
  size_t start = r.pos();
  uint8_t first;
  if (!r.U8(&first)) return Malformed("message: it is empty", start);
  if (first & 0x80) {
    return InvalidArgument("a versioned Solana message (version " + std::to_string(first & 0x7f) +
                           "): only legacy messages are supported");
  }
  m.header.num_required_signatures = first;
  if (!r.U8(&m.header.num_readonly_signed) || !r.U8(&m.header.num_readonly_unsigned)) {
    return Malformed("message header", r.pos());
  }
  uint16_t nkeys;
  if (!r.CompactU16(&nkeys)) return Malformed("message: account key count", r.pos());
  m.account_keys.resize(nkeys);
  for (auto& key : m.account_keys) {
    if (!r.Array(&key)) return Malformed("message: account keys", r.pos());
  }
  const MessageHeader& h = m.header;
  if (h.num_required_signatures == 0 || h.num_required_signatures > nkeys ||
      h.num_readonly_signed >= h.num_required_signatures ||
      h.num_readonly_unsigned > nkeys - h.num_required_signatures) {
    return InvalidArgument("a Solana message whose header does not fit its " +
                           std::to_string(nkeys) + " account keys");
  }
  if (!r.Array(&m.recent_blockhash)) return Malformed("message: recent blockhash", r.pos());
  uint16_t nix;
  if (!r.CompactU16(&nix)) return Malformed("message: instruction count", r.pos());
  m.instructions.reserve(std::min<size_t>(nix, 64));
  for (uint16_t i = 0; i < nix; ++i) {
    CompiledInstruction ix;
    if (!r.U8(&ix.program_id_index)) return Malformed("instruction", r.pos());
    if (ix.program_id_index >= nkeys) {
      return InvalidArgument("instruction " + std::to_string(i) +
                             " of a Solana message names a program beyond its account keys");
    }
    uint16_t n;
    std::span<const uint8_t> s;
    if (!r.CompactU16(&n) || !r.Bytes(n, &s)) return Malformed("instruction accounts", r.pos());
    ix.accounts.assign(s.begin(), s.end());
    for (uint8_t a : ix.accounts) {
      if (a >= nkeys) {
        return InvalidArgument("instruction " + std::to_string(i) +
                               " of a Solana message names an account beyond its account keys");
      }
    }
    if (!r.CompactU16(&n) || !r.Bytes(n, &s)) return Malformed("instruction data", r.pos());
    ix.data.assign(s.begin(), s.end());
    m.instructions.push_back(std::move(ix));
  }
  return m;
}

size_t TransactionSize(size_t num_signatures, size_t message_size) {
  return CompactU16Size(num_signatures) + 64 * num_signatures + message_size;
}

Status CheckSize(size_t num_signatures, size_t message_size) {
  size_t total = TransactionSize(num_signatures, message_size);
  if (total > kPacketDataSize) {
    return InvalidArgument("the Solana transaction would take " + std::to_string(total) +
                           " bytes, more than the " + std::to_string(kPacketDataSize) +
                           " a packet holds");
  }
  return Status::Ok();
}

}  // namespace

Instruction TransferChecked(const Pubkey& source, const Pubkey& mint, const Pubkey& destination,
                            const Pubkey& owner, uint64_t amount, uint8_t decimals,
                            const Pubkey& token_program) {
  Instruction ix;
  ix.program = token_program;
  ix.accounts = {{source, false, true},
                 {mint, false, false},
                 {destination, false, true},
                 {owner, true, false}};
  ix.data.reserve(10);
  ix.data.push_back(12);
  for (int i = 0; i < 8; ++i) ix.data.push_back(static_cast<uint8_t>(amount >> (8 * i)));
  ix.data.push_back(decimals);
  return ix;
}

Instruction CreateAssociatedTokenAccountIdempotent(const Pubkey& payer, const Pubkey& associated,
                                                   const Pubkey& wallet, const Pubkey& mint,
                                                   const Pubkey& token_program) {
  Instruction ix;
  ix.program = AssociatedTokenProgram();
  ix.accounts = {
      {payer, true, true},  {associated, false, true},       {wallet, false, false},
      {mint, false, false}, {SystemProgram(), false, false}, {token_program, false, false}};
  ix.data = {1};
  return ix;
}

Instruction Memo(std::string_view utf8, const std::vector<Pubkey>& signers) {
  Instruction ix;
  ix.program = MemoProgram();
  for (const Pubkey& s : signers) ix.accounts.push_back({s, true, false});
  ix.data.assign(utf8.begin(), utf8.end());
  return ix;
}

bool Message::IsSigner(size_t index) const { return index < header.num_required_signatures; }

bool Message::IsWritable(size_t index) const {
  size_t nreq = header.num_required_signatures;
  if (index < nreq) return index < nreq - header.num_readonly_signed;
  return index < account_keys.size() && index < account_keys.size() - header.num_readonly_unsigned;
}

StatusOr<Message> BuildMessage(const Pubkey& fee_payer,
                               const std::vector<Instruction>& instructions,
                               const Pubkey& recent_blockhash) {
  struct Entry {
    Pubkey key;
    bool signer = false;
    bool writable = false;
  };
  std::vector<Entry> entries;  // in order of first mention
  std::map<Pubkey, size_t> position;
  auto entry = [&](const Pubkey& key) -> Entry& {
    auto [it, inserted] = position.try_emplace(key, entries.size());
    if (inserted) entries.push_back({key});
    return entries[it->second];
  };
  Entry& payer = entry(fee_payer);
  payer.signer = payer.writable = true;
  for (const Instruction& ix : instructions) {
    entry(ix.program);
    for (const AccountMeta& a : ix.accounts) {
      Entry& e = entry(a.key);
      e.signer = e.signer || a.is_signer;
      e.writable = e.writable || a.is_writable;
    }
  }
  if (entries.size() > 256) {
    return InvalidArgument("a Solana message names at most 256 accounts, not " +
                           std::to_string(entries.size()));
  }
  Message m;
  m.recent_blockhash = recent_blockhash;
  m.account_keys.push_back(fee_payer);
  for (int cls = 0; cls < 4; ++cls) {
    bool want_signer = cls < 2;
    bool want_writable = cls % 2 == 0;
    for (size_t i = 1; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      if (e.signer != want_signer || e.writable != want_writable) continue;
      m.account_keys.push_back(e.key);
      if (e.signer) ++m.header.num_required_signatures;
      if (e.signer && !e.writable) ++m.header.num_readonly_signed;
      if (!e.signer && !e.writable) ++m.header.num_readonly_unsigned;
    }
  }
  ++m.header.num_required_signatures;  // the fee payer
  std::map<Pubkey, uint8_t> index;
  for (size_t i = 0; i < m.account_keys.size(); ++i) {
    index[m.account_keys[i]] = static_cast<uint8_t>(i);
  }
  for (const Instruction& ix : instructions) {
    CompiledInstruction c;
    c.program_id_index = index.at(ix.program);
    for (const AccountMeta& a : ix.accounts) c.accounts.push_back(index.at(a.key));
    c.data = ix.data;
    if (c.accounts.size() > 0xffff || c.data.size() > 0xffff) {
      return InvalidArgument("a Solana instruction with more than 65535 accounts or bytes");
    }
    m.instructions.push_back(std::move(c));
  }
  size_t size = 3 + CompactU16Size(m.account_keys.size()) + 32 * m.account_keys.size() + 32 +
                CompactU16Size(m.instructions.size());
  for (const auto& c : m.instructions) {
    size += 1 + CompactU16Size(c.accounts.size()) + c.accounts.size() +
            CompactU16Size(c.data.size()) + c.data.size();
  }
  GPUNEX_RETURN_IF_ERROR(CheckSize(m.header.num_required_signatures, size));
  return m;
}

std::vector<uint8_t> SerializeMessage(const Message& m) {
  std::vector<uint8_t> out;
  out.push_back(m.header.num_required_signatures);
  out.push_back(m.header.num_readonly_signed);
  out.push_back(m.header.num_readonly_unsigned);
  PutCompactU16(&out, static_cast<uint16_t>(m.account_keys.size()));
  for (const Pubkey& k : m.account_keys) PutBytes(&out, k);
  PutBytes(&out, m.recent_blockhash);
  PutCompactU16(&out, static_cast<uint16_t>(m.instructions.size()));
  for (const CompiledInstruction& c : m.instructions) {
    out.push_back(c.program_id_index);
    PutCompactU16(&out, static_cast<uint16_t>(c.accounts.size()));
    PutBytes(&out, c.accounts);
    PutCompactU16(&out, static_cast<uint16_t>(c.data.size()));
    PutBytes(&out, c.data);
  }
  return out;
}

StatusOr<std::vector<uint8_t>> CompileMessage(const Pubkey& fee_payer,
                                              const std::vector<Instruction>& instructions,
                                              const Pubkey& recent_blockhash) {
  GPUNEX_ASSIGN_OR_RETURN(Message m, BuildMessage(fee_payer, instructions, recent_blockhash));
  return SerializeMessage(m);
}

StatusOr<Message> DecodeMessage(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  GPUNEX_ASSIGN_OR_RETURN(Message m, ReadMessage(r));
  if (!r.done()) return Malformed("message: bytes after its end", r.pos());
  return m;
}

std::string SignedTransaction::Base64() const { return solana::Base64(wire); }

StatusOr<SignedTransaction> SignTransaction(const std::vector<uint8_t>& message,
                                            const std::vector<const Keypair*>& signers) {
  GPUNEX_ASSIGN_OR_RETURN(Message m, DecodeMessage(message));
  size_t n = m.header.num_required_signatures;
  GPUNEX_RETURN_IF_ERROR(CheckSize(n, message.size()));
  std::vector<bool> used(signers.size(), false);
  SignedTransaction tx;
  tx.wire.reserve(TransactionSize(n, message.size()));
  PutCompactU16(&tx.wire, static_cast<uint16_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const Pubkey& key = m.account_keys[i];
    size_t j = 0;
    while (j < signers.size() && signers[j]->public_key != key) ++j;
    if (j == signers.size()) {
      return InvalidArgument("no keypair was given for the required signer " + ToBase58(key));
    }
    used[j] = true;
    Signature sig = Sign(*signers[j], message);
    if (i == 0) tx.signature = Base58(sig);
    PutBytes(&tx.wire, sig);
  }
  for (size_t j = 0; j < signers.size(); ++j) {
    if (!used[j]) {
      return InvalidArgument("the keypair of " + ToBase58(signers[j]->public_key) +
                             " signs for no signer of the message");
    }
  }
  PutBytes(&tx.wire, message);
  return tx;
}

StatusOr<DecodedTransaction> DecodeTransaction(std::span<const uint8_t> wire) {
  Reader r(wire);
  uint16_t nsig;
  if (!r.CompactU16(&nsig)) return Malformed("transaction: signature count", r.pos());
  DecodedTransaction tx;
  tx.signatures.resize(nsig);
  for (auto& sig : tx.signatures) {
    if (!r.Array(&sig)) return Malformed("transaction: signatures", r.pos());
  }
  size_t message_start = r.pos();
  GPUNEX_ASSIGN_OR_RETURN(tx.message, ReadMessage(r));
  if (!r.done()) return Malformed("transaction: bytes after its end", r.pos());
  if (nsig != tx.message.header.num_required_signatures) {
    return InvalidArgument("a Solana transaction with " + std::to_string(nsig) +
                           " signatures for a message that requires " +
                           std::to_string(tx.message.header.num_required_signatures));
  }
  tx.message_bytes.assign(wire.begin() + static_cast<std::ptrdiff_t>(message_start), wire.end());
  return tx;
}

bool VerifySignatures(const DecodedTransaction& tx) {
  if (tx.signatures.size() > tx.message.account_keys.size()) return false;
  for (size_t i = 0; i < tx.signatures.size(); ++i) {
    if (!Verify(tx.message.account_keys[i], tx.message_bytes, tx.signatures[i])) return false;
  }
  return true;
}

std::string Base64(std::span<const uint8_t> bytes) {
  constexpr int kVariant = sodium_base64_VARIANT_ORIGINAL;
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), kVariant), '\0');
  sodium_bin2base64(out.data(), out.size(), bytes.data(), bytes.size(), kVariant);
  out.pop_back();  // the terminating NUL
  return out;
}

std::optional<std::vector<uint8_t>> DecodeBase64(std::string_view s) {
  std::vector<uint8_t> out(s.size() / 4 * 3 + 3);
  size_t len = 0;
  const char* end = nullptr;
  if (sodium_base642bin(out.data(), out.size(), s.data(), s.size(), nullptr, &len, &end,
                        sodium_base64_VARIANT_ORIGINAL) != 0 ||
      end != s.data() + s.size()) {
    return std::nullopt;
  }
  out.resize(len);
  return out;
}

std::optional<TokenAccount> ParseTokenAccount(std::span<const uint8_t> data) {
  constexpr uint8_t kAccountTypeAccount = 2;  // Token-2022's marker after the base layout
  if (data.size() < kTokenAccountSize ||
      (data.size() > kTokenAccountSize && data[kTokenAccountSize] != kAccountTypeAccount)) {
    return std::nullopt;
  }
  TokenAccount a;
  std::copy(data.begin(), data.begin() + 32, a.mint.begin());
  std::copy(data.begin() + 32, data.begin() + 64, a.owner.begin());
  for (int i = 0; i < 8; ++i) a.amount |= static_cast<uint64_t>(data[64 + i]) << (8 * i);
  uint8_t state = data[108];
  if (state != 1 && state != 2) return std::nullopt;
  a.state = static_cast<TokenAccountState>(state);
  return a;
}

}  // namespace gpunex::platform::solana
