package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// etcdGet GETs path on the client URL within d.
func etcdGet(addr, path string, d time.Duration) (string, error) {
	c := &http.Client{Timeout: d, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// etcdKV puts or reads a key through etcd's v3 JSON gateway.
func etcdKV(t *testing.T, addr, op string, req map[string]string) string {
	t.Helper()
	for k, v := range req {
		req[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: patience, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Post("http://"+addr+"/v3/kv/"+op, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %s %v", op, resp.Status, b, err)
	}
	return string(b)
}

func TestEtcd(t *testing.T) {
	p, err := StartEtcd(t.TempDir())
	p = started(t, p, err)
	addr := p.Addr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("Addr() = %q", addr)
	}
	if got, err := etcdGet(addr, "/version", patience); err != nil || !strings.Contains(got, "etcdserver") {
		t.Fatalf("/version: %q, %v", got, err)
	}
	etcdKV(t, addr, "put", map[string]string{"key": "k", "value": "kept"})

	// The readiness probe tells our member from another one on the port.
	if err := etcdMemberAnswers(t.Context(), addr, "someone-else", 1); err == nil {
		t.Fatal("probe accepted a member with another name")
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, err := etcdGet(addr, "/health", quiet); !isTimeout(err) {
		t.Fatalf("stopped etcd answered %q, %v; want a timeout", got, err)
	}
	if err := p.Cont(); err != nil {
		t.Fatal(err)
	}
	if got, err := etcdGet(addr, "/health", patience); err != nil || !strings.Contains(got, `"health":"true"`) {
		t.Fatalf("/health after Cont: %q, %v", got, err)
	}

	// Restart keeps the data directory and the address.
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != addr {
		t.Fatalf("Addr changed from %s to %s", addr, p.Addr())
	}
	got := etcdKV(t, addr, "range", map[string]string{"key": "k"})
	if want := base64.StdEncoding.EncodeToString([]byte("kept")); !strings.Contains(got, want) {
		t.Fatalf("range k after Restart = %s, want value %q", got, want)
	}

	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, addr)
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, err := etcdGet(addr, "/health", patience); err != nil || !strings.Contains(got, `"health":"true"`) {
		t.Fatalf("/health after Kill+Restart: %q, %v", got, err)
	}
}
