package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/activemq-go/broker/internal/stompclient"
)

// AdvisoryQueueTopic is where ActiveMQ announces its queues; a new subscriber first
// gets one DestinationInfo per queue that exists.
const AdvisoryQueueTopic = "/topic/ActiveMQ.Advisory.Queue"

// advisory is the part of a DestinationInfo advisory (transformation
// jms-advisory-json) that discovery reads.
type advisory struct {
	Info struct {
		Destination struct {
			Class string `json:"@class"`
			Name  string `json:"string"`
		} `json:"destination"`
		OperationType int `json:"operationType"`
	} `json:"DestinationInfo"`
}

// Discover returns the queues the source announces on AdvisoryQueueTopic within settle
// after the subscription (ActiveMQ replays every existing queue at once), sorted,
// without temporary and advisory queues. A queue announced and then removed within
// settle is left out.
func Discover(ctx context.Context, src *stompclient.URL, o stompclient.Options, settle time.Duration) ([]string, error) {
	c, err := stompclient.Dial(ctx, src, o)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	h := hdr("transformation", "jms-advisory-json")
	if err := c.Subscribe(ctx, stompclient.Subscription{ID: "advisory", Destination: AdvisoryQueueTopic, Headers: h}); err != nil {
		return nil, fmt.Errorf("subscribe %s on the source: %w", AdvisoryQueueTopic, err)
	}
	found := map[string]bool{}
	deadline, cancel := context.WithTimeout(ctx, settle)
	defer cancel()
	for {
		m, err := c.Receive(deadline)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				break
			}
			return nil, fmt.Errorf("reading %s: %w", AdvisoryQueueTopic, err)
		}
		var a advisory
		if err := json.Unmarshal(m.Body, &a); err != nil {
			return nil, fmt.Errorf("advisory on %s is not a JSON DestinationInfo (an ActiveMQ without XStream/Jettison on its class path?): %w", AdvisoryQueueTopic, err)
		}
		d := a.Info.Destination
		if d.Class != "ActiveMQQueue" || d.Name == "" || strings.HasPrefix(d.Name, "ActiveMQ.Advisory.") {
			continue
		}
		found[d.Name] = a.Info.OperationType == 0
	}
	_ = c.Disconnect(ctx)
	var names []string
	for n, live := range found {
		if live {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// IsPattern reports whether p holds ActiveMQ wildcards: * (one dot-separated part)
// or > (the rest).
func IsPattern(p string) bool { return strings.ContainsAny(p, "*>") }

// Match reports whether the queue name matches the pattern p with ActiveMQ's
// wildcards: "*" one part between dots, ">" every remaining part (at the end only).
func Match(p, name string) bool {
	ps, ns := strings.Split(p, "."), strings.Split(name, ".")
	for i, part := range ps {
		if part == ">" {
			return i < len(ns)
		}
		if i >= len(ns) || (part != "*" && part != ns[i]) {
			return false
		}
	}
	return len(ps) == len(ns)
}

// IsDeadLetter reports whether the queue is a dead-letter queue by ActiveMQ's names:
// ActiveMQ.DLQ, the individual strategy's ActiveMQ.DLQ.Queue.* and DLQ.* prefixes.
func IsDeadLetter(name string) bool {
	return strings.HasPrefix(name, "ActiveMQ.DLQ") || strings.HasPrefix(name, "DLQ.")
}

// order sorts names with the dead-letter queues last: a message that expires on the
// source while the others move is dead-lettered there, and still moved.
func order(names []string) []string {
	slices.SortFunc(names, func(a, b string) int {
		if da, db := IsDeadLetter(a), IsDeadLetter(b); da != db {
			if da {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	return names
}

// Select returns the queues of found that match patterns, plus every pattern that is a
// plain name (which need not have been found), without repeats, sorted with the
// dead-letter queues last. No patterns select everything found.
func Select(found, patterns []string) ([]string, error) {
	if len(patterns) == 0 {
		return order(slices.Clone(found)), nil
	}
	set := map[string]bool{}
	for _, p := range patterns {
		p = strings.TrimPrefix(strings.TrimPrefix(p, "/queue/"), "queue://")
		if p == "" || strings.HasPrefix(p, "/topic/") || strings.HasPrefix(p, "topic://") {
			return nil, fmt.Errorf("%w: %q (write a queue name, /queue/NAME, or a pattern with * and >)", ErrPattern, p)
		}
		if !IsPattern(p) {
			set[p] = true
			continue
		}
		for _, n := range found {
			if Match(p, n) {
				set[n] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	return order(out), nil
}
