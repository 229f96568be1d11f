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
	fmt.Fprintf(w, "\n%-30s %8s %8s %11s %9s %13s %12s %12s\n", "handover (8 contenders)", "p50 ms", "p99 ms", "sections/s", "waiters", "req/handover", "req/section", "req/waiter")
	fmt.Fprintf(w, "%-30s %8s %8s %11s %9s %13s %12s %12s\n", "", "", "", "", "×handover", "(raw)", "(alone)", "/handover")
	for _, k := range hk {
		h := r.Handover[k]
		raw, alone, per := "-", "-", "-"
		if h.Counted {
			raw, alone, per = fmt.Sprintf("%.2f", h.ReqPerHandover), fmt.Sprintf("%.2f", h.ReqPerSection), fmt.Sprintf("%.2f", h.ReqPerWaiterPerHandover)
		}
		fmt.Fprintf(w, "%-30s %8.2f %8.2f %11.1f %9d %13s %12s %12s\n", k, h.P50ms, h.P99ms, h.PerSecond, h.WaiterHandovers, raw, alone, per)
	}
	fmt.Fprintln(w, "requests per section, by command (alone → contended):")
	for _, k := range hk {
		h := r.Handover[k]
		if !h.Counted {
			continue
		}
		fmt.Fprintf(w, "  %s\n    alone:     %s\n    contended: %s\n", k, orDash(h.Uncontended.breakdown(h.Sections)), orDash(h.Requests.breakdown(h.Sections)))
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
