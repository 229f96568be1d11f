package backend

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/distlock/distlock/internal/lock"
)

// Engine is one engine as distlock knows it: the schemes its URLs start
// with, how to open one and what it can do. Every list
// of engines distlock shows (the --backend help and completion, doctor's
// and list's help, the root help, Open's errors) is made from Engines(),
// and the scenarios' [fair] and [semaphore] conditions read Caps. The
// engine packages know nothing of it: each entry (engines.go) calls its
// package's own parser and constructor.
type Engine struct {
	// Scheme is what users write ("redis+sentinel"); TLS its TLS twin
	// ("rediss+sentinel"; "" when it has none); Aliases other spellings
	// of Scheme ("postgresql"), accepted and not advertised.
	Scheme, TLS string
	Aliases     []string
	// TLSParam: ?tls=true on Scheme turns TLS on too.
	TLSParam bool
	// Form is the shape of a URL, for the not-a-URL error and the
	// --backend help ("redis+sentinel://HOST:PORT,…/MASTER"); Name says
	// what it reaches ("Redis behind Sentinels").
	Form, Name string
	Caps       Caps
	// Lists says how list finds the held locks and Checks what doctor's
	// engine checks look at, for their help; "" on a topology that
	// shares the entry's before it (Redis).
	Lists, Checks string

	open func(ctx context.Context, rawURL string, opts Options) (lock.Backend, error)
	// locate parses a URL as open does and says where its locks live
	// (Locate).
	locate func(rawURL string) (place, error)
	// kind is a nil pointer of the engine's lock.Backend type: the
	// registry's tests check Caps against what it implements.
	kind lock.Backend
}

// Caps is what an engine can do beyond the contract every engine keeps.
type Caps struct {
	// Semaphore: run --limit N above 1 (lock.SlotInspector).
	Semaphore bool
	// Fair: waiters are served in arrival order, for a mutex and a
	// semaphore's slots alike (locktest.Options.Fair).
	Fair bool
}

// every is both capabilities.
var every = Caps{Semaphore: true, Fair: true}

// opens is e with its open, locate and kind: open parses a URL with
// parse, sets in the parsed config what the options decide (where fill
// points), and connects with connect; locate is where the parsed config
// says the locks live (at); kind is connect's backend type.
func opens[C any, B lock.Backend](e Engine, parse func(string) (C, error), connect func(context.Context, C) (B, error), fill func(*C) settings, at func(C) place) Engine {
	e.open = func(ctx context.Context, rawURL string, opts Options) (lock.Backend, error) {
		cfg, err := parse(rawURL)
		if err != nil {
			return nil, err
		}
		fill(&cfg).set(opts)
		b, err := connect(ctx, cfg)
		if err != nil {
			return nil, err // not b: a nil *B is not a nil lock.Backend
		}
		return b, nil
	}
	e.locate = func(rawURL string) (place, error) {
		cfg, err := parse(rawURL)
		if err != nil {
			return place{}, err
		}
		return at(cfg), nil
	}
	var none B // a nil pointer
	e.kind = none
	return e
}

// settings point into an engine's parsed config at what the options set:
// the secret (password or token) and the TLS files where the URL gave
// none (nil: the engine takes none from the options), the prefix and the
// connect timeout.
type settings struct {
	secret, caCert, cert, key, prefix *string
	timeout                           *time.Duration
}

func (s settings) set(opts Options) {
	for _, f := range []struct {
		to   *string
		from string
	}{{s.secret, opts.Password}, {s.caCert, opts.EtcdCACert}, {s.cert, opts.EtcdCert}, {s.key, opts.EtcdKey}} {
		if f.to != nil {
			*f.to = cmp.Or(*f.to, f.from)
		}
	}
	*s.prefix, *s.timeout = opts.Prefix, opts.ConnectTimeout
}

// Engines returns every engine, in the order help lists them.
func Engines() []Engine { return slices.Clone(registry) }

// Lookup returns the engine whose URLs start with scheme:// (any case),
// and whether there is one.
func Lookup(scheme string) (Engine, bool) {
	for _, e := range registry {
		if slices.ContainsFunc(e.Schemes(), func(s string) bool { return strings.EqualFold(s, scheme) }) {
			return e, true
		}
	}
	return Engine{}, false
}

// Schemes are e's schemes as users write them: Scheme, then its TLS
// twin, then the aliases.
func (e Engine) Schemes() []string {
	out := []string{e.Scheme}
	if e.TLS != "" {
		out = append(out, e.TLS)
	}
	return append(out, e.Aliases...)
}

// Start is the literal start of e's URLs, its Form up to the first
// placeholder: "file:///", "redis+sentinel://".
func (e Engine) Start() string {
	_, rest, _ := strings.Cut(e.Form, "://")
	if i := strings.IndexFunc(rest, unicode.IsUpper); i >= 0 {
		rest = rest[:i]
	}
	return e.Scheme + "://" + rest
}

// notURL is Open's error for a backend with no scheme: every engine's form.
func notURL(rawURL string) error {
	forms := make([]string, len(registry))
	for i, e := range registry {
		forms[i] = e.Form
	}
	return lock.Invalidf("backend %q is not a URL: use %s", Redact(rawURL), orList(forms))
}

// unsupported is Open's error for a scheme no engine has: every scheme.
func unsupported(scheme string) error {
	var all []string
	for _, e := range registry {
		for _, s := range e.Schemes() {
			all = append(all, s+"://")
		}
	}
	return lock.Invalidf("backend scheme %q is not supported: use %s", scheme, orList(all))
}

// orList joins "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}
