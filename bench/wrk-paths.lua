-- wrk script of bench/delivery.mjs: GETs the paths of the file WRK_PATHS names, one after the other
-- (run with one thread, -t 1, so no request repeats another), and prints one RESULT line:
-- requests, duration µs, p99 latency µs, non-2xx answers, socket errors and timeouts.
local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do
  paths[#paths + 1] = line
end
local index = 0

request = function()
  index = index + 1
  return wrk.format("GET", paths[(index - 1) % #paths + 1])
end

done = function(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format(
    "RESULT %d %d %d %d %d\n",
    summary.requests,
    summary.duration,
    latency:percentile(99),
    errors.status,
    errors.connect + errors.read + errors.write + errors.timeout
  ))
end
