package completion

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestRunnerRunsInPushOrder(t *testing.T) {
	r := NewRunner()
	var (
		mu  sync.Mutex
		got []int
	)
	const n = 1000
	for i := range n {
		r.Push(func(error) {
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
		}, nil)
	}
	r.Close()
	if len(got) != n {
		t.Fatalf("ran %d callbacks, want %d", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("callback %d ran as number %d", v, i)
		}
	}
}

func TestRunnerPassesTheError(t *testing.T) {
	r := NewRunner()
	want := errors.New("boom")
	got := make(chan error, 1)
	r.Push(func(err error) { got <- err }, want)
	if err := <-got; err != want {
		t.Fatalf("callback got %v, want %v", err, want)
	}
	r.Close()
}

func TestRunnerSlowCallbackDoesNotBlockPush(t *testing.T) {
	r := NewRunner()
	release := make(chan struct{})
	started := make(chan struct{})
	r.Push(func(error) { close(started); <-release }, nil)
	<-started
	pushed := make(chan struct{})
	go func() {
		for range 100 {
			r.Push(func(error) {}, nil)
		}
		close(pushed)
	}()
	select {
	case <-pushed:
	case <-time.After(10 * time.Second):
		t.Fatal("Push blocked behind a slow callback")
	}
	close(release)
	r.Close()
}

func TestRunnerCallbackMayPush(t *testing.T) {
	r := NewRunner()
	done := make(chan struct{})
	r.Push(func(error) { r.Push(func(error) { close(done) }, nil) }, nil)
	<-done
	r.Close()
}

func TestRunnerAfterCloseCallsAtOnce(t *testing.T) {
	r := NewRunner()
	r.Close()
	r.Close() // a second Close returns too
	called := false
	r.Push(func(error) { called = true }, nil)
	if !called {
		t.Fatal("Push after Close did not call the callback on the caller's goroutine")
	}
}
