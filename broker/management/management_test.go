package management

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/destinations/policy"
	"github.com/activemq-go/broker/durable"
	"github.com/activemq-go/broker/persistence"
)

// testHost answers what these tests ask; the rest of Host (nil) is not asked.
type testHost struct {
	Host
	conns   []ConnectionInfo
	kicked  []string // "id reason"
	removed error    // what RemoveDurable answers
	streams map[string]bool
}

func (h *testHost) Connections() []ConnectionInfo { return append([]ConnectionInfo(nil), h.conns...) }

func (h *testHost) Kick(_ context.Context, id, reason string) (string, error) {
	for _, c := range h.conns {
		if c.ID == id {
			h.kicked = append(h.kicked, id+" "+reason)
			return c.RemoteAddr, nil
		}
	}
	return "", errorf(ErrNotFound, "no connection %s", id)
}

func (h *testHost) RemoveDurable(context.Context, persistence.SubKey) error { return h.removed }

func (h *testHost) Policy(kind destinations.Kind, name string) policy.Policy {
	p := policy.Policy{}
	if kind == destinations.Topic && h.streams[name] {
		p.Type = policy.StreamType
	}
	return p
}

// Connections are listed oldest first; closing one tells its client why (a default
// reason when none is given) and is counted, one that does not exist is not.
func TestConnectionsAndClose(t *testing.T) {
	now := time.Now()
	h := &testHost{conns: []ConnectionInfo{
		{ID: "c2", ConnectedAt: now, RemoteAddr: "10.0.0.2:1"},
		{ID: "c1", ConnectedAt: now.Add(-time.Minute), RemoteAddr: "10.0.0.1:1"},
		{ID: "c0", ConnectedAt: now},
	}}
	m := New(Config{Host: h})
	var ids []string
	for _, c := range m.Connections() {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"c1", "c0", "c2"}, ids)

	require.NoError(t, m.CloseConnection(context.Background(), "op", "c2", ""))
	require.NoError(t, m.CloseConnection(context.Background(), "op", "c1", "maintenance"))
	assert.ErrorIs(t, m.CloseConnection(context.Background(), "op", "c9", ""), ErrNotFound)
	assert.Equal(t, []string{"c2 closed by an administrator", "c1 maintenance"}, h.kicked)
	st := m.Stats()
	assert.EqualValues(t, 2, st.Operations["close-connection"])
	assert.EqualValues(t, 2, st.Messages["close-connection"])
}

// The host's durable errors reach the operator in the API's words and sentinels; a
// store failure is a store error; only a removal that happened is counted.
func TestRemoveDurableSubscription(t *testing.T) {
	h := &testHost{}
	m := New(Config{Host: h})
	ctx := context.Background()
	for _, tc := range []struct {
		host     error
		sentinel error
		message  string
	}{
		{durable.ErrNotFound, ErrNotFound, "no durable subscription s of client c"},
		{durable.ErrInUse, durable.ErrInUse, "durable subscription s of client c has a consumer attached: it must disconnect first"},
		{errors.New("disk gone"), destinations.ErrStore, "message not stored: disk gone"},
	} {
		h.removed = tc.host
		err := m.RemoveDurableSubscription(ctx, "op", "c", "s")
		assert.ErrorIs(t, err, tc.sentinel)
		assert.EqualError(t, err, tc.message)
	}
	assert.Zero(t, m.Stats().Operations["remove-durable"])
	h.removed = nil
	require.NoError(t, m.RemoveDurableSubscription(ctx, "op", "c", "s"))
	assert.EqualValues(t, 1, m.Stats().Operations["remove-durable"])
}

// A move's target cannot be its source, a temporary or wildcard destination, or a
// stream (by policy, whether the stream exists yet or not).
func TestMoveTargets(t *testing.T) {
	m := New(Config{Host: &testHost{streams: map[string]bool{"events": true}}})
	src := destinations.Name{Kind: destinations.Queue, Name: "src"}
	for _, tc := range []struct {
		to destinations.Name
		ok bool
	}{
		{destinations.Name{Kind: destinations.Queue, Name: "dst"}, true},
		{destinations.Name{Kind: destinations.Topic, Name: "prices"}, true},
		{src, false},
		{destinations.Name{Kind: destinations.TempQueue, Name: "t"}, false},
		{destinations.Name{Kind: destinations.Queue, Name: "a.>"}, false},
		{destinations.Name{Kind: destinations.Topic, Name: "events"}, false},
	} {
		err := m.checkMoveTarget(src, tc.to)
		if tc.ok {
			assert.NoError(t, err, tc.to.String())
		} else {
			assert.ErrorIs(t, err, destinations.ErrInvalidDestination, tc.to.String())
		}
	}
}
