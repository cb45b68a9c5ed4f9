// Package destinations knows destination names and their syntax (ActiveMQ's: /queue/,
// /topic/, /temp-queue/, /temp-topic/, composite names separated by commas, and the
// wildcards * and >), the per-destination policy (package policy defines it), and the
// destinations themselves: queues (QueueDest: dispatch with prefetch credit, paging,
// redelivery, dead-lettering, expiry), topics (TopicDest, with their slow subscribers)
// and streams (Stream, over a streamlog.Log). A destination is made with an Env, the
// broker's services it needs, and
// dispatches to Consumers, pushing Deliveries to their connection's Sink.
//
// # Lock order
//
// A topic's streamMu (opening its stream) comes before the broker's registry lock.
// Then a destination's lock: a queue's mu; a topic's pubMu (publishing to durable
// subscriptions, whose views are queues) before a queue's mu, and its mu (its
// subscribers) before a Consumer's mu (its overflow). A StreamReader's mu comes before
// its consumer group's mu and its partTrackers' mu; a stream's mu is taken alone.
// A Sink's own lock is taken last: Push is called with destination locks held.
package destinations

import (
	"errors"
	"fmt"
	"strings"

	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/persistence"
)

// Kind is the kind of a destination.
type Kind uint8

const (
	Queue Kind = iota
	Topic
	TempQueue
	TempTopic
)

func (k Kind) String() string {
	switch k {
	case Queue:
		return "queue"
	case Topic:
		return "topic"
	case TempQueue:
		return "temp-queue"
	case TempTopic:
		return "temp-topic"
	}
	return "unknown"
}

// IsTopic reports whether messages fan out to every subscriber.
func (k Kind) IsTopic() bool { return k == Topic || k == TempTopic }

// Name is one parsed destination.
type Name struct {
	Kind Kind
	Name string
	// Remote marks a /remote-temp-queue/ or /remote-temp-topic/ reference: Name is the
	// broker-wide name of another connection's temporary destination.
	Remote bool
}

// ErrInvalid is wrapped by every name syntax error.
var ErrInvalid = errors.New("invalid destination")

const (
	prefixQueue      = "/queue/"
	prefixTopic      = "/topic/"
	prefixTempQueue  = "/temp-queue/"
	prefixTempTopic  = "/temp-topic/"
	prefixRemoteTQ   = "/remote-temp-queue/"
	prefixRemoteTT   = "/remote-temp-topic/"
	schemeQueue      = "queue://"
	schemeTopic      = "topic://"
	maxNameLen       = 1024
	compositeSeparat = ","
)

// Parse parses a destination as a STOMP client writes it. A comma-separated list is a
// composite destination and yields several names. Without a prefix the whole string
// names a queue, as ActiveMQ does; a string that starts with "/" but with no known
// prefix (/queues/orders, a typo) is refused, where ActiveMQ would make a queue of it.
func Parse(s string) ([]Name, error) {
	if !strings.Contains(s, compositeSeparat) {
		n, err := ParseOne(s)
		if err != nil {
			return nil, err
		}
		return []Name{n}, nil
	}
	parts := strings.Split(s, compositeSeparat)
	names := make([]Name, 0, len(parts))
	for _, p := range parts {
		n, err := ParseOne(p)
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}

// ParseOne parses a single (non-composite) destination.
func ParseOne(s string) (Name, error) {
	var n Name
	switch {
	case strings.HasPrefix(s, prefixQueue):
		n = Name{Kind: Queue, Name: s[len(prefixQueue):]}
	case strings.HasPrefix(s, prefixTopic):
		n = Name{Kind: Topic, Name: s[len(prefixTopic):]}
	case strings.HasPrefix(s, prefixTempQueue):
		n = Name{Kind: TempQueue, Name: s[len(prefixTempQueue):]}
	case strings.HasPrefix(s, prefixTempTopic):
		n = Name{Kind: TempTopic, Name: s[len(prefixTempTopic):]}
	case strings.HasPrefix(s, prefixRemoteTQ):
		n = Name{Kind: TempQueue, Name: s[len(prefixRemoteTQ):], Remote: true}
	case strings.HasPrefix(s, prefixRemoteTT):
		n = Name{Kind: TempTopic, Name: s[len(prefixRemoteTT):], Remote: true}
	case strings.HasPrefix(s, schemeQueue):
		n = Name{Kind: Queue, Name: s[len(schemeQueue):]}
	case strings.HasPrefix(s, schemeTopic):
		n = Name{Kind: Topic, Name: s[len(schemeTopic):]}
	case strings.HasPrefix(s, "/"):
		// A mistyped prefix (/queues/orders): refused rather than made a queue named
		// after the whole text, as ActiveMQ would.
		return Name{}, fmt.Errorf("%w %q: unknown prefix; a destination is /queue/NAME, /topic/NAME, /temp-queue/NAME, /temp-topic/NAME, /remote-temp-queue/ID, /remote-temp-topic/ID, queue://NAME, topic://NAME or a plain NAME (a queue)", ErrInvalid, s)
	default:
		n = Name{Kind: Queue, Name: s}
	}
	if n.Name == "" {
		return Name{}, fmt.Errorf("%w %q: empty name", ErrInvalid, s)
	}
	if len(n.Name) > maxNameLen {
		return Name{}, fmt.Errorf("%w: name longer than %d bytes", ErrInvalid, maxNameLen)
	}
	for i := 0; i < len(n.Name); i++ {
		if c := n.Name[i]; c < 0x20 || c == 0x7f {
			return Name{}, fmt.Errorf("%w %q: control character in name", ErrInvalid, s)
		}
	}
	return n, nil
}

// String renders the name as a STOMP client would write it.
func (n Name) String() string {
	switch n.Kind {
	case Topic:
		return prefixTopic + n.Name
	case TempQueue:
		if n.Remote {
			return prefixRemoteTQ + n.Name
		}
		return prefixTempQueue + n.Name
	case TempTopic:
		if n.Remote {
			return prefixRemoteTT + n.Name
		}
		return prefixTempTopic + n.Name
	}
	return prefixQueue + n.Name
}

// Qualified is the store's name for the destination ("queue://X", "topic://X").
// Temporary destinations must be resolved to their broker-wide name first.
func (n Name) Qualified() string {
	if n.Kind.IsTopic() {
		return persistence.TopicName(n.Name)
	}
	return persistence.QueueName(n.Name)
}

// IsWildcard reports whether the name contains ActiveMQ wildcards (* or > as a whole
// path element).
func (n Name) IsWildcard() bool { return IsWildcard(n.Name) }

// IsWildcard reports whether name contains a * or > path element.
func IsWildcard(name string) bool {
	for len(name) > 0 {
		el, rest, _ := strings.Cut(name, ".")
		if el == "*" || el == ">" {
			return true
		}
		name = rest
	}
	return false
}

// Match reports whether name matches an ActiveMQ wildcard pattern (policy.Match).
func Match(pattern, name string) bool { return policy.Match(pattern, name) }

// ReplyToProperty is the message property naming where replies go; a temporary
// destination in it is rewritten so that whoever receives the message can use it.
const ReplyToProperty = "reply-to"

// UserIDProperty is the message property naming the user who sent the message, which
// the broker stamps (populateJMSXUserID) whatever the client sent.
const UserIDProperty = "JMSXUserID"

// ParseTemp parses v if it names a temporary destination of the sender's
// (/temp-queue/NAME or /temp-topic/NAME); false for anything else.
func ParseTemp(v string) (Name, bool) {
	if !strings.HasPrefix(v, "/temp-queue/") && !strings.HasPrefix(v, "/temp-topic/") {
		return Name{}, false
	}
	n, err := ParseOne(v)
	if err != nil {
		return Name{}, false
	}
	return n, true
}
