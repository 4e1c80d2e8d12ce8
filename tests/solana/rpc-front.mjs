#!/usr/bin/env node
// A Solana JSON-RPC node for tests, on loopback, over LiteSVM (lib/chain.mjs).
//
//   node rpc-front.mjs [--port N] [--mint <base58>] [--verbose]
//
// Listens on 127.0.0.1:N (0, the default, picks a free port) and, once it accepts requests,
// prints one line on stdout:
//   {"port":P,"mint":"<base58>","mint_authority":"<base58>"}
// then runs until SIGTERM or SIGINT. --mint is the address of the 6-decimal USDC mint it
// creates (default: mainnet USDC's). --verbose logs each call on stderr.
//
// JSON-RPC 2.0 over HTTP POST (any path), single requests and batches. The Solana methods
// answer in a node's shapes; see lib/methods.mjs for the list and README.md beside this
// file for the test_ control methods. Errors: -32700 unparsable body, -32600 not a request,
// -32601 unknown method, -32602 bad params, and the Solana server codes (-32002 preflight
// failure, -32003 signature verification failure, -32015 unsupported transaction version).
// While test_failSends has sends to fail, a request that holds a sendTransaction is answered
// HTTP 503 with no JSON-RPC body, and nothing in it runs.

import http from "node:http";
import { parseArgs } from "node:util";

import { Chain } from "./lib/chain.mjs";
import { RpcError, METHOD_NOT_FOUND, INVALID_PARAMS } from "./lib/errors.mjs";
import { U64_MAX_MARK, makeMethods } from "./lib/methods.mjs";
import { decodeWireTransaction, fromBase58 } from "./lib/wire.mjs";

const USDC_MAINNET_MINT = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const MAX_BODY_BYTES = 8 << 20;

const { values: args } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    mint: { type: "string", default: USDC_MAINNET_MINT },
    verbose: { type: "boolean", default: false },
  },
});

const chain = new Chain({ usdcMint: args.mint });
const methods = makeMethods(chain);

function log(...parts) {
  if (args.verbose) process.stderr.write(`rpc-front: ${parts.join(" ")}\n`);
}

/** One JSON-RPC request object -> its response object. */
function answer(request) {
  const id = request && typeof request === "object" && "id" in request ? request.id : null;
  const error = (code, message, data) => ({
    jsonrpc: "2.0",
    error: { code, message, ...(data !== undefined && { data }) },
    id,
  });
  if (
    !request ||
    typeof request !== "object" ||
    Array.isArray(request) ||
    request.jsonrpc !== "2.0" ||
    typeof request.method !== "string"
  ) {
    return error(-32600, "Invalid request");
  }
  const method = Object.hasOwn(methods, request.method) ? methods[request.method] : null;
  if (!method) return error(METHOD_NOT_FOUND, "Method not found");
  const params = request.params ?? [];
  if (!Array.isArray(params)) return error(INVALID_PARAMS, "Invalid params: expected an array");
  try {
    const result = method(params);
    log(request.method, "ok");
    return { jsonrpc: "2.0", result, id };
  } catch (e) {
    if (e instanceof RpcError) {
      log(request.method, `error ${e.code} ${e.message}`);
      return error(e.code, e.message, e.data);
    }
    // A bug of the front, or an input LiteSVM or web3.js refused in a way not foreseen.
    log(request.method, `internal error ${e.stack}`);
    return error(-32603, `Internal error: ${e.message}`);
  }
}

/** The sendTransaction calls in `requests` that test_failSends fails; records them as sends
 *  (outcome "http_503"). Returns true when the whole HTTP request is to be answered 503. */
function failsWith503(requests) {
  if (chain.failNextSends === 0) return false;
  const sends = requests.filter((r) => r && r.method === "sendTransaction");
  if (sends.length === 0) return false;
  for (const r of sends) {
    let signature = null;
    try {
      const [tx, config] = Array.isArray(r.params) ? r.params : [];
      const bytes = config?.encoding === "base64" ? Buffer.from(tx, "base64") : fromBase58(tx);
      signature = decodeWireTransaction(bytes).signatures[0];
    } catch {
      // The signature is only for the record; a send that does not decode keeps null.
    }
    chain.sends.push({ signature, outcome: "http_503" });
  }
  chain.failNextSends = Math.max(0, chain.failNextSends - sends.length);
  log("sendTransaction", "HTTP 503 (test_failSends)");
  return true;
}

function reply(res, status, body, contentType = "application/json") {
  res.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function handle(req, res, body) {
  if (req.method === "GET" && (req.url === "/health" || req.url === "/")) return reply(res, 200, "ok", "text/plain");
  if (req.method !== "POST") return reply(res, 405, "POST JSON-RPC requests\n", "text/plain");
  let parsed;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return reply(
      res,
      200,
      JSON.stringify({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null }),
    );
  }
  const batch = Array.isArray(parsed);
  const requests = batch ? parsed : [parsed];
  if (failsWith503(requests)) return reply(res, 503, "Service Unavailable\n", "text/plain");
  let out;
  if (batch && requests.length === 0)
    out = { jsonrpc: "2.0", error: { code: -32600, message: "Invalid request" }, id: null };
  else out = batch ? requests.map(answer) : answer(parsed);
  // rentEpoch is u64::MAX, which a JS number cannot hold: written as a literal instead.
  reply(res, 200, JSON.stringify(out).replaceAll(`"${U64_MAX_MARK}"`, "18446744073709551615"));
}

const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      reply(res, 413, "request too large\n", "text/plain");
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on("end", () => {
    if (!res.headersSent) handle(req, res, Buffer.concat(chunks));
  });
});

function shutdown() {
  server.close();
  server.closeAllConnections();
  process.exit(0);
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);

server.listen(Number(args.port), "127.0.0.1", () => {
  process.stdout.write(
    JSON.stringify({
      port: server.address().port,
      mint: chain.usdcMint,
      mint_authority: chain.authority.publicKey.toBase58(),
    }) + "\n",
  );
});
