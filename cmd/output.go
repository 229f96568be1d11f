package cmd

import (
	"encoding/json"
	"io"

	"github.com/distlock/distlock/internal/lock"
)

// checkFormat validates -o against the formats a command accepts (64).
func checkFormat(o string, allowed ...string) error {
	for _, a := range allowed {
		if o == a {
			return nil
		}
	}
	return lock.Invalidf("--output must be one of %v, got %q", allowed, o)
}

// outJSON is -o json.
const outJSON = "json"

// writeOneJSON writes v as one compact line of JSON.
func writeOneJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
