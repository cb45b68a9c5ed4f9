package migrate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-stomp/stomp/v3/frame"

	"github.com/activemq-go/broker/internal/stompclient"
)

// Durable names a durable topic subscription to move: the client-id and subscription
// name its subscriber connects with, its topic (without /topic/), and its selector,
// which must be the one it has on the source: ActiveMQ replaces a durable subscription
// whose subscriber comes with another selector, and its backlog with it.
type Durable struct {
	ClientID, Name, Topic, Selector string
}

func (d Durable) String() string {
	s := d.ClientID + ":" + d.Name + "@/topic/" + d.Topic
	if d.Selector != "" {
		s += "?selector=" + d.Selector
	}
	return s
}

// ParseDurable reads CLIENT_ID:NAME@/topic/TOPIC[?selector=EXPR] (everything after
// "?selector=" is the selector, as it is). The client-id is up to the first ":", the
// name up to the last "@/topic/".
func ParseDurable(s string) (Durable, error) {
	var d Durable
	spec := s
	if i := strings.Index(s, "?selector="); i >= 0 {
		spec, d.Selector = s[:i], s[i+len("?selector="):]
		if d.Selector == "" {
			return d, fmt.Errorf("durable subscription %q: empty selector", s)
		}
	}
	at := strings.LastIndex(spec, "@/topic/")
	colon := strings.Index(spec, ":")
	if at < 0 || colon < 0 || colon > at {
		return d, fmt.Errorf("durable subscription %q: write CLIENT_ID:NAME@/topic/TOPIC[?selector=EXPR]", s)
	}
	d.ClientID, d.Name, d.Topic = spec[:colon], spec[colon+1:at], spec[at+len("@/topic/"):]
	switch {
	case d.ClientID == "":
		return d, fmt.Errorf("durable subscription %q: no client-id", s)
	case d.Name == "":
		return d, fmt.Errorf("durable subscription %q: no subscription name", s)
	case d.Topic == "" || strings.ContainsAny(d.Topic, "*>"):
		return d, fmt.Errorf("durable subscription %q: a topic name without wildcards", s)
	}
	return d, nil
}

// Importer puts messages into one durable subscription of the target only (the admin
// API's POST /api/durable-subscriptions/{clientId}/{name}/messages), durably, in order,
// dropping those whose duplicate id the subscription already took; it reports how many
// it dropped. Holds reports whether the target has d already, on d's topic with d's
// selector (the admin API's GET /api/durable-subscriptions).
type Importer interface {
	Import(ctx context.Context, d Durable, msgs []Message) (duplicates int, err error)
	Holds(ctx context.Context, d Durable) (bool, error)
}

// Message is a message to import: its headers (the source's, but for those of its
// delivery there, with the source's message-id in DuplicateIDHeader) and body.
type Message struct {
	Headers    map[string]string
	Body       []byte
	Persistent bool
}

// maxImportBatchBytes ends an import batch early: the admin API takes at most 64 MiB
// of JSON in one request, and a binary body grows by a third in base64.
const maxImportBatchBytes = 4 << 20

// MoveDurable moves the backlog of durable subscription d: it creates the subscription
// on the target unless the target has it already (a STOMP subscriber with d's
// client-id, name and selector, gone at once: attached to a subscription that holds
// messages, it would be given some, and each run would count them redelivered, until
// past maximumRedeliveries they went to the dead-letter queue), then drains it on the
// source, connected as d's client-id (its subscriber must
// be stopped), importing each batch into exactly that subscription and acknowledging
// the batch on the source only once the import answered. It ends when no message came
// for Idle; the source subscription stays, empty. The Result's Queue is d.String().
func (m *Mover) MoveDurable(ctx context.Context, d Durable, imp Importer, moved func(n int)) (Result, error) {
	start := time.Now()
	res := Result{Queue: d.String()}
	idle, window := m.Idle, m.Window
	if idle <= 0 {
		idle = DefaultIdle
	}
	if window <= 0 {
		window = DefaultWindow
	}
	window = min(window, stompclient.MaxOutstanding)
	sub := stompclient.Subscription{ID: "migrate", Destination: "/topic/" + d.Topic, Ack: "client-individual",
		Selector: d.Selector, DurableName: d.Name}

	have, err := imp.Holds(ctx, d)
	if err != nil {
		return res, fmt.Errorf("target: %w", err)
	}
	if !have {
		if err := createDurable(ctx, m.Target, d, sub); err != nil {
			return res, fmt.Errorf("target: create the subscription: %w", err)
		}
	}

	sopts := m.Source.Options
	sopts.ClientID = d.ClientID
	src, err := stompclient.Dial(ctx, m.Source.URL, sopts)
	if err != nil {
		return res, fmt.Errorf("source: %w", err)
	}
	defer src.Close()
	sub.Prefetch = window
	if err := src.Subscribe(ctx, sub); err != nil {
		return res, fmt.Errorf("source: subscribe %s: %w", d, err)
	}

	last := start
	var batch []Message
	var frames []*frame.Frame
	var batchBytes int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		dups, err := imp.Import(ctx, d, batch)
		if err != nil {
			return fmt.Errorf("target: import: %w", err)
		}
		res.Duplicates += int64(dups)
		if err := src.Ack(frames...); err != nil {
			return fmt.Errorf("source: ack: %w", err)
		}
		res.Moved += int64(len(batch))
		last = time.Now()
		if moved != nil {
			moved(len(batch))
		}
		clear(batch)
		clear(frames)
		batch, frames, batchBytes = batch[:0], frames[:0], 0
		return nil
	}
	fail := func(err error) (Result, error) {
		res.Elapsed = time.Since(start)
		return res, err
	}
	for {
		msg, err := receive(ctx, src, len(batch) > 0, idle)
		if err != nil {
			return fail(err)
		}
		if msg == nil {
			if len(batch) == 0 {
				res.IdleWaits++
				break // drained
			}
			if err := flush(); err != nil {
				return fail(err)
			}
			continue
		}
		batch = append(batch, importMessage(msg))
		frames = append(frames, msg)
		batchBytes += len(msg.Body)
		if len(batch) >= window || batchBytes >= maxImportBatchBytes {
			if err := flush(); err != nil {
				return fail(err)
			}
		}
	}
	if err := src.Disconnect(ctx); err != nil {
		return fail(fmt.Errorf("source: %w", err))
	}
	res.Elapsed = last.Sub(start)
	return res, nil
}

// createDurable creates durable subscription d at e: it subscribes with sub as d's
// client-id and disconnects.
func createDurable(ctx context.Context, e Endpoint, d Durable, sub stompclient.Subscription) error {
	opts := e.Options
	opts.ClientID = d.ClientID
	c, err := stompclient.Dial(ctx, e.URL, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Subscribe(ctx, sub); err != nil {
		return err
	}
	return c.Disconnect(ctx)
}

// importMessage is the Message that moves m: the headers of sendHeaders, persistent
// as m was.
func importMessage(m *frame.Frame) Message {
	h := sendHeaders(m)
	out := Message{Headers: make(map[string]string, h.Len()), Body: m.Body}
	for i := range h.Len() {
		k, v := h.GetAt(i)
		if k == "persistent" {
			out.Persistent = v == "true"
			continue
		}
		if _, ok := out.Headers[k]; !ok { // the first occurrence wins, as in STOMP
			out.Headers[k] = v
		}
	}
	return out
}
