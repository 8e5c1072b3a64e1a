-- POST one JSON-RPC message per request, for wrk:
--   BENCH_BODY     the JSON-RPC body; every "__ID__" becomes a number unique to the request
--   BENCH_HEADERS  extra request headers, one "Name: value" per line
--   MCP_SESSION_ID sent as Mcp-Session-Id when set (created by run.py before wrk starts)
-- done() prints one "BENCH_JSON {...}" line with the exact counts and percentiles (microseconds).

local body = os.getenv("BENCH_BODY") or error("BENCH_BODY is not set")
local counter = 0

wrk.method = "POST"
for line in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^\n]+") do
  local name, value = string.match(line, "^([^:]+):%s*(.-)%s*$")
  if name then
    wrk.headers[name] = value
  end
end
local session = os.getenv("MCP_SESSION_ID")
if session and session ~= "" then
  wrk.headers["Mcp-Session-Id"] = session
end

request = function()
  counter = counter + 1
  local text = string.gsub(body, "__ID__", tostring(counter))
  return wrk.format(nil, nil, nil, text)
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,'
      .. '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
