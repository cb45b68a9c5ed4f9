package admin

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/activemq-go/broker/broker"
)

// Scheduled messages (AMQ_SCHEDULED_*): GET /api/scheduled-jobs lists them soonest
// first, DELETE /api/scheduled-jobs/{id} removes one, DELETE /api/scheduled-jobs
// removes them all. The console's Scheduled page is built on the same methods.

// ScheduledJob is one scheduled message.
type ScheduledJob struct {
	// ID is the job's scheduledJobId, as ActiveMQ's BROWSE gives it.
	ID string `json:"id"`
	// Destination is where it goes ("/queue/X"; a composite's are comma-separated).
	Destination string    `json:"destination"`
	NextRun     time.Time `json:"next_run"`
	// RepeatsLeft is how many more times it is delivered after NextRun, PeriodMS the
	// milliseconds between deliveries (0 for a single delivery).
	RepeatsLeft int   `json:"repeats_left"`
	PeriodMS    int64 `json:"period_ms"`
	Size        int64 `json:"size"`
	Persistent  bool  `json:"persistent"`
}

// ScheduledReader is the optional power of a Reader to list scheduled messages, and
// ScheduledManager that of a Manager to remove them. Both answer an error wrapping
// broker.ErrNotFound when the broker runs without a scheduler.
type ScheduledReader interface {
	// ScheduledJobs returns up to limit scheduled messages, soonest first.
	ScheduledJobs(ctx context.Context, limit int) ([]ScheduledJob, error)
}

// ScheduledManager removes scheduled messages: see ScheduledReader.
type ScheduledManager interface {
	RemoveScheduledJob(ctx context.Context, id string) error
	RemoveScheduledJobs(ctx context.Context) (int, error)
}

var (
	_ ScheduledReader  = (*BrokerBackend)(nil)
	_ ScheduledManager = (*BrokerBackend)(nil)
)

// MaxScheduledJobs is the most scheduled messages one listing returns (its default).
const MaxScheduledJobs = 1000

// ScheduledJobs implements ScheduledReader.
func (bb *BrokerBackend) ScheduledJobs(ctx context.Context, limit int) ([]ScheduledJob, error) {
	jobs, err := bb.b.ScheduledJobs(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]ScheduledJob, len(jobs))
	for i, j := range jobs {
		names := make([]string, len(j.Dests))
		for k, d := range j.Dests {
			names[k] = d.String()
		}
		out[i] = ScheduledJob{ID: j.ID, Destination: strings.Join(names, ","), NextRun: time.UnixMilli(j.Next).UTC(),
			RepeatsLeft: j.Remaining, PeriodMS: j.Period, Size: j.Size, Persistent: j.Msg.Persistent}
		if j.Remaining == 0 {
			out[i].PeriodMS = 0
		}
	}
	return out, nil
}

// RemoveScheduledJob implements ScheduledManager.
func (bb *BrokerBackend) RemoveScheduledJob(ctx context.Context, id string) error {
	return bb.b.RemoveScheduledJob(ctx, who(ctx), id)
}

// RemoveScheduledJobs implements ScheduledManager.
func (bb *BrokerBackend) RemoveScheduledJobs(ctx context.Context) (int, error) {
	return bb.b.RemoveScheduledJobs(ctx, who(ctx))
}

// errNoScheduler answers the scheduled routes of a backend that has no scheduler.
func errNoScheduler() error {
	return &broker.Error{Message: "this backend has no scheduled messages", Err: broker.ErrNotFound}
}

func (s *Server) getScheduled(w http.ResponseWriter, r *http.Request) {
	sr, ok := s.o.Backend.(ScheduledReader)
	if !ok {
		s.fail(w, r, errNoScheduler())
		return
	}
	limit := MaxScheduledJobs
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxScheduledJobs {
			s.fail(w, r, badRequest("limit %q: a number from 1 to %d", v, MaxScheduledJobs))
			return
		}
		limit = n
	}
	jobs, err := sr.ScheduledJobs(r.Context(), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if jobs == nil {
		jobs = []ScheduledJob{}
	}
	writeJSON(w, http.StatusOK, jobs)
}

func (s *Server) removeScheduled(w http.ResponseWriter, r *http.Request) {
	sm, ok := s.manage.(ScheduledManager)
	if !ok {
		s.fail(w, r, errNoScheduler())
		return
	}
	if err := sm.RemoveScheduledJob(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// RemovedResult is what removing every scheduled message returns.
type RemovedResult struct {
	Removed int `json:"removed"`
}

func (s *Server) removeAllScheduled(w http.ResponseWriter, r *http.Request) {
	sm, ok := s.manage.(ScheduledManager)
	if !ok {
		s.fail(w, r, errNoScheduler())
		return
	}
	n, err := sm.RemoveScheduledJobs(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, RemovedResult{Removed: n})
}
