package xmlconfig

import (
	"strings"

	"github.com/activemq-go/broker/destinations/policy"
)

// destinationPolicy converts <destinationPolicy><policyMap>.
func (c *conv) destinationPolicy(n *node) {
	for _, pm := range n.kids {
		if pm.name != "policyMap" {
			c.report(pm, Unsupported, "no counterpart")
			continue
		}
		for _, k := range pm.kids {
			switch k.name {
			case "policyEntries":
				for _, e := range k.kids {
					if e.name != "policyEntry" {
						c.report(e, Unsupported, "no counterpart")
						continue
					}
					c.policyEntry(e, "")
				}
			case "defaultEntry":
				for _, e := range k.kids {
					c.policyEntry(e, "queue")
					c.policyEntry(e, "topic")
					c.report(e, Differs, `the default entry is written as entries for queue ">" and topic ">"`)
				}
			default:
				c.report(k, Unsupported, "no counterpart")
			}
		}
	}
}

// queuesFIFO writes ActiveMQ's prioritizedMessages default (false) into a queue ">"
// entry, so that the queues no entry of the file matches keep ActiveMQ's order too
// (an entry applies whole: the file's own entries are left as they are).
func (c *conv) queuesFIFO(b *node) {
	for _, p := range c.policies {
		if v, ok := p.get("queue"); ok && v == ">" {
			return // the file's own entry, converted with the default written out
		}
	}
	c.policyFor("queue", ">").set("prioritizedMessages", false)
	c.res.Items = append(c.res.Items, Item{Line: b.line, Element: b.path() + "/destinationPolicy", Status: Differs,
		Note: `no policy entry for every queue: a queue ">" entry with ActiveMQ's default prioritizedMessages: false is written (the broker's own default is true)`})
}

// policyFor returns the entry with the pattern, creating it at the end.
func (c *conv) policyFor(kind, pattern string) *omap {
	for _, p := range c.policies {
		if v, ok := p.get(kind); ok && v == pattern {
			return p
		}
	}
	p := newMap()
	p.set(kind, pattern)
	c.policies = append(c.policies, p)
	return p
}

// policyEntry converts one <policyEntry>; kind forces queue or topic for ">"
// (a defaultEntry).
func (c *conv) policyEntry(e *node, kind string) {
	var p *omap
	switch {
	case kind != "":
		p = c.policyFor(kind, ">")
		for _, a := range []string{"queue", "topic", "tempQueue", "tempTopic"} {
			e.attr(a)
		}
	default:
		if v, ok := e.attr("queue"); ok {
			kind, p = "queue", c.policyFor("queue", c.val(v))
		} else if v, ok := e.attr("topic"); ok {
			kind, p = "topic", c.policyFor("topic", c.val(v))
		} else if v, ok := e.attr("tempQueue"); ok && strings.EqualFold(v, "true") {
			kind, p = "tempQueue", c.policyFor("tempQueue", "true")
			p.set("tempQueue", true)
		} else if v, ok := e.attr("tempTopic"); ok && strings.EqualFold(v, "true") {
			kind, p = "tempTopic", c.policyFor("tempTopic", "true")
			p.set("tempTopic", true)
		} else {
			c.report(e, Unsupported, "matches no destination (no queue, topic, tempQueue or tempTopic)")
			return
		}
	}
	topic := kind == "topic" || kind == "tempTopic"
	c.policyAttrs(e, p)
	if _, ok := e.attr("prioritizedMessages"); !ok && !topic {
		p.set("prioritizedMessages", false)
		c.report(e, Differs, "no prioritizedMessages: ActiveMQ's default false (FIFO whatever the priority) is written out "+
			"(the broker's own default is true: higher priorities first)")
	}
	if v, ok := e.attr("inactiveTimoutBeforeGC"); ok { // ActiveMQ's spelling
		p.set("inactiveTimeoutBeforeGC", typed(c.val(v)))
	}
	if v, ok := e.attr("queuePrefetch"); ok && !topic {
		p.set("prefetch", typed(c.val(v)))
	}
	if v, ok := e.attr("topicPrefetch"); ok && topic {
		p.set("prefetch", typed(c.val(v)))
	}
	if v, ok := e.attr("producerFlowControl"); ok && strings.EqualFold(c.val(v), "false") {
		c.reportAttr(e, "producerFlowControl", Differs, "flow control cannot be turned off: a producer over memoryLimit waits (systemUsage.sendFailIfNoSpace makes it fail instead)")
	}
	c.notApplicable(e, "maxPageSize", "maxBrowsePageSize", "useCache", "optimizedDispatch", "lazyDispatch",
		"cursorMemoryHighWaterMark", "storeUsageHighWaterMark", "maxExpirePageSize",
		"enableAudit", "maxAuditDepth", "maxProducersToAudit", "reduceMemoryFootprint")
	for _, a := range []string{"queuePrefetch", "topicPrefetch"} {
		if _, ok := e.attr(a); ok && (a == "queuePrefetch") == topic {
			c.reportAttr(e, a, Unsupported, "does not apply to this entry's destinations")
		}
	}
	c.leftover(e, "no counterpart")
	for _, k := range e.kids {
		inner := firstKid(k)
		switch k.name {
		case "deadLetterStrategy":
			c.deadLetter(k, inner, p)
		case "pendingMessageLimitStrategy":
			if !topic {
				c.report(k, Unsupported, "applies to topics only")
				continue
			}
			if inner == nil {
				c.report(k, Unsupported, "empty")
				continue
			}
			m := newMap()
			switch inner.name {
			case "constantPendingMessageLimitStrategy", "prefetchRatePendingMessageLimitStrategy":
				c.policyAttrs(inner, m)
			default:
				c.report(inner, Unsupported, "no counterpart")
				continue
			}
			c.leftover(inner, "no counterpart")
			p.set("pendingMessageLimitStrategy", map[string]any{inner.name: m})
			c.report(inner, Converted, "")
		case "slowConsumerStrategy":
			if inner == nil || inner.name != "abortSlowConsumerStrategy" || !topic {
				c.report(k, Unsupported, "only abortSlowConsumerStrategy on topics is supported")
				continue
			}
			m := newMap()
			c.policyAttrs(inner, m)
			c.leftover(inner, "no counterpart")
			p.set("slowConsumerStrategy", map[string]any{"abortSlowConsumerStrategy": m})
			c.report(inner, Converted, "")
		case "pendingQueuePolicy", "pendingSubscriberPolicy", "pendingDurableSubscriberPolicy", "dispatchPolicy", "messageGroupMapFactory":
			c.report(k, Unsupported, "ActiveMQ implementation tuning, not applicable")
		default:
			c.report(k, Unsupported, "no counterpart")
		}
	}
	if kind != "" && e.parent != nil && e.parent.name == "defaultEntry" {
		return
	}
	c.report(e, Converted, "")
}

// policyAttrs copies to m the attributes of n that are keys of a policy entry (or of
// one of its blocks) of the same name, as package policy lists them for n's element.
func (c *conv) policyAttrs(n *node, m *omap) {
	for _, a := range policy.Attributes(n.name) {
		v, ok := n.attr(a.Name)
		switch {
		case !ok:
		case a.Size:
			m.set(a.Name, c.size(n, a.Name, c.val(v)))
		default:
			m.set(a.Name, typed(c.val(v)))
		}
	}
}

func firstKid(n *node) *node {
	if len(n.kids) == 0 {
		return nil
	}
	return n.kids[0]
}

// deadLetter converts a <deadLetterStrategy>.
func (c *conv) deadLetter(k, inner *node, p *omap) {
	if inner == nil {
		c.report(k, Unsupported, "empty")
		return
	}
	m := newMap()
	switch inner.name {
	case "individualDeadLetterStrategy":
		m.set("individual", true)
		c.policyAttrs(inner, m)
	case "sharedDeadLetterStrategy":
		c.policyAttrs(inner, m)
		for _, q := range inner.kids {
			c.report(q, Unsupported, "the shared dead-letter queue is always ActiveMQ.DLQ")
		}
	case "discarding":
		m.set("discard", true)
	default:
		c.report(inner, Unsupported, "no counterpart")
		return
	}
	for _, a := range []string{"expiration", "enableAudit"} {
		if _, ok := inner.attr(a); ok {
			c.reportAttr(inner, a, Unsupported, "no counterpart")
		}
	}
	c.leftover(inner, "no counterpart")
	p.set("deadLetterStrategy", m)
	c.report(inner, Converted, "")
}

// redelivery converts a <redeliveryPlugin>: each redeliveryPolicy becomes the
// redeliveryPolicy of the destinationPolicy entry with its pattern.
func (c *conv) redelivery(n *node) {
	for _, a := range []string{"fallbackToDeadLetter", "sendToDlqIfMaxRetriesExceeded"} {
		if _, ok := n.attr(a); ok {
			c.reportAttr(n, a, Differs, "after maximumRedeliveries the message always goes to the dead-letter strategy")
		}
	}
	c.leftover(n, "no counterpart")
	for _, outer := range n.kids {
		m := outer.kid("redeliveryPolicyMap")
		if outer.name != "redeliveryPolicyMap" || m == nil {
			c.report(outer, Unsupported, "no counterpart")
			continue
		}
		for _, k := range m.kids {
			switch k.name {
			case "redeliveryPolicyEntries":
				for _, r := range k.kids {
					c.redeliveryPolicy(r, "")
				}
			case "defaultEntry":
				for _, r := range k.kids {
					c.redeliveryPolicy(r, "queue")
					r.done = map[string]bool{}
					c.redeliveryPolicy(r, "topic")
				}
			default:
				c.report(k, Unsupported, "no counterpart")
			}
		}
	}
}

func (c *conv) redeliveryPolicy(r *node, kind string) {
	if r.name != "redeliveryPolicy" {
		c.report(r, Unsupported, "no counterpart")
		return
	}
	pattern := ">"
	if kind == "" {
		if v, ok := r.attr("queue"); ok {
			kind, pattern = "queue", c.val(v)
		} else if v, ok := r.attr("topic"); ok {
			kind, pattern = "topic", c.val(v)
		} else {
			c.report(r, Unsupported, "matches no destination")
			return
		}
	}
	p := c.policyFor(kind, pattern)
	m := newMap()
	c.policyAttrs(r, m)
	c.leftover(r, "no counterpart")
	p.set("redeliveryPolicy", m)
	p.set("nackPolicy", string(policy.NackRedeliver))
	c.report(r, Differs, "written as the redeliveryPolicy of the "+kind+" \""+pattern+"\" policy entry with nackPolicy: redeliver; an entry applies whole, so it takes no setting from broader entries")
}
