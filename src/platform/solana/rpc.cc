// HttpRpc: JSON-RPC over libcurl; the only file of the folder that sees Boost.JSON.
#include "platform/solana/rpc.h"

#include <curl/curl.h>

#include <atomic>
#include <boost/json.hpp>
#include <charconv>
#include <mutex>
#include <utility>

#include "common/thread_annotations.h"

namespace gpunex::platform::solana {
namespace {

namespace json = boost::json;

// The base58 text of a 64-byte signature is at most 88 characters; instruction data of a
// transaction (at most 1232 bytes) at most 1684.
constexpr size_t kMaxSignatureChars = 88;
constexpr size_t kMaxInstructionDataChars = 2048;
// Idle connections kept for reuse.
constexpr size_t kMaxIdleHandles = 4;

void EnsureCurlInitialised() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Status CheckCommitment(std::string_view c) {
  if (c == kProcessed || c == kConfirmed || c == kFinalized) return Status::Ok();
  return InvalidArgument("the commitment must be processed, confirmed or finalized, not \"" +
                         std::string(c.substr(0, 32)) + "\"");
}

// A JSON-RPC error object as a Status (rpc.h lists the mapping).
Status RpcError(std::string_view method, const json::object& error) {
  int64_t code = 0;
  if (const json::value* c = error.if_contains("code"); c != nullptr && c->is_int64()) {
    code = c->get_int64();
  }
  std::string message;
  if (const json::value* m = error.if_contains("message"); m != nullptr && m->is_string()) {
    message = std::string(m->get_string().subview().substr(0, 2000));
  }
  StatusCode sc;
  switch (code) {
    case -32004:  // block not available for slot
    case -32005:  // node is unhealthy / behind
    case -32014:  // block status not yet available
    case -32016:  // minimum context slot has not been reached
    case -32603:  // internal error
      sc = StatusCode::kUnavailable;
      break;
    case -32003:  // transaction signature verification failure
    case -32600:  // invalid request
    case -32601:  // method not found
    case -32602:  // invalid params
      sc = StatusCode::kInvalidArgument;
      break;
    case -32007:  // slot skipped
    case -32009:  // slot missing in long-term storage
      sc = StatusCode::kNotFound;
      break;
    default:  // -32002 preflight failure, -32015 version not supported, others
      sc = StatusCode::kFailedPrecondition;
      break;
  }
  FieldErrors fields{{"rpc_code", std::to_string(code)}};
  if (const json::value* data = error.if_contains("data"); data != nullptr && data->is_object()) {
    if (const json::value* err = data->get_object().if_contains("err");
        err != nullptr && !err->is_null()) {
      fields["rpc_err"] = json::serialize(*err);
    }
  }
  return Status(
      sc,
      "Solana RPC " + std::string(method) + " failed (" + std::to_string(code) + "): " + message,
      std::move(fields));
}

// Reads the fields of one answer; the first problem is kept and reported as kInternal.
class Parser {
 public:
  explicit Parser(std::string_view method) : method_(method) {}

  Status Bad(std::string_view what) const {
    return Internal("the Solana RPC node's answer to " + method_ +
                    " is malformed: " + std::string(what));
  }
  bool failed() const { return !error_.empty(); }
  Status status() const { return Bad(error_); }
  void Fail(std::string what) {
    if (error_.empty()) error_ = std::move(what);
  }

  const json::object* Object(const json::value* v, std::string_view what) {
    if (v == nullptr || !v->is_object()) {
      Fail(std::string(what) + " is not an object");
      return nullptr;
    }
    return &v->get_object();
  }
  const json::array* Array(const json::value* v, std::string_view what) {
    if (v == nullptr || !v->is_array()) {
      Fail(std::string(what) + " is not an array");
      return nullptr;
    }
    return &v->get_array();
  }
  const json::value* Member(const json::object* o, std::string_view key) {
    return o == nullptr ? nullptr : o->if_contains(key);
  }
  uint64_t U64(const json::value* v, std::string_view what) {
    if (v != nullptr && v->is_uint64()) return v->get_uint64();
    if (v != nullptr && v->is_int64() && v->get_int64() >= 0) {
      return static_cast<uint64_t>(v->get_int64());
    }
    Fail(std::string(what) + " is not an unsigned integer");
    return 0;
  }
  uint64_t U64(const json::object* o, std::string_view key) { return U64(Member(o, key), key); }
  std::optional<uint64_t> OptU64(const json::object* o, std::string_view key) {
    const json::value* v = Member(o, key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return U64(v, key);
  }
  std::optional<int64_t> OptI64(const json::object* o, std::string_view key) {
    const json::value* v = Member(o, key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (v->is_int64()) return v->get_int64();
    Fail(std::string(key) + " is not an integer");
    return std::nullopt;
  }
  std::string String(const json::value* v, std::string_view what, size_t max_len) {
    if (v == nullptr || !v->is_string()) {
      Fail(std::string(what) + " is not a string");
      return "";
    }
    if (v->get_string().size() > max_len) {
      Fail(std::string(what) + " is too long");
      return "";
    }
    return std::string(v->get_string().subview());
  }
  std::string String(const json::object* o, std::string_view key, size_t max_len) {
    return String(Member(o, key), key, max_len);
  }
  // "" when missing or null.
  std::string OptString(const json::object* o, std::string_view key, size_t max_len) {
    const json::value* v = Member(o, key);
    if (v == nullptr || v->is_null()) return "";
    return String(v, key, max_len);
  }
  Pubkey Key(const json::value* v, std::string_view what) {
    std::string s = String(v, what, kMaxPubkeyChars);
    if (failed()) return {};
    auto bytes = DecodeBase58(s);
    if (!bytes || bytes->size() != 32) {
      Fail(std::string(what) + " is not a base58 address");
      return {};
    }
    Pubkey k;
    std::copy(bytes->begin(), bytes->end(), k.begin());
    return k;
  }
  Pubkey Key(const json::object* o, std::string_view key) { return Key(Member(o, key), key); }
  std::string Signature(const json::value* v, std::string_view what) {
    std::string s = String(v, what, kMaxSignatureChars);
    if (failed()) return "";
    auto bytes = DecodeBase58(s);
    if (!bytes || bytes->size() != 64) {
      Fail(std::string(what) + " is not a base58 signature");
      return "";
    }
    return s;
  }
  // The serialized JSON of an `err` member; nullopt when missing or null.
  static std::optional<std::string> Err(const json::object* o) {
    const json::value* v = o == nullptr ? nullptr : o->if_contains("err");
    if (v == nullptr || v->is_null()) return std::nullopt;
    return json::serialize(*v);
  }
  uint8_t Index(const json::value* v, std::string_view what) {
    uint64_t i = U64(v, what);
    if (i > 255) Fail(std::string(what) + " is beyond 255");
    return static_cast<uint8_t>(i);
  }

 private:
  std::string method_;
  std::string error_;
};

struct CurlEasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct CurlSlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlHandle = std::unique_ptr<CURL, CurlEasyDeleter>;

struct Download {
  std::string body;
  bool too_large = false;
};

size_t WriteBody(char* data, size_t size, size_t nmemb, void* userdata) {
  auto* d = static_cast<Download*>(userdata);
  size_t n = size * nmemb;
  if (d->body.size() + n > kMaxResponseBytes) {
    d->too_large = true;
    return 0;  // curl fails the transfer with CURLE_WRITE_ERROR
  }
  d->body.append(data, n);
  return n;
}

class CurlRpc final : public Rpc {
 public:
  CurlRpc(std::string url, std::chrono::milliseconds timeout)
      : url_(std::move(url)), url_ok_(ValidateRpcUrl(url_)), timeout_(timeout) {
    EnsureCurlInitialised();
  }
  ~CurlRpc() override = default;

  StatusOr<BlockhashInfo> LatestBlockhash(std::string_view commitment) override {
    GPUNEX_RETURN_IF_ERROR(CheckCommitment(commitment));
    constexpr std::string_view kMethod = "getLatestBlockhash";
    GPUNEX_ASSIGN_OR_RETURN(json::value result, Call(kMethod, {Options(commitment)}));
    Parser p(kMethod);
    const json::object* o = p.Object(&result, "result");
    const json::object* context = p.Object(p.Member(o, "context"), "context");
    const json::object* value = p.Object(p.Member(o, "value"), "value");
    BlockhashInfo info;
    info.slot = p.U64(context, "slot");
    info.blockhash = p.Key(value, "blockhash");
    info.last_valid_block_height = p.U64(value, "lastValidBlockHeight");
    if (p.failed()) return p.status();
    return info;
  }

  StatusOr<uint64_t> BlockHeight(std::string_view commitment) override {
    GPUNEX_RETURN_IF_ERROR(CheckCommitment(commitment));
    constexpr std::string_view kMethod = "getBlockHeight";
    GPUNEX_ASSIGN_OR_RETURN(json::value result, Call(kMethod, {Options(commitment)}));
    Parser p(kMethod);
    uint64_t h = p.U64(&result, "result");
    if (p.failed()) return p.status();
    return h;
  }

  StatusOr<std::string> SendTransaction(const std::string& base64, bool skip_preflight,
                                        std::string_view preflight_commitment) override {
    GPUNEX_RETURN_IF_ERROR(CheckCommitment(preflight_commitment));
    constexpr std::string_view kMethod = "sendTransaction";
    json::object options;
    options["encoding"] = "base64";
    options["skipPreflight"] = skip_preflight;
    options["preflightCommitment"] = preflight_commitment;
    GPUNEX_ASSIGN_OR_RETURN(json::value result,
                            Call(kMethod, {json::string(base64), std::move(options)}));
    Parser p(kMethod);
    std::string sig = p.Signature(&result, "result");
    if (p.failed()) return p.status();
    return sig;
  }

  StatusOr<std::vector<std::optional<SignatureStatus>>> SignatureStatuses(
      const std::vector<std::string>& signatures, bool search_history) override {
    if (signatures.size() > kMaxSignaturesPerStatusCall) {
      return InvalidArgument("getSignatureStatuses takes at most " +
                             std::to_string(kMaxSignaturesPerStatusCall) + " signatures, not " +
                             std::to_string(signatures.size()));
    }
    if (signatures.empty()) return std::vector<std::optional<SignatureStatus>>{};
    constexpr std::string_view kMethod = "getSignatureStatuses";
    json::array sigs;
    for (const auto& s : signatures) sigs.emplace_back(s);
    json::object options;
    options["searchTransactionHistory"] = search_history;
    GPUNEX_ASSIGN_OR_RETURN(json::value result,
                            Call(kMethod, {std::move(sigs), std::move(options)}));
    Parser p(kMethod);
    const json::object* o = p.Object(&result, "result");
    const json::array* value = p.Array(p.Member(o, "value"), "value");
    if (p.failed()) return p.status();
    if (value->size() != signatures.size()) {
      return p.Bad("value has " + std::to_string(value->size()) + " entries for " +
                   std::to_string(signatures.size()) + " signatures");
    }
    std::vector<std::optional<SignatureStatus>> out;
    out.reserve(value->size());
    for (const json::value& v : *value) {
      if (v.is_null()) {
        out.emplace_back();
        continue;
      }
      const json::object* s = p.Object(&v, "a status");
      SignatureStatus st;
      st.slot = p.U64(s, "slot");
      st.confirmations = p.OptU64(s, "confirmations");
      st.err = Parser::Err(s);
      st.confirmation_status = p.OptString(s, "confirmationStatus", 16);
      if (p.failed()) return p.status();
      out.push_back(std::move(st));
    }
    return out;
  }

  StatusOr<std::optional<AccountInfo>> GetAccountInfo(const Pubkey& address,
                                                      std::string_view commitment) override {
    GPUNEX_RETURN_IF_ERROR(CheckCommitment(commitment));
    constexpr std::string_view kMethod = "getAccountInfo";
    json::object options = Options(commitment);
    options["encoding"] = "base64";
    GPUNEX_ASSIGN_OR_RETURN(json::value result,
                            Call(kMethod, {json::string(ToBase58(address)), std::move(options)}));
    Parser p(kMethod);
    const json::object* o = p.Object(&result, "result");
    const json::value* value = p.Member(o, "value");
    if (p.failed()) return p.status();
    if (value == nullptr) return p.Bad("value is missing");
    if (value->is_null()) return std::optional<AccountInfo>();
    const json::object* a = p.Object(value, "value");
    AccountInfo info;
    info.lamports = p.U64(a, "lamports");
    info.owner = p.Key(a, "owner");
    if (const json::value* e = p.Member(a, "executable"); e != nullptr && e->is_bool()) {
      info.executable = e->get_bool();
    }
    const json::array* data = p.Array(p.Member(a, "data"), "data");
    if (p.failed()) return p.status();
    if (data->size() != 2 || !(*data)[1].is_string() || (*data)[1].get_string() != "base64") {
      return p.Bad("data is not [<base64>, \"base64\"]");
    }
    std::string b64 = p.String(&(*data)[0], "data", kMaxResponseBytes);
    if (p.failed()) return p.status();
    auto bytes = DecodeBase64(b64);
    if (!bytes) return p.Bad("data is not base64");
    info.data = std::move(*bytes);
    return std::optional<AccountInfo>(std::move(info));
  }

  StatusOr<std::vector<SignatureInfo>> SignaturesForAddress(const Pubkey& address, int limit,
                                                            std::optional<std::string> before,
                                                            std::string_view commitment) override {
    GPUNEX_RETURN_IF_ERROR(CheckCommitment(commitment));
    if (limit < 1 || limit > 1000) {
      return InvalidArgument("getSignaturesForAddress takes a limit of 1 to 1000, not " +
                             std::to_string(limit));
    }
    constexpr std::string_view kMethod = "getSignaturesForAddress";
    json::object options = Options(commitment);
    options["limit"] = limit;
    if (before) options["before"] = *before;
    GPUNEX_ASSIGN_OR_RETURN(json::value result,
                            Call(kMethod, {json::string(ToBase58(address)), std::move(options)}));
    Parser p(kMethod);
    const json::array* list = p.Array(&result, "result");
    if (p.failed()) return p.status();
    std::vector<SignatureInfo> out;
    out.reserve(list->size());
    for (const json::value& v : *list) {
      const json::object* s = p.Object(&v, "an entry");
      SignatureInfo info;
      info.signature = p.Signature(p.Member(s, "signature"), "signature");
      info.slot = p.U64(s, "slot");
      info.err = Parser::Err(s);
      info.block_time = p.OptI64(s, "blockTime");
      info.confirmation_status = p.OptString(s, "confirmationStatus", 16);
      if (p.failed()) return p.status();
      out.push_back(std::move(info));
    }
    return out;
  }

  StatusOr<std::optional<TransactionInfo>> GetTransaction(const std::string& signature,
                                                          std::string_view commitment) override {
    GPUNEX_RETURN_IF_ERROR(CheckCommitment(commitment));
    constexpr std::string_view kMethod = "getTransaction";
    json::object options = Options(commitment);
    options["encoding"] = "json";
    options["maxSupportedTransactionVersion"] = 0;
    GPUNEX_ASSIGN_OR_RETURN(json::value result,
                            Call(kMethod, {json::string(signature), std::move(options)}));
    if (result.is_null()) return std::optional<TransactionInfo>();
    Parser p(kMethod);
    const json::object* o = p.Object(&result, "result");
    const json::object* meta = p.Object(p.Member(o, "meta"), "meta");
    const json::object* tx = p.Object(p.Member(o, "transaction"), "transaction");
    const json::object* msg = p.Object(p.Member(tx, "message"), "transaction.message");
    const json::object* header = p.Object(p.Member(msg, "header"), "message.header");
    const json::array* keys = p.Array(p.Member(msg, "accountKeys"), "message.accountKeys");
    const json::array* sigs = p.Array(p.Member(tx, "signatures"), "transaction.signatures");
    const json::array* ixs = p.Array(p.Member(msg, "instructions"), "message.instructions");
    if (p.failed()) return p.status();
    TransactionInfo info;
    info.slot = p.U64(o, "slot");
    info.block_time = p.OptI64(o, "blockTime");
    info.err = Parser::Err(meta);
    info.header.num_required_signatures =
        p.Index(p.Member(header, "numRequiredSignatures"), "numRequiredSignatures");
    info.header.num_readonly_signed =
        p.Index(p.Member(header, "numReadonlySignedAccounts"), "numReadonlySignedAccounts");
    info.header.num_readonly_unsigned =
        p.Index(p.Member(header, "numReadonlyUnsignedAccounts"), "numReadonlyUnsignedAccounts");
    for (const json::value& s : *sigs) info.signatures.push_back(p.Signature(&s, "a signature"));
    for (const json::value& k : *keys) info.account_keys.push_back(p.Key(&k, "an account key"));
    if (const json::value* loaded = p.Member(meta, "loadedAddresses");
        loaded != nullptr && !loaded->is_null()) {
      const json::object* l = p.Object(loaded, "meta.loadedAddresses");
      for (std::string_view part : {"writable", "readonly"}) {
        const json::value* list = p.Member(l, part);
        if (list == nullptr) continue;
        const json::array* a = p.Array(list, part);
        if (a == nullptr) break;
        for (const json::value& k : *a) info.account_keys.push_back(p.Key(&k, "a loaded address"));
      }
    }
    if (p.failed()) return p.status();
    if (info.account_keys.size() > 256) return p.Bad("more than 256 account keys");
    for (const json::value& v : *ixs) {
      const json::object* ix = p.Object(&v, "an instruction");
      CompiledInstruction c;
      c.program_id_index = p.Index(p.Member(ix, "programIdIndex"), "programIdIndex");
      if (const json::array* accounts = p.Array(p.Member(ix, "accounts"), "accounts")) {
        for (const json::value& a : *accounts)
          c.accounts.push_back(p.Index(&a, "an account index"));
      }
      std::string data = p.String(ix, "data", kMaxInstructionDataChars);
      if (p.failed()) return p.status();
      auto bytes = DecodeBase58(data);
      if (!bytes) return p.Bad("instruction data is not base58");
      c.data = std::move(*bytes);
      info.instructions.push_back(std::move(c));
    }
    info.pre_token_balances = TokenBalances(p, meta, "preTokenBalances");
    info.post_token_balances = TokenBalances(p, meta, "postTokenBalances");
    if (p.failed()) return p.status();
    return std::optional<TransactionInfo>(std::move(info));
  }

 private:
  static json::object Options(std::string_view commitment) {
    json::object o;
    o["commitment"] = commitment;
    return o;
  }

  static std::vector<TokenBalance> TokenBalances(Parser& p, const json::object* meta,
                                                 std::string_view key) {
    std::vector<TokenBalance> out;
    const json::value* v = p.Member(meta, key);
    if (v == nullptr || v->is_null()) return out;
    const json::array* list = p.Array(v, key);
    if (list == nullptr) return out;
    for (const json::value& e : *list) {
      const json::object* b = p.Object(&e, "a token balance");
      TokenBalance tb;
      tb.account_index = p.Index(p.Member(b, "accountIndex"), "accountIndex");
      tb.mint = p.Key(b, "mint");
      if (const json::value* owner = p.Member(b, "owner"); owner != nullptr && !owner->is_null()) {
        tb.owner = p.Key(owner, "owner");
      }
      const json::object* ui = p.Object(p.Member(b, "uiTokenAmount"), "uiTokenAmount");
      std::string amount = p.String(ui, "amount", 20);
      tb.decimals = p.Index(p.Member(ui, "decimals"), "decimals");
      if (p.failed()) return out;
      const char* end = amount.data() + amount.size();
      auto [ptr, ec] = std::from_chars(amount.data(), end, tb.amount);
      if (amount.empty() || ec != std::errc() || ptr != end) {
        p.Fail("uiTokenAmount.amount is not an unsigned 64-bit integer");
        return out;
      }
      out.push_back(tb);
    }
    return out;
  }

  CurlHandle TakeHandle() {
    {
      MutexLock l(&mu_);
      if (!idle_.empty()) {
        CurlHandle h = std::move(idle_.back());
        idle_.pop_back();
        curl_easy_reset(h.get());  // keeps the connection and the TLS session cache
        return h;
      }
    }
    return CurlHandle(curl_easy_init());
  }

  void ReturnHandle(CurlHandle h) {
    MutexLock l(&mu_);
    if (idle_.size() < kMaxIdleHandles) idle_.push_back(std::move(h));
  }

  // POSTs one request and returns its `result`, or the Status of its error.
  StatusOr<json::value> Call(std::string_view method, json::array params) {
    if (!url_ok_.ok()) {
      return FailedPrecondition("the Solana RPC URL is misconfigured: " + url_ok_.message());
    }
    uint64_t id = next_id_.fetch_add(1) + 1;
    json::object request;
    request["jsonrpc"] = "2.0";
    request["id"] = id;
    request["method"] = method;
    request["params"] = std::move(params);
    std::string body = json::serialize(request);

    CurlHandle curl = TakeHandle();
    if (!curl) return Internal("curl_easy_init failed");
    std::unique_ptr<curl_slist, CurlSlistDeleter> headers(
        curl_slist_append(nullptr, "Content-Type: application/json"));
    headers.reset(curl_slist_append(headers.release(), "Accept: application/json"));
    Download download;
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // gzip if offered; bounded decoded
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_.count()));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &download);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gpunexd");
    CURLcode rc = curl_easy_perform(c);
    long http_status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http_status);
    // Detach the per-call state before the handle is pooled.
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, nullptr);
    if (rc == CURLE_OK) ReturnHandle(std::move(curl));

    std::string m(method);
    if (download.too_large) {
      return Internal("the Solana RPC node's answer to " + m + " is larger than " +
                      std::to_string(kMaxResponseBytes) + " bytes");
    }
    if (rc != CURLE_OK) {
      // curl_easy_strerror never names the URL (the error buffer could).
      return Unavailable("Solana RPC " + m + ": " + curl_easy_strerror(rc));
    }
    Parser p(method);
    boost::system::error_code ec;
    json::parse_options opts;
    opts.max_depth = 64;
    json::value answer = json::parse(download.body, ec, {}, opts);
    const json::object* o = ec ? nullptr : answer.if_object();
    const json::object* error = nullptr;
    if (o != nullptr) {
      if (const json::value* e = o->if_contains("error"); e != nullptr) error = e->if_object();
    }
    if (http_status == 429 || http_status >= 500) {
      std::string detail = error != nullptr ? ": " + RpcError(method, *error).message() : "";
      return Unavailable("Solana RPC " + m + ": HTTP " + std::to_string(http_status) + detail);
    }
    if (error != nullptr) return RpcError(method, *error);
    if (http_status != 200) {
      return FailedPrecondition("Solana RPC " + m + ": the node answered HTTP " +
                                std::to_string(http_status));
    }
    if (o == nullptr) return p.Bad(ec ? "not JSON" : "not a JSON object");
    const json::value* got_id = o->if_contains("id");
    if (got_id == nullptr || !((got_id->is_uint64() && got_id->get_uint64() == id) ||
                               (got_id->is_int64() && got_id->get_int64() >= 0 &&
                                static_cast<uint64_t>(got_id->get_int64()) == id))) {
      return p.Bad("its id is not the request's");
    }
    const json::value* result = o->if_contains("result");
    if (result == nullptr) return p.Bad("it has neither result nor error");
    return *result;
  }

  const std::string url_;
  const Status url_ok_;
  const std::chrono::milliseconds timeout_;
  std::atomic<uint64_t> next_id_{0};
  Mutex mu_;
  std::vector<CurlHandle> idle_ GUARDED_BY(mu_);
};

}  // namespace

bool Reached(const SignatureStatus& status, std::string_view commitment) {
  auto rank = [](std::string_view c) {
    return c == kFinalized ? 3 : c == kConfirmed ? 2 : c == kProcessed ? 1 : 0;
  };
  int have = rank(status.confirmation_status);
  if (status.confirmation_status.empty()) have = status.confirmations ? 2 : 3;
  int want = rank(commitment);
  return want > 0 && have >= want;
}

Status ValidateRpcUrl(std::string_view url) {
  EnsureCurlInitialised();
  std::string lower(url.substr(0, 8));
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!lower.starts_with("http://") && !lower.starts_with("https://")) {
    return InvalidArgument("the Solana RPC URL must start with http:// or https://");
  }
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), curl_url_cleanup);
  if (!u) return Internal("curl_url failed");
  std::string s(url);
  if (curl_url_set(u.get(), CURLUPART_URL, s.c_str(), 0) != CURLUE_OK) {
    return InvalidArgument("the Solana RPC URL is not a valid URL");
  }
  char* host = nullptr;
  bool has_host = curl_url_get(u.get(), CURLUPART_HOST, &host, 0) == CURLUE_OK && host != nullptr &&
                  host[0] != '\0';
  curl_free(host);
  if (!has_host) return InvalidArgument("the Solana RPC URL has no host");
  return Status::Ok();
}

std::unique_ptr<Rpc> HttpRpc(std::string url, std::chrono::milliseconds timeout) {
  return std::make_unique<CurlRpc>(std::move(url), timeout);
}

std::optional<int64_t> RpcErrorCode(const Status& status) {
  auto it = status.fields().find("rpc_code");
  if (it == status.fields().end()) return std::nullopt;
  int64_t code = 0;
  const std::string& s = it->second;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), code);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return code;
}

}  // namespace gpunex::platform::solana
