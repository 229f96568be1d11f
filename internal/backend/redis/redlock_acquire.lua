-- Redlock's try-once on one master: acquire.lua (limit 1, no place), run
-- as a function between this file's halves, with the delayed restart's
-- bookkeeping around it. Prepended: acquire.lua's libraries and
-- redlock_lib.lua. KEYS[1..6] and ARGV as acquire.lua's, KEYS[7] the boot
-- marker, KEYS[8] the TTL ledger. Returns {marker age ms, longest live
-- TTL ms (before this call), acquire.lua's reply}.
local rl_now = now_ms()
local rl_age, rl_longest = rl_state(KEYS[7], KEYS[8], rl_now)
local function rl_try_once()
-- acquire.lua
end
local rl_res = rl_try_once()
if rl_res[1] == 1 then rl_note(KEYS[8], rl_now, tonumber(ARGV[2])) end
return {rl_age, rl_longest, rl_res}
