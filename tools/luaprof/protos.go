package main

import (
	"fmt"
	"strings"
)

// The prototypes of issue 23's state layouts (items 1 and 3). Each is a library body that
// defines entry(KEYS, ARGV) with check.lua's ARGV (now, cost, mode, 0, one policy string per
// policy) and reply (6 integers per policy, then now), running the whole-microsecond GCRA of
// tat.lua (whole_check) on every policy, all or nothing. They handle only that: policy code
// "gc", window a multiple of limit, no shadow, modes 0 and 1. They are measuring devices, not
// library code.

// protoCommon is shared by every prototype: the policy cache, idiv and the GCRA step.
const protoCommon = `
local floor, ceil
local specs, replies = {}, {}

-- spec_of: {capacity, interval µs} of a policy string, parsed once (as check.lua's spec_of).
local function spec_of(s)
  local p = specs[s]
  if p then return p end
  local code, limit, window, burst = string.match(s, '^([^:]*):(%d+):(%d+):(%d+):([01])$')
  limit, window, burst = tonumber(limit), tonumber(window), tonumber(burst)
  if code ~= 'gc' or window % limit ~= 0 then
    return error('prototype: whole-microsecond GCRA only: ' .. s)
  end
  local capacity = limit
  if burst > 0 then capacity = burst end
  p = {capacity, window / limit}
  specs[s] = p
  return p
end

local function idiv(a, b)
  local q = floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

-- gcra is tat.lua's whole_check on a stored TAT t (nil: none): allowed, remaining, reset,
-- retry, next, and the TAT it would leave.
local function gcra(t, now, capacity, num, cost)
  local tus = now
  if t and t > now then tus = t end
  local hus = now + capacity * num
  local allowed, retry, aus = 0, 0, tus
  if cost > capacity then
    retry = -1
  else
    local nus = tus + cost * num
    if cost == 0 or nus <= hus then allowed, aus = 1, nus else retry = nus - hus end
  end
  local remaining = 0
  if aus < hus then remaining = idiv(hus - aus, num) end
  return allowed, remaining, aus - now, retry, aus + remaining * num + num - hus, aus
end

-- whole reads a stored integer TAT string.
local function whole(v)
  if not v then return nil end
  local us = tonumber(v)
  if not us or us ~= floor(us) then return error('prototype: malformed state') end
  return us
end

local tats, hsets = {}, {}
`

// protoEntry is the check; %s are the layout's parts: setup (policy count n, before reads),
// read (sets t, the stored TAT of policy i), write (of tats[i] for every i, when charged).
const protoEntry = `
local function entry(K, A)
  floor, ceil = math.floor, math.ceil
  local now, minttl = A[1], 1
  if now == '0' then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  else
    now, minttl = tonumber(now), 60000
  end
  local cost = A[2]
  if cost == '1' then cost = 1 else cost = tonumber(cost) end
  local charge = A[3] == '1' and cost > 0
  %s
  local reply = replies[n]
  if not reply then reply = {}; replies[n] = reply end
  local all, o = true, 0
  for i = 1, n do
    local p = specs[A[4 + i]] or spec_of(A[4 + i])
    local t
    %s
    local ok, remaining, reset, retry, nxt, aus = gcra(t, now, p[1], p[2], cost)
    reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4], reply[o + 5], reply[o + 6] =
      ok, remaining, reset, retry, 0, nxt
    o = o + 6
    tats[i] = aus
    if ok == 0 then all = false end
  end
  if all and charge then
    %s
  end
  reply[o + 1] = now
  return reply
end
`

// layout is one state layout's Lua parts (see protoEntry).
type layout struct{ setup, read, write string }

var layouts = map[string]layout{
	// P0: today's layout (one string key per policy holding the TAT, PX expiry) in the
	// prototype's code, to tell the layout from the library's structure.
	"P0": {
		setup: `local n = #K`,
		read:  `t = whole(redis.call('GET', K[i]))`,
		write: `for i = 1, n do
      local ms = ceil((tats[i] - now) / 1000)
      if ms < minttl then ms = minttl end
      redis.call('SET', K[i], tats[i], 'PX', ms)
    end`,
	},
	// L1: as P0, every policy's key read by one MGET.
	"L1": {
		setup: `local n = #K
  local vs = redis.call('MGET', unpack(K))`,
		read: `t = whole(vs[i])`,
		write: `for i = 1, n do
      local ms = ceil((tats[i] - now) / 1000)
      if ms < minttl then ms = minttl end
      redis.call('SET', K[i], tats[i], 'PX', ms)
    end`,
	},
	// L2: the key expires at E = ceil(TAT/1000) ms and holds r = E*1000 - TAT (0..999, an
	// integer Redis shares): TAT = PEXPIRETIME*1000 - r. Expiry on Redis's clock: with an
	// injected clock the key lives as long as that TAT says in Redis time.
	"L2": {
		setup: `local n = #K`,
		read: `local v = redis.call('GET', K[i])
    if v then t = redis.call('PEXPIRETIME', K[i]) * 1000 - whole(v) end`,
		write: `for i = 1, n do
      local e = ceil(tats[i] / 1000)
      redis.call('SET', K[i], e * 1000 - tats[i], 'PXAT', e)
    end`,
	},
	// L3: one hash per identity (KEYS[1]), one field per policy (ARGV[4+n+i], its tag),
	// HMGET, one HSET of the charged fields, one PEXPIRE to the latest TAT of the call.
	"L3": {
		setup: `local n = (#A - 4) / 2
  local vs = redis.call('HMGET', K[1], unpack(A, 5 + n, 4 + 2 * n))`,
		read: `t = whole(vs[i])`,
		write: `local hs, last = hsets[n], now
    if not hs then hs = {}; hsets[n] = hs end
    hs[1] = K[1]
    for i = 1, n do
      hs[2 * i], hs[2 * i + 1] = A[4 + n + i], tats[i]
      if tats[i] > last then last = tats[i] end
    end
    redis.call('HSET', unpack(hs))
    local ms = ceil((last - now) / 1000)
    if ms < minttl then ms = minttl end
    redis.call('PEXPIRE', K[1], ms)`,
	},
}

// proto returns the library body of a layout's prototype.
func proto(name string) string {
	l, ok := layouts[name]
	if !ok {
		panic("no layout " + name)
	}
	return protoCommon + fmt.Sprintf(protoEntry, l.setup, l.read, l.write)
}

// Floors and the ladder from F0 to the prototype: each adds one part of a check.

// tgsN is TIME and, per key, GET and SET PX of a TAT-sized integer; the expiries are those a
// check of 10/s, 100/min and 1000/h leaves, so that the floor finds its keys as a check does.
func tgsN(n int) string {
	var b strings.Builder
	b.WriteString(`
local function entry(K, A)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
`)
	for i, ms := range []int{100, 600, 3600}[:n] {
		fmt.Fprintf(&b, "  local v%d = redis.call('GET', K[%d])\n  redis.call('SET', K[%d], now + %d, 'PX', %d)\n", i+1, i+1, i+1, ms*1000, ms)
	}
	b.WriteString("  return 1\nend\n")
	return b.String()
}

// mgetN is TIME, one MGET of n keys and a SET PX per key.
func mgetN(n int) string {
	var b strings.Builder
	b.WriteString(`
local function entry(K, A)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local vs = redis.call('MGET', unpack(K))
`)
	for i, ms := range []int{100, 600, 3600}[:n] {
		fmt.Fprintf(&b, "  redis.call('SET', K[%d], now + %d, 'PX', %d)\n", i+1, ms*1000, ms)
	}
	b.WriteString("  return 1\nend\n")
	return b.String()
}

// remN is TIME and, per key, GET, PEXPIRETIME (when present) and SET r PXAT.
func remN(n int) string {
	var b strings.Builder
	b.WriteString(`
local function entry(K, A)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
`)
	for i, ms := range []int{100, 600, 3600}[:n] {
		fmt.Fprintf(&b, "  local v%d = redis.call('GET', K[%d])\n  if v%d then v%d = redis.call('PEXPIRETIME', K[%d]) end\n  redis.call('SET', K[%d], %d, 'PXAT', math.ceil(now / 1000) + %d)\n", i+1, i+1, i+1, i+1, i+1, i+1, 123+i, ms)
	}
	b.WriteString("  return 1\nend\n")
	return b.String()
}

// hashN is TIME, HMGET of n fields, one HSET of them and one PEXPIRE (the keys of L3).
func hashN(n int) string {
	return fmt.Sprintf(`
local function entry(K, A)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local n = %d
  local vs = redis.call('HMGET', K[1], unpack(A, 5 + n, 4 + 2 * n))
  local hs = {K[1]}
  for i = 1, n do hs[2 * i], hs[2 * i + 1] = A[4 + n + i], now + 100000 * i end
  redis.call('HSET', unpack(hs))
  redis.call('PEXPIRE', K[1], %d)
  return 1
end
`, n, []int{100, 600, 3600}[n-1])
}

// ladderReply is F0 (1 key) returning check.lua's reply: a reused table of 7 integers.
const ladderReply = `
local reply = {0, 0, 0, 0, 0, 0, 0}
local function entry(K, A)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local v = redis.call('GET', K[1])
  redis.call('SET', K[1], now + 100000, 'PX', 100)
  reply[1], reply[2], reply[3], reply[4], reply[5], reply[6], reply[7] = 1, 9, 100000, 0, 0, 100000, now
  return reply
end
`

// ladderArgs adds to ladderReply what a check does with its arguments: now, cost and mode
// read, the policy's cached spec looked up, the stored value turned into a number, the
// expiry computed from the spec (no GCRA arithmetic).
const ladderArgs = `
local specs = {}
local function spec_of(s)
  local p = specs[s]
  if p then return p end
  local code, limit, window, burst = string.match(s, '^([^:]*):(%d+):(%d+):(%d+):([01])$')
  p = {tonumber(limit), tonumber(window) / tonumber(limit)}
  specs[s] = p
  return p
end
local reply = {0, 0, 0, 0, 0, 0, 0}
local function entry(K, A)
  local floor, ceil = math.floor, math.ceil
  local now, minttl = A[1], 1
  if now == '0' then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  else
    now, minttl = tonumber(now), 60000
  end
  local cost = A[2]
  if cost == '1' then cost = 1 else cost = tonumber(cost) end
  local charge = A[3] == '1' and cost > 0
  local p = specs[A[5]] or spec_of(A[5])
  local v = redis.call('GET', K[1])
  if v then v = tonumber(v) end
  local aus = now + p[2]
  local ms = ceil((aus - now) / 1000)
  if ms < minttl then ms = minttl end
  if charge then redis.call('SET', K[1], aus, 'PX', ms) end
  reply[1], reply[2], reply[3], reply[4], reply[5], reply[6], reply[7] = 1, 9, 100000, 0, 0, 100000, now
  return reply
end
`
