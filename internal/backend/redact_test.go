package backend

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://:s3cret@localhost:6379/0", "redis://:xxxxx@localhost:6379/0"},
		{"redis://bob:s3cret@localhost:6379", "redis://bob:xxxxx@localhost:6379"},
		{"rediss://bob@localhost:6379", "rediss://bob@localhost:6379"},
		{"etcd://a:2379,b:2379", "etcd://a:2379,b:2379"},
		{"etcds://root:s3cret@a:2379,b:2379?cacert=/ca.pem", "etcds://root:xxxxx@a:2379,b:2379?cacert=/ca.pem"},
		{"redis+sentinel://:s3cret@s1:26379,s2:26379/mymaster?wait=1&tls=true", "redis+sentinel://:xxxxx@s1:26379,s2:26379/mymaster?wait=1&tls=true"},
		{"postgres://u:s3cret@db/ops?password=s3cret", "postgres://u:xxxxx@db/ops?password=xxxxx"},
		{"redis://h:6379?password=s3cret", "redis://h:6379?password=xxxxx"},
		{"redis://bob:s3cret@host:notaport%zz", "redis://bob:xxxxx@host:notaport%zz"},
		{"postgres://u:12?s3cret@db/ops", "postgres://u:xxxxx@db/ops"}, // pgx's password is "12?s3cret"
		{"redis://:123/s3cret@h:1", "redis://:xxxxx@h:1"},
		{"user:s3cret@host:6379", "xxxxx@host:6379"}, // no scheme
		{"s3/cret@host:6379", "xxxxx@host:6379"},
		{"file:///var/lock", "file:///var/lock"},
		{"redis+sentinel:/h:26379/m?sentinel_password=s3cret", "redis+sentinel:/h:26379/m?sentinel_password=xxxxx"}, // a slash forgotten
		{"postgres://u:12?s3cret@db/ops?password=s3cret", "postgres://u:xxxxx@db/ops?password=xxxxx"},
		{"host=db password=s3cret user=u", "host=db password=xxxxx user=u"}, // a libpq keyword string
		{"", ""},
	} {
		got := Redact(tc.in)
		if got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) leaks the password: %q", tc.in, got)
		}
	}
}
