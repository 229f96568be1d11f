package urlx

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// hosts reads "host[:port][,host[:port]...]" into "host:port" each.
func (spec Spec) hosts(list string, tls bool) ([]string, error) {
	if list == "" {
		return nil, spec.invalid(" names no host (an empty host list): use %s", spec.Form)
	}
	port := spec.Port
	if tls && spec.TLSPort != "" {
		port = spec.TLSPort
	}
	var hosts []string
	for _, h := range strings.Split(list, ",") {
		hp, err := spec.hostPort(h, port)
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, hp)
	}
	return hosts, nil
}

// hostPort checks one host of the list and adds the default port when it
// names none. Its errors echo at most the host.
func (spec Spec) hostPort(h, defaultPort string) (string, error) {
	if h == "" {
		return "", spec.invalid(" has an empty host in its host list (stray comma?): use %s", spec.Form)
	}
	notHostPort := spec.invalid(": an address is not host:port (IPv6 as [addr]:port; %s)", spec.Form)
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		switch {
		case defaultPort == "" && !strings.Contains(h, ":"):
			return "", spec.invalid(": %q has no port (%s)", h, spec.Form)
		case defaultPort == "":
			return "", notHostPort
		}
		var ok bool
		if host, ok = spec.portless(h); !ok {
			return "", notHostPort
		}
		port = defaultPort
	}
	if host == "" {
		return "", notHostPort
	}
	if spec.PlainHosts && strings.ContainsAny(host, " \t/\\%") {
		return "", spec.invalid(": invalid host name %q (%s)", host, spec.Form)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", spec.invalid(": the host %q has no valid port (invalid port: a port is a number from 1 to 65535)", host)
	}
	return net.JoinHostPort(host, port), nil
}

// portless is the host of h, a host named without a port: a name, an
// IPv4 address, an IPv6 address in brackets, or one without them when the
// spec allows it.
func (spec Spec) portless(h string) (string, bool) {
	host := h
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		host = h[1 : len(h)-1]
	} else if strings.Contains(h, ":") && !spec.BareIPv6 {
		return "", false
	}
	if strings.ContainsAny(host, "[]") {
		return "", false
	}
	if strings.Contains(host, ":") {
		if _, err := netip.ParseAddr(host); err != nil {
			return "", false
		}
	}
	return host, true
}
