package etcd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/testenv/wait"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/distlock/distlock/internal/lock"
)

// writeCert writes a PEM certificate and key signed by parent (self-signed
// when parent is nil) and returns the cert, key and file paths.
func writeCert(t *testing.T, dir, name string, isCA bool, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:                  isCA,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		BasicConstraintsValid: true,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key, certFile, keyFile
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, caFile, _ := writeCert(t, dir, "ca", true, nil, nil)
	_, _, srvCert, srvKey := writeCert(t, dir, "server", false, ca, caKey)
	_, _, cliCert, cliKey := writeCert(t, dir, "client", false, ca, caKey)
	_, _, otherCA, _ := writeCert(t, dir, "other-ca", true, nil, nil)

	cfg := embed.NewConfig()
	cfg.Name = "tls"
	cfg.Dir = filepath.Join(dir, "data")
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.TickMs, cfg.ElectionMs = 10, 50
	lc := url.URL{Scheme: "https", Host: "127.0.0.1:0"}
	lp := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{lc}, []url.URL{lc}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{lp}, []url.URL{lp}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo = transport.TLSInfo{CertFile: srvCert, KeyFile: srvKey, TrustedCAFile: caFile, ClientCertAuth: true}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(10 * time.Second):
		t.Fatal("TLS etcd not ready")
	}
	ep := e.Clients[0].Addr().String()
	ctx := wait.Context(t, 20*time.Second)

	open := func(raw string) (*Backend, error) {
		c, err := ParseURL(raw)
		if err != nil {
			t.Fatal(err)
		}
		c.Prefix = testPrefix(t)
		c.DialTimeout = 5 * time.Second
		if strings.Contains(raw, otherCA) || strings.HasPrefix(raw, "etcd://") {
			c.DialTimeout = 300 * time.Millisecond // expected to fail
		}
		return New(ctx, c)
	}

	// Good CA and client certificate: works.
	b, err := open("etcds://" + ep + "?cacert=" + caFile + "&cert=" + cliCert + "&key=" + cliKey)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.TryOnce(ctx, b, request("tls", "alice", 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b.Close()

	// Wrong CA: unavailable, saying why.
	if b, err := open("etcds://" + ep + "?cacert=" + otherCA + "&cert=" + cliCert + "&key=" + cliKey); err == nil {
		b.Close()
		t.Error("New with the wrong CA succeeded")
	} else if !errors.Is(err, lock.ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("New with the wrong CA = %v; want ErrUnavailable about the certificate", err)
	} else {
		t.Logf("wrong CA: %v", err)
	}

	// Plain etcd:// against a TLS port: unavailable.
	if b, err := open("etcd://" + ep); err == nil {
		b.Close()
		t.Error("New over plain http to a TLS port succeeded")
	} else if !errors.Is(err, lock.ErrUnavailable) || !strings.Contains(err.Error(), "etcds://") {
		t.Errorf("New over plain http to a TLS port = %v; want ErrUnavailable suggesting etcds://", err)
	} else {
		t.Logf("plain to TLS: %v", err)
	}

	// Missing files: usage errors.
	for _, raw := range []string{
		"etcds://" + ep + "?cacert=" + filepath.Join(dir, "nope.pem"),
		"etcds://" + ep + "?cacert=" + srvKey, // not a certificate
		"etcds://" + ep + "?cert=" + cliCert + "&key=" + filepath.Join(dir, "nope.pem"),
	} {
		if _, err := open(raw); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("New(%s) = %v; want ErrInvalid", raw, err)
		}
	}
}
