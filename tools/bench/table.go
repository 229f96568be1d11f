package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

func printTable(w io.Writer, r *Results, cmds []command, engines []engine, bins []binary) {
	fmt.Fprintf(w, "distlock benchmark — %s, %d rounds; load average %s\n", r.Machine, r.Rounds, strings.Join(r.LoadAvg, " → "))
	fmt.Fprintf(w, "build: %s\n\n", r.Build)
	fmt.Fprintf(w, "%-40s %10s %10s\n", "start-up (whole process)", "median ms", "p90 ms")
	for _, c := range cmds {
		s := r.Startup[c.name]
		fmt.Fprintf(w, "%-40s %10.2f %10.2f\n", c.name, s.Median, s.P90)
	}
	fmt.Fprintln(w)
	for _, e := range engines {
		for _, b := range bins {
			fmt.Fprintf(w, "distlock run %-18s over its floor (version + true): %+.2f ms\n", b.name(e.name), r.Overhead[b.name(e.name)])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Ratios)) {
		fmt.Fprintf(w, "ratio %-48s %.2f\n", k, r.Ratios[k])
	}

	hk := slices.Sorted(maps.Keys(r.Handover))
	fmt.Fprintf(w, "\n%-24s %7s %7s %10s %9s %8s %12s %11s %10s %11s\n", "handover (8 contenders)", "p50 ms", "p99 ms", "sections/s", "waiters", "waiting", "req/handover", "req/section", "req/waiter", "extra req/")
	fmt.Fprintf(w, "%-24s %7s %7s %10s %9s %8s %12s %11s %10s %11s\n", "", "", "", "", "×handover", "runs", "(raw)", "(alone)", "/handover", "waiting run")
	for _, k := range hk {
		h := r.Handover[k]
		raw, alone, per, run := "-", "-", "-", "-"
		if h.Counted {
			raw, alone = fmt.Sprintf("%.2f", h.ReqPerHandover), fmt.Sprintf("%.2f", h.ReqPerSection)
			per, run = fmt.Sprintf("%.2f", h.ReqPerWaiterPerHandover), fmt.Sprintf("%.2f", h.ReqPerWaitingRun)
		}
		fmt.Fprintf(w, "%-24s %7.2f %7.2f %10.1f %9d %8d %12s %11s %10s %11s\n", k, h.P50ms, h.P99ms, h.PerSecond, h.WaiterHandovers, h.WaitingRuns, raw, alone, per, run)
	}
	fmt.Fprintln(w, "(a run waits across a handover when launched before the previous child ended and its own child starts after the next one's;")
	fmt.Fprintln(w, " req/waiter/handover = (contended − alone requests) / waiter×handovers; extra req/waiting run = the same / waiting runs)")
	fmt.Fprintln(w, "requests per section, by command (alone → contended):")
	for _, k := range hk {
		h := r.Handover[k]
		if !h.Counted {
			continue
		}
		fmt.Fprintf(w, "  %s\n    alone:     %s\n    contended: %s\n", k, orDash(h.Uncontended.breakdown(h.Sections)), orDash(h.Requests.breakdown(h.Sections)))
		for _, s := range topConnections(h.Requests.Connections, 4) {
			fmt.Fprintf(w, "      %s\n", s)
		}
	}

	fmt.Fprintf(w, "\n%-30s %8s %8s %7s %9s %10s %9s %12s\n", "idle holder (--ttl 3s)", "RSS kB", "anon kB", "CPU ms", "renewals", "per ttl/3", "requests", "req/renewal")
	for _, e := range engines {
		for _, b := range bins {
			h := r.Holder[b.name(e.name)]
			req, per := "-", "-"
			if h.Requests != nil {
				req = fmt.Sprint(h.Requests.Requests)
				if h.Renewals > 0 {
					per = fmt.Sprintf("%.2f", h.ReqPerRenewal)
				}
			}
			fmt.Fprintf(w, "%-30s %8d %8d %7.0f %9d %10.2f %9s %12s\n", b.name(e.name), h.RSSkB, h.AnonkB, h.CPUms, h.Renewals, h.RenewalsPerTTL3, req, per)
		}
	}
	fmt.Fprintf(w, "(over %.1f s; renewals are the holder's \"renewed\" log lines)\n", holderSeconds(r))
	for _, e := range engines {
		for _, b := range bins {
			if h := r.Holder[b.name(e.name)]; h.Requests != nil && len(h.Requests.ByCommand) > 0 {
				fmt.Fprintf(w, "  %s requests: %s\n", b.name(e.name), h.Requests.breakdown(1))
			}
		}
	}

	fmt.Fprintln(w, "\nengine requests counted:")
	for _, e := range engines {
		fmt.Fprintf(w, "  %s: %s\n", e.name, r.Counted[e.name])
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func holderSeconds(r *Results) float64 {
	for _, h := range r.Holder {
		return h.WatchedSeconds
	}
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// topConnections is the n commonest command sequences of connections,
// as "N connections: hello, ping, …".
func topConnections(m map[string]int, n int) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if d := m[b] - m[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var out []string
	for i, k := range keys {
		if i == n {
			out = append(out, fmt.Sprintf("(and %d other sequences)", len(keys)-n))
			break
		}
		out = append(out, fmt.Sprintf("%3d connections: %s", m[k], k))
	}
	return out
}
