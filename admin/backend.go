// Package admin is the admin HTTP listener (broker.adminAddress, default
// 127.0.0.1:8161): the web console, the REST API under /api/, Prometheus /metrics and
// /stats. It uses the broker through two small interfaces defined where they are used
// (Reader and Manager, api.go), which BrokerBackend implements over the broker's
// management surface (package broker/management), never its insides; every route is
// behind one authorization check (a user of an admin group when authentication is
// configured). The types below are the API's JSON shapes.
package admin

import (
	"time"

	"github.com/activemq-go/broker/internal/buildinfo"
)

// Overview is the broker as a whole.
type Overview struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Build is the running binary's build: version, commit, date, Go version.
	Build       buildinfo.Info `json:"build"`
	Started     time.Time      `json:"started"`
	Uptime      float64        `json:"uptime_seconds"`
	Adapter     string         `json:"adapter"`
	MemoryUsed  int64          `json:"memory_used_bytes"`
	MemoryLimit int64          `json:"memory_limit_bytes"`
	StoreUsed   int64          `json:"store_used_bytes"`
	StoreLimit  int64          `json:"store_limit_bytes"`
	Connections int            `json:"connections"`
	Queues      int            `json:"queues"`
	Topics      int            `json:"topics"`
	Streams     int            `json:"streams"`
	// MessagesIn and MessagesOut are totals since start (rates are the console's).
	MessagesIn  int64 `json:"messages_received_total"`
	MessagesOut int64 `json:"messages_delivered_total"`
}

// Destination is one queue, topic or stream with its counters.
type Destination struct {
	Name       string `json:"name"`     // "/queue/X", "/topic/X"
	Type       string `json:"type"`     // queue | topic | stream
	Messages   int64  `json:"messages"` // a topic's: stored for its durable subscriptions
	Enqueued   int64  `json:"enqueued"`
	Dequeued   int64  `json:"dequeued"`
	Dispatched int64  `json:"dispatched"` // delivered, not yet acknowledged
	Expired    int64  `json:"expired"`
	Consumers  int    `json:"consumers"`
	Producers  int    `json:"producers"`
	Memory     int64  `json:"memory_bytes"`
	// OldestAge is the age of the oldest waiting message in seconds; 0 when empty.
	OldestAge float64 `json:"oldest_message_age_seconds"`
	DLQ       bool    `json:"dlq"`
}

// Message is a message as browsed.
type Message struct {
	ID          string            `json:"id"`
	Destination string            `json:"destination"`
	Headers     map[string]string `json:"headers"` // application headers, first of each name
	Persistent  bool              `json:"persistent"`
	Priority    int               `json:"priority"`
	Timestamp   time.Time         `json:"timestamp"`
	Expires     *time.Time        `json:"expires,omitempty"`
	Redelivered bool              `json:"redelivered"`
	Size        int               `json:"size"`
	// Body is the body as text when it is valid UTF-8; otherwise BodyBase64 holds it.
	// Browse truncates both to a preview (Truncated set); Message returns it whole.
	Body       string `json:"body,omitempty"`
	BodyBase64 string `json:"body_base64,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
}

// SendRequest is a message to send. A binary body goes in BodyBase64 (then Body must be
// empty).
type SendRequest struct {
	Body       string            `json:"body"`
	BodyBase64 string            `json:"body_base64,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Persistent bool              `json:"persistent"`
}

// ImportRequest is the messages of a durable subscription's import, in order.
type ImportRequest struct {
	Messages []SendRequest `json:"messages"`
}

// ImportResult is what an import did.
type ImportResult struct {
	Imported   int `json:"imported"`
	Duplicates int `json:"duplicates"`
}

// MoveRequest says which messages of a queue go where.
type MoveRequest struct {
	To       string `json:"to"` // a destination, or "original"
	Selector string `json:"selector,omitempty"`
	Limit    int    `json:"limit,omitempty"` // 0: all
	Copy     bool   `json:"copy,omitempty"`
}

// Connection is one client connection.
type Connection struct {
	ID            string    `json:"id"`
	ClientID      string    `json:"client_id,omitempty"`
	User          string    `json:"user,omitempty"`
	Remote        string    `json:"remote"`
	Protocol      string    `json:"protocol"` // stomp, stomp_ws or openwire (the metrics' label)
	Connector     string    `json:"connector,omitempty"`
	Version       string    `json:"version,omitempty"` // the protocol's version agreed
	ConnectedAt   time.Time `json:"connected_at"`
	Subscriptions int       `json:"subscriptions"`
}

// DurableSubscription is one durable topic subscription.
type DurableSubscription struct {
	ClientID       string  `json:"client_id"`
	Name           string  `json:"name"`
	Topic          string  `json:"topic"`
	Selector       string  `json:"selector,omitempty"`
	Active         bool    `json:"active"`
	Pending        int64   `json:"pending"`
	OfflineSeconds float64 `json:"offline_seconds"`
}

// ClientIDOwner is a client-id a user owns: the one whose durable subscriptions it
// holds.
type ClientIDOwner struct {
	ClientID string `json:"client_id"`
	User     string `json:"user"`
}

// Stream is a stream destination with its partitions and consumer groups.
type Stream struct {
	Name       string            `json:"name"`
	Partitions []StreamPartition `json:"partitions"`
	Groups     []StreamGroup     `json:"groups"`
}

// StreamPartition is one partition's offsets.
type StreamPartition struct {
	Partition   int   `json:"partition"`
	StartOffset int64 `json:"start_offset"`
	EndOffset   int64 `json:"end_offset"`
	Bytes       int64 `json:"size_bytes"`
}

// StreamGroup is a consumer group's position on the stream.
type StreamGroup struct {
	Group      string                 `json:"group"`
	Lag        int64                  `json:"lag"`
	Members    int                    `json:"members"`
	Partitions []StreamGroupPartition `json:"partitions"`
}

// StreamGroupPartition is a group's committed offset on one partition.
type StreamGroupPartition struct {
	Partition int   `json:"partition"`
	Committed int64 `json:"committed_offset"`
	End       int64 `json:"end_offset"`
	Lag       int64 `json:"lag"`
}
