package cmd

import (
	"encoding/json"
	"io"
	"slices"

	"github.com/distlock/distlock/internal/lock"
)

// outputFlag is a command's -o: its default, its help, and check, which
// refuses a format the command does not print (64).
type outputFlag struct {
	def, usage string
	check      func(format string) error
}

var (
	// textOrJSON is the -o of the commands that print a report.
	textOrJSON = outputFlag{"text", "output format: text or json", checkOutput}
	// textOrJSONOf is textOrJSON refused in the words of oneOf (release,
	// version).
	textOrJSONOf = outputFlag{"text", "output format: text or json", oneOf("text", outJSON)}
)

// checkOutput is the check of -o text|json.
func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return lock.Invalidf("--output must be text or json, got %q", o)
	}
	return nil
}

// oneOf is the check of an -o that takes the formats allowed.
func oneOf(allowed ...string) func(format string) error {
	return func(o string) error {
		if slices.Contains(allowed, o) {
			return nil
		}
		return lock.Invalidf("--output must be one of %v, got %q", allowed, o)
	}
}

// outJSON is -o json.
const outJSON = "json"

// writeJSON writes v as one compact line of JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
