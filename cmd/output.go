package cmd

import (
	"encoding/json"
	"io"
	"slices"

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

var (
	// textOrJSON is the -o of the commands that print a report.
	textOrJSON = outputFlag{"text", "output format: text or json", []string{"text", outJSON}, checkOutput}
	// textOrJSONOf is textOrJSON refused in the words of oneOf (release,
	// version).
	textOrJSONOf = formatsOf("text", "output format: text or json", "text", outJSON)
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
