-- GET one URL per request, for wrk (the DRF side of models_vs_drf.py):
--   BENCH_HEADERS  extra request headers, one "Name: value" per line
-- done() prints the same "BENCH_JSON {...}" line as post.lua (microseconds).

wrk.method = "GET"
for line in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^\n]+") do
  local name, value = string.match(line, "^([^:]+):%s*(.-)%s*$")
  if name then
    wrk.headers[name] = value
  end
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,'
      .. '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
