package file

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// nextToken reads the key's counter, computes max(counter+1, now in µs),
// and persists it (fsync'd) before returning, so tokens never go backwards
// even if the counter file is lost and the clock is sane. Call it only
// while holding the key's flock.
func nextToken(path string, now time.Time) (uint64, error) {
	var last uint64
	if b, err := os.ReadFile(path); err == nil {
		last, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	} else if !os.IsNotExist(err) {
		return 0, err
	}
	tok := max(last+1, uint64(now.UnixMicro()))
	if err := writeAtomic(path, []byte(strconv.FormatUint(tok, 10)+"\n"), true); err != nil {
		return 0, err
	}
	return tok, nil
}
