/* Lua benchmark driver: runs an embedded Lua script (ours) on the Lua
 * interpreter with the base, string, table, math, coroutine and utf8
 * libraries (no io, os or package: WASI has no processes, and the script
 * needs none). The train and ref inputs run the same kernels with
 * different sizes and a different mix.
 *
 * WASI (with this clang) has no setjmp/longjmp, so Lua is built with
 * LUAI_THROW defined to abort (see bench/build-suite.sh): a Lua error ends
 * the program, which the harness reports. The script raises none, and uses
 * no coroutines (a yield from C is a throw in Lua 5.4). */
#include "../common.h"
#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"

static const char *const script =
    "local N, MIX = ...\n"
    "local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end\n"
    "local function sieve(n)\n"
    "  local s, c = {}, 0\n"
    "  for i = 2, n do s[i] = true end\n"
    "  for i = 2, n do if s[i] then c = c + 1; for j = i*i, n, i do s[j] = false end end end\n"
    "  return c\n"
    "end\n"
    "local function strings(n)\n"
    "  local t = {}\n"
    "  for i = 1, n do t[#t+1] = string.format('%d:%x:%s', i, i*7, string.rep('ab', i % 5)) end\n"
    "  local s = table.concat(t, ',')\n"
    "  local c = 0\n"
    "  for w in s:gmatch('%d+:') do c = c + #w end\n"
    "  s = s:gsub('ab', 'ba')\n"
    "  return c + #s + select(2, s:gsub('b', ''))\n"
    "end\n"
    "local function sorting(n)\n"
    "  local t, x = {}, 42\n"
    "  for i = 1, n do x = (x * 1103515245 + 12345) % 2147483648; t[i] = x end\n"
    "  table.sort(t)\n"
    "  local u = {}\n"
    "  for i = 1, n do u[i] = {k = t[i] % 1000, v = i} end\n"
    "  table.sort(u, function(a, b) if a.k ~= b.k then return a.k < b.k end return a.v > b.v end)\n"
    "  return t[1] + u[1].v\n"
    "end\n"
    "local function nbody(steps)\n"
    "  local b = {}\n"
    "  for i = 1, 5 do b[i] = {x=i, y=i*0.5, z=-i, vx=0, vy=0.1*i, vz=0, m=1/i} end\n"
    "  for s = 1, steps do\n"
    "    for i = 1, #b do local bi = b[i]\n"
    "      for j = i+1, #b do local bj = b[j]\n"
    "        local dx, dy, dz = bi.x-bj.x, bi.y-bj.y, bi.z-bj.z\n"
    "        local d2 = dx*dx + dy*dy + dz*dz + 0.01\n"
    "        local mag = 0.001 / (d2 * math.sqrt(d2))\n"
    "        bi.vx = bi.vx - dx*bj.m*mag; bj.vx = bj.vx + dx*bi.m*mag\n"
    "        bi.vy = bi.vy - dy*bj.m*mag; bj.vy = bj.vy + dy*bi.m*mag\n"
    "        bi.vz = bi.vz - dz*bj.m*mag; bj.vz = bj.vz + dz*bi.m*mag\n"
    "      end end\n"
    "    for i = 1, #b do local bi = b[i]\n"
    "      bi.x = bi.x + 0.001*bi.vx; bi.y = bi.y + 0.001*bi.vy; bi.z = bi.z + 0.001*bi.vz end\n"
    "  end\n"
    "  return math.floor(b[1].x * 1e6)\n"
    "end\n"
    "local function closures(n)\n"
    "  local fs = {}\n"
    "  for i = 1, n do local k = i; fs[i] = function(x) return (x * k) % 1009 end end\n"
    "  local s = 0\n"
    "  for r = 1, 4 do for i = 1, n do s = fs[i](s + r) end end\n"
    "  return s\n"
    "end\n"
    "local function objects(n)\n"
    "  local Point = {}; Point.__index = Point\n"
    "  function Point.new(x, y) return setmetatable({x=x, y=y}, Point) end\n"
    "  function Point.__add(a, b) return Point.new(a.x+b.x, a.y+b.y) end\n"
    "  local p = Point.new(0, 0)\n"
    "  for i = 1, n do p = p + Point.new(i % 7, i % 11) end\n"
    "  return p.x + p.y\n"
    "end\n"
    "local kernels = {fib=function(n) return fib(20 + n // 40) end,\n"
    "  sieve=function(n) return sieve(n * 500) end, strings=function(n) return strings(n * 10) end,\n"
    "  sorting=function(n) return sorting(n * 50) end, nbody=function(n) return nbody(n * 10) end,\n"
    "  closures=function(n) return closures(n * 100) end, objects=function(n) return objects(n * 200) end}\n"
    "local order = {'fib', 'sieve', 'strings', 'sorting', 'nbody', 'closures', 'objects'}\n"
    "for _, name in ipairs(order) do\n"
    "  local reps = MIX[name] or 0\n"
    "  for r = 1, reps do\n"
    "    local v = kernels[name](N)\n"
    "    if r == reps then print(name, reps, v) end\n"
    "  end\n"
    "end\n";

static void open_libs(lua_State *L) {
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base},          {LUA_TABLIBNAME, luaopen_table},
        {LUA_STRLIBNAME, luaopen_string},   {LUA_MATHLIBNAME, luaopen_math},
        {LUA_COLIBNAME, luaopen_coroutine}, {LUA_UTF8LIBNAME, luaopen_utf8},
    };
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        luaL_requiref(L, libs[i].name, libs[i].func, 1);
        lua_pop(L, 1);
    }
}

int main(int argc, char **argv) {
    int ref = bench_input(argc, argv);
    lua_State *L = luaL_newstate();
    if (!L) bench_fail("luaL_newstate");
    open_libs(L);
    if (luaL_loadbuffer(L, script, strlen(script), "bench") != LUA_OK) bench_fail(lua_tostring(L, -1));
    /* N: problem size; MIX: repetitions of each kernel. */
    lua_pushinteger(L, ref ? 200 : 120);
    lua_newtable(L);
    static const char *const names[] = {"fib", "sieve", "strings", "sorting", "nbody", "closures", "objects"};
    static const int train_mix[] = {2, 30, 20, 10, 8, 30, 30};
    static const int ref_mix[] = {3, 40, 30, 20, 25, 40, 40};
    for (int i = 0; i < 7; i++) {
        lua_pushinteger(L, ref ? ref_mix[i] : train_mix[i]);
        lua_setfield(L, -2, names[i]);
    }
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) bench_fail(lua_tostring(L, -1));
    lua_close(L);
    return 0;
}
