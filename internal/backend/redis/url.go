package redis

import (
	"errors"
	"net/url"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/lock"
)

// Config is what New needs: go-redis options parsed from the URL plus
// distlock's own settings.
type Config struct {
	Options        *goredis.Options
	Password       string // used when the URL has none
	Prefix         string
	ConnectTimeout time.Duration
	addr           string // host:port, for messages
}

// ParseURL parses redis:// and rediss:// URLs with go-redis's own parser
// (user, password, db number, query options). Errors never hold the password.
func ParseURL(raw string) (Config, error) {
	opts, err := goredis.ParseURL(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Config{}, lock.Invalidf("redis URL is malformed: %v (expected redis://[user:password@]host:port[/db])", err)
	}
	return Config{Options: opts, Password: opts.Password, addr: opts.Addr}, nil
}
