package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// table prints the rows.
func table(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tfault\tmode\tsecs\tsections\tfaults\toverlaps\ttok-regr\tstale-acc\tstuck\tno-prog\tporcupine\tverdict\t")
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t\t\t\t\t\t\tskipped: %s\t\n", r.Engine, r.Fault, r.Mode, r.Skipped)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s/%s\t%s\t\n", r.Engine, r.Fault, r.Mode, r.Seconds,
			r.Sections, r.FaultsInjected, r.Overlaps, r.TokenRegressions, r.StaleWrites, r.Stuck, r.NoProgress,
			r.PorcupineLock, r.PorcupineRegister, verdictOf(r))
	}
	tw.Flush()
}

// verdictOf is the row's last column: ok, the unexpected violations, or
// the expected-unsafe note.
func verdictOf(r row) string {
	switch {
	case r.Skipped != "":
		return "skipped: " + r.Skipped
	case r.Error != "":
		return "ERROR: " + r.Error
	case len(r.Unexpected) > 0:
		return "UNEXPECTED: " + strings.Join(r.Unexpected, ", ")
	case r.Overlaps+r.TokenRegressions+r.StaleWrites > 0:
		return "expected-unsafe, shown"
	case r.Expected != "safe":
		return "ok (expected-unsafe, none shown)"
	}
	return "ok"
}
