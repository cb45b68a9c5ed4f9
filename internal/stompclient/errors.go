package stompclient

import (
	"errors"
	"strings"

	"github.com/go-stomp/stomp/v3/frame"
)

// Sentinel errors.
var (
	// ErrURL: a URL that ParseURL cannot use (scheme, port, parameters); the wrapping
	// error says what is wrong, never with the passcode.
	ErrURL = errors.New("stompclient: invalid URL")
	// ErrClosed: the connection ended without an ERROR frame (the broker closed it, the
	// network failed, or Close was called).
	ErrClosed = errors.New("stompclient: connection closed")
	// ErrProtocol: the broker sent something a STOMP server must not (a frame other than
	// CONNECTED or ERROR in answer to CONNECT, say).
	ErrProtocol = errors.New("stompclient: protocol error")
)

// BrokerError is an ERROR frame the broker sent: it refused CONNECT (a bad login) or a
// frame after it (a SEND it may not write, a bad selector). The connection cannot be
// used after it.
type BrokerError struct {
	// Message is the frame's message header: ActiveMQ's and this broker's short
	// description ("User u is not authorized to write to: queue://x").
	Message string
	// Detail is the frame's body, often a longer explanation or a stack trace.
	Detail string
	// ReceiptID is the receipt-id header: the receipt of the frame it answers, if that
	// frame asked for one.
	ReceiptID string
}

// Error returns "broker refused: " and the message, or the first line of the body when
// the frame has no message header.
func (e *BrokerError) Error() string {
	msg := e.Message
	if msg == "" {
		msg, _, _ = strings.Cut(strings.TrimSpace(e.Detail), "\n")
	}
	if msg == "" {
		msg = "ERROR frame without a message"
	}
	return "broker refused: " + msg
}

// maxDetail is how much of an ERROR frame's body BrokerError keeps.
const maxDetail = 4096

func brokerError(f *frame.Frame) *BrokerError {
	body := f.Body
	if len(body) > maxDetail {
		body = body[:maxDetail]
	}
	return &BrokerError{
		Message:   f.Header.Get(frame.Message),
		Detail:    string(body),
		ReceiptID: f.Header.Get(frame.ReceiptId),
	}
}
