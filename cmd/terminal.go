package cmd

import (
	"os"

	"github.com/fatih/color"
	"golang.org/x/term"
)

// terminal is f when f is an *os.File open on a terminal.
func terminal(f any) (*os.File, bool) {
	file, ok := f.(*os.File)
	if !ok || file == nil || !term.IsTerminal(int(file.Fd())) {
		return nil, false
	}
	return file, true
}

// isTerminal reports whether f is an *os.File open on a terminal.
func isTerminal(f any) bool {
	_, ok := terminal(f)
	return ok
}

// terminalWidth is the width of the terminal f, or 0 when unknown.
func terminalWidth(f *os.File) int {
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return w
}

// colorOn reports whether output to out may be coloured: only on a
// terminal, and never with --no-color, NO_COLOR set (and not empty, per
// no-color.org) or TERM=dumb.
func colorOn(noColor bool, out any) bool {
	if noColor || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(out)
}

// palette colours the states status and list show.
type palette struct {
	held, free, expiring, header *color.Color
}

// newPalette is the palette, its colours on or off.
func newPalette(on bool) palette {
	p := palette{
		held:     color.New(color.FgGreen),
		free:     color.New(color.FgYellow),
		expiring: color.New(color.FgRed, color.Bold),
		header:   color.New(color.Bold),
	}
	for _, c := range []*color.Color{p.held, p.free, p.expiring, p.header} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}
