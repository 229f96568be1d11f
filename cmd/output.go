package cmd

import (
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/distlock/distlock/internal/lock"
)

// outputFlag is a command's -o: its default, its help, the formats it
// prints (what completion offers), and check, which refuses any other
// (64).
type outputFlag struct {
	def, usage string
	formats    []string
	check      func(format string) error
}

// formatsOf is an -o that takes formats, refused in the words of oneOf.
func formatsOf(def, usage string, formats ...string) outputFlag {
	return outputFlag{def, usage, formats, oneOf(formats...)}
}

// textOrJSON is the -o of the commands that print a report.
var textOrJSON = formatsOf("text", "output format: text or json", "text", outJSON)

// oneOf is the check of an -o that takes the formats allowed; it refuses
// any other in the same words for every command: "--output must be text
// or json", "--output must be shell, env or json".
func oneOf(allowed ...string) func(format string) error {
	return func(o string) error {
		if slices.Contains(allowed, o) {
			return nil
		}
		return lock.Invalidf("--output must be %s, got %q", orList(allowed), o)
	}
}

// orList is "a", "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// outJSON is -o json.
const outJSON = "json"

// writeJSON writes v as one compact line of JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
