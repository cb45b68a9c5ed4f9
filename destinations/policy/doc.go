// Package policy is the one definition of a destination's policy, ActiveMQ's
// <policyEntry>: the Policy type with every option, their defaults (Default), the
// checks of an entry (Complete, with errors naming the key), and the choice of the
// entry that applies to a destination (Select, the most specific matching pattern).
// The configuration decodes activemq-style.yaml's destinationPolicy entries straight
// into Policy (its mapstructure tags are the keys), the destinations and the broker
// read it, and the activemq.xml importer copies the attributes its activemq tags name
// (Attributes). Adding an option is: a field here with its tag and default, its line
// below, and the code that acts on it. The package imports only the standard
// library, so config and the importer can use it without depending on the broker.
//
// # activemq-style.yaml's destinationPolicy
//
// destinationPolicy is a list of entries, ActiveMQ's <policyEntry>. Each matches
// destinations by exactly one of queue: or topic:, a pattern with ActiveMQ's
// wildcards ("." between elements, "*" for one element, ">" as the whole last
// element for one or more), or tempQueue: true or tempTopic: true for every
// temporary queue or topic (the first such entry applies; queue: and topic:
// patterns never match a temporary destination, as in ActiveMQ, so one no temp
// entry matches has the defaults). A pattern starting with ">" or "*" must be quoted:
// unquoted, YAML reads ">" as a folded block and "*" as an alias. Matching is
// Select's: the single most specific matching entry applies whole; entries are not
// merged. A key an entry leaves out has the default shown here, which is also what
// applies to a destination no entry matches (Default). Sizes and durations are
// written as everywhere in the file (see package config):
//
//	destinationPolicy:
//	  - queue: ">"
//	    prefetch: 1000                 # topics: 32767; 0 means the default
//	    maxPrefetch: 32767             # the largest activemq.prefetchSize a SUBSCRIBE may
//	                                   # ask for (more gets an ERROR); a prefetch left at
//	                                   # its default is lowered to it, a written one over
//	                                   # it is an error
//	    memoryLimit: 64mb              # within systemUsage.memoryUsage; 0: no limit of its own
//	    prioritizedMessages: true      # ActiveMQ's default is false
//	    defaultTimeToLive: 0           # for messages sent without expires, queues and
//	                                   # topics alike; 0: never. An expired topic message
//	                                   # is not delivered
//	    expireMessagesPeriod: 30s      # how often this destination is swept for expired
//	                                   # messages; 0: never (dropped at dispatch instead)
//	    nackPolicy: dlq                # dlq (ActiveMQ's poison ack) | redeliver | discard
//	    redeliveryPolicy:
//	      maximumRedeliveries: 6       # -1: unlimited; then to the dead-letter queue
//	      initialRedeliveryDelay: 1s   # the first redelivery's; 0: redeliveryDelay's
//	      redeliveryDelay: 1s          # the later ones', without back-off
//	      useExponentialBackOff: false
//	      backOffMultiplier: 5         # >= 1
//	      maximumRedeliveryDelay: -1   # caps the back-off; -1 or 0: no cap
//	      useCollisionAvoidance: false # move later delays randomly by up to ±factor
//	      collisionAvoidanceFactor: 0.15   # 0 to 1
//	    deadLetterStrategy:
//	      individual: false            # false: one queue, ActiveMQ.DLQ, for all
//	      queuePrefix: ActiveMQ.DLQ.Queue.   # individual: prefix + the destination's
//	      topicPrefix: ActiveMQ.DLQ.Topic.   # name + suffix; "prefix:" sets both
//	      queueSuffix: ""
//	      topicSuffix: ""
//	      useQueueForQueueMessages: true     # individual: false makes it a topic
//	      useQueueForTopicMessages: true
//	      destinationPerDurableSubscriber: false  # individual: one per durable
//	                                   # subscription, topicPrefix + topic + "." +
//	                                   # client-id + ":" + name + topicSuffix
//	      processExpired: true         # expired messages are dead-lettered
//	      processNonPersistent: false  # non-persistent ones are dropped instead
//	      discard: false               # ActiveMQ's <discarding/>: drop, never dead-letter
//	    allConsumersExclusiveByDefault: false
//	    gcInactiveDestinations: false  # remove the destination once it has had no
//	                                   # messages, subscribers or sends for
//	    inactiveTimeoutBeforeGC: 60s   # this long (> 0); never temporary ones or streams
//	    durableTopicPrefetch: 100      # 0 means the default; also a stream consumer
//	                                   # group member's (without activemq.prefetchSize)
//	    maxPendingMessages: 0          # per offline durable subscription; 0: unlimited
//	    maxPendingBytes: 0             # a size; 0: unlimited
//	    offlineDurableSubscriberTimeout: 0   # remove after this long offline; 0 or -1: never
//	    type: ""                       # "" | stream; a stream must be a topic: entry
//	    partitions: 1                  # streams only; 1 to 1024
//	    retention: 168h                # streams only; 0: whatever the age
//	    retentionBytes: 0              # streams only, per partition; 0: unlimited
//	    rebalanceTimeout: 30s          # streams only; a consumer group member losing a
//	                                   # partition settles what it holds within this
//	    pendingMessageLimitStrategy:   # topics only; none by default: nothing is dropped,
//	                                   # a subscriber behind holds producers via memoryLimit
//	      constantPendingMessageLimitStrategy: {limit: 1000}   # keep at most N waiting,
//	                                   # drop the oldest; -1: none. Or instead:
//	      prefetchRatePendingMessageLimitStrategy: {multiplier: 2.5}   # N = prefetch × it
//	    advisoryForSlowConsumers: false   # announce a topic subscriber with more than its
//	                                   # prefetch waiting on ActiveMQ.Advisory.SlowConsumer.Topic.<name>
//	                                   # (accepted on queue entries, where it does nothing)
//	    duplicateDetection:            # a SEND with _AMQ_DUPL_ID (or x-deduplication-header)
//	                                   # whose id the destination already accepted is answered
//	                                   # (RECEIPT) but neither stored nor delivered
//	      enabled: true                # a message without the header costs nothing
//	      idCacheSize: 20000           # ids remembered per destination, oldest forgotten first
//	      window: 0                    # forget ids older than this; 0: no age limit
//	    slowConsumerStrategy:          # topics only; none by default
//	      abortSlowConsumerStrategy:   # end a non-durable subscriber that stays behind
//	        abortConnection: false     # false: its subscription, with an ERROR; true: the connection
//	        maxSlowDuration: 30s       # behind this long; 0 or -1: no time limit
//	        maxSlowCount: -1           # behind more than this many times; -1: no count limit
//	        checkPeriod: 30s           # how often subscribers are checked; > 0
//	        ignoreIdleConsumers: true  # accepted; an idle subscriber is never behind
//
// Errors, besides values out of the ranges above: an entry matching nothing or
// more than one kind, an empty pattern, ">" anywhere but as the last element, a
// STOMP destination ("/queue/A") as a pattern, partitions, retention,
// retentionBytes or rebalanceTimeout on an entry without type: stream, an empty
// or wildcard prefix with individual: true (Complete). Policy.Set records which keys
// each entry wrote.
package policy
