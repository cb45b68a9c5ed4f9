package scheduler

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
)

// Jobs lists persistent jobs, paged out of memory or not, and non-persistent ones,
// soonest first, within a range of next-run times; Remove and RemoveRange take them out
// of memory and the store, and a removed job is never delivered.
func TestBrowseAndRemoveJobs(t *testing.T) {
	store := memstore.New()
	h := newHost()
	// A memory limit of a few jobs: most of the 20 persistent ones are paged out.
	s := New(Config{Store: store, Host: h, Memory: destinations.NewUsage(1 << 30), Space: &destinations.SpaceSignal{}, MemoryLimit: 2000})
	require.NoError(t, s.Recover(context.Background()))
	t.Cleanup(s.Close)
	dests, err := destinations.Parse("/queue/later")
	require.NoError(t, err)
	start := time.Now().UnixMilli()
	schedule := func(i int, persistent bool) string {
		m := &persistence.Message{ID: "ID:job-" + strconv.Itoa(i), Body: []byte(strconv.Itoa(i)), Persistent: persistent, Priority: 4,
			Headers: persistence.Headers{HeaderDelay, strconv.Itoa(3600000 + i*1000)}}
		scheduleJob(t, s, dests, m)
		return m.ID
	}
	for i := range 20 {
		schedule(i, true)
	}
	volatile := schedule(20, false)
	s.mu.Lock()
	paged := s.paged
	s.mu.Unlock()
	require.True(t, paged, "the test wants jobs paged out")

	jobs, err := s.Jobs(context.Background(), 0, AllTimes, 0)
	require.NoError(t, err)
	require.Len(t, jobs, 21)
	for i, j := range jobs {
		assert.Equal(t, "ID:job-"+strconv.Itoa(i), j.ID)
		assert.GreaterOrEqual(t, j.Next, start+3600000+int64(i)*1000)
		assert.Equal(t, dests, j.Dests)
		v, _ := j.Msg.Headers.Get(HeaderJobID)
		assert.Equal(t, j.ID, v)
	}
	// A range: jobs 5 to 9 by their next-run times, inclusive at both ends.
	in, err := s.Jobs(context.Background(), jobs[5].Next, jobs[9].Next, 0)
	require.NoError(t, err)
	require.Len(t, in, 5)
	assert.Equal(t, "ID:job-5", in[0].ID)
	limited, err := s.Jobs(context.Background(), 0, AllTimes, 3)
	require.NoError(t, err)
	assert.Len(t, limited, 3)

	for _, id := range []string{"ID:job-0", "ID:job-19", volatile} {
		ok, err := s.Remove(context.Background(), id)
		require.NoError(t, err)
		assert.True(t, ok, id)
	}
	ok, err := s.Remove(context.Background(), "ID:job-0")
	require.NoError(t, err)
	assert.False(t, ok, "removed already")
	n, err := s.RemoveRange(context.Background(), jobs[5].Next, jobs[9].Next)
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	left, err := s.Jobs(context.Background(), 0, AllTimes, 0)
	require.NoError(t, err)
	var ids []string
	for _, j := range left {
		ids = append(ids, j.ID)
	}
	assert.Equal(t, []string{"ID:job-1", "ID:job-2", "ID:job-3", "ID:job-4", "ID:job-10", "ID:job-11", "ID:job-12",
		"ID:job-13", "ID:job-14", "ID:job-15", "ID:job-16", "ID:job-17", "ID:job-18"}, ids)
	assert.EqualValues(t, 13, stored(store))

	n, err = s.RemoveAll(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 13, n)
	assert.EqualValues(t, 0, stored(store))
	s.mu.Lock()
	assert.Zero(t, s.jobs.Len())
	assert.Zero(t, s.memBytes)
	s.mu.Unlock()
}

// A removed job due now is not delivered: removal and delivery exclude each other.
func TestRemovedJobNotDelivered(t *testing.T) {
	store := memstore.New()
	h := newHost()
	s := newScheduler(t, store, h, nil)
	dests, err := destinations.Parse("/queue/soon")
	require.NoError(t, err)
	for i, delay := range []string{"300", "400"} {
		m := &persistence.Message{ID: "ID:soon-" + strconv.Itoa(i), Body: []byte(delay), Persistent: true, Priority: 4,
			Headers: persistence.Headers{HeaderDelay, delay}}
		scheduleJob(t, s, dests, m)
	}
	ok, err := s.Remove(context.Background(), "ID:soon-0")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "/queue/soon 400", h.next(t), "the kept job is delivered, the removed one never")
	require.Eventually(t, func() bool { return stored(store) == 0 }, 10*time.Second, 5*time.Millisecond)
}

// scheduleJob schedules m for dests and waits until it is stored.
func scheduleJob(t *testing.T, s *Scheduler, dests []destinations.Name, m *persistence.Message) {
	t.Helper()
	done := make(chan error, 1)
	require.NoError(t, s.Schedule(context.Background(), dests, m, func(err error) { done <- err }))
	require.NoError(t, <-done)
}
