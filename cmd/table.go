package cmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/distlock/distlock/internal/lock"
)

// holderText is the HOLDER column: user@host pid N, and the kind of hold
// when no process renews the lease (min-hold, handle).
func holderText(h lock.Holder) string {
	s := h.Meta.Host
	if s == "" {
		s = "unknown host"
	}
	if h.Meta.User != "" {
		s = h.Meta.User + "@" + s
	}
	if h.Meta.PID > 0 {
		s += " pid " + strconv.Itoa(h.Meta.PID)
	}
	if h.Hold != "" {
		s += " (" + h.Hold + ")" // no process renews it; it runs out by itself
	}
	return s
}

// printTable prints held locks as columns aligned on their plain text;
// colour is added around the padded cells, so escapes never skew widths.
func printTable(w io.Writer, pal palette, hs []lock.Holder, now time.Time) {
	header := []string{"KEY", "TOKEN", "HOLDER", "NOTE", "HELD FOR", "EXPIRES IN"}
	rows := make([][]string, len(hs))
	for i, h := range hs {
		rows[i] = []string{
			printable(h.Key),
			strconv.FormatUint(h.Token, 10),
			printable(holderText(h)),
			orDash(printable(h.Meta.Note)),
			heldForText(h, now),
			expiresText(h),
		}
	}
	width := make([]int, len(header))
	for c, s := range header {
		width[c] = utf8.RuneCountInString(s)
	}
	for _, r := range rows {
		for c, s := range r {
			width[c] = max(width[c], utf8.RuneCountInString(s))
		}
	}
	line := func(cells []string, paint func(c int, s string) string) {
		var b strings.Builder
		for c, s := range cells {
			if c == len(cells)-1 {
				b.WriteString(paint(c, s))
				break
			}
			b.WriteString(paint(c, s+strings.Repeat(" ", width[c]-utf8.RuneCountInString(s))))
			b.WriteString("  ")
		}
		fmt.Fprintln(w, b.String())
	}
	line(header, func(_ int, s string) string { return pal.header.Sprint(s) })
	for i, r := range rows {
		h := hs[i]
		line(r, func(c int, s string) string {
			switch {
			case c == 0:
				return pal.held.Sprint(s)
			case c == len(r)-1 && expiring(h):
				return pal.expiring.Sprint(s)
			}
			return s
		})
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
