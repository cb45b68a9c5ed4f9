package stompcodec

// Interning: the command and the names of common headers are looked up here so that reading
// a typical frame does not allocate a string for them. A switch on string(b) does not
// allocate.

// internCommand returns the command in b as a string, without allocating for the commands of
// STOMP 1.0-1.2.
func internCommand(b []byte) string {
	switch string(b) {
	case "SEND":
		return "SEND"
	case "MESSAGE":
		return "MESSAGE"
	case "ACK":
		return "ACK"
	case "NACK":
		return "NACK"
	case "SUBSCRIBE":
		return "SUBSCRIBE"
	case "UNSUBSCRIBE":
		return "UNSUBSCRIBE"
	case "BEGIN":
		return "BEGIN"
	case "COMMIT":
		return "COMMIT"
	case "ABORT":
		return "ABORT"
	case "RECEIPT":
		return "RECEIPT"
	case "CONNECT":
		return "CONNECT"
	case "STOMP":
		return "STOMP"
	case "CONNECTED":
		return "CONNECTED"
	case "DISCONNECT":
		return "DISCONNECT"
	case "ERROR":
		return "ERROR"
	}
	return string(b)
}

// internHeader returns the well-known header name in b as a string without allocating: the
// standard STOMP headers, the JMS-style headers ActiveMQ clients send, ActiveMQ's SUBSCRIBE
// extensions, and those of Artemis and RabbitMQ clients. A switch is several times faster
// than a map lookup here.
func internHeader(b []byte) (string, bool) {
	switch string(b) {
	// STOMP
	case "accept-version":
		return "accept-version", true
	case "ack":
		return "ack", true
	case "content-length":
		return "content-length", true
	case "content-type":
		return "content-type", true
	case "destination":
		return "destination", true
	case "heart-beat":
		return "heart-beat", true
	case "host":
		return "host", true
	case "id":
		return "id", true
	case "login":
		return "login", true
	case "message":
		return "message", true
	case "message-id":
		return "message-id", true
	case "passcode":
		return "passcode", true
	case "receipt":
		return "receipt", true
	case "receipt-id":
		return "receipt-id", true
	case "server":
		return "server", true
	case "session":
		return "session", true
	case "subscription":
		return "subscription", true
	case "transaction":
		return "transaction", true
	case "version":
		return "version", true
	// JMS-style message headers (ActiveMQ FrameTranslator)
	case "correlation-id":
		return "correlation-id", true
	case "expires":
		return "expires", true
	case "persistent":
		return "persistent", true
	case "priority":
		return "priority", true
	case "redelivered":
		return "redelivered", true
	case "reply-to":
		return "reply-to", true
	case "timestamp":
		return "timestamp", true
	case "type":
		return "type", true
	case "JMSXGroupID":
		return "JMSXGroupID", true
	case "JMSXGroupSeq":
		return "JMSXGroupSeq", true
	case "JMSXUserID":
		return "JMSXUserID", true
	case "JMSXDeliveryCount":
		return "JMSXDeliveryCount", true
	case "original-destination":
		return "original-destination", true
	// ActiveMQ extensions
	case "amq-msg-type":
		return "amq-msg-type", true
	case "client-id":
		return "client-id", true
	case "request-id":
		return "request-id", true
	case "response-id":
		return "response-id", true
	case "selector":
		return "selector", true
	case "browser":
		return "browser", true
	case "transformation":
		return "transformation", true
	case "activemq.dispatchAsync":
		return "activemq.dispatchAsync", true
	case "activemq.exclusive":
		return "activemq.exclusive", true
	case "activemq.maximumPendingMessageLimit":
		return "activemq.maximumPendingMessageLimit", true
	case "activemq.noLocal":
		return "activemq.noLocal", true
	case "activemq.prefetchSize":
		return "activemq.prefetchSize", true
	case "activemq.priority":
		return "activemq.priority", true
	case "activemq.retroactive":
		return "activemq.retroactive", true
	case "activemq.subscriptionName":
		return "activemq.subscriptionName", true
	// Artemis and RabbitMQ clients
	case "durable-subscription-name":
		return "durable-subscription-name", true
	case "durable-subscriber-name":
		return "durable-subscriber-name", true
	case "subscription-type":
		return "subscription-type", true
	case "consumer-window-size":
		return "consumer-window-size", true
	case "x-queue-name":
		return "x-queue-name", true
	case "prefetch-count":
		return "prefetch-count", true
	case "auto-delete":
		return "auto-delete", true
	case "durable":
		return "durable", true
	case "exclusive":
		return "exclusive", true
	}
	return "", false
}
