package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// registerModel is the fenced register: the state is the highest token
// accepted; write(token) succeeds iff token ≥ state.
var registerModel = porcupine.Model{
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		st, tok, ok := state.(uint64), input.(uint64), output.(bool)
		if tok >= st {
			return ok, tok
		}
		return !ok, st
	},
	DescribeOperation: func(input, output any) string {
		return fmt.Sprintf("write(%d) -> %v", input.(uint64), output.(bool))
	},
	DescribeState: func(state any) string { return fmt.Sprintf("max=%d", state.(uint64)) },
}

// lockOp is one end of a critical section: enter or exit by section id.
type lockOp struct {
	enter bool
	id    int
	token uint64
}

// lockModel is the lock itself, with limit holders allowed: the state is
// the set of sections inside. Each section is two instantaneous
// operations, enter at its start and exit at its end, so any section that
// starts while limit others are inside makes the history non-linearizable,
// and the visualization shows the sections side by side.
func lockModel(limit int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return "" },
		Step: func(state, input, _ any) (bool, any) {
			in, op := decodeSet(state.(string)), input.(lockOp)
			if op.enter {
				if len(in) >= limit {
					return false, state
				}
				return true, encodeSet(append(in, op.id))
			}
			for i, id := range in {
				if id == op.id {
					return true, encodeSet(append(in[:i:i], in[i+1:]...))
				}
			}
			return false, state
		},
		DescribeOperation: func(input, _ any) string {
			op := input.(lockOp)
			verb := "exit"
			if op.enter {
				verb = "enter"
			}
			return fmt.Sprintf("%s #%d token %d", verb, op.id, op.token)
		},
		DescribeState: func(state any) string { return "inside: [" + state.(string) + "]" },
	}
}

func decodeSet(s string) []int {
	var ids []int
	var id int
	for _, f := range splitComma(s) {
		fmt.Sscan(f, &id)
		ids = append(ids, id)
	}
	return ids
}

func encodeSet(ids []int) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(id)
	}
	return s
}

func splitComma(s string) []string {
	var out []string
	for start, i := 0, 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func registerOps(ws []write, ss []section) []porcupine.Operation {
	owner := map[int]int{}
	for _, s := range ss {
		owner[s.ID] = s.Contender
	}
	ops := make([]porcupine.Operation, 0, len(ws))
	for _, w := range ws {
		ops = append(ops, porcupine.Operation{ClientId: owner[w.Section], Input: w.Token, Call: w.Call, Output: w.OK, Return: w.Return})
	}
	return ops
}

func lockOps(ss []section) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, 2*len(ss))
	for _, s := range ss {
		ops = append(ops,
			porcupine.Operation{ClientId: s.Contender, Input: lockOp{true, s.ID, s.Token}, Call: s.Start, Output: true, Return: s.Start},
			porcupine.Operation{ClientId: s.Contender, Input: lockOp{false, s.ID, s.Token}, Call: s.End, Output: true, Return: s.End})
	}
	return ops
}

// linearizable checks a history with porcupine; when visualize is set (or
// the history is not linearizable) and dir is not empty, it writes the
// HTML visualization to dir/name.html. It reports "ok", "illegal" or
// "unknown" (the checker timed out).
func linearizable(m porcupine.Model, ops []porcupine.Operation, dir, name string, visualize bool) (string, error) {
	res, info := porcupine.CheckOperationsVerbose(m, ops, 20*time.Second)
	verdict := map[porcupine.CheckResult]string{porcupine.Ok: "ok", porcupine.Illegal: "illegal", porcupine.Unknown: "unknown"}[res]
	if dir != "" && (visualize || res != porcupine.Ok) {
		if err := porcupine.VisualizePath(m, info, filepath.Join(dir, name+".html")); err != nil {
			return verdict, err
		}
	}
	return verdict, nil
}
