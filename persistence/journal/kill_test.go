package journal

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/internal/logshell/shelltest"
)

const killChildEnv = "JOURNAL_KILL9_CHILD_DIR"

// killJob is the seq of batch k's scheduled job: distinct for every k, in no order
// (an odd multiplier is a bijection modulo 2^40), so the jobs go to the log and, as
// segments are sealed, to run files.
func killJob(k uint64) uint64 { return (k*0x9E3779B97F4A7C15)&(1<<40-1) + 1 }

// killWorkload is batch k of the kill -9 test: add message k and job k, and every tenth
// batch ack message k-5 and job k-7.
func killWorkload(b persistence.Batch, k uint64) {
	body := []byte(strings.Repeat(strconv.FormatUint(k, 10), 40))
	b.Add(&persistence.Message{Dest: "queue://kill", Seq: k, Body: body})
	b.Add(&persistence.Message{Dest: "scheduler://kill", Seq: killJob(k), Body: body})
	if k%10 == 0 {
		b.Ack("queue://kill", k-5)
		b.Ack("scheduler://kill", killJob(k-7))
	}
}

// killJobs is the jobs the store holds after batches 1..k, sorted.
func killJobs(k uint64) []uint64 {
	var seqs []uint64
	for s := uint64(1); s <= k; s++ {
		if (s+7)%10 != 0 || s+7 > k {
			seqs = append(seqs, killJob(s))
		}
	}
	slices.Sort(seqs)
	return seqs
}

// killState is what the store holds after batches 1..k.
func killState(k uint64) []uint64 {
	var seqs []uint64
	for s := uint64(1); s <= k; s++ {
		if (s+5)%10 != 0 || s+5 > k {
			seqs = append(seqs, s)
		}
	}
	return seqs
}

// TestKillNine runs a writer in a child process on the real file system (small
// segments, frequent checkpoints and cleanups), kills it with SIGKILL mid-stream, and
// checks that the reopened store holds exactly a prefix of the batches that includes
// every one the child saw acknowledged.
func TestKillNine(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillNine$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var acked uint64
	lines := bufio.NewScanner(out)
	deadline := time.Now().Add(20 * time.Second)
	for lines.Scan() {
		if n, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
			acked, err = strconv.ParseUint(n, 10, 64)
			require.NoError(t, err)
		}
		if acked >= 600 || time.Now().After(deadline) {
			break
		}
	}
	require.NoError(t, cmd.Process.Kill())
	for lines.Scan() { // what the child printed before it died
		if n, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
			acked, _ = strconv.ParseUint(n, 10, 64)
		}
	}
	_ = cmd.Wait()
	require.Positive(t, acked, "the child acknowledged nothing")

	s, err := Open(t.Context(), Options{Dir: dir, Logger: quietLog})
	require.NoError(t, err)
	got := shelltest.Seqs(t, s, "queue://kill")
	require.True(t, slices.Equal(got, killState(acked)) || slices.Equal(got, killState(acked+1)),
		"after kill -9 with %d batches acknowledged the store holds %v", acked, got)
	k := acked
	if len(got) > 0 && !slices.Equal(got, killState(acked)) {
		k = acked + 1
	}
	require.Equal(t, killJobs(k), shelltest.Seqs(t, s, "scheduler://kill"), "scheduled jobs after kill -9 (batch %d)", k)
	runFiles, err := filepath.Glob(filepath.Join(dir, "run-*.idx"))
	require.NoError(t, err)
	require.NotEmpty(t, runFiles, "the child spilled jobs to run files")
	t.Logf("killed after %d acknowledged batches; %d segments, recovery %+v", acked, s.Recovery().Segments, s.Recovery())
	require.NoError(t, s.Close())
}

func killChild(dir string) {
	s, err := Open(context.Background(), Options{Dir: dir, MaxFileLength: 64 << 10, CheckpointInterval: 20 * time.Millisecond,
		CleanupInterval: 50 * time.Millisecond, Logger: quietLog, spillMin: 8})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	for k := uint64(1); ; k++ {
		b := s.Begin()
		killWorkload(b, k)
		if err := b.Commit(context.Background(), persistence.Sync); err != nil {
			fmt.Println("commit:", err)
			os.Exit(1)
		}
		fmt.Fprintf(w, "acked %d\n", k)
		w.Flush()
	}
}
