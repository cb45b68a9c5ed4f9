package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/activemq-go/broker/admin"
)

// Reader is what the console's pages show of the broker; names are as clients write
// them ("/queue/X").
type Reader interface {
	Overview() admin.Overview
	Destinations(kind string) []admin.Destination
	Browse(ctx context.Context, queue, after string, limit int) ([]admin.Message, string, error)
	Message(ctx context.Context, queue, id string) (admin.Message, error)
	DurableSubscriptions() []admin.DurableSubscription
	Connections() []admin.Connection
	Stream(name string) (admin.Stream, error)
}

// overviewData is the root page.
type overviewData struct {
	O        admin.Overview
	Rates    rates
	Spark    sparkline
	HasSpark bool
	Queues   []admin.Destination
	// DLQs are the dead-letter queues that hold messages.
	DLQs []admin.Destination
	// Waiting is the number of messages on all queues; Stuck the number of queues
	// that hold messages and have no consumer.
	Waiting  int64
	Stuck    int
	MemPct   float64
	StorePct float64
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	o := c.b.Overview()
	c.mu.Lock()
	now := sample{at: c.now(), in: o.MessagesIn, out: o.MessagesOut}
	rt := c.rates.rate(now)
	sp, hasSpark := c.rates.spark(now)
	c.rates.record(now)
	c.mu.Unlock()

	d := overviewData{O: o, Rates: rt, Spark: sp, HasSpark: hasSpark,
		Queues: c.b.Destinations("queue"), MemPct: percent(o.MemoryUsed, o.MemoryLimit), StorePct: percent(o.StoreUsed, o.StoreLimit)}
	for _, q := range d.Queues {
		d.Waiting += q.Messages
		if isDLQ(q) && q.Messages > 0 {
			d.DLQs = append(d.DLQs, q)
		}
		if q.Messages > 0 && q.Consumers == 0 && !isDLQ(q) {
			d.Stuck++
		}
	}
	c.render(w, r, http.StatusOK, "overview", "Overview", "overview", d)
}

// listData is a page listing destinations, filtered by name.
type listData struct {
	Filter string
	Items  []admin.Destination
	Total  int
}

// list returns the destinations of kind whose short name contains the "q" parameter.
func (c *Console) list(r *http.Request, kind string) listData {
	all := c.b.Destinations(kind)
	d := listData{Filter: strings.TrimSpace(r.URL.Query().Get("q")), Total: len(all)}
	if d.Filter == "" {
		d.Items = all
		return d
	}
	f := strings.ToLower(d.Filter)
	for _, x := range all {
		if strings.Contains(strings.ToLower(shortName(x.Name)), f) {
			d.Items = append(d.Items, x)
		}
	}
	return d
}

func (c *Console) queues(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "queues", "Queues", "queues", c.list(r, "queue"))
}

func (c *Console) topics(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "topics", "Topics", "topics", c.list(r, "topic"))
}

func (c *Console) streams(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "streams", "Streams", "streams", c.list(r, "stream"))
}

// find returns the destination of kind whose short name is name.
func (c *Console) find(kind, name string) (admin.Destination, bool) {
	for _, d := range c.b.Destinations(kind) {
		if shortName(d.Name) == name {
			return d, true
		}
	}
	return admin.Destination{}, false
}

// Browse page sizes.
const (
	defaultBrowse = 25
	maxBrowse     = 500
)

// queueData is a queue's page.
type queueData struct {
	Q     admin.Destination
	DLQ   bool
	Msgs  []admin.Message
	After string // the cursor of this page ("" the head)
	Next  string // the cursor of the next page ("" none)
	Limit int
	Err   string // browsing failed
}

func (c *Console) queue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	q, ok := c.find("queue", name)
	if !ok {
		c.notFound(w, r, "queues", "There is no queue "+name+".")
		return
	}
	d := queueData{Q: q, DLQ: isDLQ(q), After: r.URL.Query().Get("after"), Limit: defaultBrowse}
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		d.Limit = min(n, maxBrowse)
	}
	msgs, next, err := c.b.Browse(r.Context(), q.Name, d.After, d.Limit)
	if err != nil {
		d.Err = err.Error()
	}
	d.Msgs, d.Next = msgs, next
	c.render(w, r, http.StatusOK, "queue", name, "queues", d)
}

// messageData is a message's page.
type messageData struct {
	Q        admin.Destination
	DLQ      bool
	M        admin.Message
	Original string // the original-destination header, for a retry
}

func (c *Console) message(w http.ResponseWriter, r *http.Request) {
	name, id := r.PathValue("name"), r.PathValue("id")
	q, ok := c.find("queue", name)
	if !ok {
		c.notFound(w, r, "queues", "There is no queue "+name+".")
		return
	}
	m, err := c.b.Message(r.Context(), q.Name, id)
	if err != nil {
		c.notFound(w, r, "queues", "Message "+id+" is not on queue "+name+": "+err.Error())
		return
	}
	d := messageData{Q: q, DLQ: isDLQ(q), M: m, Original: m.Headers["original-destination"]}
	c.render(w, r, http.StatusOK, "message", "Message "+id, "queues", d)
}

func (c *Console) durables(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "durable", "Durable subscriptions", "durable", c.b.DurableSubscriptions())
}

func (c *Console) connections(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "connections", "Connections", "connections", c.b.Connections())
}

// streamData is a stream's page.
type streamData struct {
	D admin.Destination
	S admin.Stream
}

func (c *Console) stream(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d, ok := c.find("stream", name)
	if !ok {
		c.notFound(w, r, "streams", "There is no stream "+name+".")
		return
	}
	s, err := c.b.Stream(d.Name)
	if err != nil {
		c.notFound(w, r, "streams", "Stream "+name+": "+err.Error())
		return
	}
	c.render(w, r, http.StatusOK, "stream", name, "streams", streamData{D: d, S: s})
}
