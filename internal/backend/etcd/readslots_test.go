package etcd

import (
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/distlock/distlock/internal/lock"
)

// TestReadSlotsLimits pins readSlots' limit rule (lock.Refuse with
// SeenLimit) over the keys of a queue prefix: a slot's record gives its
// holder's limit; a slot key without one only a lower bound (above the
// slot); an older build's mutex contender a limit of 1. And whom a busy
// answer names: the oldest holder, lock.Oldest.
func TestReadSlotsLimits(t *testing.T) {
	const qp = "p/k/"
	slotTok := func(i, limit int, rev int64, token uint64) *mvccpb.KeyValue {
		v := "garbage"
		if limit > 0 {
			v = encodeJSON(slotRecord{record: record{Token: token}, Limit: limit, Slot: i})
		}
		return &mvccpb.KeyValue{Key: []byte(qp + "slot/" + string(rune('0'+i))), Value: []byte(v), CreateRevision: rev}
	}
	slot := func(i, limit int, rev int64) *mvccpb.KeyValue { return slotTok(i, limit, rev, uint64(rev)) }
	legacy := &mvccpb.KeyValue{Key: []byte(qp + "694d"), Value: []byte(`{"owner":"old"}`), CreateRevision: 3}
	cases := []struct {
		name     string
		want     int
		kvs      []*mvccpb.KeyValue
		have     int // 0: no mismatch
		free     int
		oldest   int64
		isLegacy bool
	}{
		{"free", 2, nil, 0, 0, 0, false},
		{"one of two held", 2, []*mvccpb.KeyValue{slot(0, 2, 5)}, 0, 1, 5, false},
		{"full", 2, []*mvccpb.KeyValue{slot(0, 2, 7), slot(1, 2, 5)}, 0, -1, 5, false},
		{"another limit", 2, []*mvccpb.KeyValue{slot(0, 3, 5)}, 3, 0, 0, false},
		{"first mismatch named", 2, []*mvccpb.KeyValue{slot(0, 3, 5), slot(1, 4, 6)}, 3, 0, 0, false},
		{"no record below the limit", 2, []*mvccpb.KeyValue{slot(1, 0, 5)}, 0, 0, 5, false},
		{"no record in slot 0", 3, []*mvccpb.KeyValue{slot(0, 0, 5)}, 0, 1, 5, false},
		{"no record at the limit", 2, []*mvccpb.KeyValue{slot(2, 0, 5)}, 3, 0, 0, false},
		{"own limit but slot past it", 2, []*mvccpb.KeyValue{slot(3, 2, 5)}, 4, 0, 0, false},
		{"older build's mutex, mutex wanted", 1, []*mvccpb.KeyValue{legacy}, 0, -1, 3, true},
		{"older build's mutex, semaphore wanted", 2, []*mvccpb.KeyValue{legacy}, 1, 0, 0, false},
		// The oldest holder is the lowest token, not the first created;
		// one whose record cannot be read comes last.
		{"oldest by token", 2, []*mvccpb.KeyValue{slotTok(0, 2, 5, 9), slotTok(1, 2, 7, 6)}, 0, -1, 7, false},
		{"unreadable record last", 3, []*mvccpb.KeyValue{slot(0, 0, 4), slotTok(1, 3, 6, 8)}, 0, 2, 6, false},
		{"mutex slot, semaphore wanted", 3, []*mvccpb.KeyValue{slot(0, 1, 5)}, 1, 0, 0, false},
	}
	for _, c := range cases {
		sr, err := readSlots(lock.Request{Key: "k", Limit: c.want}, qp, c.kvs)
		var mm *lock.LimitMismatchError
		switch {
		case c.have != 0:
			if !errors.As(err, &mm) || mm.Have != c.have || mm.Want != c.want || mm.Key != "k" {
				t.Errorf("%s: %v, want a limit mismatch, have %d", c.name, err, c.have)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var oldest int64
		if sr.oldest != nil {
			oldest = sr.oldest.CreateRevision
		}
		if sr.free != c.free || oldest != c.oldest || sr.legacy != c.isLegacy {
			t.Errorf("%s: free %d oldest %d legacy %v, want %d %d %v", c.name, sr.free, oldest, sr.legacy, c.free, c.oldest, c.isLegacy)
		}
	}
}
