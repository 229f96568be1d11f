package server

import (
	"errors"
	"testing"
)

// BenchmarkStart measures how long each server takes from Start until it
// answers (template copies included, one-time template builds excluded),
// plus Close.
func BenchmarkStart(b *testing.B) {
	for _, s := range []struct {
		name  string
		start func(string) (*Process, error)
	}{
		{"redis", StartRedis},
		{"etcd", StartEtcd},
		{"zookeeper", StartZooKeeper},
		{"postgres", StartPostgres},
		{"mariadb", StartMariaDB},
	} {
		b.Run(s.name, func(b *testing.B) {
			// Once outside the timer: builds the template if this machine has none.
			p, err := s.start(b.TempDir())
			if errors.Is(err, ErrNoBinary) {
				b.Skip(err)
			}
			if err != nil {
				b.Fatal(err)
			}
			_ = p.Close()
			b.ResetTimer()
			for b.Loop() {
				p, err := s.start(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
