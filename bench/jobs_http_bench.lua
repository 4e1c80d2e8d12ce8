-- wrk script of bench/jobs_http_bench.sh.
--
-- With JOBS_TOKEN set (a customer's bearer session): every request is
--   POST /api/v1/jobs {"gpu_model":"l4-24gb","gpus":1,"max_price_micro":1000000,
--                      "image":"registry.example/bench:1"}
-- and each answer is counted: 201 with "state":"placed", 201 with "state":"queued", another
-- 2xx state, and every other status by its code (the first such body is kept as a sample).
-- JOBS_TOKEN may name several customers' sessions, comma-separated: each request carries
-- the next one, so that a proxy balancing on the Authorization header spreads the jobs over
-- its instances (bench/cluster_bench.sh).
-- Without it, the request is wrk's own (GET of the URL) and nothing is counted; with
-- PACE_MS set above 0, each connection waits that long between its requests (a probe at a
-- known rate instead of as many requests as the server answers).
--
-- done() prints one line for the script to read:
--   result requests=N seconds=S rps=R p50_ms= p90_ms= p99_ms= p999_ms= max_ms=
--          errors=E [placed=P queued=Q other2xx=O non2xx=N statuses=CODE:COUNT,... sample=BODY]
local tokens = {}
for t in (os.getenv("JOBS_TOKEN") or ""):gmatch("[^,]+") do table.insert(tokens, t) end
local jobs = #tokens > 0

if jobs then
  wrk.method = "POST"
  wrk.body = '{"gpu_model":"l4-24gb","gpus":1,"max_price_micro":1000000,' ..
             '"image":"registry.example/bench:1"}'
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. tokens[1]
end

if #tokens > 1 then
  local sent = 0
  function request()
    sent = sent + 1
    wrk.headers["Authorization"] = "Bearer " .. tokens[sent % #tokens + 1]
    return wrk.format()
  end
end

local pace = tonumber(os.getenv("PACE_MS") or "") or 0
if not jobs and pace > 0 then
  function delay()
    return pace
  end
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  placed, queued, other2xx, non2xx, sample = 0, 0, 0, 0, ""
  statuses = {}
end

if jobs then
  function response(status, headers, body)
    if status >= 200 and status < 300 then
      if body:find('"state":"placed"', 1, true) then
        placed = placed + 1
      elseif body:find('"state":"queued"', 1, true) then
        queued = queued + 1
      else
        other2xx = other2xx + 1
        if sample == "" then sample = status .. " " .. body:sub(1, 300) end
      end
    else
      non2xx = non2xx + 1
      statuses[status] = (statuses[status] or 0) + 1
      if sample == "" then sample = status .. " " .. body:sub(1, 300) end
    end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.timeout
  local secs = summary.duration / 1e6
  local line = string.format(
    "result requests=%d seconds=%.3f rps=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f " ..
    "p999_ms=%.2f max_ms=%.2f errors=%d",
    summary.requests, secs, summary.requests / secs, latency:percentile(50) / 1000,
    latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000, errors)
  if jobs then
    local p, q, o, n, codes, first = 0, 0, 0, 0, {}, ""
    for _, t in ipairs(threads) do
      p = p + t:get("placed")
      q = q + t:get("queued")
      o = o + t:get("other2xx")
      n = n + t:get("non2xx")
      for code, count in pairs(t:get("statuses")) do codes[code] = (codes[code] or 0) + count end
      if first == "" then first = t:get("sample") end
    end
    local list = {}
    for code, count in pairs(codes) do table.insert(list, code .. ":" .. count) end
    table.sort(list)
    line = line .. string.format(" placed=%d queued=%d other2xx=%d non2xx=%d statuses=%s sample=%s",
                                 p, q, o, n, table.concat(list, ","),
                                 (first:gsub("[\r\n]", " ")))
  end
  io.write(line .. "\n")
end
