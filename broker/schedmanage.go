package broker

import (
	"context"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/broker/scheduler"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// ActiveMQ's scheduler management destination (SchedulerBroker.send in ActiveMQ 5.x): a
// SEND to a destination whose name starts with ActiveMQ.Scheduler.Management (any
// case; a topic in ActiveMQ's examples, a queue does the same) is an order to the
// scheduler, not a message. Its AMQ_SCHEDULER_ACTION header says which:
//
//   - BROWSE: one message per job, in next-run order, is sent to the SEND's reply-to
//     destination (nothing without one): the message as scheduled, its AMQ_SCHEDULED_*
//     headers included, with scheduledJobId, type Advisory, non-persistent, and the
//     job's destination in original-destination;
//   - REMOVE: the job named by the scheduledJobId header;
//   - REMOVEALL: every job.
//
// BROWSE and REMOVEALL with both ACTION_START_TIME and ACTION_END_TIME (ms since the
// epoch) take the jobs whose next run is within them, both ends included; with one of
// them only, every job, as ActiveMQ does. An unknown action does nothing. The order is
// carried out when the SEND arrives, also inside a transaction (as ActiveMQ does).
//
// Authorization is ActiveMQ's: the right to write to the management destination, and
// no admin right. One check is added: writing the browse to the reply-to destination
// needs the right to write there, so the management destination is no way around a
// destination's write rule.
const (
	schedulerManagement = "ActiveMQ.Scheduler.Management"
	headerAction        = "AMQ_SCHEDULER_ACTION"
	headerActionStart   = "ACTION_START_TIME"
	headerActionEnd     = "ACTION_END_TIME"

	actionBrowse    = "BROWSE"
	actionRemove    = "REMOVE"
	actionRemoveAll = "REMOVEALL"
)

// schedulerManagementSend reports whether a SEND to dests is an order to the scheduler.
func (b *Broker) schedulerManagementSend(dests []destinations.Name) bool {
	if b.sched == nil || len(dests) == 0 {
		return false
	}
	name := dests[0].Name
	return len(name) >= len(schedulerManagement) && strings.EqualFold(name[:len(schedulerManagement)], schedulerManagement)
}

// manageScheduler carries out the order m, a SEND to the management destination dests.
func (c *Conn) manageScheduler(ctx context.Context, dests []destinations.Name, m *persistence.Message, done func(error)) error {
	if err := c.authorizeUse(dests, security.Write, false); err != nil {
		return err
	}
	action, ok := stringProperty(m, headerAction)
	if !ok {
		done(nil)
		return nil
	}
	start, end, err := actionRange(m)
	if err != nil {
		return err
	}
	switch action {
	case actionBrowse:
		if err := c.browseScheduled(ctx, m, start, end); err != nil {
			return err
		}
	case actionRemove:
		if id, ok := stringProperty(m, scheduler.HeaderJobID); ok {
			removed, err := c.b.sched.Remove(ctx, id)
			if err != nil {
				return err
			}
			if removed {
				c.b.mgmt.Done(c.operator(), "remove scheduled", id, 1)
			}
		}
	case actionRemoveAll:
		n, err := c.b.sched.RemoveRange(ctx, start, end)
		if err != nil {
			return err
		}
		c.b.mgmt.Done(c.operator(), "remove all scheduled", "", n)
	}
	done(nil)
	return nil
}

// operator names the connection's user for the management log: a removal ordered
// over the management destination is logged as one from the admin API is.
func (c *Conn) operator() string {
	user := c.subject.User
	if user == "" {
		user = "anonymous"
	}
	return user + " (" + c.ID + " " + c.RemoteAddr + ", " + schedulerManagement + ")"
}

// browseScheduled sends the jobs due within [start, end] to m's reply-to destination.
func (c *Conn) browseScheduled(ctx context.Context, m *persistence.Message, start, end int64) error {
	if err := c.rewriteReplyTo(m.Headers); err != nil {
		return err
	}
	replyTo, ok := m.Headers.Get(destinations.ReplyToProperty)
	if !ok {
		return nil
	}
	to, err := destinations.Parse(replyTo)
	if err != nil {
		return errorf(ErrInvalidDestination, "reply-to %q: %v", replyTo, err)
	}
	if err := c.authorizeUse(to, security.Write, true); err != nil {
		return err
	}
	if to, err = c.resolveSend(to, m); err != nil {
		return err
	}
	if err := c.dests.Admit(c.creator(), to); err != nil {
		return err
	}
	jobs, err := c.b.sched.Jobs(ctx, start, end, 0)
	if err != nil {
		return err
	}
	host := schedHost{c.b}
	for _, j := range jobs {
		msg := j.Msg
		msg.ID = c.b.newMessageID()
		msg.Persistent = false
		msg.Seq, msg.Dest = 0, ""
		names := make([]string, len(j.Dests))
		for i, d := range j.Dests {
			names[i] = d.String()
		}
		msg.Headers = append(persistence.Headers{persistence.HeaderType, "Advisory",
			"original-destination", strings.Join(names, ",")}, msg.Headers...)
		batch, entries, err := host.Route(to, msg)
		if batch != nil {
			host.Commit(batch, persistence.Async, func(err error) { destinations.SettleAll(entries, err) })
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// actionRange is the range of next-run times an order applies to: all of them unless
// both ACTION_START_TIME and ACTION_END_TIME are set.
func actionRange(m *persistence.Message) (start, end int64, err error) {
	from, okFrom, err := longProperty(m, headerActionStart)
	if err != nil {
		return 0, 0, err
	}
	to, okTo, err := longProperty(m, headerActionEnd)
	if err != nil {
		return 0, 0, err
	}
	if !okFrom || !okTo {
		return 0, scheduler.AllTimes, nil
	}
	return from, to, nil
}

// stringProperty is the text of m's property name, a header or a typed property.
func stringProperty(m *persistence.Message, name string) (string, bool) {
	if v, ok := m.Headers.Get(name); ok {
		return v, true
	}
	if p, ok := m.Props.Get(name); ok {
		return p.Text()
	}
	return "", false
}

// longProperty is m's property name as a number of milliseconds.
func longProperty(m *persistence.Message, name string) (int64, bool, error) {
	p, v, ok := m.Property(name)
	if !ok {
		return 0, false, nil
	}
	if p.Kind.IsInteger() {
		return p.Int(), true, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, false, errorf(ErrInvalidDestination, "%s %q: a time in milliseconds since the epoch", name, v)
	}
	return n, true, nil
}

// errSchedulerOff is the answer of the admin operations on scheduled messages when the
// broker runs without a scheduler.
func errSchedulerOff() error {
	return errorf(ErrNotFound, "scheduled delivery is off (broker.schedulerSupport: false): there are no scheduled messages")
}

// ScheduledJobs returns up to limit scheduled messages (all when limit is 0), soonest
// first, for the admin API and console.
func (b *Broker) ScheduledJobs(ctx context.Context, limit int) ([]scheduler.JobInfo, error) {
	if b.sched == nil {
		return nil, errSchedulerOff()
	}
	return b.sched.Jobs(ctx, 0, scheduler.AllTimes, limit)
}

// RemoveScheduledJob removes the scheduled message whose scheduledJobId is id, on
// behalf of operator who; ErrNotFound when there is none.
func (b *Broker) RemoveScheduledJob(ctx context.Context, who, id string) error {
	if b.sched == nil {
		return errSchedulerOff()
	}
	ok, err := b.sched.Remove(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return errorf(ErrNotFound, "no scheduled message %s", id)
	}
	b.mgmt.Done(who, "remove scheduled", id, 1)
	return nil
}

// RemoveScheduledJobs removes every scheduled message on behalf of operator who and
// returns how many.
func (b *Broker) RemoveScheduledJobs(ctx context.Context, who string) (int, error) {
	if b.sched == nil {
		return 0, errSchedulerOff()
	}
	n, err := b.sched.RemoveAll(ctx)
	if err != nil {
		return 0, err
	}
	b.mgmt.Done(who, "remove all scheduled", "", n)
	return n, nil
}
