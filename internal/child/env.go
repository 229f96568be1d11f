package child

import "strings"

// WithoutEnv returns env (KEY=VALUE pairs) without the variables named in
// names: secrets meant for distlock alone, which the command must not
// inherit.
func WithoutEnv(env []string, names ...string) []string {
	if len(names) == 0 {
		return env
	}
	drop := make(map[string]bool, len(names))
	for _, n := range names {
		drop[n] = true
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return out
}
