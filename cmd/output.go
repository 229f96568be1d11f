package cmd

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

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

// textOrJSON adds -o text|json to c, the output flag of the commands that
// print a report (their run checks the value).
func textOrJSON(c *cobra.Command, out *string) {
	c.Flags().StringVarP(out, "output", "o", "text", "output format: text or json")
}

// outJSON is -o json.
const outJSON = "json"

// writeOneJSON writes v as one compact line of JSON.
func writeOneJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
