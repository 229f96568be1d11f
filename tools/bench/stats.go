package main

import (
	"slices"
	"time"
)

func stat(ds []time.Duration) Stat {
	s := slices.Clone(ds)
	slices.Sort(s)
	return Stat{Median: ms(quantile(s, 0.5)), P90: ms(quantile(s, 0.9)), N: len(s)}
}

// quantile of sorted s (nearest rank).
func quantile(s []time.Duration, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return round2(float64(d) / float64(time.Millisecond)) }
func round2(f float64) float64   { return float64(int64(f*100+0.5)) / 100 }
