// Package metrics records each `distlock run` in a Prometheus textfile, the
// format node_exporter's textfile collector reads: the last run of each key
// (start, end, duration, wait, exit code, outcome) and a count of runs by
// outcome. Several keys, and several distlock processes, share one file:
// each write merges its key's series into the file under a lock on a
// sidecar file, and replaces the file by renaming a complete new one, so a
// reader never sees half a file.
package metrics

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Outcome is how a run ended.
type Outcome string

const (
	Ran     Outcome = "ran"      // the command ran (whatever its exit status)
	Busy    Outcome = "busy"     // the lock was held by someone else
	Lost    Outcome = "lost"     // the lock was lost while the command ran
	MaxHold Outcome = "max_hold" // the command ran past --max-hold
	Error   Outcome = "error"    // anything else: engine unreachable, interrupted, cannot start the command
)

// Outcomes are every outcome, in the order the file lists them.
var Outcomes = []Outcome{Ran, Busy, Lost, MaxHold, Error}

// Run is one finished `distlock run`.
type Run struct {
	Key      string
	Start    time.Time     // when distlock started
	End      time.Time     // when it was done (the lock released)
	Wait     time.Duration // how long it waited for the lock (or until it gave up)
	ExitCode int           // distlock's own exit status
	Outcome  Outcome
}

// The metric names. Every series has a key label; the outcome series an
// outcome label too.
const (
	mStart    = "distlock_last_run_start_timestamp_seconds"
	mEnd      = "distlock_last_run_end_timestamp_seconds"
	mDuration = "distlock_last_run_duration_seconds"
	mWait     = "distlock_last_run_wait_seconds"
	mExit     = "distlock_last_run_exit_code"
	mOutcome  = "distlock_last_run_outcome"
	mRuns     = "distlock_runs_total"
)

type family struct {
	name, help, typ string
}

// families in the order they are written.
var families = []family{
	{mStart, "When the last distlock run of the key started (Unix time).", "gauge"},
	{mEnd, "When the last distlock run of the key ended, its lock released (Unix time).", "gauge"},
	{mDuration, "How long the last distlock run of the key took, waiting for the lock included.", "gauge"},
	{mWait, "How long the last distlock run of the key waited for the lock.", "gauge"},
	{mExit, "The exit status of the last distlock run of the key.", "gauge"},
	{mOutcome, "1 for how the last distlock run of the key ended (ran, busy, lost, max_hold, error), 0 for the others.", "gauge"},
	{mRuns, "distlock runs of the key, by how they ended.", "counter"},
}

// keyState is what the file says about one key.
type keyState struct {
	start, end, duration, wait, exit float64
	outcome                          Outcome
	runs                             map[Outcome]float64
}

// lockWait bounds the wait for another distlock writing the same file.
const lockWait = 10 * time.Second

// Write records r in the textfile at path: r.Key's series are replaced and
// its outcome's counter incremented; other keys' series are kept. Lines the
// file holds that distlock did not write are dropped: give distlock a file
// of its own.
func Write(path string, r Run) error {
	if !slices.Contains(Outcomes, r.Outcome) {
		return fmt.Errorf("unknown outcome %q", r.Outcome)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	keys := map[string]*keyState{}
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		keys = parse(string(old))
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	k := keys[r.Key]
	if k == nil {
		k = &keyState{runs: map[Outcome]float64{}}
		keys[r.Key] = k
	}
	k.start = seconds(r.Start)
	k.end = seconds(r.End)
	k.duration = r.End.Sub(r.Start).Seconds()
	k.wait = r.Wait.Seconds()
	k.exit = float64(r.ExitCode)
	k.outcome = r.Outcome
	k.runs[r.Outcome]++
	return replace(path, render(keys))
}

// seconds is t as Unix seconds, to the millisecond.
func seconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// lockFile takes an exclusive flock on path (created if needed): the file
// itself is replaced by rename, so its own inode cannot carry the lock.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing drops the flock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%s stayed locked by another writer for %s", path, lockWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// replace writes data to a temporary file next to path (named so that the
// textfile collector, which reads *.prom, ignores it) and renames it over
// path.
func replace(path, data string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// render writes every key's series, family by family, keys sorted.
func render(keys map[string]*keyState) string {
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, f := range families {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for _, key := range names {
			k := keys[key]
			label := `{key="` + escape(key) + `"`
			switch f.name {
			case mOutcome, mRuns:
				for _, o := range Outcomes {
					v := k.runs[o]
					if f.name == mOutcome {
						v = 0
						if k.outcome == o {
							v = 1
						}
					}
					fmt.Fprintf(&b, "%s%s,outcome=\"%s\"} %s\n", f.name, label, o, number(v))
				}
			default:
				fmt.Fprintf(&b, "%s%s} %s\n", f.name, label, number(k.value(f.name)))
			}
		}
	}
	return b.String()
}

func (k *keyState) value(name string) float64 {
	switch name {
	case mStart:
		return k.start
	case mEnd:
		return k.end
	case mDuration:
		return k.duration
	case mWait:
		return k.wait
	case mExit:
		return k.exit
	}
	return math.NaN()
}

func (k *keyState) set(name string, v float64) {
	switch name {
	case mStart:
		k.start = v
	case mEnd:
		k.end = v
	case mDuration:
		k.duration = v
	case mWait:
		k.wait = v
	case mExit:
		k.exit = v
	}
}

func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// escape quotes a label value as the text format wants it.
func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// parse reads back the series distlock wrote; anything else is skipped.
func parse(text string) map[string]*keyState {
	keys := map[string]*keyState{}
	for _, line := range strings.Split(text, "\n") {
		name, labels, v, ok := parseSample(line)
		if !ok || !slices.ContainsFunc(families, func(f family) bool { return f.name == name }) {
			continue
		}
		key, ok := labels["key"]
		if !ok {
			continue
		}
		k := keys[key]
		if k == nil {
			k = &keyState{runs: map[Outcome]float64{}}
			keys[key] = k
		}
		switch name {
		case mOutcome:
			if o := Outcome(labels["outcome"]); v == 1 && slices.Contains(Outcomes, o) {
				k.outcome = o
			}
		case mRuns:
			if o := Outcome(labels["outcome"]); slices.Contains(Outcomes, o) && v >= 0 {
				k.runs[o] = v
			}
		default:
			k.set(name, v)
		}
	}
	return keys
}

// parseSample reads `name{l="v",...} value`; ok is false for comments,
// blank lines and anything malformed.
func parseSample(line string) (name string, labels map[string]string, v float64, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, 0, false
	}
	name, rest := line[:i], line[i:]
	labels = map[string]string{}
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, `="`)
			if eq <= 0 {
				return "", nil, 0, false
			}
			lname := rest[:eq]
			val, n, good := unquote(rest[eq+2:])
			if !good {
				return "", nil, 0, false
			}
			labels[lname] = val
			rest = strings.TrimPrefix(rest[eq+2+n:], ",")
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, v, true
}

// unquote reads an escaped label value up to its closing quote and returns
// it and how many bytes it took, the quote included.
func unquote(s string) (string, int, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, true
		case '\\':
			if i+1 >= len(s) {
				return "", 0, false
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}
