package main

import (
	"fmt"
	"time"
)

// HoldersStat is one many-holders measurement: n concurrent `distlock
// run` holders of distinct keys on one engine, watched while idle.
type HoldersStat struct {
	Holders    int    `json:"holders"`
	Acquired   int    `json:"acquired"`
	ExitedOK   int    `json:"exited_0"`
	AllOK      bool   `json:"all_acquired_and_exited_0"`
	Failed     int    `json:"failed_runs,omitempty"`
	FirstError string `json:"first_error,omitempty"`
	// RampSeconds is from the launch to the last holder's "acquired".
	RampSeconds    float64 `json:"seconds_to_last_acquired"`
	TTLSeconds     float64 `json:"ttl_seconds"`
	WatchedSeconds float64 `json:"watched_seconds"`
	Watched        int     `json:"holders_watched"` // the ones still holding when the watch began
	idleFigures
}

// idleFigures is what the watched holders cost while idle.
type idleFigures struct {
	// PrivateMB is Private_Clean + Private_Dirty of distlock and its
	// helpers (watcher, pin), per holder: the mean and the largest.
	PrivateMB    float64 `json:"private_mb_per_holder"`
	PrivateMBMax float64 `json:"private_mb_max"`
	// DirtyMB is Private_Dirty alone, per holder (mean): its own heap and
	// stacks, without the binary's pages a lone distlock does not share.
	DirtyMB  float64 `json:"private_dirty_mb_per_holder"`
	ProcsPer float64 `json:"processes_per_holder"` // distlock and its helpers
	// RenewalsPerTTL3 is the renewals logged per holder per ttl/3 (target 1).
	RenewalsPerTTL3 float64 `json:"renewals_per_ttl_third"`
	// ReqPerSec is the engine's requests per second per holder (nil: not counted).
	ReqPerSec *float64 `json:"engine_requests_per_second_per_holder,omitempty"`
	Requests  *Count   `json:"engine_requests,omitempty"`
	// NotCounted is why the requests were not counted though they could be.
	NotCounted string `json:"not_counted,omitempty"`
	// CPUSecPerHour is the holders' CPU time (distlock and helpers), per
	// holder per hour.
	CPUSecPerHour float64 `json:"cpu_seconds_per_holder_per_hour"`
	// ServerCPU is the engine server's CPU over the watch, in % of one
	// core (nil: no server, the file engine).
	ServerCPU *float64 `json:"server_cpu_percent,omitempty"`
}

// scaleTTL is the holders' --ttl: issue 25's 6 s, a renewal every 2 s.
const scaleTTL = 6 * time.Second

// measureHolders launches n holders on e at once, waits until each has
// acquired or ended (at most ramp), lets the start-up settle, watches them
// for idle, then ends their commands and counts who exited 0.
func measureHolders(tmp, bin string, e engine, n int, idle, ramp time.Duration) (HoldersStat, error) {
	st := HoldersStat{Holders: n, TTLSeconds: scaleTTL.Seconds()}
	t0 := time.Now()
	f, err := launchFleet(tmp, bin, e, n, scaleTTL, fmt.Sprintf("%s-%d", e.name, n))
	if err != nil {
		return st, err
	}
	acquired, last := f.waitAcquired(ramp)
	st.Acquired = acquired
	if !last.IsZero() {
		st.RampSeconds = round2(last.Sub(t0).Seconds())
	}
	time.Sleep(scaleTTL / 2) // every holder has renewed once since the storm
	st.Watched, st.WatchedSeconds, st.idleFigures = f.watch(e, idle)
	st.ExitedOK = f.stop(30 * time.Second)
	st.FirstError, st.Failed = f.firstFailure()
	st.AllOK = st.Acquired == n && st.ExitedOK == n && st.Failed == 0
	return st, nil
}

// watch measures the holders still holding over d.
func (f *holderFleet) watch(e engine, d time.Duration) (int, float64, idleFigures) {
	var fig idleFigures
	procs := readProcs()
	var live []*holderRun
	var pids [][]int
	for _, h := range f.runs {
		if a, ended := h.state(); a && !ended {
			live = append(live, h)
			pids = append(pids, procs.helpers(h.cmd.Process.Pid))
		}
	}
	if len(live) == 0 {
		return 0, 0, fig
	}
	var w window
	if e.counter != nil {
		// A server at its connection limit refuses the counter's own
		// connection (ZooKeeper's srvr): not counted, said so.
		var err error
		if w, err = e.counter.begin(); err != nil {
			fig.NotCounted = firstLine(err.Error())
		}
	}
	srv0 := serverTicks(e, procs)
	t0 := time.Now()
	cpu0 := fleetCPU(pids)
	time.Sleep(d)
	t1 := time.Now()
	cpu1 := fleetCPU(pids)
	srv1 := serverTicks(e, readProcs())
	secs := t1.Sub(t0).Seconds()
	if w != nil {
		if n, err := w.end(); err != nil {
			fig.NotCounted = firstLine(err.Error())
		} else {
			fig.Requests = &n
			v := round2(float64(n.Requests) / secs / float64(len(live)))
			fig.ReqPerSec = &v
		}
	}
	if srv0 >= 0 && srv1 >= 0 {
		v := round2(float64(srv1-srv0) * clockTick.Seconds() / secs * 100)
		fig.ServerCPU = &v
	}
	fig.CPUSecPerHour = round2((cpu1 - cpu0).Seconds() / float64(len(live)) / secs * 3600)
	renewals := 0
	for _, h := range live {
		renewals += h.renewalsIn(t0, t1)
	}
	fig.RenewalsPerTTL3 = round2(float64(renewals) / float64(len(live)) / (secs / (scaleTTL / 3).Seconds()))
	fig.PrivateMB, fig.PrivateMBMax, fig.DirtyMB, fig.ProcsPer = fleetMemory(pids)
	return len(live), round2(secs), fig
}

// fleetCPU is the CPU time of every process in pids.
func fleetCPU(pids [][]int) time.Duration {
	var sum time.Duration
	for _, ps := range pids {
		for _, p := range ps {
			d, _ := cpuTime(p) // a process gone counts nothing
			sum += d
		}
	}
	return sum
}

// fleetMemory is the private memory per holder (the mean and the
// largest, MB), the private dirty memory per holder (the mean) and the
// processes per holder.
func fleetMemory(pids [][]int) (mean, most, dirty, procs float64) {
	var sum, dsum int64
	n := 0
	for _, ps := range pids {
		var kb int64
		for _, p := range ps {
			v, d, _ := privateKB(p) // a process gone counts nothing
			kb += v
			dsum += d
			n++
		}
		sum += kb
		most = max(most, float64(kb)/1024)
	}
	per := func(v int64) float64 { return round2(float64(v) / 1024 / float64(len(pids))) }
	return per(sum), round2(most), per(dsum), round2(float64(n) / float64(len(pids)))
}

// serverTicks is the CPU ticks of e's server and every descendant (with
// their reaped children: PostgreSQL's ended backends), -1 without one.
func serverTicks(e engine, procs procTable) int64 {
	if e.proc == nil {
		return -1
	}
	pid := e.proc.Pid()
	if pid == 0 {
		return -1
	}
	return procs.ticks(procs.tree(pid))
}
