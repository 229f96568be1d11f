package main

import (
	"encoding/binary"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	"github.com/distlock/distlock/internal/testenv/faultproxy"
)

// etcdLeases learns, from the fault proxy's traffic (gRPC over HTTP/2),
// when each etcd lease's grant and keep-alives were forwarded to the
// server, counting only those the server answered with the lease alive:
// the server took each at or after that moment, and it sets a lease to
// end its TTL after it takes a grant or keep-alive. So a holder's command
// dead before (last forwarded + TTL) was dead before its lease could
// expire by the server's own clock, whenever the server was asked. It is
// the etcd form of consulSessions: the check after the death
// (etcdLeaseLive) can only say the lease was alive when its question
// arrived, which on a loaded machine may be tens of milliseconds after the
// death (and after the lease's end, when the margin was smaller).
//
// A keep-alive forwarded but not answered (the server stopped before it
// took it, or its answer held by a pause) does not count: the server may
// take it only after the lease has ended, and then it extends nothing.
type etcdLeases struct {
	mu    sync.Mutex
	conns map[uint64]*h2Conn
	last  map[int64]leaseSeen // lease ID → last grant or keep-alive answered alive
}

// leaseSeen is when a lease's grant or keep-alive was forwarded, and the
// TTL the server answered it with.
type leaseSeen struct {
	sent time.Time
	ttl  time.Duration
}

// h2Conn is one proxied connection: each direction's frame parser, and
// what is under way on its streams.
type h2Conn struct {
	dir   [2]*h2Dir              // [0] client → server, [1] server → client
	paths map[uint32]string      // stream ID → :path of its request
	sent  map[uint32][]time.Time // stream ID → lease requests forwarded, not yet answered
	msgs  map[uint32]*[2][]byte  // stream ID → per direction, a gRPC message's bytes so far
}

// h2Dir parses one direction of a connection: frames, header blocks.
type h2Dir struct {
	buf      []byte
	preface  int // client preface bytes still to skip
	dec      *hpack.Decoder
	path     string // :path of the header block being read
	headerOn uint32 // stream of the header block being read (0: none)
}

const (
	leaseGrantPath     = "/etcdserverpb.Lease/LeaseGrant"
	leaseKeepAlivePath = "/etcdserverpb.Lease/LeaseKeepAlive"
	h2Preface          = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// tapEtcdLeases starts watching px's traffic.
func tapEtcdLeases(px *faultproxy.Proxy) *etcdLeases {
	el := &etcdLeases{conns: map[uint64]*h2Conn{}, last: map[int64]leaseSeen{}}
	px.SetTap(el.see)
	return el
}

// lastSent is when lease id's grant or last keep-alive answered alive was
// forwarded, and its TTL.
func (el *etcdLeases) lastSent(id int64) (leaseSeen, bool) {
	el.mu.Lock()
	defer el.mu.Unlock()
	s, ok := el.last[id]
	return s, ok
}

func (el *etcdLeases) see(conn uint64, toServer bool, data []byte, at time.Time) {
	el.mu.Lock()
	defer el.mu.Unlock()
	c := el.conns[conn]
	if c == nil {
		c = &h2Conn{paths: map[uint32]string{}, sent: map[uint32][]time.Time{}, msgs: map[uint32]*[2][]byte{}}
		for i := range c.dir {
			d := &h2Dir{dec: hpack.NewDecoder(4096, nil)}
			d.dec.SetAllowedMaxDynamicTableSize(1 << 20)
			c.dir[i] = d
		}
		c.dir[0].preface = len(h2Preface)
		el.conns[conn] = c
	}
	d := c.dir[dirIndex(toServer)]
	d.buf = append(d.buf, data...)
	if n := min(d.preface, len(d.buf)); n > 0 {
		d.buf, d.preface = d.buf[n:], d.preface-n
	}
	// Every frame completed by this chunk reached the server (or client)
	// no sooner than at.
	for len(d.buf) >= 9 {
		n := int(d.buf[0])<<16 | int(d.buf[1])<<8 | int(d.buf[2])
		if len(d.buf) < 9+n {
			break
		}
		typ, flags := d.buf[3], d.buf[4]
		stream := binary.BigEndian.Uint32(d.buf[5:9]) & 0x7fffffff
		payload := d.buf[9 : 9+n]
		el.frame(c, d, toServer, typ, flags, stream, payload, at)
		d.buf = d.buf[9+n:]
	}
	if len(d.buf) == 0 {
		d.buf = nil // let a long-lived connection's buffer go
	}
}

// dirIndex is the index of a direction in h2Conn's arrays.
func dirIndex(toServer bool) int {
	if toServer {
		return 0
	}
	return 1
}

// HTTP/2 frame types and flags (RFC 9113) that the tap reads.
const (
	h2Data         = 0x0
	h2Headers      = 0x1
	h2Continuation = 0x9
	h2EndHeaders   = 0x4
	h2Padded       = 0x8
	h2Priority     = 0x20
)

func (el *etcdLeases) frame(c *h2Conn, d *h2Dir, toServer bool, typ, flags byte, stream uint32, p []byte, at time.Time) {
	switch typ {
	case h2Headers:
		if flags&h2Padded != 0 && len(p) > 0 {
			pad := int(p[0])
			p = p[1:]
			if pad > len(p) {
				return
			}
			p = p[:len(p)-pad]
		}
		if flags&h2Priority != 0 {
			if len(p) < 5 {
				return
			}
			p = p[5:]
		}
		d.path, d.headerOn = "", stream
		d.dec.SetEmitFunc(func(f hpack.HeaderField) {
			if f.Name == ":path" {
				d.path = f.Value
			}
		})
		fallthrough
	case h2Continuation:
		if d.headerOn != stream {
			return
		}
		if _, err := d.dec.Write(p); err != nil {
			d.headerOn = 0
			return
		}
		if flags&h2EndHeaders != 0 {
			_ = d.dec.Close()
			if toServer && d.path != "" {
				c.paths[stream] = d.path
			}
			d.headerOn = 0
		}
	case h2Data:
		if flags&h2Padded != 0 && len(p) > 0 {
			pad := int(p[0])
			p = p[1:]
			if pad > len(p) {
				return
			}
			p = p[:len(p)-pad]
		}
		path := c.paths[stream]
		if path != leaseGrantPath && path != leaseKeepAlivePath {
			return
		}
		el.messages(c, toServer, stream, path, p, at)
	}
}

// messages splits a lease stream's DATA into gRPC messages (a 5-byte
// prefix: compressed flag, length) and handles each complete one.
func (el *etcdLeases) messages(c *h2Conn, toServer bool, stream uint32, path string, p []byte, at time.Time) {
	if c.msgs[stream] == nil {
		c.msgs[stream] = new([2][]byte)
	}
	bp := &c.msgs[stream][dirIndex(toServer)]
	*bp = append(*bp, p...)
	for len(*bp) >= 5 {
		n := int(binary.BigEndian.Uint32((*bp)[1:5]))
		if len(*bp) < 5+n {
			return
		}
		compressed, msg := (*bp)[0] != 0, (*bp)[5:5+n]
		if toServer {
			c.sent[stream] = append(c.sent[stream], at)
		} else if q := c.sent[stream]; len(q) > 0 && !compressed {
			// Answers come in the order of the requests on a stream.
			el.answered(path, msg, q[0])
			c.sent[stream] = q[1:]
		}
		*bp = (*bp)[5+n:]
	}
}

// answered records the answer msg (on path) to a request forwarded at
// sent, if it says the lease is alive.
func (el *etcdLeases) answered(path string, msg []byte, sent time.Time) {
	var id, ttl int64
	if path == leaseGrantPath {
		var r pb.LeaseGrantResponse
		if proto.Unmarshal(msg, &r) != nil || r.Error != "" {
			return
		}
		id, ttl = r.ID, r.TTL
	} else {
		var r pb.LeaseKeepAliveResponse
		if proto.Unmarshal(msg, &r) != nil {
			return
		}
		id, ttl = r.ID, r.TTL
	}
	if id == 0 || ttl <= 0 {
		return
	}
	if s, ok := el.last[id]; !ok || sent.After(s.sent) {
		el.last[id] = leaseSeen{sent: sent, ttl: time.Duration(ttl) * time.Second}
	}
}
