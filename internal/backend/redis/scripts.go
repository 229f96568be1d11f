package redis

import (
	_ "embed"

	goredis "github.com/redis/go-redis/v9"
)

var (
	//go:embed grant_lib.lua
	grantLibSrc string
	//go:embed try_once.lua
	tryOnceSrc string
	//go:embed renew.lua
	renewSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed inspect.lua
	inspectSrc string
	//go:embed break.lua
	breakSrc string
	//go:embed hold.lua
	holdSrc string

	tryOnceScript = goredis.NewScript(grantLibSrc + queueLibSrc + tryOnceSrc)
	renewScript   = goredis.NewScript(renewSrc)
	releaseScript = goredis.NewScript(releaseSrc)
	inspectScript = goredis.NewScript(inspectSrc)
	breakScript   = goredis.NewScript(breakSrc)
	holdScript    = goredis.NewScript(holdSrc)
)
