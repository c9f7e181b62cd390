-- wrk script of entitlement_reads.py: replays signed GET requests that the Python side rendered.
--   wrk -t T -c C -d Ds --latency -s entitlement_reads.lua URL -- <file prefix> <T>
-- <prefix>.data: raw HTTP/1.1 requests back to back (request line, Host, the signature headers; no body).
-- <prefix>.idx: one record per request, two little-endian uint64 (offset, length).
--
-- Reads may be sent again within the signature's timestamp window, and the Python side drew the players
-- at random already, so each thread just walks the list from its own starting point (thread k of T starts
-- k/T of the way in) and wraps around. The data file is mmap()ed: one copy for all threads, mapped at a
-- thread's first request() (wrk runs init() on its main thread while started threads already send).
-- response() counts every answer by status; done() prints "READS_RESULT {json}" (times in microseconds).

local ffi = require("ffi")
local C = ffi.C
ffi.cdef [[
int open(const char *path, int flags);
int close(int fd);
long lseek(int fd, long off, int whence);
void *mmap(void *addr, size_t len, int prot, int flags, int fd, long off);
]]
local O_RDONLY, PROT_READ, MAP_SHARED, SEEK_END = 0, 1, 1, 2

local function map(path)
   local fd = C.open(path, O_RDONLY)
   assert(fd >= 0, "cannot open " .. path)
   local size = tonumber(C.lseek(fd, 0, SEEK_END))
   local p = C.mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0)
   C.close(fd)
   assert(size > 0 and ffi.cast("intptr_t", p) ~= -1, "cannot mmap " .. path)
   return ffi.cast("const uint8_t *", p), size
end

local threads = {}

function setup(thread)
   threads[#threads + 1] = thread
   thread:set("thread_no", #threads - 1)
end

function init(args)
   -- wrk passes its URL as args[0]; ours start at args[1]
   prefix, thread_count = args[1], tonumber(args[2])
   n, pos, sent = 0, 0, 0
   statuses = {}
end

local function load()
   data = map(prefix .. ".data")
   local p, size = map(prefix .. ".idx")
   idx = ffi.cast("const uint64_t *", p)
   n = size / 16
   pos = math.floor(n * thread_no / thread_count)
end

function request()
   if sent == 0 then load() end
   sent = sent + 1
   local k = pos
   pos = pos + 1
   if pos >= n then pos = 0 end
   return ffi.string(data + idx[2 * k], tonumber(idx[2 * k + 1]))
end

function response(status, headers, body)
   statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
   local counts = {}
   for _, t in ipairs(threads) do
      for status, count in pairs(t:get("statuses") or {}) do
         counts[status] = (counts[status] or 0) + count
      end
   end
   local parts = {}
   for status, count in pairs(counts) do parts[#parts + 1] = string.format('"%d":%d', status, count) end
   local e = summary.errors
   io.write(string.format(
      'READS_RESULT {"duration_us":%d,"requests":%d,"bytes":%d,"connect_errors":%d,"read_errors":%d,' ..
      '"write_errors":%d,"timeouts":%d,"lat_mean_us":%.1f,"lat_max_us":%d,"p50_us":%d,"p90_us":%d,' ..
      '"p99_us":%d,"p999_us":%d,"statuses":{%s}}\n',
      summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.timeout, latency.mean,
      latency.max, latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency:percentile(99.9), table.concat(parts, ",")))
end
