package security

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func throttled(t *testing.T, cfg Config) (*Service, *fakeClock) {
	t.Helper()
	cfg.Users = []User{{Name: "app", Password: "pw"}}
	s, clock, _ := newTestService(t, cfg)
	return s, clock
}

func TestFailureDelays(t *testing.T) {
	s, clock := throttled(t, Config{})
	ctx := context.Background()
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms}
	for range want {
		if _, err := s.Authenticate(ctx, login("app", "wrong")); err != ErrInvalidCredentials {
			t.Fatalf("err = %v, want ErrInvalidCredentials itself", err)
		}
	}
	if got := clock.delays(); !slices.Equal(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}

	// A success from the same host is not delayed and does not reset the count.
	if _, err := s.Authenticate(ctx, login("app", "pw")); err != nil {
		t.Fatal(err)
	}
	if got := clock.delays(); len(got) != 0 {
		t.Errorf("a successful login waited %v", got)
	}
	s.Authenticate(ctx, login("app", "wrong"))
	if got := clock.delays(); !slices.Equal(got, []time.Duration{5 * time.Second}) {
		t.Errorf("after a success the delay is %v, want still 5s", got)
	}

	// Another host starts over; an IPv6 /64 is one host.
	c := login("app", "wrong")
	for _, addr := range []string{"[2001:db8::1]:5000", "[2001:db8::2]:5001", "[2001:db8:0:1::1]:1"} {
		c.RemoteAddr = addr
		s.Authenticate(ctx, c)
	}
	if got := clock.delays(); !slices.Equal(got, []time.Duration{100 * ms, 200 * ms, 100 * ms}) {
		t.Errorf("IPv6 delays %v, want 100ms 200ms 100ms", got)
	}

	// Ten minutes after the last failure it is forgotten.
	clock.advance(forgetFailures)
	s.Authenticate(ctx, login("app", "wrong"))
	if got := clock.delays(); !slices.Equal(got, []time.Duration{100 * ms}) {
		t.Errorf("after ten quiet minutes the delay is %v, want 100ms", got)
	}
}

func TestFailureDelayConfig(t *testing.T) {
	s, clock := throttled(t, Config{FailureDelay: time.Second, MaxFailureDelay: 3 * time.Second})
	for i := 0; i < 4; i++ {
		s.Authenticate(context.Background(), login("x", "y"))
	}
	if got := clock.delays(); !slices.Equal(got, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}) {
		t.Errorf("delays %v", got)
	}
	s, clock = throttled(t, Config{FailureDelay: -1})
	s.Authenticate(context.Background(), login("x", "y"))
	if got := clock.delays(); !slices.Equal(got, []time.Duration{0}) {
		t.Errorf("a negative FailureDelay: delays %v, want none", got)
	}
	if _, err := New(Config{FailureDelay: time.Second, MaxFailureDelay: time.Millisecond}, nil); err == nil {
		t.Error("MaxFailureDelay below FailureDelay was accepted")
	}
}

func TestMaxDelayedPerAddress(t *testing.T) {
	s, clock := throttled(t, Config{MaxDelayedPerAddress: 3})
	clock.hold = make(chan struct{})
	ctx := context.Background()
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			_, err := s.Authenticate(ctx, login("app", "wrong"))
			errs <- err
		}()
	}
	for i := 0; i < 3; i++ {
		<-clock.asleep
	}
	// Neither the throttled failure nor the success sleeps: the clock records the three
	// sleepers' delays and no more (issue 27: counted, not timed). Should one sleep, the
	// held clock keeps it until its ctx ends, which fails the checks below, not the test's
	// timeout.
	bounded, cancelBounded := context.WithTimeout(ctx, 10*time.Second)
	defer cancelBounded()
	if _, err := s.Authenticate(bounded, login("app", "wrong")); err != ErrThrottled {
		t.Errorf("a fourth failure while three wait: err = %v, want ErrThrottled", err)
	}
	if _, err := s.Authenticate(bounded, login("app", "pw")); err != nil {
		t.Errorf("a success while three failures wait: %v", err)
	}
	if got := clock.delays(); len(got) != 3 {
		t.Errorf("delays %v: want only the three waiting failures'", got)
	}
	// Another host is not affected; a cancelled ctx ends its wait.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	c := login("app", "wrong")
	c.RemoteAddr = "198.51.100.7:9"
	if _, err := s.Authenticate(cctx, c); !errors.Is(err, ErrInvalidCredentials) || !errors.Is(err, context.Canceled) {
		t.Errorf("another host with a cancelled ctx: err = %v, want ErrInvalidCredentials and context.Canceled", err)
	}
	<-clock.asleep
	close(clock.hold)
	for i := 0; i < 3; i++ {
		if err := <-errs; err != ErrInvalidCredentials {
			t.Errorf("a delayed failure: %v", err)
		}
	}
	// With the waits over, failures are delayed again rather than throttled.
	clock.hold = nil
	if _, err := s.Authenticate(ctx, login("app", "wrong")); err != ErrInvalidCredentials {
		t.Errorf("after the waits: %v", err)
	}
	if st := s.Stats(); st.LoginsThrottled != 1 || st.LoginsFailed != 6 || st.LoginsOK != 1 {
		t.Errorf("stats %+v, want 1 throttled among 6 failed, 1 ok", st)
	}
}

// TestRealSleep checks the real sleeper: ctx and Close end a delay.
func TestRealSleep(t *testing.T) {
	s, err := New(Config{Users: []User{{Name: "app", Password: "pw"}}, FailureDelay: time.Hour, MaxFailureDelay: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Authenticate(ctx, login("app", "wrong")); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("err = %v, want the deadline and ErrInvalidCredentials", err)
	}
	done := make(chan error)
	go func() {
		_, err := s.Authenticate(context.Background(), login("app", "wrong"))
		done <- err
	}()
	for {
		s.throttle.mu.Lock()
		waiting := s.throttle.hosts["192.0.2.1"].waiting
		s.throttle.mu.Unlock()
		if waiting == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != ErrInvalidCredentials {
			t.Errorf("after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the failure delay")
	}
}

func TestThrottleBound(t *testing.T) {
	th := newThrottle(time.Millisecond, time.Second, 10)
	th.maxHosts = 3
	now := time.Now()
	for i := 0; i < 5; i++ {
		_, release, _ := th.failure(fmt.Sprintf("h%d", i), now.Add(time.Duration(i)*time.Second))
		release()
	}
	if len(th.hosts) != 3 || th.order.Len() != 3 || th.hosts["h0"] != nil || th.hosts["h1"] != nil || th.hosts["h4"] == nil {
		t.Errorf("hosts %v, want the last three", th.hosts)
	}
	// An old host failing again moves to the back.
	th.failure("h2", now.Add(10*time.Second))
	th.failure("h5", now.Add(11*time.Second))
	if th.hosts["h2"] == nil || th.hosts["h3"] != nil {
		t.Error("the oldest failure was not the one evicted")
	}
}

func TestHostOf(t *testing.T) {
	tests := map[string]string{
		"192.0.2.1:61613":       "192.0.2.1",
		"[::ffff:192.0.2.1]:1":  "192.0.2.1",
		"[2001:db8:1:2:3::4]:1": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:1":      "fe80::/64",
		"2001:db8::1":           "2001:db8::/64",
		"":                      "",
		"/var/run/broker.sock":  "/var/run/broker.sock",
		"example.com:61613":     "example.com",
		"192.0.2.1":             "192.0.2.1",
	}
	for in, want := range tests {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFailureDelayNoOverflow checks that long delays doubled many times stay capped.
func TestFailureDelayNoOverflow(t *testing.T) {
	th := newThrottle(time.Hour, 1000*time.Hour, 1000)
	now := time.Now()
	prev := time.Duration(0)
	for i := 0; i < 100; i++ {
		d, release, ok := th.failure("h", now)
		release()
		if !ok || d < prev || d > 1000*time.Hour {
			t.Fatalf("failure %d: delay %v after %v", i+1, d, prev)
		}
		prev = d
	}
	if prev != 1000*time.Hour {
		t.Errorf("the delay ends at %v, want the cap", prev)
	}
}
