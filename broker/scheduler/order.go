package scheduler

import (
	"strconv"
	"strings"

	"github.com/activemq-go/broker/persistence"
)

// ActiveMQ's scheduler management destination (SchedulerBroker.send in ActiveMQ 5.x): a
// SEND to a destination whose name starts with ActiveMQ.Scheduler.Management (any
// case; a topic in ActiveMQ's examples, a queue does the same) is an order to the
// scheduler, not a message. Its AMQ_SCHEDULER_ACTION header says which:
//
//   - BROWSE: one message per job, in next-run order, is sent to the SEND's reply-to
//     destination (nothing without one): BrowseCopy of the job;
//   - REMOVE: the job named by the scheduledJobId header;
//   - REMOVEALL: every job.
//
// BROWSE and REMOVEALL with both ACTION_START_TIME and ACTION_END_TIME (ms since the
// epoch) take the jobs whose next run is within them, both ends included; with one of
// them only, every job, as ActiveMQ does. An unknown action does nothing.
const (
	ManagementDest    = "ActiveMQ.Scheduler.Management"
	HeaderAction      = "AMQ_SCHEDULER_ACTION"
	HeaderActionStart = "ACTION_START_TIME"
	HeaderActionEnd   = "ACTION_END_TIME"

	ActionBrowse    = "BROWSE"
	ActionRemove    = "REMOVE"
	ActionRemoveAll = "REMOVEALL"
)

// IsManagement reports whether a destination's name is the management destination's.
func IsManagement(name string) bool {
	return len(name) >= len(ManagementDest) && strings.EqualFold(name[:len(ManagementDest)], ManagementDest)
}

// Order is what a SEND to the management destination asks.
type Order struct {
	Action     string // ActionBrowse, ActionRemove, ActionRemoveAll, or another (nothing)
	JobID      string // REMOVE's scheduledJobId; "" none
	Start, End int64  // the next-run range BROWSE and REMOVEALL take (0, AllTimes: all)
}

// ParseOrder reads the order m carries; false when it carries no action (nothing to do).
func ParseOrder(m *persistence.Message) (Order, bool, error) {
	var o Order
	action, ok := textProperty(m, HeaderAction)
	if !ok {
		return o, false, nil
	}
	o.Action = action
	o.JobID, _ = textProperty(m, HeaderJobID)
	from, _, okFrom, err := intProperty(m, HeaderActionStart)
	if err != nil {
		return o, false, err
	}
	to, _, okTo, err := intProperty(m, HeaderActionEnd)
	if err != nil {
		return o, false, err
	}
	if okFrom && okTo {
		o.Start, o.End = from, to
	} else {
		o.Start, o.End = 0, AllTimes
	}
	return o, true, nil
}

// BrowseCopy is the message BROWSE sends for job j: the message as scheduled (its
// AMQ_SCHEDULED_* headers and scheduledJobId included) under the new id, type Advisory,
// non-persistent, with the job's destinations in original-destination.
func BrowseCopy(j JobInfo, id string) *persistence.Message {
	m := j.Msg
	m.ID = id
	m.Persistent = false
	m.Seq, m.Dest = 0, ""
	names := make([]string, len(j.Dests))
	for i, d := range j.Dests {
		names[i] = d.String()
	}
	m.Headers = append(persistence.Headers{persistence.HeaderType, "Advisory",
		"original-destination", strings.Join(names, ",")}, m.Headers...)
	return m
}

// textProperty is the text of m's property name, a header or a typed property.
func textProperty(m *persistence.Message, name string) (string, bool) {
	if v, ok := m.Headers.Get(name); ok {
		return v, true
	}
	if p, ok := m.Props.Get(name); ok {
		return p.Text()
	}
	return "", false
}

// intProperty is m's property name as a whole number (a typed integer or its text), with
// the text it was read from; an error names the property and its text.
func intProperty(m *persistence.Message, name string) (n int64, text string, ok bool, err error) {
	p, v, ok := m.Property(name)
	if !ok {
		return 0, "", false, nil
	}
	if p.Kind.IsInteger() {
		return p.Int(), strconv.FormatInt(p.Int(), 10), true, nil
	}
	n, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, v, false, invalid("invalid %s %q: a whole number", name, v)
	}
	return n, v, true, nil
}
