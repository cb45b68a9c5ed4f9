package pgstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGroupLimits: a group stops at maxGroupOps operations (acknowledgements count no
// bytes: a drain's must not make one endless transaction), at maxGroupBytes, and when
// the queue is empty or closed.
func TestGroupLimits(t *testing.T) {
	acks := func(n int) *request { return &request{ops: make([]op, n)} }
	queue := make(chan *request, 100)
	for range 99 {
		queue <- acks(1000)
	}
	group, open := takeGroup([]*request{acks(1000)}, queue)
	require.True(t, open)
	require.Len(t, group, 17, "1000-ack batches up to 16,384 acknowledgements")
	require.Len(t, queue, 83)

	for len(queue) > 0 {
		<-queue
	}
	for range 10 {
		queue <- &request{ops: make([]op, 1), bytes: 4 << 20}
	}
	group, _ = takeGroup([]*request{{ops: make([]op, 1), bytes: 4 << 20}}, queue)
	require.Len(t, group, 4, "4 MiB adds up to 16 MiB")

	for len(queue) > 0 {
		<-queue
	}
	queue <- acks(1)
	close(queue)
	group, open = takeGroup([]*request{acks(1)}, queue)
	require.False(t, open)
	require.Len(t, group, 2)
}
