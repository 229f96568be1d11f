package file

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/lock"
)

// nextToken reads the key's counter, computes max(counter+1, now in µs)
// (lock.NextToken) and persists it, fsync'd, before returning, so tokens
// never go backwards even if the counter file is lost and the clock is
// sane. The counter is a fixed-width record (20 digits and a newline)
// overwritten whole in one small write: no truncate, no rename, one fsync.
// One counter serves every limit: call it only under the key's exclusive
// flock (a mutex) or its short flock (a semaphore), so writers never
// overlap.
func nextToken(path string, now time.Time) (uint64, error) {
	f, err := openFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return 0, err
	}
	last, _ := strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 10, 64)
	tok := lock.NextToken(last, lock.ClockMicros(now))
	if _, err = f.WriteAt([]byte(fmt.Sprintf("%020d\n", tok)), 0); err == nil {
		err = f.Sync()
	}
	return tok, err
}
