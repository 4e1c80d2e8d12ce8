#include "platform/solana/rpc.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/json.h"
#include "platform/http/testing/test_server.h"
#include "platform/solana/testing/vectors.h"

namespace gpunex::platform::solana {
namespace {

using testing::Key;

// A JSON-RPC node on loopback that answers from a script and records each request.
class FakeNode {
 public:
  using Answer = std::function<http::Response(const json::object& request)>;

  FakeNode()
      : server_(http::testing::TestOptions(), [this](http::Request& r) { return Handle(r); }) {}

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/"; }

  void Then(Answer a) {
    std::lock_guard l(mu_);
    script_.push_back(std::move(a));
  }
  // {"jsonrpc":"2.0","id":<the request's>,"result":<result>}
  void ThenResult(json::value result) {
    Then([result](const json::object& req) {
      json::object o{{"jsonrpc", "2.0"}, {"id", req.at("id")}, {"result", result}};
      return http::Response::Json(200, o);
    });
  }
  void ThenError(json::value error) {
    Then([error](const json::object& req) {
      json::object o{{"jsonrpc", "2.0"}, {"id", req.at("id")}, {"error", error}};
      return http::Response::Json(200, o);
    });
  }
  void ThenRaw(int status, std::string body) {
    Then([status, body](const json::object&) {
      return http::Response::Text(status, body, "application/json");
    });
  }

  // The requests received so far.
  std::vector<json::object> requests() {
    std::lock_guard l(mu_);
    return requests_;
  }
  json::object last() {
    auto r = requests();
    return r.empty() ? json::object{} : r.back();
  }
  std::vector<std::string> content_types() {
    std::lock_guard l(mu_);
    return content_types_;
  }

 private:
  http::Response Handle(http::Request& req) {
    json::object body;
    Answer answer;
    {
      std::lock_guard l(mu_);
      auto parsed = ParseJson(req.body);
      if (req.method != "POST" || !parsed.ok() || !parsed->is_object()) {
        return http::Response::Text(400, "expected a JSON-RPC POST");
      }
      body = parsed->get_object();
      requests_.push_back(body);
      content_types_.push_back(req.Header("content-type"));
      if (script_.empty()) return http::Response::Text(500, "no answer scripted");
      answer = std::move(script_.front());
      script_.pop_front();
    }
    return answer(body);
  }

  std::mutex mu_;
  std::deque<Answer> script_;
  std::vector<json::object> requests_;
  std::vector<std::string> content_types_;
  http::testing::TestServer server_;  // last: stops before the rest is destroyed
};

json::value Parse(std::string_view text) {
  auto v = ParseJson(text);
  EXPECT_TRUE(v.ok()) << text;
  return v.ok() ? *v : json::value();
}

class RpcTest : public ::testing::Test {
 protected:
  FakeNode node_;
  std::unique_ptr<Rpc> rpc_ = HttpRpc(node_.url(), std::chrono::milliseconds(3000));
};

TEST_F(RpcTest, LatestBlockhash) {
  node_.ThenResult(Parse(R"({"context":{"apiVersion":"2.1.0","slot":3456},
      "value":{"blockhash":"4ruaGCyaofHWGxPFXFVjuEJCdfBGZ2wCtEx6LzdzVqtV",
               "lastValidBlockHeight":3000150}})"));
  auto got = rpc_->LatestBlockhash(kFinalized);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->blockhash, Key(testing::kBlockhash));
  EXPECT_EQ(got->last_valid_block_height, 3000150u);
  EXPECT_EQ(got->slot, 3456u);
  json::object req = node_.last();
  EXPECT_EQ(req.at("jsonrpc"), "2.0");
  EXPECT_EQ(req.at("method"), "getLatestBlockhash");
  EXPECT_EQ(req.at("params"), Parse(R"([{"commitment":"finalized"}])"));
  EXPECT_EQ(node_.content_types().back(), "application/json");
}

TEST_F(RpcTest, BlockHeightAndIncreasingIds) {
  node_.ThenResult(100);
  node_.ThenResult(101);
  EXPECT_EQ(*rpc_->BlockHeight(kConfirmed), 100u);
  EXPECT_EQ(*rpc_->BlockHeight(kConfirmed), 101u);
  auto reqs = node_.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].at("method"), "getBlockHeight");
  EXPECT_EQ(reqs[0].at("params"), Parse(R"([{"commitment":"confirmed"}])"));
  EXPECT_LT(reqs[0].at("id").to_number<uint64_t>(), reqs[1].at("id").to_number<uint64_t>());
}

TEST_F(RpcTest, SendTransaction) {
  node_.ThenResult(json::string(testing::kTx1Signature));
  auto sig = rpc_->SendTransaction(std::string(testing::kTx1Base64), false, kConfirmed);
  ASSERT_TRUE(sig.ok()) << sig.status().ToString();
  EXPECT_EQ(*sig, testing::kTx1Signature);
  json::object req = node_.last();
  EXPECT_EQ(req.at("method"), "sendTransaction");
  const json::array& params = req.at("params").as_array();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].as_string(), testing::kTx1Base64);
  EXPECT_EQ(params[1], Parse(R"({"encoding":"base64","skipPreflight":false,
                                 "preflightCommitment":"confirmed"})"));
}

TEST_F(RpcTest, PreflightFailureKeepsCodeMessageAndErr) {
  node_.ThenError(Parse(R"({"code":-32002,
      "message":"Transaction simulation failed: Blockhash not found",
      "data":{"accounts":null,"err":"BlockhashNotFound","innerInstructions":null,"logs":[],
              "returnData":null,"unitsConsumed":0}})"));
  auto sig = rpc_->SendTransaction(std::string(testing::kTx1Base64), false, kFinalized);
  ASSERT_FALSE(sig.ok());
  EXPECT_EQ(sig.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(sig.status().message().find("Transaction simulation failed: Blockhash not found"),
            std::string::npos);
  EXPECT_EQ(RpcErrorCode(sig.status()), -32002);
  EXPECT_EQ(sig.status().fields().at("rpc_err"), "\"BlockhashNotFound\"");

  node_.ThenError(Parse(
      R"({"code":-32002,"message":"Transaction simulation failed: Error processing Instruction 1: custom program error: 0x1",
      "data":{"err":{"InstructionError":[1,{"Custom":1}]},"logs":["Program log: Error: insufficient funds"]}})"));
  auto funds = rpc_->SendTransaction(std::string(testing::kTx1Base64), false, kFinalized);
  EXPECT_EQ(funds.status().fields().at("rpc_err"), R"({"InstructionError":[1,{"Custom":1}]})");
}

TEST_F(RpcTest, ErrorCodesMapToRetryableOrNot) {
  struct Case {
    int code;
    StatusCode want;
  } cases[] = {{-32005, StatusCode::kUnavailable},       {-32603, StatusCode::kUnavailable},
               {-32016, StatusCode::kUnavailable},       {-32602, StatusCode::kInvalidArgument},
               {-32601, StatusCode::kInvalidArgument},   {-32003, StatusCode::kInvalidArgument},
               {-32007, StatusCode::kNotFound},          {-32015, StatusCode::kFailedPrecondition},
               {-31999, StatusCode::kFailedPrecondition}};
  for (const auto& c : cases) {
    node_.ThenError(json::object{{"code", c.code}, {"message", "boom"}});
    auto got = rpc_->BlockHeight(kFinalized);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), c.want) << c.code;
    EXPECT_EQ(RpcErrorCode(got.status()), c.code);
  }
}

TEST_F(RpcTest, SignatureStatuses) {
  node_.ThenResult(Parse(R"({"context":{"slot":82},"value":[
      null,
      {"slot":72,"confirmations":null,"err":null,"status":{"Ok":null},
       "confirmationStatus":"finalized"},
      {"slot":80,"confirmations":2,"err":{"InstructionError":[0,{"Custom":1}]},
       "status":{"Err":{"InstructionError":[0,{"Custom":1}]}},"confirmationStatus":"confirmed"}]})"));
  std::vector<std::string> sigs = {std::string(testing::kTx1Signature),
                                   std::string(testing::kTx2Signature),
                                   std::string(testing::kTx1Signature)};
  auto got = rpc_->SignatureStatuses(sigs, true);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_FALSE((*got)[0].has_value());
  const SignatureStatus& fin = *(*got)[1];
  EXPECT_EQ(fin.slot, 72u);
  EXPECT_FALSE(fin.confirmations.has_value());
  EXPECT_FALSE(fin.err.has_value());
  EXPECT_TRUE(Reached(fin, kFinalized));
  const SignatureStatus& failed = *(*got)[2];
  EXPECT_EQ(failed.confirmations, 2u);
  EXPECT_EQ(failed.err, R"({"InstructionError":[0,{"Custom":1}]})");
  EXPECT_TRUE(Reached(failed, kConfirmed));
  EXPECT_TRUE(Reached(failed, kProcessed));
  EXPECT_FALSE(Reached(failed, kFinalized));
  json::object req = node_.last();
  EXPECT_EQ(req.at("method"), "getSignatureStatuses");
  EXPECT_EQ(req.at("params").as_array()[0].as_array().size(), 3u);
  EXPECT_EQ(req.at("params").as_array()[1], Parse(R"({"searchTransactionHistory":true})"));

  // A count that does not match the request is malformed.
  node_.ThenResult(Parse(R"({"context":{"slot":82},"value":[null]})"));
  EXPECT_EQ(rpc_->SignatureStatuses(sigs, false).status().code(), StatusCode::kInternal);
  // Too many signatures: refused before sending.
  size_t before = node_.requests().size();
  std::vector<std::string> many(257, std::string(testing::kTx1Signature));
  EXPECT_EQ(rpc_->SignatureStatuses(many, false).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(node_.requests().size(), before);
}

TEST(Reached, OldNodesWithoutConfirmationStatus) {
  SignatureStatus rooted{
      .slot = 1, .confirmations = std::nullopt, .err = {}, .confirmation_status = ""};
  EXPECT_TRUE(Reached(rooted, kFinalized));
  SignatureStatus voted{.slot = 1, .confirmations = 5, .err = {}, .confirmation_status = ""};
  EXPECT_TRUE(Reached(voted, kConfirmed));
  EXPECT_FALSE(Reached(voted, kFinalized));
  SignatureStatus processed{
      .slot = 1, .confirmations = 0, .err = {}, .confirmation_status = "processed"};
  EXPECT_FALSE(Reached(processed, kConfirmed));
  EXPECT_FALSE(Reached(processed, "bogus"));
}

TEST_F(RpcTest, GetAccountInfo) {
  std::vector<uint8_t> data(kTokenAccountSize, 0);
  Pubkey mint = Key(kMainnetUsdcMint);
  std::copy(mint.begin(), mint.end(), data.begin());
  data[64] = 0x40, data[65] = 0x42, data[66] = 0x0f;  // 1000000
  data[108] = 1;
  json::object value{{"lamports", 2039280},
                     {"owner", ToBase58(TokenProgram())},
                     {"data", json::array{Base64(data), "base64"}},
                     {"executable", false},
                     {"rentEpoch", 18446744073709551615ull},
                     {"space", 165}};
  node_.ThenResult(json::object{{"context", json::object{{"slot", 9}}}, {"value", value}});
  Pubkey ata = Key(testing::kAtas[0].ata);
  auto got = rpc_->GetAccountInfo(ata, kConfirmed);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->lamports, 2039280u);
  EXPECT_EQ((*got)->owner, TokenProgram());
  auto token = ParseTokenAccount((*got)->data);
  ASSERT_TRUE(token.has_value());
  EXPECT_EQ(token->mint, mint);
  EXPECT_EQ(token->amount, 1000000u);
  EXPECT_EQ(node_.last().at("params"),
            (json::array{testing::kAtas[0].ata,
                         Parse(R"({"commitment":"confirmed","encoding":"base64"})")}));

  node_.ThenResult(Parse(R"({"context":{"slot":9},"value":null})"));
  auto none = rpc_->GetAccountInfo(ata, kConfirmed);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  node_.ThenResult(Parse(R"({"context":{"slot":9},"value":{"lamports":1,
      "owner":"11111111111111111111111111111111","data":["!!","base64"]}})"));
  EXPECT_EQ(rpc_->GetAccountInfo(ata, kConfirmed).status().code(), StatusCode::kInternal);
}

TEST_F(RpcTest, SignaturesForAddress) {
  node_.ThenResult(
      json::array{json::object{{"signature", testing::kTx2Signature},
                               {"slot", 120},
                               {"err", nullptr},
                               {"memo", "[25] gpunex payout po_01JD3XYZ"},
                               {"blockTime", 1733000000},
                               {"confirmationStatus", "finalized"}},
                  json::object{{"signature", testing::kTx1Signature},
                               {"slot", 110},
                               {"err", Parse(R"({"InstructionError":[1,{"Custom":1}]})")},
                               {"memo", nullptr},
                               {"blockTime", nullptr},
                               {"confirmationStatus", "finalized"}}});
  Pubkey ata = Key(testing::kAtas[0].ata);
  auto got = rpc_->SignaturesForAddress(ata, 50, std::string(testing::kTx1Signature), kFinalized);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].signature, testing::kTx2Signature);
  EXPECT_EQ((*got)[0].slot, 120u);
  EXPECT_EQ((*got)[0].block_time, 1733000000);
  EXPECT_FALSE((*got)[0].err.has_value());
  EXPECT_EQ((*got)[0].confirmation_status, "finalized");
  EXPECT_FALSE((*got)[1].block_time.has_value());
  EXPECT_TRUE((*got)[1].err.has_value());
  json::object req = node_.last();
  EXPECT_EQ(req.at("method"), "getSignaturesForAddress");
  EXPECT_EQ(req.at("params"),
            (json::array{testing::kAtas[0].ata, json::object{{"commitment", "finalized"},
                                                             {"limit", 50},
                                                             {"before", testing::kTx1Signature}}}));
  // No `before` when none is given; limits checked before sending.
  node_.ThenResult(json::array{});
  ASSERT_TRUE(rpc_->SignaturesForAddress(ata, 10, std::nullopt, kConfirmed).ok());
  EXPECT_FALSE(node_.last().at("params").as_array()[1].as_object().contains("before"));
  EXPECT_EQ(rpc_->SignaturesForAddress(ata, 0, std::nullopt, kConfirmed).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(rpc_->SignaturesForAddress(ata, 1001, std::nullopt, kConfirmed).status().code(),
            StatusCode::kInvalidArgument);
}

// The shape of a getTransaction answer (encoding "json") for a version 0 transaction with
// one address-table lookup.
constexpr std::string_view kTransactionJson = R"({
  "blockTime": 1733000000,
  "meta": {
    "computeUnitsConsumed": 28000, "err": null, "fee": 5000,
    "innerInstructions": [],
    "loadedAddresses": {"readonly": ["MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"],
                        "writable": ["HNaHWifhuif9EVT2JXXmra3yjgHZdvZb6kZQyGzfihjC"]},
    "logMessages": ["Program log: Instruction: TransferChecked"],
    "postBalances": [1, 2, 3, 4, 5, 6], "preBalances": [1, 2, 3, 4, 5, 6],
    "postTokenBalances": [
      {"accountIndex": 1, "mint": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
       "owner": "9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj",
       "programId": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
       "uiTokenAmount": {"amount": "18446744073709551615", "decimals": 6,
                         "uiAmount": 1.8446744073709552e13, "uiAmountString": "18446744073709.551615"}},
      {"accountIndex": 4, "mint": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
       "owner": "nowAfiByViBTf7X9wiVVaoC7PM8R5r7DzQ8Exch3kGP",
       "programId": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
       "uiTokenAmount": {"amount": "1234567", "decimals": 6, "uiAmount": 1.234567,
                         "uiAmountString": "1.234567"}}],
    "preTokenBalances": [
      {"accountIndex": 1, "mint": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
       "uiTokenAmount": {"amount": "0", "decimals": 6, "uiAmount": null, "uiAmountString": "0"}}],
    "rewards": [], "status": {"Ok": null}
  },
  "slot": 300000123,
  "transaction": {
    "message": {
      "accountKeys": ["9C6hybhQ6Aycep9jaUnP6uL9ZYvDjUp1aSkFWPUFJtpj",
                      "FjCjyojZLVYVQ2dEdDKQx76msks96TdH9xqvc8BQ9UUx",
                      "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
                      "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"],
      "addressTableLookups": [{"accountKey": "4QwgLaqCPvWEN15SycNTqjk5EWBdzbhtdDPrkqxUUu7Q",
                               "readonlyIndexes": [1], "writableIndexes": [0]}],
      "header": {"numReadonlySignedAccounts": 0, "numReadonlyUnsignedAccounts": 2,
                 "numRequiredSignatures": 1},
      "instructions": [
        {"accounts": [1, 2, 4, 0], "data": "hqENZrsqMWr6y", "programIdIndex": 3, "stackHeight": null},
        {"accounts": [], "data": "3oBige", "programIdIndex": 5, "stackHeight": null}],
      "recentBlockhash": "4ruaGCyaofHWGxPFXFVjuEJCdfBGZ2wCtEx6LzdzVqtV"
    },
    "signatures": ["46q9UgMhXUo1CRbvyHik8TGtKnJxXAh3NrSAAFPU6hFFQU8rnGdKVoQuEmDyyJU1YdjNkDHhzENxKNyho5gZRPSZ"]
  },
  "version": 0
})";

TEST_F(RpcTest, GetTransaction) {
  node_.ThenResult(Parse(kTransactionJson));
  auto got = rpc_->GetTransaction(std::string(testing::kTx1Signature), kFinalized);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  const TransactionInfo& tx = **got;
  EXPECT_EQ(tx.slot, 300000123u);
  EXPECT_EQ(tx.block_time, 1733000000);
  EXPECT_FALSE(tx.err.has_value());
  EXPECT_EQ(tx.signatures, std::vector<std::string>{std::string(testing::kTx1Signature)});
  EXPECT_EQ(tx.header.num_required_signatures, 1);
  EXPECT_EQ(tx.header.num_readonly_unsigned, 2);
  // 4 static keys, then the loaded writable one, then the loaded readonly one.
  ASSERT_EQ(tx.account_keys.size(), 6u);
  EXPECT_EQ(ToBase58(tx.account_keys[3]), "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
  EXPECT_EQ(ToBase58(tx.account_keys[4]), "HNaHWifhuif9EVT2JXXmra3yjgHZdvZb6kZQyGzfihjC");
  EXPECT_EQ(tx.account_keys[5], MemoProgram());
  ASSERT_EQ(tx.instructions.size(), 2u);
  EXPECT_EQ(tx.instructions[0].program_id_index, 3);
  EXPECT_EQ(tx.instructions[0].accounts, (std::vector<uint8_t>{1, 2, 4, 0}));
  // TransferChecked of 1234567 with 6 decimals; a memo "memo".
  EXPECT_EQ(tx.instructions[0].data,
            TransferChecked(Pubkey{}, Pubkey{}, Pubkey{}, Pubkey{}, 1234567, 6).data);
  EXPECT_EQ(std::string(tx.instructions[1].data.begin(), tx.instructions[1].data.end()), "memo");
  ASSERT_EQ(tx.pre_token_balances.size(), 1u);
  EXPECT_EQ(tx.pre_token_balances[0].amount, 0u);
  EXPECT_FALSE(tx.pre_token_balances[0].owner.has_value());
  ASSERT_EQ(tx.post_token_balances.size(), 2u);
  EXPECT_EQ(tx.post_token_balances[0].amount, 18446744073709551615ull);
  EXPECT_EQ(tx.post_token_balances[1].account_index, 4);
  EXPECT_EQ(tx.post_token_balances[1].amount, 1234567u);
  EXPECT_EQ(tx.post_token_balances[1].decimals, 6);
  EXPECT_EQ(tx.post_token_balances[1].mint, Key(kMainnetUsdcMint));
  EXPECT_EQ(ToBase58(*tx.post_token_balances[1].owner), testing::kKeys[1].public_b58);
  json::object req = node_.last();
  EXPECT_EQ(req.at("method"), "getTransaction");
  EXPECT_EQ(req.at("params"), (json::array{testing::kTx1Signature,
                                           Parse(R"({"commitment":"finalized","encoding":"json",
                                   "maxSupportedTransactionVersion":0})")}));

  node_.ThenResult(nullptr);
  auto none = rpc_->GetTransaction(std::string(testing::kTx1Signature), kFinalized);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  // An amount that is not a u64 string.
  std::string bad(kTransactionJson);
  bad.replace(bad.find("\"1234567\""), 9, "\"-5\"");
  node_.ThenResult(Parse(bad));
  EXPECT_EQ(rpc_->GetTransaction(std::string(testing::kTx1Signature), kFinalized).status().code(),
            StatusCode::kInternal);
}

TEST_F(RpcTest, TransportFailuresAreRetryable) {
  node_.ThenRaw(503, "Service Unavailable");
  auto a = rpc_->BlockHeight(kFinalized);
  EXPECT_EQ(a.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(a.status().message().find("HTTP 503"), std::string::npos);
  node_.ThenRaw(429,
                R"({"jsonrpc":"2.0","id":1,"error":{"code":429,"message":"Too many requests"}})");
  auto b = rpc_->BlockHeight(kFinalized);
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(b.status().message().find("Too many requests"), std::string::npos);
  node_.ThenRaw(401, "unauthorized");
  EXPECT_EQ(rpc_->BlockHeight(kFinalized).status().code(), StatusCode::kFailedPrecondition);

  // Nothing listens on port 1.
  auto refused = HttpRpc("http://127.0.0.1:1/", std::chrono::milliseconds(2000));
  EXPECT_EQ(refused->BlockHeight(kFinalized).status().code(), StatusCode::kUnavailable);

  // A node slower than the timeout.
  node_.Then([](const json::object& req) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return http::Response::Json(
        200, json::object{{"jsonrpc", "2.0"}, {"id", req.at("id")}, {"result", 1}});
  });
  auto quick = HttpRpc(node_.url(), std::chrono::milliseconds(200));
  auto t0 = std::chrono::steady_clock::now();
  auto slow = quick->BlockHeight(kFinalized);
  EXPECT_EQ(slow.status().code(), StatusCode::kUnavailable) << slow.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1400));
}

TEST_F(RpcTest, MalformedAnswersAreInternal) {
  node_.ThenRaw(200, "<html>not json</html>");
  EXPECT_EQ(rpc_->BlockHeight(kFinalized).status().code(), StatusCode::kInternal);
  node_.ThenRaw(200, R"({"jsonrpc":"2.0","id":999999,"result":5})");  // another id
  EXPECT_EQ(rpc_->BlockHeight(kFinalized).status().code(), StatusCode::kInternal);
  node_.ThenResult("five");
  EXPECT_EQ(rpc_->BlockHeight(kFinalized).status().code(), StatusCode::kInternal);
  node_.Then([](const json::object& req) {
    return http::Response::Json(200, json::object{{"jsonrpc", "2.0"}, {"id", req.at("id")}});
  });
  EXPECT_EQ(rpc_->BlockHeight(kFinalized).status().code(), StatusCode::kInternal);
  node_.ThenResult(Parse(R"({"context":{"slot":1},"value":{"blockhash":"0OIl",
                            "lastValidBlockHeight":1}})"));
  EXPECT_EQ(rpc_->LatestBlockhash(kFinalized).status().code(), StatusCode::kInternal);
  node_.ThenResult("not-a-signature");
  EXPECT_EQ(rpc_->SendTransaction("AA==", true, kFinalized).status().code(), StatusCode::kInternal);
}

TEST_F(RpcTest, OversizeAnswersAreRefused) {
  node_.Then([](const json::object& req) {
    std::string pad(kMaxResponseBytes + 1024, 'x');
    return http::Response::Json(
        200, json::object{{"jsonrpc", "2.0"}, {"id", req.at("id")}, {"result", pad}});
  });
  auto got = rpc_->BlockHeight(kFinalized);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInternal);
  EXPECT_NE(got.status().message().find("larger than"), std::string::npos);
  // The client still works afterwards.
  node_.ThenResult(7);
  EXPECT_EQ(*rpc_->BlockHeight(kFinalized), 7u);
}

TEST_F(RpcTest, ArgumentsCheckedBeforeSending) {
  EXPECT_EQ(rpc_->BlockHeight("max").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rpc_->SendTransaction("AA==", false, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(node_.requests().empty());
  auto ftp = HttpRpc("ftp://127.0.0.1/", std::chrono::milliseconds(1000));
  EXPECT_EQ(ftp->BlockHeight(kFinalized).status().code(), StatusCode::kFailedPrecondition);
}

TEST(ValidateRpcUrl, HttpAndHttpsOnly) {
  EXPECT_TRUE(ValidateRpcUrl("https://api.mainnet-beta.solana.com").ok());
  EXPECT_TRUE(ValidateRpcUrl("http://127.0.0.1:8899").ok());
  EXPECT_TRUE(ValidateRpcUrl("HTTPS://rpc.example.com/?api-key=secret").ok());
  for (std::string_view bad : {"", "ftp://x", "file:///etc/passwd", "127.0.0.1:8899", "http://",
                               "https://?api-key=secret", "gopher://h"}) {
    Status s = ValidateRpcUrl(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.message().find("secret"), std::string::npos);
  }
}

TEST_F(RpcTest, ConcurrentCalls) {
  constexpr int kThreads = 8, kCalls = 10;
  for (int i = 0; i < kThreads * kCalls; ++i) node_.ThenResult(42);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) ok += rpc_->BlockHeight(kFinalized).ok();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kCalls);
  std::set<uint64_t> ids;
  for (const auto& r : node_.requests()) ids.insert(r.at("id").to_number<uint64_t>());
  EXPECT_EQ(ids.size(), static_cast<size_t>(kThreads * kCalls));
}

}  // namespace
}  // namespace gpunex::platform::solana
