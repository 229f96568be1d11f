package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// section is one critical section as the probe and the register saw it.
// Times are wall-clock nanoseconds (one clock for the whole machine).
type section struct {
	ID        int    `json:"id"`
	Contender int    `json:"contender"`
	Token     uint64 `json:"token"`
	Slot      string `json:"slot,omitempty"`
	PID       int    `json:"distlock_pid"`
	Launched  int64  `json:"launched"` // when its distlock was started
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
	// Clean: the probe reported its end; else End is when its connection
	// closed (it was killed).
	Clean bool `json:"clean"`
}

// write is one fenced write: the register accepts it only if its token is
// at least the highest it has accepted.
type write struct {
	Section int    `json:"section"`
	Token   uint64 `json:"token"`
	Call    int64  `json:"call"`
	Return  int64  `json:"return"`
	OK      bool   `json:"ok"`
}

// register is the fenced register and the sections' log, served over
// loopback TCP to the probes.
type register struct {
	ln net.Listener

	mu       sync.Mutex
	rng      *rand.Rand
	max      uint64
	sections []*section
	writes   []write
	open     map[int]*section
	stall    time.Duration // the next section's hold, when set
	stalled  chan *section // told of the section that took the stall
	conns    sync.WaitGroup
}

func newRegister(seed uint64) (*register, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &register{ln: ln, rng: rand.New(rand.NewPCG(seed, 7)), open: map[int]*section{}}
	go r.serve()
	return r, nil
}

func (r *register) addr() string { return r.ln.Addr().String() }

func (r *register) close() {
	r.ln.Close()
	r.conns.Wait()
}

func (r *register) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.conns.Add(1)
		go func() {
			defer r.conns.Done()
			r.handle(c)
		}()
	}
}

// handle serves one probe: one section.
func (r *register) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	s, err := parseStart(line)
	if err != nil {
		return
	}
	hold := r.begin(s)
	fmt.Fprintf(c, "hold %d\n", int64(hold))
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			r.finish(s, time.Now().UnixNano(), false)
			return
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "write":
			tok, _ := strconv.ParseUint(f[1], 10, 64)
			ok := r.fencedWrite(s.ID, tok)
			fmt.Fprintln(c, map[bool]string{true: "ok", false: "rej"}[ok])
		case len(f) == 2 && f[0] == "end":
			end, _ := strconv.ParseInt(f[1], 10, 64)
			r.finish(s, end, true)
			return
		}
	}
}

func parseStart(line string) (*section, error) {
	f := strings.Fields(line)
	if len(f) != 7 || f[0] != "start" {
		return nil, fmt.Errorf("bad start %q", line)
	}
	s := &section{Slot: f[4]}
	var err1, err2, err3, err4, err5 error
	s.Token, err1 = strconv.ParseUint(f[1], 10, 64)
	s.Contender, err2 = strconv.Atoi(f[2])
	s.PID, err3 = strconv.Atoi(f[3])
	s.Start, err4 = strconv.ParseInt(f[5], 10, 64)
	s.Launched, err5 = strconv.ParseInt(f[6], 10, 64)
	if s.Slot == "-" {
		s.Slot = ""
	}
	for _, err := range []error{err1, err2, err3, err4, err5} {
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// begin records a section's start and says how long it is to hold: a
// short random while, or the stall a fault asked for.
func (r *register) begin(s *section) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.ID = len(r.sections)
	r.sections = append(r.sections, s)
	r.open[s.ID] = s
	if r.stall > 0 {
		hold := r.stall
		r.stall = 0
		r.stalled <- s
		return hold
	}
	return time.Duration(20+r.rng.IntN(60)) * time.Millisecond
}

func (r *register) finish(s *section, end int64, clean bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.End, s.Clean = end, clean
	delete(r.open, s.ID)
}

func (r *register) fencedWrite(id int, tok uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := write{Section: id, Token: tok, Call: time.Now().UnixNano()}
	if tok >= r.max {
		r.max, w.OK = tok, true
	}
	w.Return = time.Now().UnixNano()
	r.writes = append(r.writes, w)
	return w.OK
}

// requestStall makes the next section to start hold for d; the returned
// channel yields that section.
func (r *register) requestStall(d time.Duration) <-chan *section {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan *section, 1)
	r.stall, r.stalled = d, ch
	return ch
}

// cancelStall withdraws a stall nobody took.
func (r *register) cancelStall() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stall = 0
}

// history copies what was recorded. Sections still open are given an end
// of now (the tool calls this only after every contender has exited).
func (r *register) history() ([]section, []write) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now().UnixNano()
	ss := make([]section, len(r.sections))
	for i, s := range r.sections {
		ss[i] = *s
		if _, open := r.open[s.ID]; open {
			ss[i].End = now
		}
	}
	return ss, append([]write(nil), r.writes...)
}
