package tests

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backlogView is what the admin listener tells of one offline durable subscription
// and of its topic, through each of its readers.
type backlogView struct {
	apiPending        int64   // GET /api/durable-subscriptions: pending
	apiOffline        float64 // ... offline_seconds
	statsBacklog      int     // GET /stats: durableSubscriptions[].Backlog
	statsOffline      float64 // ... offlineSeconds
	metricPending     int64   // GET /metrics: broker_subscription_pending_messages
	apiTopicMessages  int64   // GET /api/destinations: the topic's messages
	statsTopicStored  int64   // GET /stats: the topic's Stored
	metricTopicListed bool    // whether the metric's series of the subscription exists
}

// readBacklog reads, in this order, the REST API, /stats and /metrics of the admin
// listener at base for the durable subscription clientID:name of /topic/topic.
func readBacklog(t testing.TB, base, clientID, name, topic string) backlogView {
	t.Helper()
	a := newAPI(t, base)
	var v backlogView
	var rows []struct {
		ClientID       string  `json:"client_id"`
		Name           string  `json:"name"`
		Pending        int64   `json:"pending"`
		OfflineSeconds float64 `json:"offline_seconds"`
	}
	a.get("/api/durable-subscriptions", &rows)
	require.Len(t, rows, 1)
	require.Equal(t, clientID+"/"+name, rows[0].ClientID+"/"+rows[0].Name)
	v.apiPending, v.apiOffline = rows[0].Pending, rows[0].OfflineSeconds
	d, ok := a.dest("/topic/" + topic)
	require.True(t, ok, "the topic is listed")
	v.apiTopicMessages = d.Messages

	var st statsView
	a.get("/stats", &st)
	require.Len(t, st.Durables, 1)
	v.statsBacklog, v.statsOffline = int(st.Durables[0].Backlog), st.Durables[0].OfflineSeconds
	for _, d := range st.Destinations {
		if d.Name == "/topic/"+topic {
			v.statsTopicStored = d.Stored
		}
	}

	status, body, _ := a.call("GET", "/metrics", "")
	require.Equal(t, 200, status)
	re := regexp.MustCompile(fmt.Sprintf(`(?m)^broker_subscription_pending_messages\{destination="%s",subscription="%s:%s"\} (\d+)$`,
		regexp.QuoteMeta(topic), regexp.QuoteMeta(clientID), regexp.QuoteMeta(name)))
	if m := re.FindSubmatch(body); m != nil {
		v.metricTopicListed = true
		v.metricPending, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	return v
}

// TestDurableBacklogAcrossRestart: a durable subscriber (go-stomp, client-id and
// activemq.subscriptionName) goes offline having received nothing; N persistent messages
// are published; the broker is stopped (SIGTERM) and started again on the same store.
// Every reader of the admin listener then still says the subscription holds N (REST
// pending, /stats Backlog, the pending metric), that it has been offline at least as long
// as the test saw it offline before the restart, and that its topic holds N stored
// messages (one copy each); the subscriber then comes back and gets all N.
func TestDurableBacklogAcrossRestart(t *testing.T) {
	const n, clientID, name, topic = 25, "backlog-app", "s1", "backlog.restart"
	eachDurableAdapter(t, func(t *testing.T, bc brokerConfig) {
		bc.Env = append(bc.Env, adminEnv)
		b := startBroker(t, bc)
		base := "http://" + statsAddr(t, b)
		a := newAPI(t, base)

		c := dial(t, b.Addr, stomp.ConnOpt.Header("client-id", clientID))
		sub, err := c.Subscribe("/topic/"+topic, stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.subscriptionName", name))
		require.NoError(t, err)
		var rows []durableRow
		eventually(t, 10*time.Second, "the subscription listed active", func() bool { // go-stomp's SUBSCRIBE has no receipt
			a.get("/api/durable-subscriptions", &rows)
			return len(rows) == 1 && rows[0].Active
		})
		require.NoError(t, c.Disconnect()) // DISCONNECT with a receipt: detached once it returns
		eventually(t, 10*time.Second, "the subscription listed offline", func() bool {
			a.get("/api/durable-subscriptions", &rows)
			return len(rows) == 1 && !rows[0].Active
		})
		// The broker marked it offline before this instant: every offline time it reports
		// from now on is at least the time elapsed since.
		offlineBy := time.Now()

		p := dial(t, b.Addr)
		sendSeq(t, p, "/topic/"+topic, "bk", 0, n)
		require.NoError(t, p.Disconnect())

		before := readBacklog(t, base, clientID, name, topic)
		assert.EqualValues(t, n, before.apiPending, "REST pending before the restart")
		assert.EqualValues(t, n, before.apiTopicMessages, "the topic's messages (REST) before the restart")
		assert.EqualValues(t, n, before.statsTopicStored, "the topic's Stored (/stats) before the restart")
		// Offline long enough that a count restarted by the restart cannot pass for it.
		eventually(t, 20*time.Second, "two seconds offline", func() bool {
			return readBacklog(t, base, clientID, name, topic).apiOffline >= 2
		})

		b.Stop()
		b = startBroker(t, bc)
		base = "http://" + statsAddr(t, b)

		floor := time.Since(offlineBy).Seconds() // taken before the broker reads its clock
		after := readBacklog(t, base, clientID, name, topic)
		assert.EqualValues(t, n, after.apiPending, "REST pending after the restart")
		assert.Equal(t, n, after.statsBacklog, "/stats Backlog after the restart")
		assert.True(t, after.metricTopicListed, "the pending metric of the subscription is exported")
		assert.EqualValues(t, n, after.metricPending, "broker_subscription_pending_messages after the restart")
		assert.GreaterOrEqual(t, after.apiOffline, floor, "REST offline_seconds counts from when it went offline")
		assert.GreaterOrEqual(t, after.statsOffline, floor, "/stats offlineSeconds counts from when it went offline")
		assert.EqualValues(t, n, after.apiTopicMessages, "the topic's messages (REST) after the restart")
		assert.EqualValues(t, n, after.statsTopicStored, "the topic's Stored (/stats) after the restart")

		c = dial(t, b.Addr, stomp.ConnOpt.Header("client-id", clientID))
		sub, err = c.Subscribe("/topic/"+topic, stomp.AckClientIndividual, stomp.SubscribeOpt.Header("activemq.subscriptionName", name))
		require.NoError(t, err)
		for _, m := range recvSeq(t, sub, "bk", 0, n) {
			require.NoError(t, c.Ack(m))
		}
		eventually(t, 10*time.Second, "the backlog consumed", func() bool {
			v := readBacklog(t, base, clientID, name, topic)
			return v.apiPending == 0 && v.apiTopicMessages == 0 && v.statsTopicStored == 0
		})
		expectDrained(t, c, sub)
	})
}
