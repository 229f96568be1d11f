package server

import "net"

// freePorts returns n distinct TCP ports that were free on 127.0.0.1 a
// moment ago. Another process may still take one before the server binds
// it; startFresh retries when that happens.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		// Keep every listener open until all are chosen so they differ.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
