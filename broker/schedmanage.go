package broker

import (
	"context"

	"github.com/activemq-go/broker/broker/scheduler"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/security"
)

// A SEND to the scheduler's management destination is an order to it (package
// scheduler, order.go), carried out when the SEND arrives, also inside a transaction
// (as ActiveMQ does). Authorization is ActiveMQ's: the right to write to the
// management destination, and no admin right. One check is added: writing the browse
// to the reply-to destination needs the right to write there, so the management
// destination is no way around a destination's write rule.

// schedulerManagementSend reports whether a SEND to dests is an order to the scheduler.
func (b *Broker) schedulerManagementSend(dests []destinations.Name) bool {
	return b.sched != nil && len(dests) > 0 && scheduler.IsManagement(dests[0].Name)
}

// manageScheduler carries out the order m, a SEND to the management destination dests.
func (c *Conn) manageScheduler(ctx context.Context, dests []destinations.Name, m *persistence.Message, done func(error)) error {
	if err := c.authorizeUse(dests, security.Write, false); err != nil {
		return err
	}
	o, ok, err := scheduler.ParseOrder(m)
	if err != nil {
		return err
	}
	if !ok {
		done(nil)
		return nil
	}
	switch o.Action {
	case scheduler.ActionBrowse:
		if err := c.browseScheduled(ctx, m, o.Start, o.End); err != nil {
			return err
		}
	case scheduler.ActionRemove:
		if o.JobID != "" {
			removed, err := c.b.sched.Remove(ctx, o.JobID)
			if err != nil {
				return err
			}
			if removed {
				c.b.mgmt.Done(c.operator(), "remove scheduled", o.JobID, 1)
			}
		}
	case scheduler.ActionRemoveAll:
		n, err := c.b.sched.RemoveRange(ctx, o.Start, o.End)
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
	return user + " (" + c.ID + " " + c.RemoteAddr + ", " + scheduler.ManagementDest + ")"
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
		batch, entries, err := host.Route(to, scheduler.BrowseCopy(j, c.b.newMessageID()))
		if batch != nil {
			host.Commit(batch, persistence.Async, func(err error) { destinations.SettleAll(entries, err) })
		}
		if err != nil {
			return err
		}
	}
	return nil
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
