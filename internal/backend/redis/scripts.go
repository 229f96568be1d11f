package redis

import (
	"embed"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed *.lua
var luaFiles embed.FS

// takeLibs are the libraries of the scripts that take a slot, in order.
var takeLibs = []string{"clock_lib.lua", "grant_lib.lua", "queue_lib.lua", "slots_lib.lua", "take_lib.lua"}

// The scripts: each is its libraries followed by its body
// (tools/bench names them by the same concatenations).
var (
	acquireScript      = lazyScript(append(takeLibs, "acquire.lua")...)
	queueLeaveScript   = lazyScript("queue_lib.lua", "queue_leave.lua")
	renewScript        = lazyScript("slots_lib.lua", "renew.lua")
	releaseScript      = lazyScript("slots_lib.lua", "release.lua")
	holdScript         = lazyScript("slots_lib.lua", "hold.lua")
	inspectScript      = lazyScript("inspect.lua")
	ledgerRepairScript = lazyScript("ledger_repair.lua")
	redlockRenewScript = lazyScript("clock_lib.lua", "redlock_lib.lua", "redlock_renew.lua")
	// Redlock's try-once is acquire.lua run as a function inside the
	// delayed restart's bookkeeping (redlock.go, redlock_lib.lua).
	redlockAcquireScript = lazyScript(append(takeLibs, "redlock_lib.lua", redlockAcquireHead, "acquire.lua", redlockAcquireTail)...)
)

// lazyScript joins parts (a *.lua file by name, else Lua text) into one
// script when it is first used: reading and hashing every script at
// start-up cost every distlock process (whatever its engine) about 0.2 ms
// and 90 KB of heap before flags were parsed.
func lazyScript(parts ...string) func() *goredis.Script {
	return sync.OnceValue(func() *goredis.Script {
		var src strings.Builder
		for _, p := range parts {
			if b, err := luaFiles.ReadFile(p); err == nil {
				p = string(b)
			}
			src.WriteString(p)
		}
		return goredis.NewScript(src.String())
	})
}
