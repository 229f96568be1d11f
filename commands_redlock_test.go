package main

import (
	"context"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/distlock/distlock/internal/testenv/server"
)

// redlockNodeWait is redlocknode's waiting half (commands_topology_test.go):
//
//	held I KEY TOKENFILE
//	               wait until master I holds KEY (prefix distlock) with
//	               the token in TOKENFILE
//	renewed I KEY  wait until KEY's expiry on master I has been pushed
//	               back since the command began (a renewal reached it)
func redlockNodeWait(ts *testscript.TestScript, i int, p *server.Process, what, key, tokenFile string) {
	c := goredis.NewClient(&goredis.Options{Addr: p.Addr(), MaxRetries: -1})
	defer c.Close()
	lk := "distlock:{" + key + "}"
	ctx := context.Background()
	start := time.Now()
	var first time.Time // when the key would have expired as first seen
	waitUntil(ts, what+" "+key+" on master", defaultWait, func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		pttl, err := c.PTTL(cctx, lk).Result()
		if err != nil || pttl <= 0 {
			return false
		}
		ends := time.Now().Add(pttl)
		switch what {
		case "held":
			tok, err := c.HGet(cctx, lk, "token").Result()
			return err == nil && tok == strconv.FormatUint(readToken(ts, tokenFile), 10)
		default: // renewed
			if first.IsZero() {
				first = ends
				return false
			}
			// A renewal moves the end by ttl/3; 50 ms is far above the
			// noise of reading PTTL.
			return ends.Sub(first) > 50*time.Millisecond
		}
	})
	ts.Logf("%s: master %d: %s %s (%s)", time.Now().Format("15:04:05.000"), i, key, what, time.Since(start).Round(time.Millisecond))
}
