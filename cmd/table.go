package cmd

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

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

// tableRow is one row of the list table: its cells in plain text, and
// whether its lease is expiring (its last cell is painted).
type tableRow struct {
	cells    []string
	expiring bool
}

// printTable prints held locks as columns (text/tabwriter), one row per
// holder: a semaphore has a row per held slot, and a SLOT column appears
// when any is listed. Columns are aligned on the plain text; colour is
// added afterwards around the key and the last cell, whose text is known,
// so escapes never skew widths.
func printTable(w io.Writer, pal palette, sts []keyStatus, now time.Time) error {
	slots := false
	for _, st := range sts {
		slots = slots || semaphore(st.all)
	}
	header := []string{"KEY", "TOKEN", "HOLDER", "NOTE", "HELD FOR", "EXPIRES IN"}
	if slots {
		header = append([]string{"KEY", "SLOT"}, header[1:]...)
	}
	var rows []tableRow
	for _, st := range sts {
		for _, h := range st.all {
			cells := []string{printable(st.key), strconv.FormatUint(h.Token, 10), printable(holderText(h)),
				orDash(printable(h.Meta.Note)), heldForText(h, now), expiresText(h)}
			if slots {
				slot := "-"
				if semaphore(st.all) {
					slot = fmt.Sprintf("%d (%d/%d)", h.Slot, len(st.all), st.all[0].Limit)
				}
				cells = append([]string{cells[0], slot}, cells[1:]...)
			}
			rows = append(rows, tableRow{cells: cells, expiring: expiring(h)})
		}
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	var out strings.Builder
	out.WriteString(pal.header.Sprint(lines[0]) + "\n")
	for i, line := range lines[1:] {
		out.WriteString(paintRow(pal, line, rows[i]) + "\n")
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// paintRow colours a laid-out row: its key, and its last cell when the
// lease is expiring. Cells cannot hold tabs or escapes (printable).
func paintRow(pal palette, line string, r tableRow) string {
	key, last := r.cells[0], r.cells[len(r.cells)-1]
	mid := strings.TrimPrefix(line, key)
	// The key's cell is the key and its padding, up to the 2-space gap.
	pad := max(0, len(mid)-len(strings.TrimLeft(mid, " "))-2)
	cell, mid := key+mid[:pad], mid[pad:]
	end := ""
	if r.expiring && strings.HasSuffix(mid, last) {
		mid, end = strings.TrimSuffix(mid, last), pal.expiring.Sprint(last)
	}
	return pal.held.Sprint(cell) + mid + end
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
