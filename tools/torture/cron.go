package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// cronRow is one engine's cron run (--cron): R replicas fire the same
// `distlock run --once-per S` entry in every one of N slots, each at the
// middle of the slot plus its own skew, and the tool counts how often
// each slot's command succeeded. Some slots' first command is made to
// fail (exit 3) and some to SIGKILL its own distlock: the slot must stay
// open and a later replica must run it. Exactly one success per slot is
// the property; a slot with none was missed, one with two ran twice.
type cronRow struct {
	Engine      string         `json:"engine"`
	Slots       int            `json:"slots"`
	Successes   int            `json:"successes"`
	Missed      int            `json:"missed_slots"`
	Twice       int            `json:"slots_run_twice"`
	FailedFirst int            `json:"first_runs_failed"`
	KilledFirst int            `json:"first_runs_killed"`
	Exits       map[string]int `json:"distlock_exits"`
	Seconds     float64        `json:"seconds"`
	Error       string         `json:"error,omitempty"`
}

// cronPlan is what each slot's first command does: ok, fail or kill.
func cronPlan(seed uint64, engine string, slots int) []string {
	rng := rand.New(rand.NewPCG(rowSeed(seed, engine+"_cron"), 2))
	plan := make([]string, slots)
	for i := range plan {
		switch x := rng.Float64(); {
		case x < 0.25:
			plan[i] = "fail"
		case x < 0.35:
			plan[i] = "kill"
		default:
			plan[i] = "ok"
		}
	}
	return plan
}

// runCron runs every engine's cron row at once (their slots share the
// clock) and prints the table.
func (ev env) runCron() int {
	rows := make([]cronRow, len(ev.cfg.engines))
	var wg sync.WaitGroup
	for i, name := range ev.cfg.engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows[i] = ev.cronRow(name)
		}()
	}
	wg.Wait()
	cronTable(os.Stdout, rows)
	if ev.cfg.out != "" {
		writeJSON(filepath.Join(ev.cfg.out, "cron.json"), rows)
	}
	status := 0
	for _, r := range rows {
		if r.Error != "" || r.Missed+r.Twice > 0 || r.Successes != r.Slots {
			status = 1
		}
	}
	return status
}

func (ev env) cronRow(name string) (r cronRow) {
	r = cronRow{Engine: name, Slots: ev.cfg.cronSlots}
	began := time.Now()
	defer func() { r.Seconds = time.Since(began).Round(100 * time.Millisecond).Seconds() }()
	dir, err := os.MkdirTemp("", "torture-cron-"+name+"-")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	e, err := startEngine(name, dir, ev.cfg.replicas, ev.cfg.ttl)
	if err != nil {
		r.Error = "start: " + err.Error()
		return r
	}
	defer e.close()
	c := &cronFire{ev: ev, e: e, engine: name, log: filepath.Join(dir, "runs.log"), exits: map[string]int{}}
	plan := cronPlan(ev.cfg.seed, name, r.Slots)
	c.schedule(plan)
	r.Exits = c.exits
	if err := c.count(&r, plan); err != nil {
		r.Error = err.Error()
	}
	return r
}

// cronFire fires one engine's replicas.
type cronFire struct {
	ev     env
	e      engine
	engine string
	log    string
	mu     sync.Mutex
	exits  map[string]int
	wg     sync.WaitGroup
}

// schedule fires every replica in every slot: at the middle of the slot,
// plus a skew drawn from ±cronSkew, and waits for the last run.
func (c *cronFire) schedule(plan []string) {
	cfg := c.ev.cfg
	rng := rand.New(rand.NewPCG(rowSeed(cfg.seed, c.engine+"_cron"), 3))
	per := cfg.oncePer
	next := time.Now().Truncate(per).Add(per)
	for _, first := range plan {
		for i := range cfg.replicas {
			skew := time.Duration((rng.Float64()*2 - 1) * float64(cfg.cronSkew))
			at := next.Add(per/2 + skew)
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				time.Sleep(time.Until(at))
				c.fire(i, first)
			}()
		}
		next = next.Add(per)
	}
	c.wg.Wait()
}

// fire is one replica's run in one slot.
func (c *cronFire) fire(replica int, first string) {
	cfg := c.ev.cfg
	cmd := exec.Command(c.ev.bin, "--backend", c.e.url(replica), "--connect-timeout", "2s",
		"run", "--key", "cron", "--once-per", cfg.oncePer.String(), "--ttl", cfg.ttl.String(),
		"--wait", (4 * cfg.ttl).String(), "--quiet", "--",
		c.ev.self, "cronprobe", "--log", c.log, "--first", first)
	err := cmd.Run()
	code := strconv.Itoa(exitCode(cmd, err))
	c.mu.Lock()
	c.exits[code]++
	c.mu.Unlock()
}

// count reads the commands' log into r: per slot, how many commands
// succeeded, and how many first runs failed or were killed.
func (c *cronFire) count(r *cronRow, plan []string) error {
	f, err := os.Open(c.log)
	if err != nil {
		return err
	}
	defer f.Close()
	oks := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			return fmt.Errorf("runs.log: bad line %q", sc.Text())
		}
		switch fields[1] {
		case "ok":
			oks[fields[0]]++
			r.Successes++
		case "fail":
			r.FailedFirst++
		case "killed":
			r.KilledFirst++
		}
	}
	for _, n := range oks {
		if n > 1 {
			r.Twice++
		}
	}
	r.Missed = max(0, len(plan)-len(oks))
	return sc.Err()
}

func cronTable(w io.Writer, rows []cronRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tslots\tsuccesses\tmissed\trun twice\tfirst failed\tfirst killed\tdistlock exits\tsecs\tverdict\t")
	for _, r := range rows {
		verdict := "ok"
		switch {
		case r.Error != "":
			verdict = "ERROR: " + r.Error
		case r.Missed+r.Twice > 0 || r.Successes != r.Slots:
			verdict = "UNEXPECTED"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%.0f\t%s\t\n", r.Engine, r.Slots, r.Successes, r.Missed, r.Twice,
			r.FailedFirst, r.KilledFirst, r.Exits, r.Seconds, verdict)
	}
	tw.Flush()
}
