package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/distlock/distlock/internal/lock"
)

// Failure is what an engine's error means (Dialect.Classify): its Kind,
// the server's message (for Unreachable, the cause) and the server's code
// as the engine names it ("SQLSTATE 53300", "error 1040").
type Failure struct {
	Kind      Kind
	Msg, Code string
}

// Kind sorts the failures that Unavailable words differently.
type Kind int

const (
	ServerError    Kind = iota // any other error the server answered with
	BadCredentials             // authentication refused
	NoDatabase                 // the URL's database does not exist
	NoPermission               // the user may not use or create the tables
	NoConnection               // every connection the server allows is in use
	Timeout                    // the server did not answer in time
	Unreachable                // no answer at all: Msg is the cause
	Undefined                  // a table (or sequence) does not exist (yet)
)

// wording is the line Unavailable gives each Kind (ServerError's for one
// not named), filled with the server ("postgres at host:port"), the
// Failure's Msg and Code, and the Dialect's Grants and TooMany.
var wording = map[Kind]string{
	ServerError:    "%[1]s: %[2]s (%[3]s)",
	BadCredentials: "%[1]s refused the credentials (%[2]s): check the user and password in --backend, DISTLOCK_PASSWORD or --password-file",
	NoDatabase:     "%[1]s: %[2]s: check the database in --backend",
	NoPermission:   "%[1]s: %[2]s: %[4]s",
	NoConnection:   "%[1]s has no connection left (%[2]s, %[3]s): %[5]s, or run fewer distlock processes at once",
	Timeout:        "%[1]s did not answer in time: check that it is up and reachable, or raise --connect-timeout",
	Unreachable:    "cannot reach %[1]s: %[2]s: check --backend and that the server is up",
}

// Unavailable turns a connection, auth or server failure into one line
// that says what to do, unless err is one already. It never holds the
// password: the engines' errors do not, and only their message is kept.
func (s *Store) Unavailable(err error) error {
	var ue *lock.UnavailableError
	if errors.As(err, &ue) {
		return err
	}
	f := s.d.Classify(err)
	msg := cmp.Or(wording[f.Kind], wording[ServerError])
	return &lock.UnavailableError{Err: err, Refused: f.Kind == BadCredentials || f.Kind == NoPermission,
		Msg: fmt.Sprintf(msg, s.d.Name+" at "+s.d.Addr, f.Msg, f.Code, s.d.Grants, s.d.TooMany)}
}

// NoAnswer is the Failure of an error the server did not answer with
// (the end of a Dialect.Classify): Timeout when the request's context
// expired or timeout says so, else Unreachable with the cause: a network
// error told by its system call ("connect: connection refused"), else the
// first line of the innermost error when unwrap is set (client libraries
// wrap it in messages that repeat the user, database and address), else
// of err.
func NoAnswer(err error, timeout, unwrap bool) Failure {
	if timeout || errors.Is(err, context.DeadlineExceeded) {
		return Failure{Kind: Timeout}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return Failure{Kind: Unreachable, Msg: opErr.Err.Error()}
	}
	for unwrap && errors.Unwrap(err) != nil {
		err = errors.Unwrap(err)
	}
	return Failure{Kind: Unreachable, Msg: lock.FirstLine(err)}
}
