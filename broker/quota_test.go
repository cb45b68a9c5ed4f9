package broker

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/security"
)

// quotaBroker is a broker whose users app and other may each hold max bytes of
// unacknowledged queue messages.
func quotaBroker(t testing.TB, max int64) *Broker {
	sec, err := security.New(security.Config{
		Users:                  []security.User{{Name: "app", Password: "pw"}, {Name: "other", Password: "pw"}},
		MaxUnackedBytesPerUser: max,
	}, nil)
	require.NoError(t, err)
	b, err := New(context.Background(), Options{Name: "quota", Store: memstore.New(), Security: sec})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func loginClient(t testing.TB, b *Broker, user string) *client {
	return connectClient(t, b, ConnectInfo{Login: user, HasLogin: true, Passcode: "pw", RemoteAddr: "127.0.0.1:1"})
}

// TestUnackedBytesQuota: a user's consumers, on all its connections, stop getting queue
// messages once those dispatched and unacknowledged hold its quota, whatever their
// prefetch, and get them again once it acknowledges; what a NACK or the end of a
// subscription gives back, and what auto-acknowledged consumers were written, no longer
// counts.
func TestUnackedBytesQuota(t *testing.T) {
	b := quotaBroker(t, 10_000)
	p := loginClient(t, b, "other")
	body := strings.Repeat("x", 1000)
	for range 30 {
		p.send("/queue/q", body, false)
	}
	c := loginClient(t, b, "app")
	c.subscribe("s", "/queue/q", AckClientIndividual, 1000)
	got := []*Delivery{c.recv()}
	size := got[0].Size()                // a little more than the body
	k := int((10_000 + size - 1) / size) // the deliveries that reach the quota
	for len(got) < k {
		got = append(got, c.recv())
	}
	share := c.conn.share
	require.NotNil(t, share)
	assert.GreaterOrEqual(t, share.quota.Held(), int64(10_000))
	c.do(func() {}) // one more round of the owner's loop: nothing more came
	assert.Empty(t, c.got, "the next message is held back")
	// Another connection of the user is held too; another user is not.
	c2 := loginClient(t, b, "app")
	c2.subscribe("a", "/queue/q", AckAuto, 1000)
	c2.do(func() {})
	assert.Empty(t, c2.got)

	// Acknowledging two makes room: the other connection's auto consumer gets them and
	// they stop counting once written.
	require.NoError(t, c.ack(got[0]))
	require.NoError(t, c.ack(got[1]))
	var more int
	for more < 30-k {
		select {
		case d := <-c.got:
			require.NoError(t, c.ack(d))
		case <-c2.got:
		}
		more++
	}
	for _, d := range got[2:] {
		require.NoError(t, c.ack(d))
	}
	c.do(func() {})
	assert.Zero(t, share.quota.Held(), "everything acknowledged")
}

// BenchmarkSendDispatchUnackedQuota is BenchmarkSendAuthorization/noMap with a quota
// of unacknowledged bytes (never reached): what counting costs per message.
func BenchmarkSendDispatchUnackedQuota(b *testing.B) {
	br := quotaBroker(b, 1<<40)
	benchSendDispatch(b, login(b, br, "app"), login(b, br, "app"))
}
