package main

import (
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// scriptDir is where the Redis engine's Lua files are, from the module
// root (go run ./tools/bench runs there).
const scriptDir = "internal/backend/redis"

// scriptLibs are the prefixes the engine puts before a script's own file
// (internal/backend/redis/scripts.go). Redlock's acquire wraps acquire.lua
// in lines of its own and is shown by its SHA-1's start.
var scriptLibs = [][]string{
	nil,
	{"queue_lib"},
	{"slots_lib"},
	{"clock_lib", "grant_lib", "queue_lib", "slots_lib", "take_lib"},
	{"clock_lib", "redlock_lib"},
}

var scriptNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(scriptDir, "*.lua"))
	src := map[string]string{}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			src[strings.TrimSuffix(filepath.Base(f), ".lua")] = string(b)
		}
	}
	for name, body := range src {
		if strings.HasSuffix(name, "_lib") {
			continue
		}
		for _, libs := range scriptLibs {
			var all strings.Builder
			for _, l := range libs {
				all.WriteString(src[l])
			}
			all.WriteString(body)
			names[fmt.Sprintf("%x", sha1.Sum([]byte(all.String())))] = name
		}
	}
	return names
})

// scriptName is the engine's script whose SHA1 is sha, or the SHA1's start.
func scriptName(sha string) string {
	if n, ok := scriptNames()[sha]; ok {
		return n
	}
	return sha[:min(len(sha), 8)]
}
