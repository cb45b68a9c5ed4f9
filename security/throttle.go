package security

import (
	"container/list"
	"net"
	"net/netip"
	"sync"
	"time"
)

const (
	// forgetFailures is how long a host's failures count after its last one.
	forgetFailures = 10 * time.Minute
	// maxThrottledHosts bounds the hosts remembered; the one whose last failure is
	// oldest goes first.
	maxThrottledHosts = 65536
)

// throttle delays failed logins per host: FailureDelay doubled for each recent
// failure of the host, up to MaxFailureDelay, and no more than MaxDelayedPerAddress
// waiting at once. Successful logins neither wait nor reset the count: an attacker
// who also knows one password could otherwise interleave it with guesses.
type throttle struct {
	base, max  time.Duration // base < 0: no delays
	maxWaiting int
	maxHosts   int

	mu    sync.Mutex
	hosts map[string]*hostFailures
	order list.List // of *hostFailures, oldest last failure first
}

type hostFailures struct {
	host    string
	n       int // recent failures
	last    time.Time
	waiting int
	elem    *list.Element
}

func newThrottle(base, max time.Duration, maxWaiting int) throttle {
	return throttle{base: base, max: max, maxWaiting: maxWaiting, maxHosts: maxThrottledHosts,
		hosts: make(map[string]*hostFailures)}
}

// failure records a failed login of host at now. It returns the delay to wait, and
// release to call when done waiting; ok false means the host has maxWaiting
// failures waiting already and this one must be answered at once.
func (t *throttle) failure(host string, now time.Time) (delay time.Duration, release func(), ok bool) {
	if t.base < 0 {
		return 0, func() {}, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for e := t.order.Front(); e != nil && now.Sub(e.Value.(*hostFailures).last) >= forgetFailures; e = t.order.Front() {
		t.forget(e)
	}
	h := t.hosts[host]
	if h == nil {
		if t.order.Len() >= t.maxHosts {
			t.forget(t.order.Front())
		}
		h = &hostFailures{host: host}
		h.elem = t.order.PushBack(h)
		t.hosts[host] = h
	} else {
		t.order.MoveToBack(h.elem)
	}
	if h.n < 64 {
		h.n++
	}
	h.last = now
	if h.waiting >= t.maxWaiting {
		return 0, nil, false
	}
	h.waiting++
	delay = t.max
	if shift := h.n - 1; t.base <= t.max>>shift { // base<<shift cannot overflow
		delay = t.base << shift
	}
	return delay, func() {
		t.mu.Lock()
		h.waiting--
		t.mu.Unlock()
	}, true
}

// forget drops a host; its failures waiting still release their record.
func (t *throttle) forget(e *list.Element) {
	t.order.Remove(e)
	delete(t.hosts, e.Value.(*hostFailures).host)
}

// hostOf is the host part of a "host:port" address, what failures are counted by.
// IPv6 addresses count by their /64, which one client usually has whole.
func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.WithZone("").Prefix(64)
		return p.String()
	}
	return ip.String()
}
