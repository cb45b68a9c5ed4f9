package pgshared_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/pgstore/pgshared"
)

// BenchmarkClaimAck measures claims and acks of one queue by 1, 2 and 3 nodes in
// this process (two consumers each, claiming up to batch messages at a time), the
// queue filled beforehand. Reported: msgs/s, the CPU of this process (the nodes) and
// of the whole machine (the nodes and PostgreSQL) per message.
func BenchmarkClaimAck(b *testing.B) {
	for _, batch := range []int{1, 16} {
		for nodes := 1; nodes <= 3; nodes++ {
			b.Run(fmt.Sprintf("batch=%d/nodes=%d", batch, nodes), func(b *testing.B) {
				benchClaimAck(b, nodes, batch)
			})
		}
	}
}

func benchClaimAck(b *testing.B, nodes, batch int) {
	ctx := context.Background()
	ids := make([]string, nodes)
	for i := range ids {
		ids[i] = "n" + strconv.Itoa(i)
	}
	_, ns := openNodes(b, ids...)
	const q = "queue://BENCH"
	body := make([]byte, 256)
	for i := 0; i < b.N; i += 500 {
		msgs := make([]*persistence.Message, min(500, b.N-i))
		for j := range msgs {
			msgs[j] = &persistence.Message{Dest: q, ID: "ID:bench-" + strconv.Itoa(i+j), Priority: 4, Persistent: true, Body: body}
		}
		if err := ns[0].Send(ctx, msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	procBefore, machineBefore := processCPU(), machineCPU()
	b.ResetTimer()
	start := time.Now()
	consumers(b, ns, 2, func(n *pgshared.Node) error { return drainQueue(n, q, batch, nil) })
	elapsed := time.Since(start)
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(per(processCPU()-procBefore), "node-cpu-µs/msg")
	b.ReportMetric(per(machineCPU()-machineBefore), "machine-cpu-µs/msg")
}

// processCPU is the user and system CPU time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU is the busy CPU time of the whole machine, from /proc/stat (all but idle
// and iowait, in USER_HZ = 100 ticks a second).
func machineCPU() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	var ticks int64
	for i, f := range strings.Fields(line)[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		v, _ := strconv.ParseInt(f, 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
