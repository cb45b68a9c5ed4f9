package console

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/activemq-go/broker/admin"
)

// The Scheduled page: the scheduled messages (AMQ_SCHEDULED_*), soonest first, with
// their next run, repeats left, period, destination and size, each with a Remove
// button, and a Remove all. It is served when the Backend is also an
// admin.ScheduledReader (and its actions when an admin.ScheduledManager), as
// admin.BrokerBackend is; otherwise the page says there are none to show.
//
//	GET  /scheduled
//	POST /scheduled/{id}/delete, /scheduled/delete

// scheduledData is the Scheduled page.
type scheduledData struct {
	Jobs []scheduledRow
	// Off says why no job is listed, when the backend cannot list them.
	Off string
	// Limited is set when the list stops at admin.MaxScheduledJobs.
	Limited bool
}

// scheduledRow is one job as the page shows it.
type scheduledRow struct {
	admin.ScheduledJob
	// In is how long until NextRun.
	In float64
	// Period is PeriodMS as a duration.
	Period time.Duration
}

func (c *Console) scheduled(w http.ResponseWriter, r *http.Request) {
	var d scheduledData
	sr, ok := c.b.(admin.ScheduledReader)
	if !ok {
		d.Off = "This broker's console cannot list scheduled messages."
		c.render(w, r, http.StatusOK, "scheduled", "Scheduled", "scheduled", d)
		return
	}
	jobs, err := sr.ScheduledJobs(r.Context(), admin.MaxScheduledJobs)
	if err != nil {
		d.Off = err.Error()
	}
	now := c.now()
	for _, j := range jobs {
		d.Jobs = append(d.Jobs, scheduledRow{ScheduledJob: j, In: j.NextRun.Sub(now).Seconds(),
			Period: time.Duration(j.PeriodMS) * time.Millisecond})
	}
	d.Limited = len(jobs) == admin.MaxScheduledJobs
	c.render(w, r, http.StatusOK, "scheduled", "Scheduled", "scheduled", d)
}

func (c *Console) deleteScheduled(w http.ResponseWriter, r *http.Request) {
	sm, ok := c.b.(admin.ScheduledManager)
	id := r.PathValue("id")
	if !ok {
		redirect(w, r, "/scheduled", errorFlash("This broker's console cannot remove scheduled messages."))
		return
	}
	if err := sm.RemoveScheduledJob(r.Context(), id); err != nil {
		redirect(w, r, "/scheduled", errorFlash("Removing scheduled message %s failed: %v", id, err))
		return
	}
	c.audit(r, "removed a scheduled message", slog.String("job", id))
	redirect(w, r, "/scheduled", okFlash("Removed scheduled message %s.", id))
}

func (c *Console) deleteAllScheduled(w http.ResponseWriter, r *http.Request) {
	sm, ok := c.b.(admin.ScheduledManager)
	if !ok {
		redirect(w, r, "/scheduled", errorFlash("This broker's console cannot remove scheduled messages."))
		return
	}
	n, err := sm.RemoveScheduledJobs(r.Context())
	if err != nil {
		redirect(w, r, "/scheduled", errorFlash("Removing the scheduled messages failed: %v", err))
		return
	}
	c.audit(r, "removed every scheduled message", slog.Int("messages", n))
	redirect(w, r, "/scheduled", okFlash("Removed %s.", plural(n, "scheduled message")))
}
