package main

import (
	"fmt"
	"strings"
)

const tgs = `
local function entry(K, A)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local v = redis.call('GET', K[1])
  redis.call('SET', K[1], now + 10000, 'PX', 10)
  return 1
end`

func loop(name, setup, body string, k int) variant {
	src := fmt.Sprintf(`
local function entry(K, A)
  %s
  for i = 1, %d do
    %s
  end
  return 1
end`, setup, k, body)
	return variant{name: name, src: src, keys: []string{"rl:{ip:203.0.7.12}:gcAAAAAA"}, args: []any{0}, loop: k}
}

// stub replaces the GCRA check by constants: what check.lua costs around it.
const stub = `
algorithms.gc = function(key, now, limit, window, burst, cost)
  return 1, 5, 10, 0, 0, 10, function() end, 1, 2, 3, 4, 5, 6
end
`

func variants() []variant {
	k1, a1 := checkArgs(0, 1)
	k3, a3 := checkArgs(0, 3)
	ki, ai := checkArgs(1_700_000_000_000_000, 1)
	_, a0 := checkArgs(0, 1)
	a0[2] = 0 // mode 0
	ret1 := "local function entry(K, A) return 1 end"
	lib := current()
	stubbed := strings.Replace(lib, checkLua(), stub+checkLua(), 1)
	const N = 20000
	var vs []variant
	if *oldDir != "" { // the library of another checkout, whose ARGV has one string per policy
		old := libFrom(*oldDir)
		vs = append(vs,
			variant{name: "A old, 1 policy", src: old, keys: k1, args: packed(a1)},
			variant{name: "A old, 3 policies", src: old, keys: k3, args: packed(a3)},
			variant{name: "A old, 1 policy, injected", src: old, keys: ki, args: packed(ai)},
			variant{name: "A old, fixed window, 1 policy", src: old, keys: k1, args: code("fw", packed(a1))},
			variant{name: "A old, fixed window, 3 policies", src: old, keys: k3, args: code("fw", packed(a3))})
	}
	vs = append(vs, []variant{
		{name: "A new, 1 policy", src: lib, keys: k1, args: packed(a1)},
		{name: "A new, 3 policies", src: lib, keys: k3, args: packed(a3)},
		{name: "A new, 1 policy, injected", src: lib, keys: ki, args: packed(ai)},
		{name: "A new, fixed window, 1 policy", src: lib, keys: k1, args: code("fw", packed(a1))},
		{name: "A new, fixed window, 3 policies", src: lib, keys: k3, args: code("fw", packed(a3))},
		{name: "A floor TIME+GET+SET PX", src: tgs, keys: k1, args: a1},
		{name: "A return 1", src: ret1, keys: k1, args: packed(a1)},
		{name: "return 1 (1 key, 9 args)", src: ret1, keys: k1, args: a1},
		{name: "return 1 (3 keys, 19 args)", src: ret1, keys: k3, args: a3},
		{name: "TIME+GET+SET PX", src: tgs, keys: k1, args: a1},
		{name: "current, 1 policy, mode 0", src: lib, keys: k1, args: packed(a0)},
		{name: "dispatch only (gc stubbed), 1 policy", src: stubbed, keys: k1, args: packed(a1)},
		{name: "dispatch only (gc stubbed), 3 policies", src: stubbed, keys: k3, args: packed(a3)},
		loop("L empty loop", "local x = 1.7e15", "x = x + 1", N),
		loop("L string.format('%d', x)", "local x = 1.7e15; local f = string.format", "local s = f('%d', x + i)", N),
		loop("L tostring(x)", "local x = 1.7e15", "local s = tostring(x + i)", N),
		loop("L redis.call TIME", "", "local t = redis.call('TIME')", N),
		loop("L TIME + tonumber", "", "local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000000 + tonumber(t[2])", N),
		loop("L GET (present)", "redis.call('SET', K[1], '1700000000000000')", "local v = redis.call('GET', K[1])", N),
		loop("L GET + tonumber", "redis.call('SET', K[1], '1700000000000000')", "local v = tonumber(redis.call('GET', K[1]))", N),
		loop("L SET num PX", "local x = 1.7e15", "redis.call('SET', K[1], x + i, 'PX', 100000)", N),
		loop("L SET str PX", "local x = '1700000000000000'", "redis.call('SET', K[1], x, 'PX', 100000)", N),
		loop("L SET str PX str", "local x = '1700000000000000'", "redis.call('SET', K[1], x, 'PX', '100000')", N),
		loop("L SET num", "local x = 1.7e15", "redis.call('SET', K[1], x + i)", N),
		loop("L SET num + PEXPIRE", "local x = 1.7e15", "redis.call('SET', K[1], x + i); redis.call('PEXPIRE', K[1], 100000)", N),
		loop("L PSETEX str str", "local x = '1700000000000000'", "redis.call('PSETEX', K[1], '100000', x)", N),
		loop("L fmt + SET str PX str", "local x = 1.7e15; local f = string.format", "redis.call('SET', K[1], f('%d', x + i), 'PX', '100000')", N),
		loop("L fmt both + SET str PX str", "local x = 1.7e15; local f = string.format", "redis.call('SET', K[1], f('%d', x + i), 'PX', f('%d', 100000 + i % 7))", N),
		loop("L SET num PX num, ms varied", "local x = 1.7e15", "redis.call('SET', K[1], x + i, 'PX', 100000 + i % 7)", N),
		loop("L fmt + PSETEX str cached", "local x = 1.7e15; local f = string.format; local c = {}", "local ms = 100000 + (i % 100); local m = c[ms]; if not m then m = f('%d', ms); c[ms] = m end; redis.call('PSETEX', K[1], m, f('%d', x + i))", N),
		loop("L SET num PX num (current)", "local x = 1.7e15", "redis.call('SET', K[1], x + i, 'PX', 100000 + (i % 100))", N),
		loop("L fmt + SET str KEEPTTL", "local x = 1.7e15; local f = string.format; redis.call('SET', K[1], '1', 'PX', 100000)", "redis.call('SET', K[1], f('%d', x + i), 'KEEPTTL')", N),
		loop("L fixed window state: parse with gmatch into a table", "local v = '28333333:17'", "local out = {}; for part in string.gmatch(v, '[^:]+') do out[#out + 1] = tonumber(part) end", N),
		loop("L fixed window state: parse with match", "local v = '28333333:17'", "local a, b = string.match(v, '^(%-?%d+):(%-?%d+)$'); a, b = tonumber(a), tonumber(b)", N),
		loop("L fixed window state: format through a table", "local x = 28333333; local f = string.format", "local p = {}; p[1], p[2] = f('%d', x), f('%d', i); local s = table.concat(p, ':')", N),
		loop("L fixed window state: format by ..", "local x = 28333333; local f = string.format", "local s = f('%d', x) .. ':' .. f('%d', i)", N),
		loop("L table {0x7}", "", "local t = {0, 0, 0, 0, 0, 0, 0}", N),
		loop("L tonumber(A[i]) x9", "", "for j = 1, 9 do local n = tonumber(A[j]) end", N),
		loop("L math.floor x10", "local floor = math.floor; local x = 1.5", "for j = 1, 10 do x = floor(x + 0.5) end", N),
		loop("L string compare x10", "local a = A[1]", "for j = 1, 10 do local b = a == '1' end", N),
	}...)
	return append(vs, partLoops(N)...)
}

// partLoops time the parts of a check, and the commands of the layouts, in a warm loop inside
// one call (issue 23's layout study): ns per iteration. Their arguments are a check's.
func partLoops(n int) []variant {
	_, a1 := checkArgs(0, 1)
	args := packed(a1)
	key := []string{"rl:{ip:203.0.7.12}:gcAAAAAA"}
	hash := []string{"rl:{ip:203.0.7.12}"}
	const gcra = `local floor, ceil = math.floor, math.ceil
  local function idiv(a, b)
    local q = floor(a / b)
    if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
    return q
  end
  local function gcra(t, now, capacity, num, cost)
    local tus = now
    if t and t > now then tus = t end
    local hus = now + capacity * num
    local allowed, retry, aus = 0, 0, tus
    if cost > capacity then retry = -1 else
      local nus = tus + cost * num
      if cost == 0 or nus <= hus then allowed, aus = 1, nus else retry = nus - hus end
    end
    local remaining = 0
    if aus < hus then remaining = idiv(hus - aus, num) end
    return allowed, remaining, aus - now, retry, aus + remaining * num + num - hus, aus
  end
  local now = 1700000000000000`
	l := func(name, setup, body string, keys []string) variant {
		v := loop("P "+name, setup, body, n)
		v.keys, v.args = keys, args
		return v
	}
	return []variant{
		l("empty loop", "local x = 1", "x = x + 1", key),
		l("GCRA arithmetic (whole_check, stored TAT)", gcra, "local a, b, c, d, e, f = gcra(now + 500000, now + i, 10, 100000, 1)", key),
		l("check's arguments: now, cost, mode, spec lookup", "local specs = {[A[5]] = {10, 100000}}",
			"local now = A[1]; if now == '0' then now = 1 else now = tonumber(now) end; local cost = A[2]; if cost == '1' then cost = 1 else cost = tonumber(cost) end; local charge = A[3] == '1' and cost > 0; local p = specs[A[5]]", key),
		l("reply: 7 integers into a reused table", "local r = {0, 0, 0, 0, 0, 0, 0}", "r[1], r[2], r[3], r[4], r[5], r[6], r[7] = 1, i, 3, 4, 5, 6, 7", key),
		l("TIME + tonumber", "", "local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000000 + tonumber(t[2])", key),
		l("GET (present) + tonumber", "redis.call('SET', K[1], 1700000000000000)", "local v = tonumber(redis.call('GET', K[1]))", key),
		l("SET TAT PX", "local x = 1700000000000000", "redis.call('SET', K[1], x + i, 'PX', 100000 + (i % 100))", key),
		l("PEXPIRETIME", "redis.call('SET', K[1], 5, 'PX', 100000)", "local e = redis.call('PEXPIRETIME', K[1])", key),
		l("SET r PXAT", "local e = 1700000000000", "redis.call('SET', K[1], i % 1000, 'PXAT', e + i)", key),
		l("MGET 3 keys", "local k = {K[1], K[1] .. 'b', K[1] .. 'c'}; for j = 1, 3 do redis.call('SET', k[j], 1700000000000000) end", "local vs = redis.call('MGET', k[1], k[2], k[3])", key),
		l("HMGET 3 fields", "redis.call('HSET', K[1], 'gcAAAAA0', 1700000000000000, 'gcAAAAA1', 1700000000000000, 'gcAAAAA2', 1700000000000000)", "local vs = redis.call('HMGET', K[1], 'gcAAAAA0', 'gcAAAAA1', 'gcAAAAA2')", hash),
		l("HSET 3 fields", "local x = 1700000000000000", "redis.call('HSET', K[1], 'gcAAAAA0', x + i, 'gcAAAAA1', x + i, 'gcAAAAA2', x + i)", hash),
		l("HMGET 1 field", "redis.call('HSET', K[1], 'gcAAAAA0', 1700000000000000)", "local vs = redis.call('HMGET', K[1], 'gcAAAAA0')", hash),
		l("HSET 1 field", "local x = 1700000000000000", "redis.call('HSET', K[1], 'gcAAAAA0', x + i)", hash),
		l("PEXPIRE", "redis.call('HSET', K[1], 'a', 1)", "redis.call('PEXPIRE', K[1], 100000 + (i % 100))", hash),
	}
}

// code returns packed check arguments (see packed) whose GCRA policies are of the algorithm
// code instead ("fw": the fixed window).
func code(c string, args []any) []any {
	out := append([]any(nil), args...)
	for i := 4; i < len(out); i++ {
		if p, ok := out[i].(string); ok && strings.HasPrefix(p, "gc:") {
			out[i] = c + p[2:]
		}
	}
	return out
}
