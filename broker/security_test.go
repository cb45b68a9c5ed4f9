package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/activemq-go/broker/broker/access"
	"github.com/activemq-go/broker/broker/management"
	"github.com/activemq-go/broker/destinations"
	"github.com/activemq-go/broker/persistence"
	"github.com/activemq-go/broker/persistence/memstore"
	"github.com/activemq-go/broker/security"
)

// entries1000 is an authorization map of 1,000 entries: one that grants the
// application's group everything on queues, and 999 others that do not match its
// queue.
func entries1000() []security.Entry {
	es := []security.Entry{{Kind: security.Queue, Pattern: ">", Read: []string{"app"}, Write: []string{"app"}, Admin: []string{"app"}}}
	for i := 1; i < 1000; i++ {
		g := []string{fmt.Sprintf("g%d", i)}
		es = append(es, security.Entry{Kind: security.Queue, Pattern: fmt.Sprintf("APP%d.ORDERS.>", i), Read: g, Write: g, Admin: g})
	}
	return es
}

func securedBroker(t testing.TB, entries []security.Entry) *Broker {
	sec, err := security.New(security.Config{
		Users:   []security.User{{Name: "app", Password: "pw", Groups: []string{"app"}}, {Name: "other", Password: "pw", Groups: []string{"g7"}}},
		Entries: entries,
	}, nil)
	require.NoError(t, err)
	b, err := New(context.Background(), Options{Name: "sec", Store: memstore.New(), Security: sec, PopulateJMSXUserID: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func login(t testing.TB, b *Broker, user string) *Conn {
	c, err := b.Connect(context.Background(), ConnectInfo{Login: user, HasLogin: true, Passcode: "pw", RemoteAddr: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// TestAuthorizationCachedDecision: a connection's last decision is reused for its
// next request to the same destination, but whether it must be created is asked
// again, so a destination removed meanwhile is not re-created by a user who may not
// create it.
func TestAuthorizationCachedDecision(t *testing.T) {
	es := entries1000()
	es = append(es, security.Entry{Kind: security.Queue, Pattern: "APP7.ORDERS.x", Write: []string{"g7"}})
	b := securedBroker(t, es)
	other := login(t, b, "other")
	dest, err := destinations.Parse("/queue/APP7.ORDERS.x")
	require.NoError(t, err)
	send := func() error {
		return other.Send(context.Background(), dest, &persistence.Message{Body: []byte("x"), Priority: 4}, "", func(error) {})
	}
	require.NoError(t, send(), "g7 has admin on APP7.ORDERS.>")
	require.NoError(t, send())
	assert.True(t, other.lastAuth.MayCreate())
}

// TestStampUser: populateJMSXUserID replaces every JMSXUserID the client sent with the
// authenticated user.
func TestStampUser(t *testing.T) {
	b := securedBroker(t, nil)
	c := login(t, b, "app")
	a := &access.Control{Service: c.access.Service, PopulateUserID: true}
	m := &persistence.Message{Headers: []string{"a", "1", destinations.UserIDProperty, "evil", "b", "2", destinations.UserIDProperty, "evil2"}}
	a.StampUser(c.subject, m)
	assert.Equal(t, persistence.Headers{"a", "1", "b", "2", destinations.UserIDProperty, "app"}, m.Headers)
}

// TestUserConnectionLimit: a user's maxConnections counts its live connections only.
func TestUserConnectionLimit(t *testing.T) {
	sec, err := security.New(security.Config{
		Users: []security.User{{Name: "app", Password: "pw", MaxConnections: 1}},
	}, nil)
	require.NoError(t, err)
	b, err := New(context.Background(), Options{Name: "sec", Store: memstore.New(), Security: sec})
	require.NoError(t, err)
	defer b.Close()
	info := ConnectInfo{Login: "app", HasLogin: true, Passcode: "pw", RemoteAddr: "127.0.0.1:1"}
	c, err := b.Connect(context.Background(), info)
	require.NoError(t, err)
	_, err = b.Connect(context.Background(), info)
	require.ErrorIs(t, err, ErrTooManyUserConnections)
	c.Close()
	c, err = b.Connect(context.Background(), info)
	require.NoError(t, err)
	c.Close()
}

// BenchmarkSendAuthorization is BenchmarkQueueSendDispatch with authentication and
// no authorization map, then with a map of 1,000 entries: the map must cost under 5%.
func BenchmarkSendAuthorization(b *testing.B) {
	for _, bc := range []struct {
		name    string
		entries []security.Entry
	}{{"noMap", nil}, {"map1000", entries1000()}} {
		b.Run(bc.name, func(b *testing.B) {
			br := securedBroker(b, bc.entries)
			benchSendDispatch(b, login(b, br, "app"), login(b, br, "app"))
		})
	}
}

// TestBrowseCreatesNothing: browsing needs read only, since it creates no queue; a
// SUBSCRIBE to the same missing queue needs admin too, and the browse's decision is not
// taken for it.
func TestBrowseCreatesNothing(t *testing.T) {
	b := securedBroker(t, []security.Entry{{Kind: security.Queue, Pattern: "RO.>", Read: []string{"app"}}})
	c := login(t, b, "app")
	dest, err := destinations.ParseOne("/queue/RO.x")
	require.NoError(t, err)
	msgs, err := c.Browse(context.Background(), dest, "", 0)
	require.NoError(t, err)
	assert.Empty(t, msgs)
	_, err = c.Subscribe(context.Background(), SubscribeRequest{ID: "s", Dest: dest, Mode: AckAuto})
	require.ErrorIs(t, err, ErrNotAuthorized)
	assert.Equal(t, "User app is not authorized to create: queue://RO.x", err.(*Error).Message)
}

// TestRetryRefusesWhatItsProducerMayNotWrite: with an authorization map, a retry of the
// dead-letter queue sends back the messages whose producer (JMSXUserID) may write their
// original destination and leaves the others, listing the first maxRefusals of them and
// counting the rest; an administrator's SEND keeps the dead-letter headers, another
// user's loses them.
func TestRetryRefusesWhatItsProducerMayNotWrite(t *testing.T) {
	sec, err := security.New(security.Config{
		Users: []security.User{{Name: "app", Password: "pw", Groups: []string{"app"}}, {Name: "other", Password: "pw", Groups: []string{"g7"}}},
		Entries: []security.Entry{
			{Kind: security.Queue, Pattern: ">", Read: []string{"admins"}, Write: []string{"admins"}, Admin: []string{"admins"}},
			{Kind: security.Queue, Pattern: "target", Write: []string{"app"}, Admin: []string{"app"}},
		},
	}, nil)
	require.NoError(t, err)
	b, err := New(context.Background(), Options{Name: "sec", Store: memstore.New(), Security: sec})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	dlq := destinations.Name{Kind: destinations.Queue, Name: DLQName}
	root := &security.Subject{User: "root", Groups: []string{"admins"}}
	const refused = 130
	for i := range refused + 2 {
		producer := "other"
		if i%66 == 0 { // two of them
			producer = "app"
		}
		m := &persistence.Message{Body: []byte(producer), Priority: 4, Persistent: true,
			Headers: persistence.Headers{destinations.OriginalDestinationProperty, "/queue/target", destinations.UserIDProperty, producer}}
		_, err := b.Management().SendAs(ctx, root, "test", dlq, m)
		require.NoError(t, err)
	}
	res, err := b.Management().MoveMessages(ctx, "test", DLQName, management.MoveRequest{Original: true})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Moved)
	require.Len(t, res.Refused, 100)
	assert.Equal(t, refused-100, res.MoreRefused)
	assert.Equal(t, "its producer other (JMSXUserID) may not write to /queue/target; move it there by name to send it anyway", res.Refused[0].Reason)
	assert.Equal(t, refused, queueStats(t, b, DLQName).Pending)
	assert.Equal(t, 2, queueStats(t, b, "target").Pending)

	// root's copies stayed (the retry found them); app's own are taken off.
	app := login(t, b, "app")
	m := &persistence.Message{Body: []byte("x"), Priority: 4, Headers: persistence.Headers{"k", "v",
		destinations.OriginalDestinationProperty, "/queue/secret", destinations.DeadLetterCauseProperty, "forged"}}
	target := destinations.Name{Kind: destinations.Queue, Name: "target"}
	require.NoError(t, app.Send(ctx, []destinations.Name{target}, m, "", func(error) {}))
	assert.Equal(t, persistence.Headers{"k", "v"}, m.Headers)
}
