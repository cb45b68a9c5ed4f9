package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// watchHeapProfile writes a heap profile to path every time the process receives
// SIGUSR1, until ctx ends or the returned function is called. Each dump replaces the
// last one (write temp, rename) and follows a collection, so its in-use figures are the
// live heap: `kill -USR1 <pid>` then `go tool pprof -sample_index=inuse_space <file>`.
// Where the system has no SIGUSR1 it returns an error.
func watchHeapProfile(ctx context.Context, path string, log *slog.Logger) (func(), error) {
	if heapProfileSignal == nil {
		return nil, errors.New("--heapprofile: this system has no SIGUSR1")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, heapProfileSignal)
	done, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-sig:
				if err := writeHeapProfile(path); err != nil {
					log.Error("heap profile", slog.String("file", path), slog.Any("err", err))
					continue
				}
				log.Info("heap profile written", slog.String("file", path))
			case <-ctx.Done():
				return
			case <-stop:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(stop)
		<-done
	}, nil
}

// writeHeapProfile collects garbage and writes the heap profile to path atomically.
func writeHeapProfile(path string) error {
	runtime.GC()
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := pprof.Lookup("heap").WriteTo(tmp, 0); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
