package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3/frame"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/internal/browsertest"
)

// amqSchedulerXML is an ActiveMQ with the scheduler on and a STOMP connector.
const amqSchedulerXML = `<?xml version="1.0" encoding="UTF-8"?>
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
                           http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="sched" persistent="false" useJmx="false" schedulerSupport="true">
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:` + amqStompPort + `"/>
    </transportConnectors>
  </broker>
</beans>
`

// schedulerManagement is ActiveMQ's management destination as its clients name it.
const schedulerManagement = "/topic/ActiveMQ.Scheduler.Management"

// TestSchedulerManagementMatchesActiveMQ runs ActiveMQ's scheduler management over
// STOMP (a SEND to ActiveMQ.Scheduler.Management with AMQ_SCHEDULER_ACTION BROWSE,
// REMOVE, REMOVEALL, with and without ACTION_START_TIME/ACTION_END_TIME) on ActiveMQ
// 5.17 and on ours, and requires the same answers: the jobs browsed to the reply-to
// queue (their body, scheduling headers, type, original-destination, persistence (no
// persistent header: non-persistent) and a scheduledJobId), the ones left after each
// removal, and a removed job never delivered while a kept one is.
func TestSchedulerManagementMatchesActiveMQ(t *testing.T) {
	amq := startActiveMQ(t, amqSchedulerXML)
	ours := startBroker(t, brokerConfig{})
	want := schedulerManagementScenario(t, amq)
	got := schedulerManagementScenario(t, ours.Addr)
	assert.Equal(t, want, got, "ActiveMQ's first")
	// What the scenario requires of both, checked on ours (and so on ActiveMQ's).
	assert.Equal(t, schedulerManagementWant, got)
}

// schedulerManagementWant is what schedulerManagementScenario sees on ActiveMQ.
var schedulerManagementWant = []string{
	"all: A|delay=3600000|period=|repeat=|type=Advisory|from=/queue/sched.work|persistent=|job",
	"all: B|delay=7200000|period=|repeat=|type=Advisory|from=/queue/sched.work|persistent=|job",
	"all: C|delay=10800000|period=60000|repeat=2|type=Advisory|from=/queue/sched.work|persistent=|job",
	"range: B|delay=7200000|period=|repeat=|type=Advisory|from=/queue/sched.work|persistent=|job",
	"after REMOVE A: B,C",
	"after REMOVEALL in C's range: B",
	"after REMOVEALL: (none)",
	"delivered: kept",
	"browsed with no reply-to: nothing",
}

// TestSchedulerManagementOnEachAdapter runs the scenario of
// TestSchedulerManagementMatchesActiveMQ on every durable adapter: persistent jobs are
// browsed and removed from each store.
func TestSchedulerManagementOnEachAdapter(t *testing.T) {
	eachDurableAdapter(t, func(t *testing.T, bc brokerConfig) {
		assert.Equal(t, schedulerManagementWant, schedulerManagementScenario(t, startBroker(t, bc).Addr))
	})
}

// schedulerManagementScenario runs the scenario on the broker at addr and returns what
// it saw, one line per step.
func schedulerManagementScenario(t *testing.T, addr string) []string {
	c := jmsDial(t, addr)
	const work, reply = "/queue/sched.work", "/queue/sched.reply"
	replies := c.subscribe(reply)
	for _, j := range []struct{ body, delay, period, repeat string }{
		{"A", "3600000", "", ""}, {"B", "7200000", "", ""}, {"C", "10800000", "60000", "2"},
	} {
		hs := []string{"persistent", "true", "AMQ_SCHEDULED_DELAY", j.delay}
		if j.period != "" {
			hs = append(hs, "AMQ_SCHEDULED_PERIOD", j.period, "AMQ_SCHEDULED_REPEAT", j.repeat)
		}
		c.send(work, j.body, hs...)
	}
	var lines []string
	all := browseScheduled(c, replies, reply)
	require.Len(t, all, 3, "BROWSE of the three jobs")
	for _, m := range all {
		lines = append(lines, "all: "+scheduledLine(m))
	}
	// A range around B's next run only (jobs are an hour apart).
	now := time.Now().UnixMilli()
	from, to := strconv.FormatInt(now+90*60_000, 10), strconv.FormatInt(now+150*60_000, 10)
	for _, m := range browseScheduled(c, replies, reply, "ACTION_START_TIME", from, "ACTION_END_TIME", to) {
		lines = append(lines, "range: "+scheduledLine(m))
	}
	c.send(schedulerManagement, "", "AMQ_SCHEDULER_ACTION", "REMOVE", "scheduledJobId", all[0].Header.Get("scheduledJobId"))
	lines = append(lines, "after REMOVE A: "+scheduledBodies(browseScheduled(c, replies, reply)))
	from, to = strconv.FormatInt(now+150*60_000, 10), strconv.FormatInt(now+240*60_000, 10)
	c.send(schedulerManagement, "", "AMQ_SCHEDULER_ACTION", "REMOVEALL", "ACTION_START_TIME", from, "ACTION_END_TIME", to)
	lines = append(lines, "after REMOVEALL in C's range: "+scheduledBodies(browseScheduled(c, replies, reply)))
	c.send(schedulerManagement, "", "AMQ_SCHEDULER_ACTION", "REMOVEALL")
	lines = append(lines, "after REMOVEALL: "+scheduledBodies(browseScheduled(c, replies, reply)))

	// A job removed before it is due is never delivered; one kept, due after it, is.
	const due = "/queue/sched.due"
	c.send(due, "removed", "AMQ_SCHEDULED_DELAY", "1500")
	c.send(due, "kept", "AMQ_SCHEDULED_DELAY", "2500")
	jobs := browseScheduled(c, replies, reply)
	require.Len(t, jobs, 2)
	require.Equal(t, "removed", string(jobs[0].Body))
	c.send(schedulerManagement, "", "AMQ_SCHEDULER_ACTION", "REMOVE", "scheduledJobId", jobs[0].Header.Get("scheduledJobId"))
	sub := c.subscribe(due)
	lines = append(lines, "delivered: "+string(c.next(sub).Body))

	// A BROWSE without a reply-to sends nothing anywhere.
	c.send(work, "D", "AMQ_SCHEDULED_DELAY", "3600000")
	c.send(schedulerManagement, "", "AMQ_SCHEDULER_ACTION", "BROWSE")
	c.send(reply, "marker")
	if m := c.next(replies); string(m.Body) == "marker" {
		lines = append(lines, "browsed with no reply-to: nothing")
	} else {
		lines = append(lines, "browsed with no reply-to: "+string(m.Body))
	}
	c.send(schedulerManagement, "", "AMQ_SCHEDULER_ACTION", "REMOVEALL")
	return lines
}

// browseScheduled sends a BROWSE (with headers) whose reply-to is reply, which sub
// reads, and returns the jobs it got: those before a marker sent to reply after it.
func browseScheduled(c *jmsClient, sub, reply string, headers ...string) []*frame.Frame {
	c.t.Helper()
	c.send(schedulerManagement, "", append([]string{"AMQ_SCHEDULER_ACTION", "BROWSE", "reply-to", reply}, headers...)...)
	c.send(reply, "marker")
	var out []*frame.Frame
	for {
		m := c.next(sub)
		if string(m.Body) == "marker" {
			return out
		}
		out = append(out, m)
	}
}

// scheduledLine is what the scenario compares of a browsed job.
func scheduledLine(m *frame.Frame) string {
	id := "no job id"
	if m.Header.Get("scheduledJobId") != "" {
		id = "job"
	}
	return fmt.Sprintf("%s|delay=%s|period=%s|repeat=%s|type=%s|from=%s|persistent=%s|%s", m.Body,
		m.Header.Get("AMQ_SCHEDULED_DELAY"), m.Header.Get("AMQ_SCHEDULED_PERIOD"), m.Header.Get("AMQ_SCHEDULED_REPEAT"),
		m.Header.Get("type"), m.Header.Get("original-destination"), m.Header.Get("persistent"), id)
}

func scheduledBodies(ms []*frame.Frame) string {
	if len(ms) == 0 {
		return "(none)"
	}
	var bs []string
	for _, m := range ms {
		bs = append(bs, string(m.Body))
	}
	return strings.Join(bs, ",")
}

// TestSchedulerManagementAuthorization: as in ActiveMQ, the management destination
// takes the orders of a user who may write to it (no admin right needed) and refuses
// the others with ActiveMQ's "not authorized to write"; the browse is written to the
// reply-to destination only for a user who may write there; a removal is logged with
// the user who ordered it.
func TestSchedulerManagementAuthorization(t *testing.T) {
	b := startSecBroker(t, secBroker{Plugins: `plugins:
  simpleAuthentication:
    users:
      - {username: ops, password: ops-pw, groups: ops}
      - {username: app, password: app-pw, groups: app}
  authorization:
    entries:
      - {queue: "sched.work", read: "ops,app", write: "ops,app", admin: "ops,app"}
      - {queue: "sched.reply.ops", read: ops, write: ops, admin: ops}
      - {queue: "sched.reply.app", read: app, write: app, admin: app}
      - {topic: "ActiveMQ.Scheduler.>", write: ops}
      - {topic: "jms.sync", write: "ops,app", admin: "ops,app"}
`})
	ops := jmsDial(t, b.Addr, "login", "ops", "passcode", "ops-pw")
	app := jmsDial(t, b.Addr, "login", "app", "passcode", "app-pw")
	app.send("/queue/sched.work", "job", "AMQ_SCHEDULED_DELAY", "3600000")

	refused := app.refused("SEND", "destination", schedulerManagement, "AMQ_SCHEDULER_ACTION", "REMOVEALL")
	assert.Contains(t, refused.Header.Get("message"), "User app is not authorized to write to: topic://ActiveMQ.Scheduler.Management")
	refused = ops.refused("SEND", "destination", schedulerManagement, "AMQ_SCHEDULER_ACTION", "BROWSE", "reply-to", "/queue/sched.reply.app")
	assert.Contains(t, refused.Header.Get("message"), "not authorized")

	sub := ops.subscribe("/queue/sched.reply.ops")
	jobs := browseScheduled(ops, sub, "/queue/sched.reply.ops")
	require.Len(t, jobs, 1, "the job is still there: app's REMOVEALL was refused")
	ops.send(schedulerManagement, "", "AMQ_SCHEDULER_ACTION", "REMOVEALL")
	assert.Empty(t, browseScheduled(ops, sub, "/queue/sched.reply.ops"))
	assert.Contains(t, b.Log(), `op="remove all scheduled" by="ops (`, "the removal is logged with who ordered it")
}

// apiScheduledJob is a job as GET /api/scheduled-jobs lists it.
type apiScheduledJob struct {
	ID          string    `json:"id"`
	Destination string    `json:"destination"`
	NextRun     time.Time `json:"next_run"`
	RepeatsLeft int       `json:"repeats_left"`
	PeriodMS    int64     `json:"period_ms"`
	Size        int64     `json:"size"`
	Persistent  bool      `json:"persistent"`
}

// TestScheduledJobsAPI: the REST API lists scheduled messages soonest first with their
// next run, repeats left, period, destination and size (persistent ones after a
// restart too), removes one by its scheduledJobId (404 for one that is not there) and
// removes them all; with schedulerSupport off it says so with a 404.
func TestScheduledJobsAPI(t *testing.T) {
	bc := brokerConfig{Adapter: "kahaDB: {}", DataDir: t.TempDir(), Env: []string{adminEnv}}
	b := startBroker(t, bc)
	c := jmsDial(t, b.Addr)
	before := time.Now()
	c.send("/queue/sched.api", "once", "persistent", "true", "AMQ_SCHEDULED_DELAY", "3600000")
	c.send("/queue/sched.api", "repeating", "persistent", "true", "AMQ_SCHEDULED_DELAY", "7200000",
		"AMQ_SCHEDULED_PERIOD", "60000", "AMQ_SCHEDULED_REPEAT", "3")
	after := time.Now()
	b.Stop()
	b = startBroker(t, bc)
	c = jmsDial(t, b.Addr)
	c.send("/topic/sched.api", "volatile", "AMQ_SCHEDULED_DELAY", "10800000")
	a := newAPI(t, "http://"+statsAddr(t, b))

	var jobs []apiScheduledJob
	a.get("/api/scheduled-jobs", &jobs)
	require.Len(t, jobs, 3)
	for i, want := range []struct {
		dest              string
		delay             time.Duration
		repeats           int
		period            int64
		persistent, fresh bool
	}{
		{"/queue/sched.api", time.Hour, 0, 0, true, false},
		{"/queue/sched.api", 2 * time.Hour, 3, 60000, true, false},
		{"/topic/sched.api", 3 * time.Hour, 0, 0, false, true},
	} {
		j := jobs[i]
		assert.Equal(t, want.dest, j.Destination, "job %d", i)
		assert.Equal(t, want.repeats, j.RepeatsLeft, "job %d", i)
		assert.Equal(t, want.period, j.PeriodMS, "job %d", i)
		assert.Equal(t, want.persistent, j.Persistent, "job %d", i)
		assert.Positive(t, j.Size, "job %d", i)
		assert.NotEmpty(t, j.ID, "job %d", i)
		if !want.fresh { // sent before the restart: due from when they were sent
			assert.False(t, j.NextRun.Before(before.Add(want.delay).Truncate(time.Millisecond)), "job %d next run %v", i, j.NextRun)
			assert.False(t, j.NextRun.After(after.Add(want.delay)), "job %d next run %v", i, j.NextRun)
		}
	}
	a.get("/api/scheduled-jobs?limit=1", &jobs)
	assert.Len(t, jobs, 1)
	a.expect(http.StatusBadRequest, "GET", "/api/scheduled-jobs?limit=0", "", nil)

	a.expect(http.StatusNoContent, "DELETE", "/api/scheduled-jobs/"+url.PathEscape(jobs[0].ID), "", nil)
	var e struct{ Error string }
	a.expect(http.StatusNotFound, "DELETE", "/api/scheduled-jobs/"+url.PathEscape(jobs[0].ID), "", &e)
	assert.Equal(t, "no scheduled message "+jobs[0].ID, e.Error)
	a.get("/api/scheduled-jobs", &jobs)
	require.Len(t, jobs, 2)
	assert.Equal(t, 3, jobs[0].RepeatsLeft)

	var removed struct{ Removed int }
	a.expect(http.StatusOK, "DELETE", "/api/scheduled-jobs", "", &removed)
	assert.Equal(t, 2, removed.Removed)
	status, body, _ := a.call("GET", "/api/scheduled-jobs", "")
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, "[]", string(body))

	off := startBroker(t, brokerConfig{Env: []string{adminEnv, "BROKER_BROKER_SCHEDULERSUPPORT=false"}})
	newAPI(t, "http://"+statsAddr(t, off)).expect(http.StatusNotFound, "GET", "/api/scheduled-jobs", "", &e)
	assert.Contains(t, e.Error, "schedulerSupport: false")
}

// TestConsoleScheduledPage drives the console's Scheduled page in Chromium: reached
// from the navigation, it lists the scheduled messages soonest first with their
// destination, repeats left and period; Remove (confirmed) takes one out, and the
// STOMP BROWSE no longer finds it; Remove all empties the list.
func TestConsoleScheduledPage(t *testing.T) {
	b, base := adminBroker(t, brokerConfig{})
	c := jmsDial(t, b.Addr)
	c.send("/queue/sched.console", "first", "persistent", "true", "AMQ_SCHEDULED_DELAY", "3600000")
	c.send("/queue/sched.console", "second", "persistent", "true", "AMQ_SCHEDULED_DELAY", "7200000",
		"AMQ_SCHEDULED_PERIOD", "60000", "AMQ_SCHEDULED_REPEAT", "2")
	c.send("/topic/sched.console", "third", "AMQ_SCHEDULED_DELAY", "10800000")
	replies := c.subscribe("/queue/sched.console.reply")
	jobs := browseScheduled(c, replies, "/queue/sched.console.reply")
	require.Len(t, jobs, 3)
	ids := make([]string, len(jobs))
	for i, m := range jobs {
		ids[i] = m.Header.Get("scheduledJobId")
	}

	tb := consoleTab(t)
	tb.Open(base + "/")
	tb.Submit(`nav a[href="/scheduled"]`)
	rowIDs := `[...document.querySelectorAll("table.scheduled tr[data-job]")].map(r => r.dataset.job)`
	require.Equal(t, ids, browsertest.Eval[[]string](tb, rowIDs), "soonest first, as BROWSE gives them")
	second := `table.scheduled tr[data-job="` + ids[1] + `"]`
	row := browsertest.Eval[[]string](tb, `[...document.querySelectorAll('`+second+` td')].map(td => td.textContent.trim())`)
	require.GreaterOrEqual(t, len(row), 8)
	assert.Equal(t, []string{ids[1], "/queue/sched.console"}, row[:2])
	assert.Equal(t, "2", row[4], "repeats left")
	assert.Equal(t, "1m 00s", row[5], "period")
	assert.Equal(t, "yes", row[7], "persistent")
	assert.Equal(t, "no", tb.Text(`table.scheduled tr[data-job="`+ids[2]+`"] td:nth-child(8)`))

	tb.Submit(second + " form button")
	assert.Contains(t, tb.WaitDialog(), "Remove scheduled message "+ids[1])
	assert.Equal(t, "Removed scheduled message "+ids[1]+".", tb.Text("#flash"))
	assert.Equal(t, []string{ids[0], ids[2]}, browsertest.Eval[[]string](tb, rowIDs))
	assert.Equal(t, "first,third", scheduledBodies(browseScheduled(c, replies, "/queue/sched.console.reply")))
	assert.Contains(t, b.Log(), "removed a scheduled message")

	tb.Submit("#remove-all button")
	assert.Contains(t, tb.WaitDialog(), "Remove every scheduled message (2)?")
	assert.Equal(t, "Removed 2 scheduled messages.", tb.Text("#flash"))
	assert.Equal(t, "No scheduled messages.", tb.Text("p.empty"))
	assert.Empty(t, browseScheduled(c, replies, "/queue/sched.console.reply"))
}

// TestCLIScheduled: broker scheduled lists the scheduled messages as a table and as
// JSON, removes one by its id and removes them all.
func TestCLIScheduled(t *testing.T) {
	b := startBroker(t, brokerConfig{Env: []string{cliAdminEnv}})
	url := "--url=stomp://" + b.Addr
	adm := "--admin=" + cliAdminURL(t, b, "", "")
	cliOK(t, "", "send", url, "--persistent", "--header", "AMQ_SCHEDULED_DELAY=3600000", "/queue/cli.sched", "one")
	cliOK(t, "", "send", url, "--header", "AMQ_SCHEDULED_DELAY=7200000", "--header", "AMQ_SCHEDULED_PERIOD=60000",
		"--header", "AMQ_SCHEDULED_REPEAT=2", "/queue/cli.sched", "two")

	out := cliOK(t, "", "scheduled", adm)
	assert.Regexp(t, `^ID +DESTINATION +NEXT RUN \(UTC\) +REPEATS +PERIOD +SIZE\n`, out)
	assert.Regexp(t, `(?m)^ID:\S+ +/queue/cli\.sched +\d{4}-\d\d-\d\d [\d:.]+ +0 +- +\d+ B$`, out)
	assert.Regexp(t, `(?m)^ID:\S+ +/queue/cli\.sched +\d{4}-\d\d-\d\d [\d:.]+ +2 +1m0s +\d+ B$`, out)
	var jobs []apiScheduledJob
	require.NoError(t, json.Unmarshal([]byte(cliOK(t, "", "scheduled", adm, "--json")), &jobs))
	require.Len(t, jobs, 2)

	assert.Equal(t, "removed scheduled message "+jobs[0].ID+"\n", cliOK(t, "", "scheduled", adm, "--remove", jobs[0].ID))
	r := runCLI(t, "", nil, "scheduled", adm, "--remove", jobs[0].ID)
	assert.NotEqual(t, 0, r.Code)
	assert.Contains(t, r.Stderr, "no scheduled message "+jobs[0].ID)
	assert.Equal(t, "removed 1 scheduled message\n", cliOK(t, "", "scheduled", adm, "--remove-all"))
	assert.Regexp(t, `^ID +DESTINATION +NEXT RUN \(UTC\) +REPEATS +PERIOD +SIZE\n$`, cliOK(t, "", "scheduled", adm))
}
