package memstore

import (
	"context"
	"maps"
	"slices"
)

// PutEntry keeps a copy of data as entry id of key's ledger (lock.Ledger).
func (s *Store) PutEntry(ctx context.Context, key, id string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.Ledger != nil {
		return s.faults.Ledger
	}
	if s.ledger == nil {
		s.ledger = map[string]map[string][]byte{}
	}
	if s.ledger[key] == nil {
		s.ledger[key] = map[string][]byte{}
	}
	s.ledger[key][id] = slices.Clone(data)
	return nil
}

// Entries returns a copy of key's ledger.
func (s *Store) Entries(ctx context.Context, key string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.Ledger != nil {
		return nil, s.faults.Ledger
	}
	out := make(map[string][]byte, len(s.ledger[key]))
	for id, data := range s.ledger[key] {
		out[id] = slices.Clone(data)
	}
	return out, nil
}

// DeleteEntries removes ids from key's ledger.
func (s *Store) DeleteEntries(ctx context.Context, key string, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults.Ledger != nil {
		return s.faults.Ledger
	}
	maps.DeleteFunc(s.ledger[key], func(id string, _ []byte) bool { return slices.Contains(ids, id) })
	return nil
}
