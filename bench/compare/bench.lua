-- A call-heavy Lua workload for bench/compare.sh: recursion, metatables and
-- method calls, closures, sorting with a Lua comparator, string formatting,
-- pattern matching and substitution. Every Lua operation goes through many
-- small C functions of the interpreter (lvm.c, ldo.c, ltable.c, lstring.c,
-- lgc.c, ...), which is what the tracers see.
--
--   lua5.4 bench.lua [REPEATS [coroutines]]     prints one line: "checksum N"
--
-- "coroutines" adds a generator loop. Lua's coroutines yield with longjmp,
-- which uftrace 0.13 does not survive (SIGSEGV in the traced program), so
-- bench/compare.sh leaves it out.
local repeats = tonumber(arg and arg[1]) or 1
local with_coroutines = arg and arg[2] == "coroutines"

local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({x = x, y = y}, Vec) end
function Vec:add(o) return Vec.new(self.x + o.x, self.y + o.y) end
function Vec.__eq(a, b) return a.x == b.x and a.y == b.y end

local function counter()
  local n = 0
  return function(k) n = n + k; return n end
end

local function producer(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i * i % 97) end
  end)
end

local sum = 0
for _ = 1, repeats do
  sum = sum + fib(18)

  local v = Vec.new(0, 0)
  for i = 1, 5000 do v = v:add(Vec.new(i, -i)) end
  if v == Vec.new(v.x, v.y) then sum = sum + v.x end

  local c = counter()
  for i = 1, 5000 do c(i % 7) end
  sum = sum + c(0)

  local t = {}
  for i = 1, 5000 do t[i] = (i * 7919) % 10007 end
  table.sort(t, function(a, b) return a > b end)
  sum = sum + t[1] + t[#t]

  local parts = {}
  for i = 1, 2000 do parts[#parts + 1] = string.format("%d:%s", i, tostring(i * 3)) end
  local s = table.concat(parts, ",")
  for w in s:gmatch("%d+") do sum = sum + #w end
  local replaced = s:gsub("1", "one")
  sum = sum + #replaced

  if with_coroutines then
    for x in producer(2000) do sum = sum + x end
  end
end
print(string.format("checksum %d", sum))
