package cmd

import (
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/distlock/distlock/internal/backend"
)

// The lists of engines that help and completion show, made from the
// registry (internal/backend.Engines): a new engine appears in all of
// them by its entry alone.

// backendFlagHelp is --backend's help: every engine's URL form, then the
// TLS schemes.
func backendFlagHelp() string {
	var forms, tls, param []string
	for _, e := range backend.Engines() {
		forms = append(forms, e.Form)
		if e.TLS != "" {
			tls = append(tls, e.TLS+"://")
		}
		if e.TLSParam {
			param = append(param, e.Scheme+"://")
		}
	}
	return "engine URL: " + strings.Join(forms, ", ") + " (TLS: " + strings.Join(tls, ", ") +
		", or ?tls=true on " + strings.Join(param, ", ") + "; env DISTLOCK_BACKEND; default file)"
}

// backendCompletions are what --backend completes to: the start of every
// engine's URLs, and of their TLS twins; the first is the default.
func backendCompletions() []cobra.Completion {
	var out []cobra.Completion
	for i, e := range backend.Engines() {
		desc := e.Name
		if i == 0 {
			desc += " (the default)"
		}
		out = append(out, cobra.CompletionWithDesc(e.Start(), desc))
		if e.TLS != "" {
			out = append(out, cobra.CompletionWithDesc(e.TLS+"://", e.Name+", over TLS"))
		}
	}
	return out
}

// engineNames names every engine in a sentence: "a local file
// directory, a single Redis, …, PostgreSQL or MySQL/MariaDB".
func engineNames() string {
	var names []string
	for _, e := range backend.Engines() {
		names = append(names, e.Name)
	}
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

// engineTable is a help table of what text says of each engine: its
// scheme, then the text wrapped under a hanging indent. Engines saying
// the same share a row ("postgres, mysql"); an empty text says nothing
// more than the row before it (a Redis topology's).
func engineTable(text func(backend.Engine) string) string {
	type row struct{ label, text string }
	var rows []row
	for _, e := range backend.Engines() {
		t := text(e)
		switch {
		case t == "":
		case len(rows) > 0 && rows[len(rows)-1].text == t:
			rows[len(rows)-1].label += ", " + e.Scheme
		default:
			rows = append(rows, row{e.Scheme, t})
		}
	}
	const hang = "         "
	var b strings.Builder
	for _, r := range rows {
		lines := wrapWords(r.text, helpWidth-len(hang))
		if label := "  " + r.label; len(label) < len(hang) {
			lines[0] = label + hang[len(label):] + lines[0]
		} else {
			b.WriteString(label + "\n")
			lines[0] = hang + lines[0]
		}
		b.WriteString(strings.Join(lines, "\n"+hang) + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// helpWidth is how wide the long help's lines are at most.
const helpWidth = 76

// wrapWords breaks text into lines of at most width (longer words stand
// alone).
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width:
			lines = append(lines, line)
			line = w
		default:
			line += " " + w
		}
	}
	return append(lines, line)
}
