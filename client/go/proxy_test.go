package odyssey_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy relays a loopback port to the server. cut closes every relayed connection and
// refuses new ones (accepted, then closed at once) until mend: a network failure under a
// client, while the server itself runs on.
type proxy struct {
	addr     string
	target   string
	listener net.Listener

	mu       sync.Mutex
	open     []net.Conn
	refusing bool
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: listener.Addr().String(), target: target, listener: listener}
	go p.accept()
	t.Cleanup(func() {
		_ = listener.Close()
		p.cut()
	})
	return p
}

func (p *proxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		if p.refusing {
			p.mu.Unlock()
			_ = client.Close()
			continue
		}
		upstream, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = client.Close()
			continue
		}
		p.open = append(p.open, client, upstream)
		p.mu.Unlock()
		go pump(client, upstream)
		go pump(upstream, client)
	}
}

func pump(from, to net.Conn) {
	_, _ = io.Copy(to, from)
	_ = from.Close()
	_ = to.Close()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing = true
	for _, conn := range p.open {
		_ = conn.Close()
	}
	p.open = nil
}

func (p *proxy) mend() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing = false
}
