package etcd

import "testing"

// TestContender pins which keys under a queue prefix are ours: a slot, an
// older build's mutex contender (a lease ID in hex), and nothing else; a
// longer --prefix nested in ours keeps its keys there too.
func TestContender(t *testing.T) {
	const qp = "p/k/"
	type want struct {
		i          int
		legacy, ok bool
	}
	for rest, w := range map[string]want{
		"694d7a1b2c3d4e5f": {0, true, true},
		"slot/0":           {0, false, true},
		"slot/12":          {12, false, true},
		"slot/":            {},
		"slot/x":           {},
		"slot/+1":          {},
		"slot/01":          {},
		"slot/-1":          {},
		"slot/0/slot/0":    {}, // slot 0 of key "0" of --prefix p/k/slot
		"a/b":              {},
		"":                 {},
		"not-hex":          {},
		"0x694d":           {},
		"deploy/slot/0":    {}, // slot 0 of key "deploy" of --prefix p/k
		"beef/694d":        {}, // an older build's contender of key "beef" of --prefix p/k
		"deploy#token":     {},
		"deploy#wait/694d": {},
		"#ledger/deploy/1": {},
	} {
		i, legacy, ok := contender(qp, qp+rest)
		if got := (want{i, legacy, ok}); ok != w.ok || ok && got != w {
			t.Errorf("contender(%q) = %+v, want %+v", qp+rest, got, w)
		}
	}
	if _, _, ok := contender(qp, "p/kk/slot/0"); ok {
		t.Error("a key outside the queue prefix taken as ours")
	}
}
